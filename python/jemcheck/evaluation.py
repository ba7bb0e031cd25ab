"""jemcheck.evaluate: judge your own model against the exact truth in one call.

    import jemcheck

    def my_model(task):                      # called once per task
        f = train(task.x, task.y)            # the training draws only (held-out draws excluded)
        return f(task.points)                # logits f(x)[y] at the evaluation points: (support, classes)

    run = jemcheck.evaluate(my_model, task="gmm:3,2", tables=10, name="mine")
    print(run.verdict)                       # holds True / False / None (undecided)
    run.results                              # one row per task × method, every result column

evaluate runs jemcheck's `export` binary, calls fn on each exported task, writes the
logits in evaluate's contract (write_logits) and runs jemcheck's `evaluate` binary, which
trains jemcheck's baseline and exact jem on the same draws and scores every model
against the truth. The binaries are found in this order: the folder $JEMCHECK_BIN; the
bin/ of the jemcheck checkout (the folder holding jemcheck's go.mod, searched upward
from the working directory and from this file); PATH. With none of these but Go and a
checkout, they are built into the checkout's bin/ once, as the README does.
"""

import dataclasses
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from .export import load_export, write_logits
from .run import RunError, load_run, read_bounded

MODULE = "github.com/jemcheck/jemcheck"
BINARIES = ("export", "evaluate")
# The kinds evaluate() takes (the export's point kind): random joint tables, binary tables, 2-D tasks.
KINDS = ("table", "bits", "plane")
# The files evaluate() writes in its out folder: the export, the logits and the evaluated run.
OUT_ENTRIES = ("export", "logits.csv", "evaluated")
HELDOUT_COLUMN = "heldout"  # the export's held-out marker in the samples (1: held out), unless export.json's split names another
DEFAULT_HOLDOUT = 0.2  # jemcheck's --holdout default (docs/protocol.md)


class JemcheckError(RuntimeError):
    """A jemcheck binary failed, or could not be found: the message says which and why.

    code is the binary's exit status (2: the input was refused; None: it did not run).
    """

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code


@dataclasses.dataclass
class Task:
    """One exported task, as evaluate() hands it to your function.

    x, y: the training draws (x float64 of shape (n, D): the 2-D coordinates x0, x1;
    tables: the value x as (n, 1) int64; binary tables: the D bits as (n, D) int64; y
    int64 class labels 0..classes-1). Only the draws jemcheck's own methods train on:
    the held-out draws (those the export marks heldout = 1; an export without the
    marker: on 2-D tasks the last ⌈N·holdout⌉ of each task, holdout from config.json,
    else 0.2; on tables none) are
    in x_heldout, y_heldout, for your own truth-free model selection (jemcheck selects
    its runs by held-out NLL the same way). holdout says which rule applied.
    points: the evaluation support, one row per point in the order of its number
    (2-D: the grid cells' centres, cell c = row c; tables: 0..X-1): fn returns logits at
    these rows. settings: the point's own training settings (lr, steps, batch_size,
    model, seed), for a model trained as jemcheck trains its own.
    """

    id: int
    kind: str
    task: str
    classes: int
    x: np.ndarray
    y: np.ndarray
    x_heldout: np.ndarray
    y_heldout: np.ndarray
    points: np.ndarray
    bounds: list
    holdout: str
    settings: dict
    point: object = dataclasses.field(repr=False)  # the export's Point (meta: export.json's entry)


# --- finding the binaries -----------------------------------------------------------


def _is_checkout(d):
    gomod = os.path.join(d, "go.mod")
    if not os.path.isfile(gomod):
        return False
    try:
        text = read_bounded(gomod, 1 << 20).decode("utf-8", "replace")
    except RunError:
        return False
    return any(line.split()[:2] == ["module", MODULE] for line in text.splitlines())


def checkout_root(starts=None):
    """The jemcheck checkout holding the working directory or this package (its go.mod
    names module github.com/jemcheck/jemcheck), or None."""
    for start in starts or (os.getcwd(), os.path.dirname(os.path.abspath(__file__))):
        d = os.path.abspath(start)
        while True:
            if _is_checkout(d):
                return d
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
    return None


