#!/usr/bin/python3
"""Writes tiny.onnx (conv 1->4 3x3 valid (onnx-gomlx pads "same" convs with Pad, absent from SimpleGo), tanh (onnx-gomlx v0.3.4 has no Sigmoid, so no SiLU), 2x2 mean pool (reshape+mean: torch exports avg_pool2d with Pad), dense -> 3 logits, 8x8x1
input, dynamic batch) and tiny_expected.txt (a 2-image input and torch's logits) for
models/cnn's ONNX test. torch 1.13's exporter needs no `onnx` python package."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 4, 3)  # valid: onnx-gomlx pads with Pad, which SimpleGo lacks
        self.fc = nn.Linear(4 * 3 * 3, 3)

    def forward(self, x):
        h = torch.tanh(self.c1(x))  # [n, 4, 6, 6]
        # 2x2 mean pooling by reshape: torch 1.13 exports avg_pool2d with a Pad node.
        h = h.reshape(-1, 4, 3, 2, 3, 2).mean((3, 5))
        return self.fc(h.flatten(1))


torch.manual_seed(0)
net = Net().eval()
x = torch.randn(2, 1, 8, 8)
torch.onnx.export(net, x, "tiny.onnx", input_names=["x"], output_names=["logits"],
                  dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}}, opset_version=13)
with torch.no_grad():
    y = net(x)
with open("tiny_expected.txt", "w") as f:
    f.write(" ".join("%.8g" % v for v in x.flatten().tolist()) + "\n")
    f.write(" ".join("%.8g" % v for v in y.flatten().tolist()) + "\n")
