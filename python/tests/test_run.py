"""read_results, read_curves, read_summary, read_verdict, load_run: on a real run of control,
and the bounds every file is read within.

    pytest python/tests/test_run.py      # JEMCHECK_BIN=DIR for the binaries (conftest.py)
"""

import glob
import json
import math
import os
import shutil

import pandas as pd
import pyarrow.parquet as pq
import pytest

import jemcheck
from conftest import METHODS, TASKS


def test_read_results(real_run):
    files = sorted(glob.glob(os.path.join(real_run, "results", "*.parquet")))
    assert len(files) >= 2, "the fixture's run should have written several results files"
    df = jemcheck.read_results(real_run)
    want = pd.concat([pq.read_table(f).to_pandas() for f in files], ignore_index=True)
    pd.testing.assert_frame_equal(df, want)  # every column, every file, in order
    assert len(df) == TASKS * len(METHODS)
    assert sorted(df.method.unique()) == sorted(METHODS)
    assert df.run_id.is_unique
    for c in ("run_id", "table_id", "method", "kl_joint", "kl_marginal", "kl_conditional", "selected_step", "heldout_nll"):
        assert c in df.columns, c
    assert (df.kl_joint > 0).all() and df.kl_joint.map(math.isfinite).all()


def test_read_curves(real_run):
    c = jemcheck.read_curves(real_run)
    r = jemcheck.read_results(real_run)
    assert set(c.run_id) == set(r.run_id)
    assert {"step", "kl_joint", "heldout_nll", "grad_evals"} <= set(c.columns)
    # The run's curve holds its selected step, with the same kl_joint (docs/outputs.md).
    at = c.merge(r[["run_id", "selected_step", "kl_joint"]], left_on=["run_id", "step"],
                 right_on=["run_id", "selected_step"], suffixes=("_curve", ""))
    assert len(at) == len(r)
    assert (at.kl_joint_curve == at.kl_joint).all()


def test_read_summary_undecided(real_run):
    s = jemcheck.read_summary(real_run)
    assert sorted(s.method) == sorted(METHODS)
    assert all(h is None for h in s.holds), s.holds  # 3 tasks: no verdict, and None says so (not False)
    assert not s.decided.any()
    v = jemcheck.read_verdict(real_run)
    assert v.holds is None and not v.decided
    assert v.reason.startswith("undecided")
    assert s.attrs["verdict"].holds is None


def test_load_run(real_run):
    run = jemcheck.load_run("file://" + real_run)  # a file:// URL names the same folder
    assert run.path == real_run
    pd.testing.assert_frame_equal(run.results, jemcheck.read_results(real_run))
    assert len(run.curves) > 0
    assert run.verdict.holds is None
    assert run.config["options"]["seed"] == 1
    assert run.report and run.report.endswith("report.html")


@pytest.mark.parametrize("verdict, holds, decided", [
    ({"holds": False, "decided": False, "reason": "undecided: 3 tasks"}, None, False),  # before "holds" became null
    ({"holds": None, "decided": False, "level": "undecided"}, None, False),  # undecided, as written now
    ({"holds": False, "decided": True, "level": "undecided"}, None, False),  # the level decides
    ({"holds": True, "decided": True, "level": "holds"}, True, True),
    ({"holds": False, "decided": True, "level": "short"}, False, True),
    ({"holds": False, "decided": True, "level": "fails", "cause": "sampler"}, False, True),
    ({"holds": True}, True, True),  # no decided field: a verdict with holds is decided
    ({}, None, False),  # no verdict at all
], ids=["old-undecided", "null-undecided", "level-undecided", "holds", "short", "fails", "no-decided-field", "empty"])
def test_holds(tmp_path, verdict, holds, decided):
    s = {"pipeline": "control", "verdict": verdict,
         "points": [{"point_id": 0, "params": {"task": "gmm:2,2"}, "verdict": verdict,
                     "methods": [{"method": "jem", "runs": 10, "diverged": 0, "kl_joint": {"mean": 0.1}}]}]}
    (tmp_path / "summary.json").write_text(json.dumps(s))
    v = jemcheck.read_verdict(str(tmp_path))
    assert v.holds is holds and v.decided is decided
    row = jemcheck.read_summary(str(tmp_path)).iloc[0]
    assert row.holds is holds and bool(row.decided) is decided


def copy_run(real_run, tmp_path):
    d = str(tmp_path / "run")
    shutil.copytree(real_run, d)
    return d


def first_results(d):
    return sorted(glob.glob(os.path.join(d, "results", "*.parquet")))[0]


def drop_manifest(d):
    os.remove(os.path.join(d, "manifest.json"))


def fifo(d):
    drop_manifest(d)
    f = first_results(d)
    os.remove(f)
    os.mkfifo(f)


def dev_zero(d):
    drop_manifest(d)
    f = first_results(d)
    os.remove(f)
    os.symlink("/dev/zero", f)


def folder(d):
    drop_manifest(d)
    f = first_results(d)
    os.remove(f)
    os.mkdir(f)


def garbage(d):
    drop_manifest(d)
    with open(first_results(d), "wb") as f:
        f.write(b"not parquet at all")


def changed(d):
    with open(first_results(d), "r+b") as f:
        f.seek(100)
        b = f.read(1)
        f.seek(100)
        f.write(bytes([b[0] ^ 1]))


def missing(d):
    os.remove(first_results(d))


def no_results(d):
    drop_manifest(d)
    shutil.rmtree(os.path.join(d, "results"))


def too_large(d, monkeypatch=None):
    monkeypatch.setattr(jemcheck.run, "MAX_PARQUET_BYTES", 100)


def declared_large(d, monkeypatch=None):
    monkeypatch.setattr(jemcheck.run, "MAX_DECODED_BYTES", 10)


@pytest.mark.parametrize("spoil, message", [
    (too_large, "more than the 100 allowed"),
    (declared_large, "its footer declares"),
    (fifo, "is a named pipe"),
    (dev_zero, "is a device"),
    (folder, "is a directory"),
    (garbage, "not a readable Parquet file"),
    (changed, "changed since the run wrote it"),
    (missing, "listed in manifest.json but missing"),
    (no_results, "no results/"),
], ids=lambda v: v.__name__ if callable(v) else None)
def test_refused(real_run, tmp_path, monkeypatch, spoil, message):
    d = copy_run(real_run, tmp_path)
    if spoil in (too_large, declared_large):
        spoil(d, monkeypatch)
    else:
        spoil(d)
    with pytest.raises(jemcheck.RunError, match=message):
        jemcheck.read_results(d)


def test_summary_refused(tmp_path, monkeypatch):
    big = tmp_path / "summary.json"
    big.write_text(json.dumps({"points": [], "pad": "x" * 200}))
    monkeypatch.setattr(jemcheck.run, "MAX_SUMMARY_BYTES", 100)
    with pytest.raises(jemcheck.RunError, match="more than the 100 allowed"):
        jemcheck.read_summary(str(tmp_path))


@pytest.mark.parametrize("url, message", [
    ("gs://bucket/run", "only local runs"),
    ("file://host/run", "not host 'host'"),
    ("/no/such/run", "not a folder"),
], ids=["gs", "file-host", "missing"])
def test_bad_location(url, message):
    with pytest.raises(jemcheck.RunError, match=message):
        jemcheck.read_results(url)
