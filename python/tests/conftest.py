"""Fixtures of the client's pytest tests: jemcheck's Go binaries and a real run made with them.

The binaries come from $JEMCHECK_BIN (a folder: scripts/test builds them there), else the
checkout's bin/ (GOEXPERIMENT=simd go build -o bin/ ./pipelines/...), else PATH; a test
that needs one that is missing skips, naming it.
"""

import os
import shutil
import subprocess

import pytest

import jemcheck.evaluation as ev

HERE = os.path.dirname(os.path.abspath(__file__))


def binary(name):
    """The path of jemcheck's binary name, or None."""
    folders = [os.environ.get("JEMCHECK_BIN")]
    root = ev.checkout_root([HERE, os.getcwd()])
    if root:
        folders.append(os.path.join(root, "bin"))
    for d in folders:
        if d and os.access(os.path.join(d, name), os.X_OK):
            return os.path.join(d, name)
    return shutil.which(name) if name == "control" else None


def need(*names):
    paths = {n: binary(n) for n in names}
    missing = [n for n, p in paths.items() if not p]
    if missing:
        pytest.skip(f"needs jemcheck's {', '.join(missing)} binaries: set JEMCHECK_BIN to a folder holding them "
                    "(GOEXPERIMENT=simd go build -o DIR/ ./pipelines/...) or build the checkout's bin/")
    return paths


def run_binary(path, *args, cwd=None):
    r = subprocess.run([path, *args], capture_output=True, text=True, cwd=cwd)
    assert r.returncode == 0, f"{os.path.basename(path)} {' '.join(args)}: exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r.stdout + r.stderr


# A small real run of control: 3 tasks of gmm:2,2 (too few for a verdict: undecided), two
# results files (--train_batch=4 with 2 methods puts 2 tasks in a block), curves every 10 steps.
TASKS, METHODS = 3, ("baseline", "jem")
CONTROL_FLAGS = ["--task=gmm:2,2", f"--tables={TASKS}", "--samples=200", "--grid=24", "--steps=30", "--model=mlp:8",
                 "--eval_every=10", "--train_batch=4", "--methods=" + ",".join(METHODS)]


@pytest.fixture(scope="session")
def real_run(tmp_path_factory):
    """The folder of a finished control run (CONTROL_FLAGS)."""
    control = need("control")["control"]
    out = str(tmp_path_factory.mktemp("run") / "out")
    run_binary(control, *CONTROL_FLAGS, "--out=" + out)
    return out
