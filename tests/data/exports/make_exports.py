#!/usr/bin/env python3
"""Small shape-only graphs of what a user's own models export to with torch 1.13's legacy
exporter (Debian's python3-torch), for tests/cli/exports_test.py (issue 17). Each file keeps
torch's parameter byte count in its metadata (memest.param_bytes). Regenerate with
    /usr/bin/python3 tests/data/exports/make_exports.py
from the repository root. The graphs hold no weights (validate/onnx_strip.py).
"""
import math
import os
import sys

import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.onnx import TrainingMode

sys.path.insert(0, os.getcwd())
from validate.onnx_strip import set_metadata, strip_weights  # noqa: E402

OUT = os.path.dirname(os.path.abspath(__file__))


class CausalConv(nn.Module):
    """F.pad on the left before an unpadded Conv1d (a causal convolution), with a residual."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(32, 32, 3)
        self.c2 = nn.Conv1d(32, 32, 3)

    def forward(self, x):
        y = self.c1(F.pad(x, (2, 0)))
        return x + self.c2(F.pad(y, (2, 0)))


class PadConv(nn.Module):
    """Conv2d with a padding_mode other than zeros: the exporter writes a Pad node."""

    def __init__(self, mode):
        super().__init__()
        self.c = nn.Conv2d(16, 16, 3, padding=1, padding_mode=mode)

    def forward(self, x):
        return x + self.c(x)


class DictBlocks(nn.Module):
    """A decoder whose blocks are ModuleDicts in a ModuleList, called item by item (so the
    legacy exporter's scopes lose the block index), with a causal mask cut from a buffer
    over the maximum length and learned positions from arange: dynamic batch and sequence."""

    def __init__(self, d=64, h=4, maxlen=128, vocab=100, layers=3):
        super().__init__()
        self.h = h
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(maxlen, d)
        self.blocks = nn.ModuleList([nn.ModuleDict(dict(
            ln1=nn.LayerNorm(d), qkv=nn.Linear(d, 3 * d), proj=nn.Linear(d, d), ln2=nn.LayerNorm(d),
            ff=nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)))) for _ in range(layers)])
        self.register_buffer("mask", torch.tril(torch.ones(maxlen, maxlen)).view(1, 1, maxlen, maxlen))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        B, T = idx.shape
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device).unsqueeze(0)
        x = self.emb(idx) + self.pos(pos)
        for b in self.blocks:
            q, k, v = b["qkv"](b["ln1"](x)).split(x.size(-1), dim=2)
            q, k, v = (t.view(B, T, self.h, -1).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
            att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
            y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(B, T, -1)
            x = x + b["proj"](y)
            x = x + b["ff"](b["ln2"](x))
        return self.head(self.ln_f(x))


def export(name, model, x, opset, dynamic):
    torch.manual_seed(0)
    model.train()
    path = os.path.join(OUT, name + ".onnx")
    torch.onnx.export(model, x, path, opset_version=opset, input_names=["x"], output_names=["out"],
                      dynamic_axes={"x": dynamic, "out": dynamic}, training=TrainingMode.TRAINING,
                      do_constant_folding=False)
    m = onnx.load(path)
    param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    set_metadata(m, {"memest.param_bytes": param_bytes, "memest.torch": torch.__version__, "memest.opset": opset})
    strip_weights(m, path)
    print(name, os.path.getsize(path), "bytes")


def main():
    torch.manual_seed(0)
    export("causal_conv_opset13", CausalConv(), torch.randn(2, 32, 64), 13, {0: "batch", 2: "seq"})
    for mode in ("reflect", "replicate", "circular"):
        export("pad_%s_opset17" % mode, PadConv(mode), torch.randn(2, 16, 8, 8), 17, {0: "batch"})
    for opset in (14, 17):
        torch.manual_seed(0)
        export("dict_blocks_opset%d" % opset, DictBlocks(), torch.randint(0, 100, (2, 16)), opset,
               {0: "batch", 1: "seq"})


if __name__ == "__main__":
    main()