def _executable(p):
    return os.path.isfile(p) and os.access(p, os.X_OK)


def _jemcheck_binary(p, name):
    """Whether p is jemcheck's binary name: its --help starts with its usage line and
    names its source (./pipelines/NAME)."""
    try:
        r = subprocess.run([p, "--help"], capture_output=True, text=True, errors="replace", timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    out = r.stdout + r.stderr
    return out.lstrip().startswith(f"Usage: {name} ") and f"./pipelines/{name}" in out


def find_binaries(build=True):
    """{name: path} of jemcheck's export and evaluate binaries (the order is the module's docstring).

    Raises JemcheckError naming what to do when they cannot be found or built.
    """
    env = os.environ.get("JEMCHECK_BIN")
    if env:
        paths = {n: os.path.join(env, n) for n in BINARIES}
        missing = [p for p in paths.values() if not _executable(p)]
        if missing:
            raise JemcheckError(f"JEMCHECK_BIN={env} holds no executable {', '.join(os.path.basename(m) for m in missing)}: "
                                "build them there (GOEXPERIMENT=simd go build -o \"$JEMCHECK_BIN\"/ ./pipelines/... in a "
                                "jemcheck checkout) or unset JEMCHECK_BIN")
        return paths
    root = checkout_root()
    if root:
        paths = {n: os.path.join(root, "bin", n) for n in BINARIES}
        if all(_executable(p) for p in paths.values()):
            return paths
    found = {n: shutil.which(n) for n in BINARIES}
    if all(p and _jemcheck_binary(p, n) for n, p in found.items()):
        return found
    if build and root and shutil.which("go"):
        cmd = ["go", "build", "-o", "bin/"] + [f"./pipelines/{n}" for n in BINARIES]
        env = dict(os.environ)
        env.setdefault("GOEXPERIMENT", "simd")
        print(f"jemcheck: building export and evaluate into {os.path.join(root, 'bin')} "
              f"(GOEXPERIMENT={env['GOEXPERIMENT']} {' '.join(cmd)}; once, a few minutes)", file=sys.stderr)
        r = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, errors="replace")
        if r.returncode != 0:
            raise JemcheckError(f"building jemcheck's binaries failed (exit {r.returncode}): {(r.stderr or r.stdout).strip()}",
                                r.returncode)
        return {n: os.path.join(root, "bin", n) for n in BINARIES}
    raise JemcheckError(
        "jemcheck.evaluate needs jemcheck's export and evaluate binaries and found none: set JEMCHECK_BIN to a folder "
        "holding them, put them on PATH, or run from a jemcheck checkout with Go installed (then they are built into "
        "its bin/: GOEXPERIMENT=simd go build -o bin/ ./pipelines/...)")


# --- running a binary ---------------------------------------------------------------


def _flag(k, v):
    if v is True:
        return f"--{k}"
    if v is False:
        return f"--{k}=false"
    if isinstance(v, (list, tuple)):
        v = ",".join(str(e) for e in v)
    return f"--{k}={v}"


def _run(cmd, cwd, progress):
    """Runs a jemcheck binary in cwd; its output is printed as it comes (progress) and kept.

    Raises JemcheckError with the binary's own message (its last line) on a non-zero exit.
    """
    name = os.path.basename(cmd[0])
    lines = []
    # The binary's temporary files (Beam's loopback worker leaves one in $TMPDIR per run) go
    # to a folder of cwd, removed after it.
    tmp = tempfile.mkdtemp(prefix=".tmp-", dir=cwd)
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                         stdin=subprocess.DEVNULL, env=dict(os.environ, TMPDIR=tmp))
    try:
        for line in p.stdout:
            line = line.rstrip("\n")
            lines.append(line)
            if progress:
                print(line, flush=True)
        rc = p.wait()
    except BaseException:  # KeyboardInterrupt included: stop the binary (it keeps --out intact)
        p.terminate()
        p.wait()
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if rc != 0:
        msg = next((t for t in reversed(lines) if t.strip()), "(no output)")
        what = "refused its input" if rc == 2 else "failed"
        raise JemcheckError(f"{name} {what} (exit {rc}): {msg.strip()}", rc)
    return "\n".join(lines)


