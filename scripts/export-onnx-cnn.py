#!/usr/bin/python3
"""Writes the ONNX classifiers of jemcheck's "bring your own CNN" tests
(tasks/images/testdata, used by tasks/images and pipelines/evaluate), and shows how a
user exports a torch classifier for `evaluate --onnx`: any torch.nn.Module whose
forward takes a float32 batch [n, 1, S, S] (or [n, S*S]) of row-major S x S images and
returns the K logits f(x)[y] as [n, K], exported with a dynamic batch axis.

    /usr/bin/python3 scripts/export-onnx-cnn.py truth PARAMS.json OUT.onnx [--flat]
        the exact truth of one images task (the mfa.Params JSON of truth/task-N.json,
        or of TestWriteTruthParams) as a model: f(x)[y] = log p(x, y), so the known
        answer is KL 0 (its input [n, 1, S, S], or [n, S*S] with --flat).
    /usr/bin/python3 scripts/export-onnx-cnn.py cnn OUT.onnx --side S --classes K
        an untrained small CNN (conv 3x3 valid, tanh, 2x2 mean pooling by reshape, a
        dense head): the layers onnx-gomlx v0.3.4 runs on SimpleGo (no Sigmoid/SiLU, no
        Pad: no "same" convolutions or torch's avg_pool2d; see models/cnn/doc.go).
    /usr/bin/python3 scripts/export-onnx-cnn.py nan OUT.onnx --side S --classes K
        a model whose logits are NaN (log of a negative number), for the refusal test.
    /usr/bin/python3 scripts/export-onnx-cnn.py silumaxpool OUT.onnx
        4x4 images, max_pool2d 2, SiLU, a fixed linear head (the known answer of
        models/cnn TestONNXSiLUMaxPool; Sigmoid is rewritten, MaxPool's gradient is
        jemcheck's fallback for SelectAndScatterMax).
    /usr/bin/python3 scripts/export-onnx-cnn.py maxpool3 OUT.onnx --side S --classes K [--expected FILE]
        max_pool2d(3, stride 1, padding 1), sigmoid, max_pool2d 2, a linear head
        (--expected as for torchcnn).
    /usr/bin/python3 scripts/export-onnx-cnn.py leaky OUT.onnx --side S --classes K
        a model ending in leaky_relu (LeakyRelu, not supported: the refusal test).
    /usr/bin/python3 scripts/export-onnx-cnn.py torchcnn OUT.onnx --side S --classes K [--expected FILE]
        a CNN as a user writes it: "same" 3x3 convolutions (padding=1), relu and tanh,
        F.avg_pool2d (exported with a Pad node), a linear head; --expected writes a
        2-image input, torch's logits and its autograd input gradient of LSE_y f(x)[y]
        (models/cnn TestONNXEnergy).

torch 1.13 (apt-get install python3-torch); the exporter needs no `onnx` package.
The tests' files: truth-8x2-seed1-task0.onnx (truth PARAMS of images:8,2, run seed 1,
task 0), cnn-16x2.onnx (--side 16 --classes 2), cnn-8x3.onnx, nan-8x2.onnx (--side 8 --classes 2);
models/cnn/testdata/torchcnn-8x2.onnx (torchcnn --side 8 --classes 2 --expected
torchcnn-8x2_expected.txt).
"""
import argparse
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# Only ops onnx-gomlx v0.3.4 converts: no ReduceSum, ReduceMax or ReduceLogSumExp, so
# sums are MatMuls with ones and maxima elementwise Max.


