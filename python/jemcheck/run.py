"""Reading a finished run (control, evaluate, sweep, regress …) into pandas.

    run = jemcheck.load_run("out/evaluated")   # or read_results / read_curves / read_summary / read_verdict
    run.results    # results/*.parquet: one row per run (task × method), every column
    run.curves     # curves/*.parquet: the training curves (2-D tasks), None when the run has none
    run.summary    # summary.json as a tidy frame: one row per point and method
    run.verdict    # the overall verdict: holds is True, False or None (undecided)

A run is a local folder (a path or a file:// URL). Every file is read within a size
limit, checked on the bytes really read (never on a size the file, its footer or the
manifest declares), and must be a regular file: a link to /dev/zero, a named pipe or a
huge file gives one clear error instead of exhausting memory or waiting forever. When
the run has its manifest.json, the Parquet files read are the ones it lists, each checked
against the manifest's size and SHA-256 (a file changed or missing since the run is
refused, naming it).
"""

import hashlib
import io
import json
import math
import os
import stat
import urllib.parse
from dataclasses import dataclass, field

import pandas as pd

# The most bytes one Parquet file of a run (results/, curves/) may hold: the limit of
# jemcheck's own Parquet reader (schemas.MaxParquetBytes). A run of 10,000 tables × 2
# methods writes a few MB of results.
MAX_PARQUET_BYTES = 1 << 30
# The most bytes a Parquet file's footer may declare its columns to decode to: a small
# file that declares more is refused before anything is decoded.
MAX_DECODED_BYTES = 4 << 30
# The most bytes manifest.json or config.json may hold (storage.MaxMetadataBytes).
MAX_JSON_BYTES = 64 << 20
# The most bytes summary.json may hold (storage.MaxSummaryBytes): it grows with points x
# methods (a sweep of 10,000 points x 2 methods writes 183 MB).
MAX_SUMMARY_BYTES = 1 << 30


class RunError(ValueError):
    """A run folder or one of its files that cannot be read (the message names it)."""


def run_path(run):
    """The local folder that run names: a path, or a file:// URL (file:///abs/path)."""
    run = os.fspath(run)
    if "://" in run:
        u = urllib.parse.urlparse(run)
        if u.scheme != "file":
            raise RunError(f"{run}: only local runs are read (a path or file:// URL); copy a {u.scheme}:// run to a local folder first")
        if u.netloc not in ("", "localhost"):
            raise RunError(f"{run}: a file:// URL names an absolute path (file:///path), not host {u.netloc!r}")
        run = urllib.parse.unquote(u.path)
    return run


def _describe(mode):
    if stat.S_ISDIR(mode):
        return "is a directory, not a file"
    if stat.S_ISFIFO(mode):
        return "is a named pipe (FIFO), not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a regular file"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a regular file"
    return f"is not a regular file (mode {stat.filemode(mode)})"


def read_bounded(path, limit):
    """The bytes of the regular file at path (links followed), at most limit of them.

    Refuses anything but a regular file before reading it, and a file with more than
    limit bytes by the bytes read (a file that grows while it is read included).
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise RunError(f"{path}: not found") from None
    if not stat.S_ISREG(st.st_mode):
        raise RunError(f"{path} {_describe(st.st_mode)}")
    if st.st_size > limit:
        raise RunError(f"{path} has {st.st_size} bytes, more than the {limit} allowed")
    # O_NONBLOCK: a file swapped for a named pipe after the check cannot block the open.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RunError(f"{path} {_describe(st.st_mode)}")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise RunError(f"{path} has more than the {limit} bytes allowed")
    return data


def _json(path, limit=None):
    data = read_bounded(path, MAX_JSON_BYTES if limit is None else limit)
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise RunError(f"{path}: not valid JSON ({e})") from None


def _manifest(run):
    """The run's manifest entries {path: entry}, or None for a folder without manifest.json."""
    path = os.path.join(run, "manifest.json")
    if not os.path.lexists(path):
        return None
    m = _json(path)
    if not isinstance(m, dict) or not str(m.get("format", "")).startswith("jemcheck-manifest/"):
        raise RunError(f"{path}: not a jemcheck manifest (format {m.get('format') if isinstance(m, dict) else None!r})")
    return {f["path"]: f for f in m.get("files") or []}


