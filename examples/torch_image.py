#!/usr/bin/env python3
"""Your own CNN on jemcheck's image tasks, in PyTorch: one classifier per task.

    go run ./pipelines/export --task=images:8,2 --tables=2 --samples=1000 --out=out/images
    python3 examples/torch_image.py --export out/images --models out/models
    go run ./pipelines/evaluate --from=out/images --onnx='out/models/model-{task}.onnx' --out=out/onnx

It reads the export with numpy only (export.json, then arrays/*.npz: one file per task
with x, y, heldout, eval_x, eval_y, eval_log_joint and the truth's parameters), trains
a small CNN per task on the draws with heldout == False (the first 80% by default: the
split jemcheck's own methods train on), prints its conditional KL against the truth on
the task's evaluation draws (the truth's posterior is the softmax of eval_log_joint
over y: the Z-free number evaluate reports as kl_conditional), and exports each
classifier with torch.onnx.export to MODELS/model-{task}.onnx (input [n, 1, S, S]
float32, output the K logits [n, K], a dynamic batch axis). evaluate --onnx takes the
pattern with {task} (the task's id) or the folder, and refuses one model for several
tasks unless --onnx_shared.

The layers are ones evaluate runs (docs/export-evaluate.md): Conv2d with padding=1,
SiLU, MaxPool2d(2), Linear. torch 1.13 (Debian python3-torch) exports without the
`onnx` package.
"""
import argparse
import json
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class CNN(nn.Module):
    """conv 1->8 3x3 same, SiLU, max pool 2; conv 8->16 3x3 same, SiLU, max pool 2; linear -> K."""

    def __init__(self, S, K):
        super().__init__()
        self.c1 = nn.Conv2d(1, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * (S // 4) * (S // 4), K)

    def forward(self, x):
        h = F.max_pool2d(F.silu(self.c1(x)), 2)
        h = F.max_pool2d(F.silu(self.c2(h)), 2)
        return self.fc(h.flatten(1))


def train(x, y, S, K, steps, lr, seed):
    """Cross-entropy with Adam on minibatches of 64 (a baseline classifier; a JEM
    would add its log q(x) term here)."""
    torch.manual_seed(seed)
    net = CNN(S, K)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    X = torch.from_numpy(x).float().unsqueeze(1)
    Y = torch.from_numpy(y).long()
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        i = torch.randint(len(Y), (64,), generator=g)
        loss = F.cross_entropy(net(X[i]), Y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return net.eval()


def kl_conditional(net, ex, log_joint):
    """E_p[KL(p(y|x) || q(y|x))] over the evaluation draws, and its standard error."""
    with torch.no_grad():
        logq = F.log_softmax(net(torch.from_numpy(ex).float().unsqueeze(1)), 1).double().numpy()
    logp = log_joint - np.logaddexp.reduce(log_joint, axis=1, keepdims=True)
    kl = (np.exp(logp) * (logp - logq)).sum(1)
    return kl.mean(), kl.std(ddof=1) / np.sqrt(len(kl))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--export", required=True, help="the export's folder (pipelines/export --task=images:S,K)")
    ap.add_argument("--models", required=True, help="where to write model-{task}.onnx, one per task")
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--tasks", type=int, default=0, help="only the first this many tasks (0: all)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    with open(os.path.join(a.export, "export.json")) as f:
        point = json.load(f)["points"][0]
    if point["kind"] != "images":
        raise SystemExit(f"{a.export}: a {point['kind']} export; this example trains on images tasks (--task=images:S,K)")
    print("split:", point["split"]["about"])
    os.makedirs(a.models, exist_ok=True)
    files = point["files"]["arrays"][: a.tasks or None]
    for name in files:
        z = np.load(os.path.join(a.export, name))
        tid, x, y, held = int(z["task_id"]), z["x"], z["y"], z["heldout"]
        S, K = x.shape[1], len(z["truth_pi"])
        net = train(x[~held], y[~held], S, K, a.steps, a.lr, seed=tid)  # the draws jemcheck's methods train on
        kl, se = kl_conditional(net, z["eval_x"], z["eval_log_joint"])
        out = os.path.join(a.models, f"model-{tid}.onnx")
        torch.onnx.export(net, torch.rand(2, 1, S, S), out, input_names=["x"], output_names=["logits"],
                          dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}}, opset_version=13)
        print(f"task {tid}: trained on {int((~held).sum())} of {len(y)} draws; kl_conditional {kl:.4f} ± {se:.4f} on "
              f"{len(z['eval_y'])} evaluation draws -> {out}")
    print(f"next: go run ./pipelines/evaluate --from={a.export} --onnx='{os.path.join(a.models, 'model-{task}.onnx')}' --out=OUT")


if __name__ == "__main__":
    main()
