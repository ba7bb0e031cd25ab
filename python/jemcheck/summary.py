"""Reading a run's summary.json (control, evaluate, sweep points) into pandas."""

import json
import math
import os

import pandas as pd

# The per-run results (results/*.parquet: one row per run) in a frame. Parquet needs a
# reader this package does not carry: with DuckDB (pip install duckdb, or the
# @duckdb/node-api package), duckdb.sql(RESULTS_QUERY.format(run=path)).df(); with
# pyarrow, pandas.read_parquet(os.path.join(path, "results")).
RESULTS_QUERY = "SELECT * FROM read_parquet('{run}/results/*.parquet') ORDER BY run_id"

_DIST = ("mean", "median", "p10", "p90")


def _num(v):
    return math.nan if v is None else v


def read_summary(run):
    """A tidy frame of a run's summary.json: one row per point and method.

    run is the run's folder (or its summary.json). Columns: point_id, task, method,
    runs, diverged, kl_joint (mean) with kl_joint_median/p10/p90, accuracy; for the
    sampler recipes and the references compared with exact jem: reference, pairs,
    excess (mean excess joint KL over exact jem, nats) with excess_ci_low/high (95%
    CI), marginal_excess, grade, rank, unstable; and the point's verdict (holds,
    decided). Numbers jemcheck wrote as null are NaN.
    """
    path = run if run.endswith(".json") else os.path.join(run, "summary.json")
    with open(path) as f:
        s = json.load(f)
    rows = []
    for p in s.get("points", []):
        params = p.get("params", {})
        samplers = {c["method"]: c for c in p.get("samplers") or []}
        verdict = p.get("verdict", {})
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
            row.update({"holds": verdict.get("holds"), "decided": verdict.get("decided")})
            rows.append(row)
    df = pd.DataFrame(rows)
    for c in ("pairs", "rank", "unstable"):
        if c in df:
            df[c] = df[c].astype("Int64")
    return df
