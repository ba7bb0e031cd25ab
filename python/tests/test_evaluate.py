"""jemcheck.evaluate end to end (export → your function → evaluate) on tiny tasks, the tasks
it hands your function (the held-out split), and where it finds the binaries.

    JEMCHECK_BIN=DIR pytest python/tests/test_evaluate.py
"""

import importlib.util
import json
import math
import os
import shutil

import numpy as np
import pandas as pd
import pytest

import jemcheck
import jemcheck.evaluation as ev
from conftest import HERE, need

# A tiny 2-D point: 3 tasks of 200 draws (160 trained on, 40 held out), a 24×24 grid.
FLAGS = dict(samples=200, grid=24, steps=30, model="mlp:8")


class Gaussians:
    """A numpy model: one Gaussian per class fitted to the training draws, and the class
    frequencies; its logits are log π(y) + log N(x; μ_y, Σ_y). It records what it was given."""

    def __init__(self):
        self.seen = []

    def __call__(self, task):
        self.seen.append(task)
        out = np.empty((len(task.points), task.classes))
        for y in range(task.classes):
            x = task.x[task.y == y]
            mu, cov = x.mean(0), np.cov(x.T) + 1e-3 * np.eye(2)
            d = task.points - mu
            maha = np.einsum("ni,ij,nj->n", d, np.linalg.inv(cov), d)
            out[:, y] = math.log(len(x) / len(task.y)) - 0.5 * maha - 0.5 * math.log(np.linalg.det(2 * math.pi * cov))
        return out


@pytest.fixture(scope="module")
def bins():
    return need("export", "evaluate")


@pytest.fixture(scope="module")
def evaluated(bins, tmp_path_factory):
    """One evaluate() of the Gaussian model on gmm:2,1, kept in out."""
    out = str(tmp_path_factory.mktemp("eval") / "out")
    model = Gaussians()
    old = os.environ.get("JEMCHECK_BIN")
    os.environ["JEMCHECK_BIN"] = os.path.dirname(bins["export"])
    try:
        run = jemcheck.evaluate(model, task="gmm:2,1", tables=3, name="gauss", out=out, **FLAGS)
    finally:
        os.environ.pop("JEMCHECK_BIN") if old is None else os.environ.__setitem__("JEMCHECK_BIN", old)
    return run, model, out


def test_evaluate_end_to_end(evaluated):
    run, model, out = evaluated
    assert sorted(os.listdir(out)) == ["evaluated", "export", "logits.csv"]  # nothing else written there
    assert run.model == "external:gauss"
    assert sorted(run.results.method.unique()) == ["baseline", "external:gauss", "jem"]
    mine = run.results[run.results.method == "external:gauss"]
    assert sorted(mine.table_id) == [0, 1, 2]
    assert mine.kl_joint.map(math.isfinite).all()
    row = run.summary.set_index("method").loc["external:gauss"]
    assert math.isfinite(row.excess) and row.excess_ci_low <= row.excess <= row.excess_ci_high
    assert run.verdict.holds is None  # 3 tasks: undecided
    assert run.report.startswith(out)


def test_tasks_given(evaluated):
    """The function gets each task once, with the first 80% of its draws to train on."""
    run, model, out = evaluated
    assert [t.id for t in model.seen] == [0, 1, 2]
    ex = jemcheck.load_export(os.path.join(out, "export"))
    p = ex.point
    for t in model.seen:
        draws = p.samples[p.samples.task_id == t.id]
        if "heldout" in draws.columns:  # the export's marker: the last 40 of 200 draws, ⌈200 × 0.2⌉
            assert t.holdout == "the draws the export marks heldout = 1"
            assert draws.heldout.tolist() == [0] * 160 + [1] * 40
        assert len(t.y) == 160 and len(t.y_heldout) == 40
        np.testing.assert_array_equal(t.x, draws[["x0", "x1"]].to_numpy()[:160])
        np.testing.assert_array_equal(t.x_heldout, draws[["x0", "x1"]].to_numpy()[160:])
        np.testing.assert_array_equal(t.y, draws.y.to_numpy()[:160])
        assert t.points.shape == (576, 2) and t.classes == 2
        assert t.settings["steps"] == 30 and t.settings["model"] == "mlp:8"
    # The logits written are the function's, every digit.
    lg = pd.read_csv(os.path.join(out, "logits.csv"), **jemcheck.export.ROUND_TRIP)
    first = lg[(lg.task_id == 0)].sort_values(["cell", "y"]).logit.to_numpy().reshape(576, 2)
    np.testing.assert_array_equal(first, model(model.seen[0]))