# --- the tasks ----------------------------------------------------------------------


def _holdout_share(point, config):
    """The held-out share of the point's draws, and where it came from (an export without
    the marker: tables and binary tables hold nothing out, the other kinds config.json's
    --holdout)."""
    if point.kind in ("table", "bits") and not point.meta.get("split"):
        return 0.0, "tables hold nothing out"
    for src, v in (("export.json", (point.meta.get("split") or {}).get("holdout")),
                   ("config.json", ((config.get("options") or {}).get("holdout")))):
        if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 0.5:
            return float(v), src
    return DEFAULT_HOLDOUT, "jemcheck's default"


def _train_rows(n, share):
    """How many of a task's n draws are trained on: the first n − ⌈n·share⌉, at least 1
    (tasks.Options.HoldoutSplit)."""
    return max(1, n - math.ceil(n * share))


def _design(point, frame):
    """The inputs of frame's rows as an array: 2-D x0, x1; tables x; binary tables the D bits."""
    if point.kind == "plane":
        return frame[["x0", "x1"]].to_numpy(dtype=np.float64)
    x = frame["x"].to_numpy(dtype=np.int64)
    if point.kind == "bits":
        return (x[:, None] >> np.arange(point.dimension)[None, :]) & 1
    return x[:, None]


def _refused_kind(kind, task):
    if kind == "images":
        how = "an images task judges your classifier as an ONNX file: evaluate --onnx (docs/export-evaluate.md)"
    else:
        how = "use load_export and write_logits, then the evaluate binary (docs/export-evaluate.md)"
    return f"jemcheck.evaluate takes tables, binary tables and 2-D tasks, not {kind} ({task}): {how}"


def tasks_of(export, point=None):
    """The Tasks of an export's point (the only point by default), in task-id order."""
    p = export.point if point is None else point
    if p.kind not in KINDS:
        raise ValueError(_refused_kind(p.kind, p.task))
    cfg_points = {c.get("point_id"): c for c in export.config.get("points") or []}
    cp = cfg_points.get(p.point_id, {})
    settings = {k: cp.get(k, p.meta.get(k)) for k in ("lr", "steps", "batch_size", "model")}
    settings["seed"] = (export.config.get("options") or {}).get("seed")
    support = p.points.sort_values(p.support_column)
    if list(support[p.support_column]) != list(range(len(support))):
        raise ValueError(f"{export.path}: the points are not numbered 0..{len(support) - 1}")
    points = _design(p, support)
    share, src = _holdout_share(p, export.config)
    out = []
    col = (p.meta.get("split") or {}).get("column") or HELDOUT_COLUMN
    for tid, d in p.samples.groupby(p.id_column, sort=True):
        if col in d.columns:
            held = d[col].to_numpy() != 0
            how = f"the draws the export marks {col} = 1"
        else:
            held = np.arange(len(d)) >= _train_rows(len(d), share)
            how = f"the last ceil(N*{share:g}) draws ({src})"
        x, y = _design(p, d), d[p.label_column].to_numpy(dtype=np.int64)
        out.append(Task(id=int(tid), kind=p.kind, task=p.task, classes=p.classes, x=x[~held], y=y[~held],
                        x_heldout=x[held], y_heldout=y[held], points=points, bounds=p.bounds, holdout=how,
                        settings=settings, point=p))
    return out


def _logits_array(v, task):
    if hasattr(v, "detach"):  # a torch tensor
        v = v.detach().cpu().numpy()
    a = np.asarray(v, dtype=np.float64)
    want = (len(task.points), task.classes)
    if a.shape != want:
        raise ValueError(f"task {task.id}: your function returned logits of shape {a.shape}, want (points, classes) = {want}")
    return a


# --- evaluate -----------------------------------------------------------------------


