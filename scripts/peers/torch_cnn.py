#!/usr/bin/python3
"""PyTorch peer of models/cnn's benchmark (scripts/bench-cnn.sh).

Same model as the Go side: cnn:16,32 on 16x16x1 images, K=10 (3x3 same conv 1->16, swish,
2x2 average pooling, conv 16->32, swish, pooling, dense 4*4*32 -> 10), Adam, batch 64,
one thread. Times, in ms:
  baseline    one cross-entropy Adam step
  sgld-step   one SGLD step's work: forward and the input gradient of LSE_y f(x) on the batch
  jem-sgld20  one JEM step: 20 SGLD steps from a replay buffer, then CE + LSE(samples) -
              LSE(data) and an Adam step
Prints one line per case: "<case> <ms per step>".

Usage: torch_cnn.py [steps [S [device]]]: S the image side (default 16; 28 for D = 784),
device "cpu" (default, one thread) or "cuda" (timed with torch.cuda.synchronize; the
device check scripts/gpu-check.sh runs it beside scripts/gpucheck).
"""
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(1)
K, B = 10, 64
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
S = int(sys.argv[2]) if len(sys.argv) > 2 else 16
dev = torch.device(sys.argv[3] if len(sys.argv) > 3 else "cpu")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear((S // 4) * (S // 4) * 32, K)

    def forward(self, x):
        h = F.avg_pool2d(F.silu(self.c1(x)), 2)
        h = F.avg_pool2d(F.silu(self.c2(h)), 2)
        return self.fc(h.flatten(1))


net = Net().to(dev)
opt = torch.optim.Adam(net.parameters(), lr=1e-4)
data = torch.rand(1024, 1, S, S, device=dev) * 2 - 1
labels = torch.arange(1024, device=dev) % K
buffer = torch.rand(10000, 1, S, S, device=dev) * 2 - 1


def batch():
    idx = torch.randint(0, 1024, (B,), device=dev)
    return data[idx], labels[idx]


def baseline():
    x, y = batch()
    loss = F.cross_entropy(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()


x_sgld = torch.rand(B, 1, S, S, device=dev) * 2 - 1


def sgld_step():
    x = x_sgld.clone().requires_grad_(True)
    g = torch.autograd.grad(net(x).logsumexp(1).sum(), [x])[0]
    return g


def jem(n_sgld=20, lr=1.0, std=0.01, reinit=0.05):
    x, y = batch()
    idx = torch.randint(0, buffer.shape[0], (B,), device=dev)
    x0 = buffer[idx]
    fresh = (torch.rand(B, device=dev) < reinit).float()[:, None, None, None]
    x0 = fresh * (torch.rand_like(x0) * 2 - 1) + (1 - fresh) * x0
    xk = x0.clone().requires_grad_(True)
    for _ in range(n_sgld):
        g = torch.autograd.grad(net(xk).logsumexp(1).sum(), [xk])[0]
        xk = (xk + lr * g + std * torch.randn_like(xk)).detach().requires_grad_(True)
    xk = xk.detach()
    buffer[idx] = xk
    ld, ls = net(x), net(xk)
    loss = F.cross_entropy(ld, y) + ls.logsumexp(1).mean() - ld.logsumexp(1).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()


def sync():
    if dev.type == "cuda":
        torch.cuda.synchronize()


def timed(fn, n):
    for _ in range(3):
        fn()
    sync()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    sync()
    return (time.perf_counter() - t) / n * 1e3


print("torch", torch.__version__, "threads", torch.get_num_threads(), "device", dev, "S", S, file=sys.stderr)
print("baseline %.3f" % timed(baseline, steps * 5))
print("sgld-step %.3f" % timed(sgld_step, steps * 5))
print("jem-sgld20 %.3f" % timed(jem, steps))