def add_half(task):
    """The add-½ counting model of tables and binary tables (examples/frequency.py's)."""
    c = np.full((len(task.points), task.classes), 0.5)
    x = task.x[:, 0] if task.kind == "table" else (task.x << np.arange(task.x.shape[1])).sum(1)  # bits -> value
    np.add.at(c, (x, task.y), 1)
    return np.log(c)


@pytest.mark.parametrize("task, flags, points, train", [
    ("table", dict(samples=200), 2, 200),
    ("bits:4,2", dict(samples=200, model="mlp:8", steps=50), 16, 160),
], ids=["tables", "binary"])
def test_evaluate_tables(bins, monkeypatch, tmp_path, task, flags, points, train):
    """Tables: every draw trained on; binary tables: the protocol's split (the last 20% held
    out, as jemcheck's own methods); the support's values (bits) as points; add-½ counts fit
    the joint better than jemcheck's cross-entropy baseline."""
    monkeypatch.setenv("JEMCHECK_BIN", os.path.dirname(bins["export"]))
    seen = []
    run = jemcheck.evaluate(lambda t: seen.append(t) or add_half(t), task=task, tables=3, name="counts",
                            out=str(tmp_path / "o"), progress=False, **flags)
    assert [len(t.y) for t in seen] == [train] * 3 and all(len(t.y_heldout) == 200 - train for t in seen)
    assert len(seen[0].points) == points
    kl = run.results.groupby("method").kl_joint.mean()
    assert kl["external:counts"] < kl["baseline"], kl


def test_evaluate_temporary(bins, monkeypatch, tmp_path):
    """Without out, evaluate works in a temporary folder and removes it."""
    monkeypatch.setenv("JEMCHECK_BIN", os.path.dirname(bins["export"]))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    run = jemcheck.evaluate(Gaussians(), task="gmm:2,1", tables=2, name="tmp", progress=False, **FLAGS)
    assert run.path is None and run.report is None
    assert len(run.results[run.results.method == "external:tmp"]) == 2
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("fn, error, message", [
    (lambda t: np.zeros((3, 2)), ValueError, r"shape \(3, 2\), want \(points, classes\) = \(576, 2\)"),
    (lambda t: np.full((len(t.points), 2), np.nan), ValueError, "NaN"),
    (lambda t: np.full((len(t.points), 2), np.inf), ValueError, r"\+Inf"),
], ids=["shape", "nan", "inf"])
def test_bad_logits(bins, monkeypatch, tmp_path, fn, error, message):
    monkeypatch.setenv("JEMCHECK_BIN", os.path.dirname(bins["export"]))
    with pytest.raises(error, match=message):
        jemcheck.evaluate(fn, task="gmm:2,1", tables=2, out=str(tmp_path / "o"), progress=False, **FLAGS)


def test_binary_refuses(bins, monkeypatch, tmp_path):
    """A flag the export refuses surfaces as its own one-line message, with exit status 2."""
    monkeypatch.setenv("JEMCHECK_BIN", os.path.dirname(bins["export"]))
    with pytest.raises(jemcheck.JemcheckError, match=r"export refused its input \(exit 2\): .*nosuch") as e:
        jemcheck.evaluate(Gaussians(), task="nosuch:1", tables=2, out=str(tmp_path / "o"), progress=False)
    assert e.value.code == 2


@pytest.mark.parametrize("task, message", [
    ("images:8,2", "evaluate --onnx"),
    ("blocks:2,gmm:2,1", "use load_export and write_logits"),
], ids=["images", "blocks"])
def test_kind_refused(task, message):
    with pytest.raises(ValueError, match=message):
        jemcheck.evaluate(Gaussians(), task=task, progress=False)