def _check_out(out):
    if os.path.lexists(out) and not os.path.isdir(out):
        raise ValueError(f"out={out} is not a folder")
    if os.path.isdir(out):
        other = sorted(e for e in os.listdir(out) if e not in OUT_ENTRIES and not e.startswith(".tmp-"))
        if other:
            raise ValueError(f"out={out} holds {', '.join(other[:5])}{' …' if len(other) > 5 else ''}, which "
                             f"jemcheck.evaluate did not write: give a new or empty folder (it writes only "
                             f"{', '.join(OUT_ENTRIES)} there)")
    os.makedirs(out, exist_ok=True)


def evaluate(fn, task="gmm:3,2", tables=10, *, name="python", methods="baseline,jem", out=None, progress=True,
             **flags):
    """Exports tasks, trains your model on each with fn, and scores it beside exact JEM.

    fn(task) is called once per task with a Task (task.x, task.y: the training draws;
    task.points: the evaluation points; task.classes, task.bounds, task.settings) and
    returns the model's logits f(x)[y] at task.points: an array of shape (points,
    classes) (numpy, a torch tensor, anything np.asarray takes), finite or −inf. On 2-D
    tasks the logit of a cell is f at its centre (the one-point rule; docs/export-
    evaluate.md has the 3×3 rule jemcheck uses for its own runs). Logits are a JEM's:
    q(x, y) ∝ exp f(x)[y], so a constant added to all of a task's logits changes nothing.

    task, tables and **flags are the export's task flags (as control's: samples=,
    seed=, grid=, steps=, …; True is a bare --flag); methods are jemcheck's methods
    trained beside your model (exact jem gives the excess KL); name names your model
    (its rows are method "external:NAME").

    out: a new or empty folder that keeps the export (out/export), the logits
    (out/logits.csv) and the evaluated run with its report (out/evaluated); nothing is
    written outside it. Without out, a temporary folder is used and removed once the run
    is read (Run.path is then None). progress prints the binaries' output as it comes.

    Returns the evaluated run (load_run): .results (one row per task × method),
    .summary, .curves, .verdict (holds True, False, or None when undecided) and .model
    (your model's method name). Raises JemcheckError when a binary fails (code 2: its
    input was refused, with its one-line message), ValueError for logits of the wrong
    shape, NaN or +inf, and whatever fn raises.
    """
    kind = str(task).split(":", 1)[0]
    if kind in ("blocks", "images"):
        raise ValueError(_refused_kind(kind, task))
    bins = find_binaries()
    tmp = None
    if out is None:
        tmp = tempfile.mkdtemp(prefix="jemcheck-")
        work = tmp
    else:
        work = os.path.abspath(os.fspath(out))
        _check_out(work)
    try:
        export_dir, logits, run_dir = (os.path.join(work, e) for e in OUT_ENTRIES)
        args = [bins["export"], _flag("task", task), _flag("tables", tables)]
        args += [_flag(k, v) for k, v in flags.items()] + ["--out=" + export_dir]
        _run(args, work, progress)
        ex = load_export(export_dir, truth=False)
        if len(ex.points) != 1:
            raise ValueError(f"jemcheck.evaluate takes one task point, the export has {len(ex.points)}")
        tasks = tasks_of(ex)
        if progress and tasks:
            print(f"jemcheck: training {name} on {len(tasks)} tasks of {tasks[0].task} "
                  f"({len(tasks[0].y)} draws each; held out: {tasks[0].holdout})", flush=True)
        arrays, t0 = {}, time.monotonic()
        for i, t in enumerate(tasks):
            t1 = time.monotonic()
            arrays[t.id] = _logits_array(fn(t), t)
            if progress:
                print(f"jemcheck: task {t.id} ({i + 1} of {len(tasks)}) in {time.monotonic() - t1:.1f} s", flush=True)
        if progress:
            print(f"jemcheck: {name} trained on {len(tasks)} tasks in {time.monotonic() - t0:.1f} s", flush=True)
        write_logits(arrays, logits, point=ex.point, model=name)
        _run([bins["evaluate"], "--from=" + export_dir, "--logits=" + logits, _flag("methods", methods),
              "--out=" + run_dir], work, progress)
        run = load_run(run_dir)
        run.model = "external:" + name
        if tmp is not None:
            run.path = None
        return run
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