def _parquet_files(run, folder):
    """The files of run/folder to read, in name order: the manifest's, else every *.parquet."""
    if not os.path.isdir(run):
        raise RunError(f"{run}: not a folder (a run's --out)")
    manifest = _manifest(run)
    if manifest is not None:
        names = sorted(p for p in manifest if p.startswith(folder + "/") and p.endswith(".parquet"))
        return [(os.path.join(run, p), manifest[p]) for p in names]
    d = os.path.join(run, folder)
    if not os.path.isdir(d):
        return []
    return [(os.path.join(d, n), None) for n in sorted(os.listdir(d)) if n.endswith(".parquet")]


def read_parquet_bounded(path, limit=None, entry=None):
    """One Parquet file as a frame, read within limit bytes (default MAX_PARQUET_BYTES) and
    checked against its manifest entry."""
    limit = MAX_PARQUET_BYTES if limit is None else limit
    try:
        import pyarrow.parquet as pq
    except ImportError as e:
        raise RunError(f"reading {path} needs pyarrow, which does not import here ({e}): pip install pyarrow") from None
    data = read_bounded(path, limit)
    if entry is not None:
        if len(data) != entry.get("size") or hashlib.sha256(data).hexdigest() != entry.get("sha256"):
            raise RunError(f"{path}: changed since the run wrote it (its size or SHA-256 is not the manifest's)")
    try:
        f = pq.ParquetFile(io.BytesIO(data))
        meta = f.metadata
        decoded = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        if decoded > MAX_DECODED_BYTES:  # read at call time (tests lower it)
            raise RunError(f"{path}: its footer declares {decoded} bytes of columns, more than the {MAX_DECODED_BYTES} allowed")
        return f.read().to_pandas()
    except RunError:
        raise
    except Exception as e:  # pyarrow's errors for a file that is not Parquet, or a broken one
        raise RunError(f"{path}: not a readable Parquet file ({e})") from None


def _read_folder(run, folder, required):
    run = run_path(run)
    files = _parquet_files(run, folder)
    if not files:
        if required:
            raise RunError(f"{run}: no {folder}/*.parquet (not a finished jemcheck run, or not its --out)")
        return None
    for p, e in files:
        if e is not None and not os.path.lexists(p):
            raise RunError(f"{p}: listed in manifest.json but missing")
    return pd.concat([read_parquet_bounded(p, entry=e) for p, e in files], ignore_index=True)


def read_results(run):
    """The run's per-run rows: every column of results/*.parquet, all files concatenated.

    One row per run (a task × method: run_id, table_id, method, point_id, kl_joint, …;
    docs/outputs.md lists every column), in file order and, within a file, run-id order.
    run is the run's folder (path or file:// URL). Each file is at most
    MAX_PARQUET_BYTES; with manifest.json the files it lists are read and checked.
    """
    return _read_folder(run, "results", True)


def read_curves(run):
    """The run's training curves (curves/*.parquet: run_id, task_id, method, point_id, step,
    kl_joint, kl_marginal, kl_conditional, heldout_nll, grad_evals), or None when the run
    wrote none (tables, and 2-D runs without --eval_every)."""
    return _read_folder(run, "curves", False)


# The verdict levels (summary.json's "level"): every recipe matches exact JEM; none fails
# but one only comes within 0.1 or 1 nat; a failure; no decision.
LEVELS = ("holds", "short", "fails", "undecided")


@dataclass
class Verdict:
    """A verdict of summary.json (the run's, or a point's).

    holds: True or False when decided, None when not (undecided: too few tasks, too many
    diverged runs …): an undecided verdict is neither. level: holds, short, fails or
    undecided ("" in a summary written before levels). reason: the verdict line;
    headline: the headline sentence; cause: what failed; checks: the checks as written.
    """

    holds: object
    decided: bool
    level: str = ""
    reason: str = ""
    headline: str = ""
    cause: str = ""
    checks: list = field(default_factory=list)
    raw: dict = field(default_factory=dict, repr=False)

    def __str__(self):
        return self.reason or self.level or ("undecided" if self.holds is None else ("HOLDS" if self.holds else "FAILS"))


