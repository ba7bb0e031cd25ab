"""jemcheck's Python client: judge your own model, read a run into pandas.

    import jemcheck
    run = jemcheck.evaluate(my_model, task="gmm:3,2", tables=10)   # export → your fn → evaluate
    run.results, run.verdict.holds                                  # the per-task frame; True, False or None

    jemcheck.read_results("out/evaluated")    # results/*.parquet: one row per task × method
    jemcheck.read_curves("out/evaluated")     # curves/*.parquet (2-D runs with checks), or None
    jemcheck.read_summary("out/evaluated")    # summary.json: one row per point and method
    jemcheck.read_verdict("out/evaluated")    # the verdict: holds True, False or None (undecided)
    jemcheck.load_run("out/evaluated")        # all of these at once

The step by step path (docs/export-evaluate.md): load_export reads an export (its
Parquet files, or the CSV copies of ``export --csv``), write_logits writes evaluate's
logits contract. Needs numpy, pandas and pyarrow (pip install ./python); evaluate()
needs jemcheck's export and evaluate binaries (find_binaries).
"""

from .evaluation import JemcheckError, Task, evaluate, find_binaries, tasks_of
from .export import Export, Point, load_export, write_logits
from .run import (MAX_JSON_BYTES, MAX_PARQUET_BYTES, MAX_SUMMARY_BYTES, Run, RunError, Verdict, load_run, read_curves, read_results,
                  read_summary, read_verdict)
from .summary import RESULTS_QUERY

__all__ = ["evaluate", "find_binaries", "tasks_of", "Task", "JemcheckError",
           "read_results", "read_curves", "read_summary", "read_verdict", "load_run", "Run", "Verdict", "RunError",
           "MAX_PARQUET_BYTES", "MAX_JSON_BYTES", "MAX_SUMMARY_BYTES",
           "Export", "Point", "load_export", "write_logits", "RESULTS_QUERY"]
