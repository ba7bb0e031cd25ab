"""Reading an export (pipelines/export) and writing a logits file for pipelines/evaluate."""

import json
import math
import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

FORMAT = "jemcheck-export/1"

# read_csv's arguments that read every digit written: pandas 3 does by default (and warns
# on float_precision), earlier pandas with float_precision="round_trip".
ROUND_TRIP = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}

# What an export.json written before it named its columns implies (the same layout).
_LEGACY_SAMPLES = {"table": ["table_id", "x", "y"], "bits": ["table_id", "x", "y"],
                   "plane": ["task_id", "x0", "x1", "y"], "blocks": ["task_id", "draw", "block", "x0", "x1", "y"]}


@dataclass
class Point:
    """One grid point of an export: its tasks, their draws, the evaluation points.

    samples: the training draws, one row per draw (``id_column``, the coordinates, ``y``).
    points: the evaluation support, on which a model's logits are given
    (``support_column`` numbers the points; block tasks also have ``id_column``).
    truth: the true joint on the support (``p``), for your own checks; None when the
    export has none. meta: the point's entry of export.json, as read.
    """

    point_id: int
    kind: str
    task: str
    classes: int
    dimension: int
    ids: list
    id_column: str
    support_column: str
    label_column: str
    logit_columns: list
    bounds: list
    samples: pd.DataFrame
    points: pd.DataFrame
    truth: pd.DataFrame = None
    meta: dict = field(default_factory=dict)

    @property
    def coordinates(self):
        """The coordinate columns of the draws and of the support ("x" on tables)."""
        split = (self.meta.get("split") or {}).get("column") or "heldout"  # the held-out marker
        return [c for c in self.samples.columns if c not in (self.id_column, self.label_column, "draw", "block", split)]


@dataclass
class Export:
    """An export: its folder, its config.json and its points (one per grid point)."""

    path: str
    config: dict
    points: list

    @property
    def point(self):
        """The only point of a one-point export (the usual case)."""
        if len(self.points) != 1:
            raise ValueError(f"the export has {len(self.points)} points; use .points")
        return self.points[0]

    def tasks(self):
        """One row per point: its id, kind, task, classes, dimension, tasks and box."""
        return pd.DataFrame([{"point_id": p.point_id, "kind": p.kind, "task": p.task, "classes": p.classes,
                              "dimension": p.dimension, "tasks": len(p.ids), "samples": p.meta.get("samples"),
                              "support": p.meta.get("support"), "grid": p.meta.get("grid"),
                              "bounds": p.bounds, "model": p.meta.get("model")} for p in self.points])


def _csv(path, key, csv_key):
    """The CSV copy of the Parquet file key (csv_key where export.json names it)."""
    name = csv_key or (key[: -len(".parquet")] + ".csv" if key.endswith(".parquet") else key)
    full = os.path.join(path, name)
    if not os.path.exists(full):
        pq = os.path.join(path, key)
        if key.endswith(".parquet") and os.path.exists(pq) and _has_pyarrow():
            from .run import read_parquet_bounded
            return read_parquet_bounded(pq)  # the Parquet file itself (pyarrow, a dependency of the package)
        raise FileNotFoundError(f"{full}: not found; export with --csv, or install pyarrow to read the Parquet files")
    return pd.read_csv(full, **ROUND_TRIP)  # every digit the export wrote


def _has_pyarrow():
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


def _bounds(ep):
    if ep.get("bounds"):
        return [list(b) for b in ep["bounds"]]
    box, d = ep.get("box") or 0, ep.get("dimension") or 0  # an export.json before bounds
    return [[-box, box] for _ in range(d)] if box > 0 and ep.get("kind") in ("plane", "blocks") else []