def test_out_refused(tmp_path):
    """An out folder holding files evaluate() did not write is refused, and left as it was."""
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="notes.txt, which jemcheck.evaluate did not write"):
        jemcheck.evaluate(Gaussians(), out=str(tmp_path), progress=False)
    assert os.listdir(tmp_path) == ["notes.txt"]


def test_jemcheck_bin_wrong(monkeypatch, tmp_path):
    monkeypatch.setenv("JEMCHECK_BIN", str(tmp_path))
    with pytest.raises(jemcheck.JemcheckError, match=f"JEMCHECK_BIN={tmp_path} holds no executable export, evaluate"):
        jemcheck.find_binaries()


def test_build(monkeypatch, tmp_path, capfd):
    """No binaries anywhere, but Go and a checkout: they are built into its bin/, with a notice."""
    go = shutil.which("go")
    if not go:
        pytest.skip("needs Go on PATH")
    (tmp_path / "go.mod").write_text("module github.com/jemcheck/jemcheck\n\ngo 1.22\n")
    for n in ("export", "evaluate"):
        (tmp_path / "pipelines" / n).mkdir(parents=True)
        (tmp_path / "pipelines" / n / "main.go").write_text("package main\n\nfunc main() {}\n")
    monkeypatch.delenv("JEMCHECK_BIN", raising=False)
    monkeypatch.setenv("PATH", os.path.dirname(go))  # Go, and no jemcheck binary
    monkeypatch.chdir(tmp_path)
    paths = jemcheck.find_binaries()
    assert paths == {n: str(tmp_path / "bin" / n) for n in ("export", "evaluate")}
    assert all(os.access(p, os.X_OK) for p in paths.values())
    assert "jemcheck: building export and evaluate into " + str(tmp_path / "bin") in capfd.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["bin", "go.mod", "pipelines"]