def verdict_of(v):
    """A Verdict from a summary.json verdict object. holds is None unless decided: summary.json
    writes "decided": false (and "level": "undecided"; older files "holds": false, newer
    "holds": null) for a verdict not taken."""
    v = v or {}
    level = v.get("level") or ""
    decided = bool(v.get("decided", v.get("holds") is not None))
    holds = v.get("holds")
    if not decided or level == "undecided" or holds is None:
        holds, decided = None, False
    else:
        holds = bool(holds)
    return Verdict(holds=holds, decided=decided, level=level, reason=v.get("reason") or "",
                   headline=v.get("headline") or "", cause=v.get("cause") or "", checks=v.get("checks") or [], raw=v)


def _summary_json(run):
    run = run_path(run)
    path = run if run.endswith(".json") else os.path.join(run, "summary.json")
    return _json(path, MAX_SUMMARY_BYTES)


def read_verdict(run):
    """The run's overall verdict (summary.json's "verdict") as a Verdict: holds True/False, or None when undecided."""
    return verdict_of(_summary_json(run).get("verdict"))


_DIST = ("mean", "median", "p10", "p90")


def _num(v):
    return math.nan if v is None else v


def read_summary(run):
    """A tidy frame of a run's summary.json: one row per point and method.

    run is the run's folder (path or file:// URL) or its summary.json. Columns: point_id,
    task, method, runs, diverged, kl_joint (mean) with kl_joint_median/p10/p90, accuracy;
    for the sampler recipes and the references compared with exact jem: reference, pairs,
    excess (mean excess joint KL over exact jem, nats) with excess_ci_low/high (95% CI),
    marginal_excess, grade, rank, unstable; and the point's verdict: holds (True, False,
    or None when the point is undecided), decided, level. Numbers jemcheck wrote as null
    are NaN. The run's overall verdict: read_verdict(run), or .attrs["verdict"].
    """
    s = _summary_json(run)
    rows = []
    for p in s.get("points", []):
        params = p.get("params", {})
        samplers = {c["method"]: c for c in p.get("samplers") or []}
        verdict = verdict_of(p.get("verdict"))
        for m in p.get("methods", []):
            kl = m.get("kl_joint", {})
            row = {"point_id": p.get("point_id"), "task": params.get("task") or "table", "method": m["method"],
                   "runs": m.get("runs"), "diverged": m.get("diverged"), "kl_joint": _num(kl.get("mean"))}
            for q in _DIST[1:]:
                row["kl_joint_" + q] = _num(kl.get(q))
            row["accuracy"] = _num(m.get("accuracy", {}).get("mean"))
            c = samplers.get(m["method"], {})
            row.update({"reference": bool(c.get("reference", False)), "pairs": c.get("pairs"),
                        "excess": _num(c.get("excess")), "excess_ci_low": _num(c.get("excess_ci_low")),
                        "excess_ci_high": _num(c.get("excess_ci_high")),
                        "marginal_excess": _num(c.get("marginal_excess")), "grade": c.get("grade"),
                        "rank": c.get("rank"), "unstable": c.get("unstable", m.get("unstable"))})
            row.update({"holds": verdict.holds, "decided": verdict.decided, "level": verdict.level})
            rows.append(row)
    df = pd.DataFrame(rows)
    for c in ("pairs", "rank", "unstable"):
        if c in df:
            df[c] = df[c].astype("Int64")
    if "holds" in df:
        df["holds"] = df["holds"].astype(object).where(df["holds"].notna(), None)  # None, never NaN or False
    df.attrs["verdict"] = verdict_of(s.get("verdict"))
    return df


@dataclass
class Run:
    """A finished run read whole: its folder, results, curves, summary and verdict."""

    path: str
    results: pd.DataFrame
    curves: object  # a DataFrame, or None
    summary: pd.DataFrame
    verdict: Verdict
    config: dict = field(default_factory=dict, repr=False)
    model: str = ""  # evaluate(): your model's method name, external:NAME

    @property
    def report(self):
        """The run's report.html (a path; None when the run's folder is gone)."""
        p = self.path and os.path.join(self.path, "report.html")
        return p if p and os.path.exists(p) else None


def load_run(run):
    """The run at run (its folder, or a file:// URL) read whole: a Run with .results
    (read_results), .curves (read_curves, or None), .summary (read_summary), .verdict
    (read_verdict) and .config (config.json)."""
    path = run_path(run)
    cfg = os.path.join(path, "config.json")
    config = _json(cfg) if os.path.lexists(cfg) else {}
    return Run(path=path, results=read_results(path), curves=read_curves(path), summary=read_summary(path),
               verdict=read_verdict(path), config=config)
