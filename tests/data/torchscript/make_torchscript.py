#!/usr/bin/python3
"""Builds the small TorchScript models the TorchScript frontend tests read.

Run with Debian's /usr/bin/python3 (torch 1.13):  make_torchscript.py OUTDIR
Writes NAME_traced.pt and NAME_scripted.pt for each model, NAME.onnx (the same
architecture exported in training mode) so the tests can compare the two frontends,
and manifest.json: each model's --input-shape and torch's own parameter and buffer
bytes. Nothing here is committed as a binary; ctest runs this into the build tree.
"""
import json
import os
import re
import sys
import warnings
import zipfile

import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvNet(nn.Module):
    """Conv + BatchNorm + in-place ReLU + max pool + global pool + linear."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.pool = nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1, groups=2)
        self.bn2 = nn.BatchNorm2d(16)
        self.avg = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.pool(self.relu(self.bn1(self.conv1(x))))
        x = self.relu(self.bn2(self.conv2(x)))
        x = torch.flatten(self.avg(x), 1)
        return self.fc(x)


class MLP(nn.Module):
    """Linear layers with GELU, dropout and a residual view."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.act = nn.GELU()
        self.drop = nn.Dropout(0.25)
        self.fc2 = nn.Linear(128, 64)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        x = x.view(x.size(0), -1)
        h = self.drop(self.act(self.fc1(x)))
        x = x + self.fc2(h)
        return self.head(F.silu(x))


class Block(nn.Module):
    """A pre-norm transformer block with explicit attention (torch 1.13 has no SDPA)."""

    def __init__(self, dim=32, heads=4, vocab=50):
        super().__init__()
        self.heads = heads
        self.emb = nn.Embedding(vocab, dim)
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.emb.weight  # tied

    def forward(self, ids):
        x = self.emb(ids)
        B, T, C = x.size(0), x.size(1), x.size(2)
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (C // self.heads) ** 0.5)
        att = self.drop(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.proj(y)
        x = x + self.fc2(self.drop(F.gelu(self.fc1(self.ln2(x)))))
        return self.head(x)


class LSTMLM(nn.Module):
    """Embedding + 2-layer LSTM + linear head: a language model."""

    def __init__(self, vocab=100, dim=32, hidden=48):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, ids):
        out, _ = self.lstm(self.emb(ids))
        return self.head(out)


class SdpaStandIn(nn.Module):
    """Attention through one kernel call; see save_with_sdpa()."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        y = torch.addcmul(q, k, v)  # becomes scaled_dot_product_attention below
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))


def save_with_sdpa(path):
    """A scripted archive whose code calls torch.scaled_dot_product_attention, as
    torch >= 2.0 writes it. torch 1.13 cannot script that call, so the stand-in
    addcmul is replaced in the archive's code (and its source map, now stale, dropped)."""
    tmp = path + ".tmp"
    torch.jit.script(SdpaStandIn().train()).save(tmp)
    with zipfile.ZipFile(tmp) as zin, zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename.endswith(".debug_pkl"):
                continue
            if "/code/" in info.filename and info.filename.endswith(".py"):
                data = re.sub(r"torch\.addcmul\(([^)]*)\)",
                              r"torch.scaled_dot_product_attention(\1, None, 0.10000000000000001, True)",
                              data.decode()).encode()
            zout.writestr(info, data)
    os.remove(tmp)


# name -> (module factory, example per-sample shape, dtype)
MODELS = {
    "convnet": (ConvNet, (3, 32, 32), torch.float32),
    "mlp": (MLP, (64,), torch.float32),
    "block": (Block, (16,), torch.int64),
    "lstm_lm": (LSTMLM, (12,), torch.int64),
}


def spec(shape, dtype):
    return "x".join(str(d) for d in shape) + (":int64" if dtype == torch.int64 else ":float32")


def example(shape, dtype, batch=2):
    if dtype == torch.int64:
        return torch.randint(0, 10, (batch,) + shape)
    return torch.randn((batch,) + shape)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    manifest = {}
    for name, (factory, shape, dtype) in MODELS.items():
        model = factory().train()
        x = example(shape, dtype)
        torch.jit.trace(model, x, check_trace=False).save(os.path.join(out, name + "_traced.pt"))
        torch.jit.script(model).save(os.path.join(out, name + "_scripted.pt"))
        torch.onnx.export(model, x, os.path.join(out, name + ".onnx"), input_names=["x"],
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                          opset_version=17, dynamic_axes={"x": {0: "batch"}})
        manifest[name] = {
            "input_shape": spec(shape, dtype),
            # named_parameters() counts a tied weight once, as the GPU does.
            "parameter_bytes": sum(p.numel() * p.element_size() for p in model.parameters()),
            "buffer_bytes": sum(b.numel() * b.element_size() for b in model.buffers()),
        }
    save_with_sdpa(os.path.join(out, "sdpa_scripted.pt"))  # --input-shape 16x32
    # Not TorchScript archives, for the error tests.
    with open(os.path.join(out, "not_a_model.pt"), "wb") as f:
        f.write(b"this is not a zip archive\n")
    with open(os.path.join(out, "broken_zip.pt"), "wb") as f:
        f.write(b"PK\x03\x04 truncated")
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
