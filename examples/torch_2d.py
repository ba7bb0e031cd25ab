"""Your own PyTorch JEM, judged against the exact truth with one call (jemcheck.evaluate).

    python3 examples/torch_2d.py --task gmm:3,2 --tables 10 --out out/torch2d

jemcheck.evaluate exports the tasks (jemcheck's export binary), calls train_and_predict below
on each, writes its logits and scores them (jemcheck's evaluate binary) beside jemcheck's own
baseline and exact JEM trained on the same draws: every exact KL from the truth, the excess
joint KL over exact JEM with its 95% CI, and the verdict. Replace train_and_predict with your
model: it gets a jemcheck.Task and returns the logits f(x)[y] at task.points, shape
(points, classes).

The model here is the smallest exact JEM in torch: an MLP 2-H1-…-K with tanh hidden layers
(task.settings["model"], e.g. mlp:32,32), trained by Adam on the negative log joint
    −f(x)[y] + log Z,    Z = ∫_box Σ_y exp f(x)[y] dx,
with log Z summed exactly on a 32×32 grid over the box, shifted by a random offset every step
(as jemcheck's own `jem` computes it); --objective ce trains the plain classifier
(cross-entropy only) instead. It trains only on task.x, task.y: the draws jemcheck's own
methods train on (the export's held-out draws, the last 20% of each task, are in
task.x_heldout and are used only as jemcheck uses them: every --checks steps the held-out
negative log joint is measured and the iterate where it is least is kept, never the truth).
Its settings are the exported point's (task.settings: lr, steps, batch_size, model, seed),
so it trains as jemcheck's own methods do. A cell's logit is the log of the mean of
exp f(x)[y] over the cell by the 3×3 Gauss–Legendre rule, as jemcheck computes its own.

Needs torch, and jemcheck's Python package (pip install ./python: numpy, pandas, pyarrow)
or this checkout's python/ folder, which the script puts on its path; jemcheck.evaluate
finds or builds the Go binaries (python/README.md).
"""

import argparse
import math
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import jemcheck  # noqa: E402

TRAIN_GRID = 32  # the log Z grid per side (jemcheck's --train_grid default)
GL = [(0.5 - math.sqrt(3 / 5) / 2, 5 / 18), (0.5, 8 / 18), (0.5 + math.sqrt(3 / 5) / 2, 5 / 18)]  # 3-point Gauss–Legendre on [0, 1]


def mlp(spec, classes):
    """An MLP 2-H1-…-K with tanh hidden layers (spec "mlp:32,32"; "linear": no hidden layer),
    Glorot-uniform weights and zero biases."""
    hidden = [int(h) for h in spec.split(":", 1)[1].split(",")] if spec.startswith("mlp:") else []
    layers, width = [], 2
    for h in hidden:
        layers += [nn.Linear(width, h), nn.Tanh()]
        width = h
    layers.append(nn.Linear(width, classes))
    net = nn.Sequential(*layers).double()
    for m in net:
        if isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)
    return net


def log_z(net, bounds, offset):
    """log ∫_box Σ_y exp f: the sum over a TRAIN_GRID² grid of nodes at offset (in cells) times the cell area."""
    (lo0, hi0), (lo1, hi1) = bounds
    h0, h1 = (hi0 - lo0) / TRAIN_GRID, (hi1 - lo1) / TRAIN_GRID
    i = torch.arange(TRAIN_GRID, dtype=torch.float64)
    g0, g1 = torch.meshgrid(lo0 + (i + offset[0]) * h0, lo1 + (i + offset[1]) * h1, indexing="ij")
    f = net(torch.stack([g0.reshape(-1), g1.reshape(-1)], 1))
    return torch.logsumexp(f.reshape(-1), 0) + math.log(h0 * h1)


def cell_logits(net, task):
    """log of the mean of exp f(x)[y] over each evaluation cell (3×3 Gauss–Legendre), shape (points, classes)."""
    (lo0, hi0), (lo1, hi1) = task.bounds
    g = task.point.meta["grid"]
    h0, h1 = (hi0 - lo0) / g, (hi1 - lo1) / g
    centres = torch.as_tensor(task.points)
    parts = []
    with torch.no_grad():
        for a, wa in GL:
            for b, wb in GL:
                x = centres + torch.tensor([(a - 0.5) * h0, (b - 0.5) * h1], dtype=torch.float64)
                parts.append(net(x) + math.log(wa * wb))
    return torch.logsumexp(torch.stack(parts), 0)


