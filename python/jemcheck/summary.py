"""Reading a run's summary.json (control, evaluate, sweep points) into pandas: see run.py."""

from .run import read_summary, read_verdict  # noqa: F401  (their home is run.py)

# The per-run results (results/*.parquet: one row per run) with DuckDB, for readers outside
# this package (duckdb.sql(RESULTS_QUERY.format(run=path)).df(), or @duckdb/node-api);
# in Python, jemcheck.read_results(path) reads them with pandas and pyarrow.
RESULTS_QUERY = "SELECT * FROM read_parquet('{run}/results/*.parquet') ORDER BY run_id"
