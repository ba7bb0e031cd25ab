"""The smallest client of jemcheck's export: a counting model, no training loop.

q(x, y) ∝ count(x, y) + ½ over the support (the add-½ estimate): on tables and binary
tables x is the support's value, on 2-D tasks the grid cell holding each draw; on
block tasks (points that differ per task) only the class frequencies. Its logits are
log(count + ½), written with jemcheck.write_logits in evaluate's contract.

    PYTHONPATH=python python3 examples/frequency.py out/export out/logits.csv
    GOEXPERIMENT=simd go run ./pipelines/evaluate --from=out/export --logits=out/logits.csv --out=out/evaluated
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import jemcheck  # noqa: E402


def support_index(point, draws):
    """The support point of each draw: x on tables, its grid cell on 2-D tasks."""
    if point.kind in ("table", "bits"):
        return draws["x"].to_numpy()
    g, (lo, hi) = point.meta["grid"], point.bounds[0]
    i, j = (np.clip(((draws[c].to_numpy() - lo) / (hi - lo) * g).astype(int), 0, g - 1) for c in ("x0", "x1"))
    return i * g + j


def main(export, out):
    p = jemcheck.load_export(export, truth=False).point
    n, k = p.meta["support"], p.classes
    logits = {}
    for tid, draws in p.samples.groupby(p.id_column):
        if "heldout" in draws.columns:  # the protocol: the draws jemcheck's own methods train on
            draws = draws[draws["heldout"] == 0]
        y = draws[p.label_column].to_numpy()
        if p.kind == "blocks":  # per-task points: class frequencies only
            logits[tid] = np.tile(np.log(np.bincount(y, minlength=k) + 0.5), (n, 1))
            continue
        counts = np.zeros((n, k))
        np.add.at(counts, (support_index(p, draws), y), 1)
        logits[tid] = np.log(counts + 0.5)
    jemcheck.write_logits(logits, out, point=p, model="frequency")
    print(f"frequency: {len(logits)} tasks of {p.task}, {n} points × {k} classes -> {out}")


if __name__ == "__main__":
    main(*(sys.argv[1:3] if len(sys.argv) >= 3 else (os.environ["JEMCHECK_EXPORT"], os.environ["JEMCHECK_LOGITS"])))