def train_and_predict(task, objective="jem", checks=10):
    """Trains one model on task's training draws and returns its logits at task.points."""
    s = task.settings
    torch.manual_seed((s.get("seed") or 0) * 100003 + task.id)
    net = mlp(s.get("model") or "mlp:32,32", task.classes)
    opt = torch.optim.Adam(net.parameters(), lr=s.get("lr") or 0.003)
    x, y = torch.as_tensor(task.x), torch.as_tensor(task.y)
    xh, yh = torch.as_tensor(task.x_heldout), torch.as_tensor(task.y_heldout)
    steps, batch = s.get("steps") or 1500, min(s.get("batch_size") or 64, len(y))
    every = max(1, steps // checks)

    def heldout_nll():  # −mean log q(x, y) of the held-out draws: the selection rule, truth-free
        with torch.no_grad():
            return float(log_z(net, task.bounds, (0.5, 0.5)) - net(xh).gather(1, yh[:, None]).mean())

    best, best_state = math.inf, None
    perm, at = torch.randperm(len(y)), 0
    for step in range(1, steps + 1):
        if at + batch > len(y):
            perm, at = torch.randperm(len(y)), 0
        i = perm[at:at + batch]
        at += batch
        f = net(x[i])
        if objective == "jem":
            loss = log_z(net, task.bounds, torch.rand(2).tolist()) - f.gather(1, y[i][:, None]).mean()
        else:
            loss = nn.functional.cross_entropy(f, y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if len(yh) and (step % every == 0 or step == steps):
            nll = heldout_nll()
            if nll < best:
                best, best_state = nll, {k: v.clone() for k, v in net.state_dict().items()}
    if best_state is not None:
        net.load_state_dict(best_state)
    return cell_logits(net, task)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--task", default="gmm:3,2", help="a 2-D task: gmm:K,C, moons:SIGMA, circles:SIGMA")
    p.add_argument("--tables", type=int, default=10, help="how many tasks (a verdict needs 10)")
    p.add_argument("--samples", type=int, default=None, help="draws per task (default: jemcheck's, 2000)")
    p.add_argument("--steps", type=int, default=None, help="Adam steps, for your model and jemcheck's alike (default 1500)")
    p.add_argument("--grid", type=int, default=None, help="evaluation grid cells per side (default 64)")
    p.add_argument("--model", default=None, help="the network, for yours and jemcheck's (default mlp:32,32)")
    p.add_argument("--seed", type=int, default=None, help="run seed (default 1)")
    p.add_argument("--objective", choices=("jem", "ce"), default="jem", help="exact JEM, or the plain classifier")
    p.add_argument("--methods", default="baseline,jem", help="jemcheck's methods trained beside yours")
    p.add_argument("--name", default=None, help="your model's name (default torch-OBJECTIVE)")
    p.add_argument("--out", default=None, help="keep the export, logits and evaluated run (with report.html) here")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    flags = {k: v for k, v in (("samples", a.samples), ("steps", a.steps), ("grid", a.grid), ("model", a.model),
                               ("seed", a.seed)) if v is not None}
    name = a.name or f"torch-{a.objective}"
    run = jemcheck.evaluate(lambda t: train_and_predict(t, a.objective), task=a.task, tables=a.tables, name=name,
                            methods=a.methods, out=a.out, **flags)
    mine = run.results[run.results.method == run.model]
    print(f"\n{run.model}: mean joint KL {mine.kl_joint.mean():.4g} nats over {len(mine)} tasks")
    print(run.summary[["method", "kl_joint", "excess", "excess_ci_low", "excess_ci_high", "grade"]].to_string(index=False))
    print("verdict:", run.verdict.level or {None: "undecided", True: "holds", False: "fails"}[run.verdict.holds])
    if run.report:
        print("report:", run.report)
    return run


if __name__ == "__main__":
    main()