class Truth(nn.Module):
    """log p(x, y) of a mixture of factor analysers per class (models/prob/mfa), by the
    Woodbury identity: (x-mu)' S^-1 (x-mu) = sum_i r_i^2/psi_i - |A r|^2, with
    A = L^-1 Lambda' Psi^-1 and L L' = I + Lambda' Psi^-1 Lambda."""

    def __init__(self, params, flat):
        super().__init__()
        self.S, self.K, self.flat = params["s"], params["k"], flat
        D = self.S * self.S
        self.D = D
        self.classes = []
        idx = 0
        for y, cls in enumerate(params["classes"]):
            comps = []
            for c in cls["components"]:
                d = c["factors"]
                mu = torch.tensor(c["mean"], dtype=torch.float64)
                lam = torch.tensor(c["loadings"], dtype=torch.float64).reshape(D, d)
                psi = torch.tensor(c["psi"], dtype=torch.float64)
                M = torch.eye(d, dtype=torch.float64) + lam.T @ (lam / psi[:, None])
                L = torch.linalg.cholesky(M)
                A = torch.linalg.solve_triangular(L, lam.T / psi[None, :], upper=False)  # d x D
                logdet = torch.log(psi).sum() + 2 * torch.log(torch.diagonal(L)).sum()
                const = (math.log(params["pi"][y]) + math.log(c["weight"]) - 0.5 * logdet
                         - 0.5 * D * math.log(2 * math.pi))
                names = [f"mu{idx}", f"ipsi{idx}", f"AT{idx}", f"c{idx}"]
                self.register_buffer(names[0], mu.float())
                self.register_buffer(names[1], (1 / psi).float())
                self.register_buffer(names[2], A.T.contiguous().float())  # D x d
                self.register_buffer(names[3], torch.tensor([float(const)]))
                comps.append(names)
                idx += 1
            self.classes.append(comps)
        self.register_buffer("onesD", torch.ones(D, 1))
        self.ones = {}
        for cls in params["classes"]:
            for c in cls["components"]:
                self.ones[c["factors"]] = None
        for d in self.ones:
            self.register_buffer(f"ones{d}", torch.ones(d, 1))

    def forward(self, x):
        x = x.reshape(-1, self.D)
        out = []
        for comps in self.classes:
            z = []
            for mu, ipsi, AT, c in comps:
                r = x - getattr(self, mu)
                q1 = (r * r * getattr(self, ipsi)) @ self.onesD  # [n, 1]
                v = r @ getattr(self, AT)  # [n, d]
                q2 = (v * v) @ getattr(self, f"ones{v.shape[1]}")
                z.append(getattr(self, c) - 0.5 * (q1 - q2))
            m = z[0]
            for t in z[1:]:
                m = torch.maximum(m, t)
            s = torch.exp(z[0] - m)
            for t in z[1:]:
                s = s + torch.exp(t - m)
            out.append(m + torch.log(s))
        return torch.cat(out, dim=1)  # [n, K]


class SmallCNN(nn.Module):
    """conv 1->4 3x3 valid, tanh, 2x2 mean pooling (reshape + mean), dense -> K."""

    def __init__(self, S, K):
        super().__init__()
        self.S = S
        self.c1 = nn.Conv2d(1, 4, 3)
        self.h = (S - 2) // 2
        self.fc = nn.Linear(4 * self.h * self.h, K)

    def forward(self, x):
        h = torch.tanh(self.c1(x))[:, :, : 2 * self.h, : 2 * self.h]
        h = h.reshape(-1, 4, self.h, 2, self.h, 2).mean((3, 5))
        return self.fc(h.flatten(1))


