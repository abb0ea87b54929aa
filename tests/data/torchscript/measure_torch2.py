#!/usr/bin/env python3
"""Saves small TorchScript models with torch 2.x and measures them by protocol.md.

Run on the GPU machine, from the repository root:
    python3 tests/data/torchscript/measure_torch2.py OUTDIR [NAME...]
    python3 tests/data/torchscript/measure_torch2.py --onnx OUTDIR [NAME...]
The second form exports the same models to ONNX instead (this torch's legacy
exporter in training mode, as validate/export.py does), to compare the frontends.
Writes OUTDIR/NAME.pt (traced or scripted by this torch: files memest-torchscript
must load with libtorch 1.13, scaled_dot_product_attention included) and
OUTDIR/measured.jsonl (validate's user_model records, one per case, with the
memest arguments that reproduce it). Nothing here is committed as a binary.
"""
import gc
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.getcwd())
from validate import nets, user_model  # noqa: E402


class CausalSelfAttention(nn.Module):
    def __init__(self, d, heads, p):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.p = p

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.p if self.training else 0.0, is_causal=True)
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))


class Block(nn.Module):
    def __init__(self, d, heads, p):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads, p)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d), nn.Dropout(p))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPTSdpa(nn.Module):
    """A GPT whose attention is F.scaled_dot_product_attention (torch >= 2.0)."""

    def __init__(self, vocab=4000, d=256, heads=4, layers=2, max_len=256, p=0.1):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        self.drop = nn.Dropout(p)
        self.blocks = nn.ModuleList([Block(d, heads, p) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, tokens):
        t = tokens.size(1)
        pos = torch.arange(t, device=tokens.device)
        x = self.drop(self.tok(tokens) + self.pos(pos))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def tokens(vocab, seq):
    return torch.randint(0, vocab, (2, seq))


# name -> (factory, example input, --input-shape, batch, int-high, how to save, amp configs)
CASES = [
    ("gpt_sdpa_traced", lambda: GPTSdpa(), tokens(4000, 128), "128:int64", 16, 4000, "trace", [None, "fp16"]),
    ("gpt_sdpa_scripted", lambda: GPTSdpa(), None, "128:int64", 16, 4000, "script", [None]),
    ("tenc_traced", lambda: nets.TransformerClassifier(vocab=4000, d_model=256, nhead=4, layers=2, d_ff=1024),
     tokens(4000, 128), "128:int64", 32, 4000, "trace", [None]),
    ("tenc_scripted", lambda: nets.TransformerClassifier(vocab=4000, d_model=256, nhead=4, layers=2, d_ff=1024),
     None, "128:int64", 32, 4000, "script", [None]),
    ("lstm_traced", lambda: nets.LSTMLM(vocab=4000, d_emb=256, hidden=256), tokens(4000, 64), "64:int64", 32, 4000,
     "trace", [None]),
    ("mnv3s_traced", lambda: __import__("torchvision").models.mobilenet_v3_small(weights=None),
     torch.randn(2, 3, 224, 224), "3x224x224", 32, 2, "trace", [None, "fp16"]),
]


def export_onnx(out, only):
    done = set()
    for name, factory, example, shape, batch, high, how, amps in CASES:
        base = name.rsplit("_", 1)[0]
        if (only and name not in only) or example is None or base in done:
            continue
        done.add(base)
        model = factory().train()
        torch.onnx.export(model, (example,), os.path.join(out, base + ".onnx"), input_names=["x"], dynamo=False,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False, opset_version=17,
                          dynamic_axes={"x": {0: "batch"}})
        print("exported", base, flush=True)


def main():
    if sys.argv[1:2] == ["--onnx"]:
        os.makedirs(sys.argv[2], exist_ok=True)
        return export_onnx(sys.argv[2], sys.argv[3:])
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    only = sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    for name, factory, example, shape, batch, high, how, amps in CASES:
        if only and name not in only:
            continue
        model = factory().train()
        path = os.path.join(out, name + ".pt")
        if how == "trace":
            # Traced where it will run: a trace records devices (arange, zeros of h0).
            dev = "cuda" if torch.cuda.is_available() else "cpu"
            saved = torch.jit.trace(model.to(dev), example.to(dev), check_trace=False)
        else:
            saved = torch.jit.script(model)
        saved.save(path)
        del saved, model  # the measurement starts from an empty allocator
        gc.collect()
        torch.cuda.empty_cache()
        for amp in amps:
            argv = [path, "--batch", str(batch), "--optim", "adam", "--input-shape", shape, "--int-high", str(high),
                    "--json", os.path.join(out, "measured.jsonl")]
            if amp:
                argv += ["--amp", amp]
            print("==", name, amp or "fp32", flush=True)
            user_model.main(argv)


if __name__ == "__main__":
    main()
