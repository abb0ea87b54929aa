"""`python3 -m validate random --seed S --n N`: models composed at random (issue 18).

A seeded grammar of op families: convolutions 1-D/2-D/3-D (kernels, strides, dilations,
groups, depthwise, transposed, every padding mode, SAME padding), pooling, up-sampling,
Batch/Group/Instance/Layer/RMS norms, activations, squeeze-excitation, residuals;
token transformers (SDPA or attention written out, causal, GQA, additive bias, padding
masks, pre/post norm, GELU or SwiGLU); LSTM/GRU stacks (layers, bidirectional); MLPs.
A model is named `rnd<S>_<I>` and is rebuilt from its name alone (the measuring worker
does that), so measure/export/compare take it like any zoo entry: `--set random:S:N`.

Each model draws its own input size, batch pair and loss. Nothing is tuned per model.
"""
import random
from typing import List

from validate.zoo import Entry, InputSpec, TargetSpec

RANDOM_CONFIGS = ["b1-fp32-adam", "b1-fp16-adam", "b2-bf16-adamw", "b1-fp32-sgdm"]
PAD_MODES = ("zeros", "reflect", "replicate", "circular")
ACTS = ("relu", "gelu", "silu", "leaky", "hardswish", "tanh", "sigmoid", "elu", "mish", "relu6")


def _rng(seed, i):
    return random.Random(seed * 100003 + i)


# ---------------------------------------------------------------- specs (plain data)

def _conv_spec(r, nd):
    blocks = []
    ch = r.choice([8, 16, 32, 48, 64])
    for _ in range(r.randint(2, 6)):
        kind = r.choices(["conv", "tconv", "pool", "up", "se"], [6, 1, 1, 1, 1])[0]
        b = {"kind": kind}
        if kind in ("conv", "tconv"):
            out = r.choice([8, 16, 24, 32, 48, 64, 96, 128])
            k = r.choice([1, 2, 3, 3, 3, 5, 7])
            stride = r.choice([1, 1, 1, 2])
            dil = r.choice([1, 1, 1, 2, 3]) if k > 1 else 1
            g = 1
            gr = r.random()
            if gr < 0.15 and kind == "conv":
                g, out = ch, ch  # depthwise
            elif gr < 0.3:
                for cand in (2, 4, 8):
                    if ch % cand == 0 and out % cand == 0 and r.random() < 0.5:
                        g = cand
            pad_mode = r.choice(PAD_MODES) if kind == "conv" else "zeros"
            same = kind == "conv" and stride == 1 and r.random() < 0.25
            pad = "same" if same else (dil * (k - 1)) // 2
            if pad_mode == "circular" and not same and pad == 0:
                pad_mode = "zeros"
            b.update(cin=ch, cout=out, k=k, stride=stride, dil=dil, groups=g, pad=pad, pad_mode=pad_mode,
                     bias=r.random() < 0.5,
                     norm=r.choice(["batch", "batch", "group", "instance", "layer", "none"]),
                     act=r.choice(ACTS), residual=(out == ch and stride == 1 and kind == "conv" and r.random() < 0.5),
                     dropout=r.choice([0.0, 0.0, 0.1]))
            if kind == "tconv":
                b["stride"] = r.choice([1, 2])
                b["pad"] = r.choice([0, 1]) if k > 1 else 0
                b["outpad"] = 1 if (b["stride"] == 2 and dil == 1 and r.random() < 0.5) else 0
            ch = out
        elif kind == "pool":
            b.update(op=r.choice(["max", "avg"]), k=r.choice([2, 3]), stride=2)
        elif kind == "up":
            b.update(mode=r.choice(["nearest", "linear"]))
        else:
            b.update(ch=ch, red=r.choice([4, 8]))
        blocks.append(b)
    return {"arch": "conv", "nd": nd, "cin": [1, 3, 4, 16][r.randint(0, 3)], "c0": None, "blocks": blocks,
            "classes": r.choice([5, 10, 100, 1000])}