class TorchCNN(nn.Module):
    """conv 1->8 3x3 same, relu, avg_pool2d 2; conv 8->16 3x3 same, tanh, avg_pool2d 2; linear -> K.
    (max_pool2d and SiLU run too: see silumaxpool.)"""

    def __init__(self, S, K):
        super().__init__()
        self.c1 = nn.Conv2d(1, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * (S // 4) * (S // 4), K)

    def forward(self, x):
        h = F.avg_pool2d(torch.relu(self.c1(x)), 2)
        h = F.avg_pool2d(torch.tanh(self.c2(h)), 2)
        return self.fc(h.flatten(1))


class SiLUMaxPool(nn.Module):
    """The known answer of models/cnn TestONNXSiLUMaxPool: a 4x4 image, max_pool2d 2
    (MaxPool), SiLU (Sigmoid and Mul), a fixed linear head: logits = W silu(pool(x)) + b,
    W = [[1, 2, 3, 4], [-1, 0, 1, 0]], b = [0.5, -0.5], computed by hand in the test."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        with torch.no_grad():
            self.fc.weight.copy_(torch.tensor([[1.0, 2, 3, 4], [-1, 0, 1, 0]]))
            self.fc.bias.copy_(torch.tensor([0.5, -0.5]))

    def forward(self, x):
        return self.fc(F.silu(F.max_pool2d(x, 2)).flatten(1))


class MaxPool3(nn.Module):
    """Overlapping max pooling with padding (kernel 3, stride 1, padding 1) and a
    strided one (kernel 2, stride 2), then a fixed linear head: the general case of the
    MaxPool gradient's fallback (models/cnn TestONNXSiLUMaxPool, by central differences)."""

    def __init__(self, S, K):
        super().__init__()
        self.fc = nn.Linear((S // 2) * (S // 2), K)

    def forward(self, x):
        return self.fc(F.max_pool2d(torch.sigmoid(F.max_pool2d(x, 3, stride=1, padding=1)), 2).flatten(1))


class Leaky(SmallCNN):
    """A model with an op the importer lacks (LeakyRelu): the refusal names its layer."""

    def forward(self, x):
        return F.leaky_relu(super().forward(x), 0.1)


class NaNLogits(SmallCNN):
    def forward(self, x):
        return torch.log(super().forward(x) - 1e6)  # log of a negative number: NaN


def export(net, shape, out):
    net = net.eval()
    x = torch.rand(*shape)
    torch.onnx.export(net, x, out, input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}}, opset_version=13)
    with torch.no_grad():
        print(out, "logits of a uniform image:", net(x[:1]).flatten().tolist())


def write_expected(net, side, path):
    """Two uniform images, torch's logits and its autograd input gradient of LSE_y f(x)[y]."""
    x = torch.rand(2, 1, side, side, requires_grad=True)
    y = net.eval()(x)
    torch.logsumexp(y, 1).sum().backward()
    with open(path, "w") as f:
        for v in (x, y, x.grad):
            f.write(" ".join("%.9g" % u for u in v.detach().flatten().tolist()) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["truth", "cnn", "nan", "torchcnn", "silumaxpool", "maxpool3", "leaky"])
    ap.add_argument("args", nargs="+")
    ap.add_argument("--flat", action="store_true")
    ap.add_argument("--side", type=int, default=8)
    ap.add_argument("--classes", type=int, default=2)
    ap.add_argument("--expected")
    a = ap.parse_args()
    torch.manual_seed(0)
    if a.what == "truth":
        params = json.load(open(a.args[0]))
        S = params["s"]
        shape = (2, S * S) if a.flat else (2, 1, S, S)
        export(Truth(params, a.flat), shape, a.args[1])
    elif a.what == "cnn":
        export(SmallCNN(a.side, a.classes), (2, 1, a.side, a.side), a.args[0])
    elif a.what == "torchcnn":
        net = TorchCNN(a.side, a.classes)
        export(net, (2, 1, a.side, a.side), a.args[0])
        if a.expected:
            write_expected(net, a.side, a.expected)
    elif a.what == "silumaxpool":
        export(SiLUMaxPool(), (2, 1, 4, 4), a.args[0])
    elif a.what == "maxpool3":
        net = MaxPool3(a.side, a.classes)
        export(net, (2, 1, a.side, a.side), a.args[0])
        if a.expected:
            write_expected(net, a.side, a.expected)
    elif a.what == "leaky":
        export(Leaky(a.side, a.classes), (2, 1, a.side, a.side), a.args[0])
    else:
        export(NaNLogits(a.side, a.classes), (2, 1, a.side, a.side), a.args[0])


if __name__ == "__main__":
    main()