def load_export(path, truth=True):
    """Reads the export at path (a folder written by ``pipelines/export --csv``).

    Returns an Export whose points hold pandas frames of the draws (samples), the
    evaluation points (points) and, with truth, the true joint on them (truth).
    """
    with open(os.path.join(path, "export.json")) as f:
        ex = json.load(f)
    if ex.get("format") != FORMAT:
        raise ValueError(f"{path}/export.json: format {ex.get('format')!r}, want {FORMAT!r}")
    config = {}
    cfg = os.path.join(path, ex.get("config") or "config.json")
    if os.path.exists(cfg):
        with open(cfg) as f:
            config = json.load(f)
    points = []
    for ep in ex["points"]:
        files = ep["files"]
        csvs = files.get("samples_csv") or [None] * len(files["samples"])
        samples = pd.concat([_csv(path, k, c) for k, c in zip(files["samples"], csvs)], ignore_index=True)
        want = files.get("samples_columns") or _LEGACY_SAMPLES.get(ep["kind"])
        if want and list(samples.columns) != list(want):
            raise ValueError(f"{path}: samples have columns {list(samples.columns)}, export.json says {want}")
        support = _csv(path, files["points"], files.get("points_csv"))
        tr = None
        if truth and files.get("truth"):
            tr = _csv(path, files["truth"], files.get("truth_csv"))
        idc, supc = ep["id_column"], ep["support_column"]
        logits = ep.get("logits") or {}
        points.append(Point(point_id=ep["point_id"], kind=ep["kind"], task=ep["task"], classes=ep["classes"],
                            dimension=ep["dimension"], ids=list(ep["ids"]), id_column=idc, support_column=supc,
                            label_column=ep.get("label_column", "y"),
                            logit_columns=logits.get("columns") or [idc, supc, "y", "logit"],
                            bounds=_bounds(ep), samples=samples, points=support, truth=tr, meta=ep))
    return Export(path=path, config=config, points=points)


def write_logits(data, path, point=None, model=None):
    """Writes a logits file for pipelines/evaluate --logits, in the exact contract.

    data: a DataFrame with the columns point.logit_columns (e.g. task_id, cell, y,
    logit; optionally model), or, with point, a dict {task id: array of shape
    (support, classes)} of logits f(x)[y] on the point's support (for block tasks the
    support points 0..support-1 of that task). model names the model (a ``model``
    column); without it evaluate's --model names it. path ends in .csv (Parquet needs
    pyarrow: ``df.to_parquet`` elsewhere). Refuses what evaluate would refuse: NaN or
    +Inf logits, repeated or missing (task, point, class). Returns the frame written.
    """
    if isinstance(data, pd.DataFrame):
        df = data.copy()
        cols = point.logit_columns if point is not None else list(df.columns[:4])
    else:
        if point is None:
            raise ValueError("write_logits: arrays need the export's point (their columns and support)")
        cols = point.logit_columns
        n, k = point.meta.get("support"), point.classes
        frames = []
        for tid, a in data.items():
            a = np.asarray(a, dtype=np.float64)
            if a.shape != (n, k):
                raise ValueError(f"task {tid}: logits of shape {a.shape}, want (support, classes) = ({n}, {k})")
            frames.append(pd.DataFrame({cols[0]: np.int64(tid), cols[1]: np.repeat(np.arange(n), k),
                                        cols[2]: np.tile(np.arange(k), n), cols[3]: a.reshape(-1)}))
        df = pd.concat(frames, ignore_index=True)
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"write_logits: missing columns {missing} (want {cols})")
    if model is not None:
        df["model"] = model
    keep = cols + (["model"] if "model" in df.columns else [])
    df = df[keep]
    for c in cols[:3]:
        df[c] = df[c].astype(np.int64)
    v = df[cols[3]].to_numpy(dtype=np.float64)
    bad = np.isnan(v) | (v == math.inf)
    if bad.any():
        raise ValueError(f"write_logits: {int(bad.sum())} logits are NaN or +Inf (only -Inf, a point of zero mass, is allowed)")
    key = keep[:3] + (["model"] if "model" in keep else [])
    if df.duplicated(key).any():
        raise ValueError("write_logits: a (task, point, class) is given twice")
    if point is not None:
        n, k = point.meta.get("support"), point.classes
        per = df.groupby(["model"] if "model" in df.columns else lambda _: 0)[cols[0]].agg(["count", "nunique"])
        if ((per["count"] != per["nunique"] * n * k)).any():
            raise ValueError(f"write_logits: every task needs {n}×{k} logits (support × classes)")
    df.to_csv(path, index=False, float_format="%.17g")
    return df