def _tx_spec(r):
    d = r.choice([64, 128, 192, 256, 384, 512])
    heads = r.choice([h for h in (1, 2, 4, 8) if d % h == 0 and d // h >= 16])
    kv = r.choice([h for h in (1, 2, heads) if heads % h == 0])
    return {"arch": "tx", "vocab": r.choice([1000, 8000, 32000]), "d": d, "heads": heads, "kv": kv,
            "layers": r.randint(1, 4), "attn": r.choice(["sdpa", "eager"]), "causal": r.random() < 0.5,
            "bias": r.random() < 0.3, "pad_mask": r.random() < 0.2, "pre_norm": r.random() < 0.7,
            "norm": r.choice(["layer", "rms"]), "ffn": r.choice(["gelu", "swiglu", "relu"]),
            "ff_mult": r.choice([2, 4]), "head": r.choice(["lm", "cls"]), "dropout": r.choice([0.0, 0.1])}


def _rnn_spec(r):
    return {"arch": "rnn", "cell": r.choice(["lstm", "gru"]), "hidden": r.choice([64, 128, 256, 512]),
            "layers": r.randint(1, 3), "bidir": r.random() < 0.4, "dropout": r.choice([0.0, 0.2]),
            "tokens": r.random() < 0.5, "feat": r.choice([16, 40, 80]), "vocab": r.choice([1000, 5000]),
            "head": r.choice(["lm", "cls"])}


def _mlp_spec(r):
    return {"arch": "mlp", "d_in": r.choice([64, 256, 784, 1024]),
            "hidden": [r.choice([128, 256, 512, 1024, 2048]) for _ in range(r.randint(1, 4))],
            "act": r.choice(ACTS), "norm": r.choice(["none", "batch", "layer"]), "dropout": r.choice([0.0, 0.1, 0.3]),
            "classes": r.choice([10, 100])}


def spec_of(seed, i):
    r = _rng(seed, i)
    arch = r.choices(["conv1", "conv2", "conv3", "tx", "rnn", "mlp"], [2, 4, 2, 3, 2, 1])[0]
    if arch.startswith("conv"):
        s = _conv_spec(r, int(arch[-1]))
        size = {1: r.choice([256, 512, 1024, 4096]), 2: r.choice([32, 48, 64, 96, 128]),
                3: r.choice([16, 24, 32])}[s["nd"]]
        s["size"] = size
        s["batches"] = {1: (r.choice([8, 16, 32]), r.choice([48, 64])), 2: (r.choice([8, 16, 32]), r.choice([48, 64])),
                        3: (r.choice([2, 4]), r.choice([6, 8]))}[s["nd"]]
    elif arch == "tx":
        s = _tx_spec(r)
        s["seq"] = r.choice([64, 128, 256])
        s["batches"] = (r.choice([4, 8, 16]), r.choice([24, 32]))
    elif arch == "rnn":
        s = _rnn_spec(r)
        s["seq"] = r.choice([32, 64, 128])
        s["batches"] = (r.choice([8, 16, 32]), r.choice([48, 64]))
    else:
        s = _mlp_spec(r)
        s["batches"] = (r.choice([64, 256]), r.choice([512, 1024]))
    return s


# ---------------------------------------------------------------- modules

def _act(name):
    import torch.nn as nn
    return {"relu": nn.ReLU, "gelu": nn.GELU, "silu": nn.SiLU, "leaky": lambda: nn.LeakyReLU(0.1),
            "hardswish": nn.Hardswish, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid, "elu": nn.ELU, "mish": nn.Mish,
            "relu6": nn.ReLU6}[name]()


def _norm(kind, nd, ch):
    import torch.nn as nn
    from validate.corpus_nets import ChannelLayerNorm
    if kind == "batch":
        return [nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d][nd - 1](ch)
    if kind == "group":
        g = next(x for x in (8, 4, 2, 1) if ch % x == 0)
        return nn.GroupNorm(g, ch)
    if kind == "instance":
        return [nn.InstanceNorm1d, nn.InstanceNorm2d, nn.InstanceNorm3d][nd - 1](ch, affine=True)
    if kind == "layer":
        return ChannelLayerNorm(ch)
    return nn.Identity()


def build_model(spec):
    from validate import corpus_nets as cn
    if spec["arch"] == "conv":
        return cn.RandConvNet(spec)
    if spec["arch"] == "tx":
        return cn.RandTransformer(spec)
    if spec["arch"] == "rnn":
        return cn.RandRNN(spec)
    return cn.RandMLP(spec)


def entry_of(seed, i) -> Entry:
    s = spec_of(seed, i)
    name = "rnd%d_%d" % (seed, i)
    src = "validate.randnet seed %d index %d: %s" % (seed, i, _describe(s))

    def build():
        return build_model(s)
    fam = {"conv": "rand_conv%dd" % s.get("nd", 0), "tx": "rand_transformer", "rnn": "rand_rnn",
           "mlp": "rand_mlp"}[s["arch"]]
    if s["arch"] == "conv":
        shape = (s["cin"],) + (s["size"],) * s["nd"]
        return Entry(name, build, [InputSpec("input", shape)], "ce", TargetSpec((), s["classes"]), s["batches"], src,
                     family=fam, subdir="random")
    if s["arch"] == "mlp":
        return Entry(name, build, [InputSpec("input", (s["d_in"],))], "ce", TargetSpec((), s["classes"]),
                     s["batches"], src, family=fam, subdir="random")
    if s["arch"] == "tx" or (s["arch"] == "rnn" and s["tokens"]):
        inp = [InputSpec("tokens", ("seq",), "int64", s["vocab"])]
    else:
        inp = [InputSpec("input", ("seq", s["feat"]))]
    vocab = s.get("vocab", 1000)
    if s["head"] == "lm":
        return Entry(name, build, inp, "ce", TargetSpec(("seq",), vocab), s["batches"], src, dims={"seq": s["seq"]},
                     output_axes={0: "batch", 1: "seq"}, family=fam, subdir="random")
    return Entry(name, build, inp, "ce", TargetSpec((), 10), s["batches"], src, dims={"seq": s["seq"]}, family=fam,
                 subdir="random")


def _describe(s):
    if s["arch"] == "conv":
        return "conv%dd %s" % (s["nd"], " ".join(
            b["kind"] + ("(k%d s%d d%d g%d %s%s)" % (b["k"], b["stride"], b["dil"], b["groups"], b["pad_mode"],
                                                    ",same" if b.get("pad") == "same" else "")
                         if b["kind"] in ("conv", "tconv") else "") for b in s["blocks"]))
    return " ".join("%s=%s" % (k, v) for k, v in s.items() if k not in ("batches",))


def entries(seed, n) -> List[Entry]:
    return [entry_of(seed, i) for i in range(n)]


def parse_set(name):
    """`random:S:N` -> (S, N), else None."""
    if not name.startswith("random:"):
        return None
    _, s, n = name.split(":")
    return int(s), int(n)


def main(argv):
    import argparse
    p = argparse.ArgumentParser(prog="python3 -m validate random")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--n", type=int, default=20)
    args = p.parse_args(argv)
    for e in entries(args.seed, args.n):
        print("%-12s %-18s %s" % (e.name, e.family, e.source))
    return 0
