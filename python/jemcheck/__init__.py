"""jemcheck's Python client: read an export, write logits, read a run's summary.

The path a model trained outside jemcheck takes (docs/export-evaluate.md)::

    go run ./pipelines/export --task=gmm:3,2 --tables=20 --csv --out=out/export
    python3 my_jem.py            # load_export, train, write_logits
    go run ./pipelines/evaluate --from=out/export --logits=out/logits.csv --out=out/evaluated
    python3 -c 'import jemcheck; print(jemcheck.read_summary("out/evaluated"))'

Needs numpy and pandas only. The export is read from the CSV copies that
``export --csv`` writes (pandas reads Parquet only with pyarrow); a run's
``results/*.parquet`` are read with DuckDB or with pandas and pyarrow (RESULTS_QUERY).
"""

from .export import Export, Point, load_export, write_logits
from .summary import RESULTS_QUERY, read_summary

__all__ = ["Export", "Point", "load_export", "write_logits", "read_summary", "RESULTS_QUERY"]
