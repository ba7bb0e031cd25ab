"""The official JEM recipe as a jemcheck client: train on exported 2-D tasks, write logits.

jemcheck's `export` pipeline writes its tasks' training draws and evaluation points; this script
trains, on each task, a JEM with the reference implementation's recipe (Grathwohl et al., ICLR
2020; wgrathwohl/JEM train_wrn_ebm.py) under the reference implementation's flag names, and
writes the model's logits on the evaluation points for jemcheck's `evaluate` pipeline, which
scores them against the exact truth (examples/README.md has the whole path and the columns).

    GOEXPERIMENT=simd go run ./pipelines/export --task=gmm:3,2 --tables=20 --out=out/export --csv
    python3 examples/official_jem.py --export out/export --out out/official.csv
    GOEXPERIMENT=simd go run ./pipelines/evaluate --from=out/export --logits=out/official.csv --methods=jem,sgld --out=out/evaluated

The protocol: each task trains on the draws whose heldout column is 0 (export.json's "split":
the draws jemcheck's own exact JEM trains on; the last ones are held out for its selection),
so both sides of evaluate's comparison see the same data.

The recipe, per task (the reference implementation's, adapted to a 2-D task as jemcheck's own
`sgld` method adapts it, models/kernel/sgld2d.go):
  - model: an MLP 2-H1-...-Hn-K with tanh hidden layers (export.json's "model", e.g. mlp:32,32;
    --model overrides), Glorot-uniform weights and zero biases as jemcheck initialises it;
    f(x)[y] are the logits and logsumexp_y f(x) = -E(x) the unnormalised log q(x);
  - loss: CE(f(x), y) + p_x_weight * (mean_q logsumexp f(x_q) - mean_data logsumexp f(x)),
    the reference's L = w_px * -(fp - fq) + w_pyx * CE with w_pyx = 1 and no p(x|y) term;
  - negatives: the reference's persistent replay buffer of --buffer_size chains (per task),
    initialised uniformly on the box [-box, box]^2 (the reference: U(-1, 1) images); per step
    --batch_size slots drawn with replacement (torch.randint, as the reference), each restarted
    uniformly on the box with probability --reinit_freq, then --n_steps SGLD steps
        x <- x + sgld_lr * grad_x logsumexp_y f(x) + sgld_std * N(0, I)
    (the reference's "improper" SGLD), written back to their slots; no gradient through them;
    --sgld_clamp clamps the chains to the box after every step (jemcheck's option; off in both);
  - optimiser: Adam (the reference's --optimizer adam; betas 0.9, 0.999, eps 1e-8), a constant
    --lr, for --steps optimiser steps (or --n_epochs epochs of floor(N / batch_size) steps);
    minibatches of --batch_size draws from a per-epoch shuffle, the same batch for the CE and the
    p(x) term (jemcheck's; --separate_px_batch draws the p(x) batch separately, as the
    reference's two loaders do);
  - divergence guard: the reference stops at |L| > 1e8; here, as jemcheck's sgld, a step whose
    loss or mean logsumexp on the data or on the negatives is non-finite or above --max_energy
    (1e3) in size is not applied and the task keeps its last good parameters (a warning says so).
The defaults of --lr, --steps, --batch_size, --model and --seed are the exported point's (from
export.json, else the export's config.json; jemcheck's 2-D defaults are 0.003, 1500, 64,
mlp:32,32); --n_steps 20, --sgld_lr 1.0, --sgld_std 0.01,
--buffer_size 10000, --reinit_freq 0.05 and --p_x_weight 1.0 are the reference implementation's,
which jemcheck's sgld also uses by default.

Torch runs on one thread (torch.set_num_threads(1)); every draw is seeded by --seed (default: the
point's seed) and the task id, so a run is repeatable.

Input: EXPORT/export.json and the files it names (CSV, or Parquet when pyarrow is importable).
Output (--out, CSV): task_id, cell, y, logit, model: one row per task x evaluation point x class;
a cell's logit is the log of the model's mean of exp f(x)[y] over the cell by the 3x3
Gauss-Legendre rule, as jemcheck computes its own runs' (--cell_rule centre: f at the centre).
--export and --out default to $JEMCHECK_EXPORT and $JEMCHECK_LOGITS, so the script also runs as
evaluate's --command='python3 examples/official_jem.py'.

Setup: apt-get install -y python3-torch python3-numpy python3-pandas
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--export", default=os.environ.get("JEMCHECK_EXPORT"),
                   help="the export directory (holds export.json; default $JEMCHECK_EXPORT)")
    p.add_argument("--out", default=os.environ.get("JEMCHECK_LOGITS"),
                   help="the logits CSV to write (default $JEMCHECK_LOGITS)")
    p.add_argument("--point", type=int, default=None, help="the point_id of export.json to train (default: the first)")
    p.add_argument("--tasks", type=int, default=0, help="train the first N tasks only (0: all)")
    p.add_argument("--model_name", default="official-jem", help="the model column of the logits file")
    p.add_argument("--model", default=None, help="linear or mlp:H1,H2,... (default: the point's)")
    p.add_argument("--seed", type=int, default=None, help="seed (default: the point's)")
    # The reference implementation's flags (train_wrn_ebm.py), with its defaults where they apply.
    p.add_argument("--n_steps", type=int, default=20, help="SGLD steps per training step")
    p.add_argument("--sgld_lr", type=float, default=1.0, help="SGLD step on grad_x logsumexp f(x)")
    p.add_argument("--sgld_std", type=float, default=1e-2, help="SGLD noise standard deviation")
    p.add_argument("--buffer_size", type=int, default=10000, help="replay buffer chains per task")
    p.add_argument("--reinit_freq", type=float, default=0.05, help="per-chain probability of a uniform restart")
    p.add_argument("--p_x_weight", type=float, default=1.0, help="weight of the log p(x) term")
    p.add_argument("--p_y_given_x_weight", type=float, default=1.0, help="weight of the cross-entropy term")
    p.add_argument("--lr", type=float, default=None, help="Adam learning rate (default: the point's)")
    p.add_argument("--batch_size", type=int, default=None, help="minibatch, and negatives per step (default: the point's)")
    p.add_argument("--optimizer", choices=["adam"], default="adam", help="the reference's default; the only one here")
    p.add_argument("--n_epochs", type=int, default=None, help="epochs of floor(N / batch_size) steps (instead of --steps)")
    p.add_argument("--steps", type=int, default=None, help="optimiser steps (default: the point's)")
    # jemcheck's 2-D adaptations.
    p.add_argument("--sgld_clamp", action="store_true", help="clamp the chains to the box after every SGLD step")
    p.add_argument("--separate_px_batch", action="store_true",
                   help="draw the p(x) term's batch apart from the CE batch (the reference's two loaders)")
    p.add_argument("--max_energy", type=float, default=1e3, help="divergence guard on |loss| and |mean logsumexp f|")
    p.add_argument("--cell_rule", choices=["gl3", "centre"], default="gl3",
                   help="a cell's logit: log of the mean of exp f over the cell by the 3x3 Gauss-Legendre rule "
                        "(jemcheck's own runs) or f at the centre (the one-point rule)")
    a = p.parse_args(argv)
    if not a.export or not a.out:
        p.error("give --export and --out (or set $JEMCHECK_EXPORT and $JEMCHECK_LOGITS)")
    if a.n_epochs is not None and a.steps is not None:
        p.error("give --steps or --n_epochs, not both")
    return a


def read_table(export, rel):
    """A file of the export: the Parquet file when pyarrow is importable, else its .csv sibling."""
    path = os.path.join(export, rel)
    stem, ext = os.path.splitext(path)
    if ext != ".parquet":
        return pd.read_csv(path)
    try:
        import pyarrow  # noqa: F401
        if os.path.exists(path):
            return pd.read_parquet(path)
    except ImportError:
        pass
    if not os.path.exists(stem + ".csv"):
        sys.exit(f"official_jem: {rel}: cannot read Parquet here (pyarrow) and {stem}.csv is missing: export with --csv")
    return pd.read_csv(stem + ".csv")


def parse_model(spec):
    """linear or mlp:H1,H2,... -> hidden widths."""
    if spec == "linear":
        return []
    kind, _, widths = spec.partition(":")
    if kind != "mlp" or not widths:
        sys.exit(f"official_jem: model {spec!r}: want linear or mlp:H1,H2,...")
    return [int(w) for w in widths.split(",")]


class MLP(nn.Module):
    """2 -> H1 -> ... -> K, tanh hidden layers; Glorot-uniform weights, zero biases (jemcheck's)."""

    def __init__(self, hidden, k):
        super().__init__()
        sizes = [2] + hidden + [k]
        self.layers = nn.ModuleList(nn.Linear(i, o) for i, o in zip(sizes, sizes[1:]))
        for l in self.layers:
            if len(self.layers) == 1:  # jemcheck's linear model: uniform(-1, 1) weights and biases
                nn.init.uniform_(l.weight, -1, 1)
                nn.init.uniform_(l.bias, -1, 1)
            else:
                nn.init.xavier_uniform_(l.weight)
                nn.init.zeros_(l.bias)

    def forward(self, x):
        for l in self.layers[:-1]:
            x = torch.tanh(l(x))
        return self.layers[-1](x)


def lse(f, x):
    """logsumexp_y f(x)[y] = -E(x), the unnormalised log q(x)."""
    return torch.logsumexp(f(x), 1)


def sample_q(f, buffer, a, box, gen):
    """The reference's get_sample_q: draw slots, restart some, run SGLD, write back."""
    bs = a.batch_size
    inds = torch.randint(0, buffer.shape[0], (bs,), generator=gen)
    buffer_samples = buffer[inds]
    random_samples = (2 * torch.rand(bs, 2, generator=gen) - 1) * box
    choose_random = (torch.rand(bs, generator=gen) < a.reinit_freq).float()[:, None]
    x_k = (choose_random * random_samples + (1 - choose_random) * buffer_samples).requires_grad_(True)
    for _ in range(a.n_steps):
        f_prime = torch.autograd.grad(lse(f, x_k).sum(), [x_k])[0]
        x_k.data += a.sgld_lr * f_prime + a.sgld_std * torch.randn(x_k.shape, generator=gen)
        if a.sgld_clamp:
            x_k.data.clamp_(-box, box)
    final = x_k.detach()
    buffer[inds] = final
    return final


class Batches:
    """Minibatches of b draws from a per-epoch shuffle, taken across epoch boundaries."""

    def __init__(self, n, b, gen):
        self.n, self.b, self.gen = n, b, gen
        self.order, self.pos = None, n

    def next(self):
        parts, got = [], 0
        while got < self.b:
            if self.pos == self.n:
                self.order, self.pos = torch.randperm(self.n, generator=self.gen), 0
            take = min(self.b - got, self.n - self.pos)
            parts.append(self.order[self.pos:self.pos + take])
            self.pos += take
            got += take
        return torch.cat(parts)


def train_task(x, y, k, hidden, box, a, seed):
    """One task's JEM; returns the model and the step its guard fired at (0: none)."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    f = MLP(hidden, k)
    opt = torch.optim.Adam(f.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8)
    buffer = (2 * torch.rand(a.buffer_size, 2, generator=gen) - 1) * box
    data, px_data = Batches(len(y), a.batch_size, gen), Batches(len(y), a.batch_size, gen)
    for step in range(1, a.steps + 1):
        i = data.next()
        x_lab, y_lab = x[i], y[i]
        x_p_d = x[px_data.next()] if a.separate_px_batch else x_lab
        x_q = sample_q(f, buffer, a, box, gen)
        fp, fq = lse(f, x_p_d).mean(), lse(f, x_q).mean()
        loss = a.p_x_weight * -(fp - fq) + a.p_y_given_x_weight * F.cross_entropy(f(x_lab), y_lab)
        worst = max(abs(loss.item()), abs(fp.item()), abs(fq.item()))
        if not math.isfinite(worst) or worst > a.max_energy:
            return f, step  # the parameters of the last good step
        opt.zero_grad()
        loss.backward()
        state = [p.detach().clone() for p in f.parameters()]
        opt.step()
        if not all(torch.isfinite(p).all() for p in f.parameters()):
            with torch.no_grad():
                for p, s in zip(f.parameters(), state):
                    p.copy_(s)
            return f, step
    return f, 0


# The 3-point Gauss-Legendre rule on [0, 1]: nodes 1/2 and 1/2 -+ sqrt(3/5)/2, weights 5/18, 8/18, 5/18
# (prob.CellRule, the rule of jemcheck's own cell logits and of the truth's cell masses).
GL3_OFFSETS = [0.5 - math.sqrt(0.6) / 2, 0.5, 0.5 + math.sqrt(0.6) / 2]
GL3_WEIGHTS = [5 / 18, 8 / 18, 5 / 18]


def cell_logits(f, centres, h, rule):
    """The logits of the cells of width h at the centres: log of the mean of exp f(x)[y] over each
    cell by the 3x3 Gauss-Legendre rule (gl3), or f at the centre (centre). [cells, K] float64."""
    with torch.no_grad():
        if rule == "centre":
            return f(centres.float()).double().numpy()
        parts = []
        for oa, wa in zip(GL3_OFFSETS, GL3_WEIGHTS):
            for ob, wb in zip(GL3_OFFSETS, GL3_WEIGHTS):
                x = centres + torch.tensor([oa - 0.5, ob - 0.5], dtype=torch.float64) * h
                parts.append(f(x.float()).double() + math.log(wa * wb))
        return torch.logsumexp(torch.stack(parts), 0).numpy()


def main(argv=None):
    a = parse_args(argv)
    torch.set_num_threads(1)
    with open(os.path.join(a.export, "export.json")) as fh:
        ex = json.load(fh)
    if ex.get("format") != "jemcheck-export/1":
        sys.exit(f"official_jem: {a.export}/export.json: format {ex.get('format')!r}, want jemcheck-export/1")
    points = ex["points"]
    if a.point is None:
        pt = points[0]
        if len(points) > 1:
            print(f"official_jem: {len(points)} points in the export; training point {pt['point_id']} (--point)", file=sys.stderr)
    else:
        pt = next((q for q in points if q["point_id"] == a.point), None)
        if pt is None:
            sys.exit(f"official_jem: no point {a.point} in the export")
    if pt.get("kind", "plane") != "plane" or pt.get("dimension", 2) != 2:
        sys.exit(f"official_jem: point {pt['point_id']} is a {pt.get('kind')} point of dimension {pt.get('dimension')}: this client trains 2-D tasks")
    # The point's settings: export.json's, else config.json's (the run's configuration),
    # else jemcheck's 2-D defaults.
    cfg = {}
    if ex.get("config") and os.path.exists(os.path.join(a.export, ex["config"])):
        with open(os.path.join(a.export, ex["config"])) as fh:
            cfg = json.load(fh)
    cpt = next((q for q in cfg.get("points", []) if q.get("point_id") == pt["point_id"]), {})

    def setting(key, default):
        v = pt.get(key, cpt.get(key))
        return default if v in (None, 0, "") else v

    if a.lr is None:
        a.lr = float(setting("lr", 3e-3))
    if a.batch_size is None:
        a.batch_size = int(setting("batch_size", 64))
    hidden = parse_model(a.model or setting("model", "mlp:32,32"))
    seed = int(pt.get("seed", cfg.get("options", {}).get("seed", 1))) if a.seed is None else a.seed
    k, box = int(pt["classes"]), float(pt["box"])
    id_col, sup_col = pt.get("id_column", "task_id"), pt.get("support_column", "cell")

    files = pt["files"]
    samples = pd.concat([read_table(a.export, f) for f in files["samples"]], ignore_index=True)
    cells = read_table(a.export, files["points"]).sort_values(sup_col)
    xc = torch.tensor(cells[["x0", "x1"]].to_numpy(np.float64))
    h = 2 * box / int(pt.get("grid") or round(math.sqrt(len(cells))))  # the cell width
    ids = list(pt["ids"])[: a.tasks or None]
    if a.n_epochs is not None:
        a.steps = a.n_epochs * max(1, int(pt["samples"]) // a.batch_size)
    elif a.steps is None:
        a.steps = int(setting("steps", 1500))
    print(f"official_jem: point {pt['point_id']} {pt['task']}: {len(ids)} tasks, model {hidden} K={k}, "
          f"{a.steps} Adam steps lr {a.lr} batch {a.batch_size}, SGLD n_steps {a.n_steps} sgld_lr {a.sgld_lr} "
          f"sgld_std {a.sgld_std} buffer {a.buffer_size} reinit {a.reinit_freq}, p_x_weight {a.p_x_weight}", file=sys.stderr)

    out = []
    by_task = dict(tuple(samples.groupby(id_col)))
    t0 = time.time()
    for n, tid in enumerate(ids):
        d = by_task.get(tid)
        if d is None:
            sys.exit(f"official_jem: task {tid} has no draws in the samples files")
        if "heldout" in d.columns:  # the protocol: train on the draws jemcheck's exact JEM trains on
            d = d[d["heldout"] == 0]
        x = torch.tensor(d[["x0", "x1"]].to_numpy(np.float32))
        y = torch.tensor(d["y"].to_numpy(np.int64))
        f, diverged = train_task(x, y, k, hidden, box, a, seed * 1_000_003 + int(tid))
        if diverged:
            print(f"official_jem: task {tid}: the divergence guard fired at step {diverged}; kept the last good parameters", file=sys.stderr)
        logits = cell_logits(f, xc, h, a.cell_rule)  # [cells, K]
        m = len(cells)
        out.append(pd.DataFrame({
            "task_id": np.full(m * k, tid, dtype=np.int64),
            "cell": np.repeat(cells[sup_col].to_numpy(np.int64), k),
            "y": np.tile(np.arange(k, dtype=np.int64), m),
            "logit": logits.reshape(-1),
        }))
        print(f"official_jem: task {tid} done ({n + 1}/{len(ids)}, {time.time() - t0:.0f} s)", file=sys.stderr)
    res = pd.concat(out, ignore_index=True)
    res["model"] = a.model_name
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    res.to_csv(a.out, index=False, float_format="%.9g")
    print(f"official_jem: wrote {len(res)} rows to {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