def test_none_found(monkeypatch, tmp_path):
    monkeypatch.delenv("JEMCHECK_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(ev, "checkout_root", lambda starts=None: None)  # as where the package runs outside a checkout
    with pytest.raises(jemcheck.JemcheckError, match="set JEMCHECK_BIN to a folder holding them, put them on PATH"):
        jemcheck.find_binaries()


def test_path(bins, monkeypatch, tmp_path):
    """On PATH, only jemcheck's own binaries are taken (another program named evaluate is not)."""
    monkeypatch.delenv("JEMCHECK_BIN", raising=False)
    monkeypatch.setattr(ev, "checkout_root", lambda starts=None: None)
    real, other = tmp_path / "real", tmp_path / "other"
    for d in (real, other):
        d.mkdir()
        os.symlink(bins["export"], d / "export")
    os.symlink(bins["evaluate"], real / "evaluate")
    (other / "evaluate").write_text("#!/bin/sh\necho 'Usage: evaluate MODEL.pt'\n")
    os.chmod(other / "evaluate", 0o755)
    monkeypatch.setenv("PATH", str(real))
    assert jemcheck.find_binaries(build=False) == {"export": str(real / "export"), "evaluate": str(real / "evaluate")}
    monkeypatch.setenv("PATH", str(other))
    with pytest.raises(jemcheck.JemcheckError, match="found none"):
        jemcheck.find_binaries(build=False)


def test_checkout_root():
    root = ev.checkout_root([HERE])
    assert root and os.path.isfile(os.path.join(root, "pipelines", "export", "main.go"))
    assert ev.checkout_root(["/"]) is None


def hand_export(d, heldout=None, holdout=None):
    """A 2-D export of one task of 10 draws, optionally with a heldout column or a holdout share."""
    os.makedirs(os.path.join(d, "samples"))
    os.makedirs(os.path.join(d, "points"))
    s = pd.DataFrame({"task_id": 0, "x0": np.arange(10.0), "x1": -np.arange(10.0), "y": [0, 1] * 5})
    cols = ["task_id", "x0", "x1", "y"]
    if heldout is not None:
        s["heldout"] = heldout
        cols.append("heldout")
    s.to_csv(os.path.join(d, "samples/point-0000-part-00000.csv"), index=False)
    pd.DataFrame({"cell": [1, 0], "x0": [0.5, -0.5], "x1": [0.0, 0.0]}).to_csv(os.path.join(d, "points/point-0000.csv"), index=False)
    ep = {"point_id": 0, "kind": "plane", "task": "gmm:2,1", "classes": 2, "dimension": 2, "samples": 10, "tasks": 1,
          "ids": [0], "id_column": "task_id", "support_column": "cell", "support": 2, "grid": 1, "box": 1,
          "bounds": [[-1, 1], [-1, 1]], "files": {"samples": ["samples/point-0000-part-00000.parquet"],
                                                  "points": "points/point-0000.parquet", "truth": "",
                                                  "samples_columns": cols}}
    if holdout is not None:
        ep["split"] = {"column": "heldout", "holdout": holdout}
    with open(os.path.join(d, "export.json"), "w") as f:
        json.dump({"format": "jemcheck-export/1", "points": [ep]}, f)


@pytest.mark.parametrize("heldout, holdout, trained", [
    (None, None, [0, 1, 2, 3, 4, 5, 6, 7]),  # no marker: the last ceil(0.2·N) held out, as jemcheck's default
    (None, 0.25, [0, 1, 2, 3, 4, 5, 6]),  # export.json's holdout share: the last ceil(2.5) = 3
    ([0, 1, 0, 0, 0, 0, 0, 0, 0, 1], 0.25, [0, 2, 3, 4, 5, 6, 7, 8]),  # a heldout column decides
], ids=["default", "share", "column"])
def test_heldout_split(tmp_path, heldout, holdout, trained):
    hand_export(str(tmp_path), heldout, holdout)
    (t,) = ev.tasks_of(jemcheck.load_export(str(tmp_path)))
    np.testing.assert_array_equal(t.x[:, 0], trained)
    assert sorted(t.x[:, 0].tolist() + t.x_heldout[:, 0].tolist()) == list(range(10))
    np.testing.assert_array_equal(t.points, [[-0.5, 0.0], [0.5, 0.0]])  # in cell order


def test_tables_hold_nothing_out(tmp_path):
    """An export of tables without the marker: every draw is trained on, as jemcheck's methods do."""
    os.makedirs(tmp_path / "samples")
    os.makedirs(tmp_path / "points")
    pd.DataFrame({"table_id": 0, "x": [0, 1, 1, 0, 1], "y": [0, 0, 1, 1, 1]}).to_csv(
        tmp_path / "samples/point-0000-part-00000.csv", index=False)
    pd.DataFrame({"x": [1, 0]}).to_csv(tmp_path / "points/point-0000.csv", index=False)
    ep = {"point_id": 0, "kind": "table", "task": "table", "classes": 2, "dimension": 1, "samples": 5, "tasks": 1,
          "ids": [0], "id_column": "table_id", "support_column": "x", "support": 2,
          "files": {"samples": ["samples/point-0000-part-00000.parquet"], "points": "points/point-0000.parquet", "truth": ""}}
    (tmp_path / "export.json").write_text(json.dumps({"format": "jemcheck-export/1", "points": [ep]}))
    (tmp_path / "config.json").write_text(json.dumps({"options": {"holdout": 0.2}}))
    (t,) = ev.tasks_of(jemcheck.load_export(str(tmp_path)))
    assert t.x[:, 0].tolist() == [0, 1, 1, 0, 1] and len(t.y_heldout) == 0
    assert t.points[:, 0].tolist() == [0, 1]


def test_torch_example(bins, monkeypatch, tmp_path):
    """examples/torch_2d.py (exact JEM in torch) through evaluate, on 3 tiny tasks."""
    pytest.importorskip("torch", reason="examples/torch_2d.py needs torch")
    monkeypatch.setenv("JEMCHECK_BIN", os.path.dirname(bins["export"]))
    path = os.path.join(HERE, "..", "..", "examples", "torch_2d.py")
    spec = importlib.util.spec_from_file_location("torch_2d", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    run = mod.main(["--tables", "3", "--samples", "200", "--steps", "60", "--grid", "24", "--model", "mlp:8",
                    "--out", str(tmp_path / "o")])
    kl = run.results.groupby("method").kl_joint.mean()
    assert kl["external:torch-jem"] < kl["baseline"], kl  # an exact JEM fits the joint better than cross-entropy
