"""`python3 -m validate op-probe [--only NAME,...] --out FILE.jsonl`: the allocator's events
of small snippets, forward and backward, to find which tensor an op allocates and keeps.

Each snippet builds its inputs, then runs a forward and a backward under the allocator's
history (torch.cuda.memory._record_memory_history); the record holds, per phase, every
allocation and free in order (bytes as requested, the block's address so that frees pair
with allocations), what was still allocated after forward beyond the inputs, and facts the
snippet reports (strides, contiguity, grad_fn names). Used where a GPU trace shows a
tensor memest does not know of and the export cannot say why (issue 18's training data).
"""
import argparse
import json


def _events(torch, fn):
    """Runs fn() under the allocator's history; its alloc/free events as [action, bytes, addr]."""
    torch.cuda.synchronize()
    torch.cuda.memory._record_memory_history(max_entries=200000, context=None, stacks="python")
    out = fn()
    torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    ev = []
    for e in snap["device_traces"][0]:
        if e["action"] in ("alloc", "free_requested"):
            ev.append(["a" if e["action"] == "alloc" else "f", e["size"], e["addr"]])
    return out, ev


def _softmax(torch, dtype, n):
    """attn = x.softmax(-1) under autocast, then attn @ v (BoTNet, ViT's eager attention)."""
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype]
    x = torch.randn(64, n, n, device="cuda", dtype=dt, requires_grad=True)
    v = torch.randn(64, n, 64, device="cuda", dtype=dt, requires_grad=True)
    state = {}

    def fwd():
        with torch.autocast("cuda", dtype=dt, enabled=dtype != "fp32"):
            a = x.softmax(-1)
            state["softmax_dtype"] = str(a.dtype)
            state["softmax_grad_fn"] = type(a.grad_fn).__name__
            state["z"] = a @ v
        return None

    def bwd():
        state["z"].float().sum().backward()
    return fwd, bwd, state


def _group_norm_after_scale_add(torch, dtype, n):
    """poolformerv2's block: x = x * scale.view(C, 1, 1) + t, then GroupNorm(1, C)(x)."""
    c, h = 384, 14
    dt = torch.float32
    x0 = torch.randn(n, c, h, h, device="cuda", dtype=dt, requires_grad=True)
    t = torch.randn(n, c, h, h, device="cuda", dtype=dt, requires_grad=True)
    s = torch.ones(c, device="cuda", dtype=dt, requires_grad=True)
    gn = torch.nn.GroupNorm(1, c).cuda()
    state = {}

    def fwd():
        x = x0 * s.view(c, 1, 1) + t
        state["input_contiguous"] = x.is_contiguous()
        state["input_stride"] = list(x.stride())
        state["y"] = gn(x)
        state["grad_fn"] = type(state["y"].grad_fn).__name__
        return None

    def bwd():
        state["y"].sum().backward()
    return fwd, bwd, state


def _group_norm_leaf(torch, dtype, n):
    """GroupNorm(1, C) of a contiguous leaf, fp32: the reference."""
    c, h = 384, 14
    x = torch.randn(n, c, h, h, device="cuda", requires_grad=True)
    gn = torch.nn.GroupNorm(1, c).cuda()
    state = {}

    def fwd():
        state["y"] = gn(x)
        return None

    def bwd():
        state["y"].sum().backward()
    return fwd, bwd, state


SNIPPETS = {
    "softmax-bf16-1024": lambda torch: _softmax(torch, "bf16", 1024),
    "softmax-fp16-1024": lambda torch: _softmax(torch, "fp16", 1024),
    "softmax-fp32-1024": lambda torch: _softmax(torch, "fp32", 1024),
    "softmax-bf16-256": lambda torch: _softmax(torch, "bf16", 256),
    "softmax-bf16-2048": lambda torch: _softmax(torch, "bf16", 2048),
    "group-norm-scale-add": lambda torch: _group_norm_after_scale_add(torch, "fp32", 32),
    "group-norm-leaf": lambda torch: _group_norm_leaf(torch, "fp32", 32),
}


def timm_norm_inputs(torch, name, batch):
    """Per GroupNorm/LayerNorm module of a timm model: its input's strides in a training
    forward (a copy made by .contiguous() would explain a second tensor)."""
    import timm
    model = timm.create_model(name, pretrained=False).cuda().train()
    rows = []

    def hook(mod, args, mname=None):
        x = args[0]
        rows.append({"module": mname, "shape": list(x.shape), "stride": list(x.stride()),
                     "contiguous": x.is_contiguous(), "grad_fn": type(x.grad_fn).__name__ if x.grad_fn else ""})
    for mname, mod in model.named_modules():
        if isinstance(mod, (torch.nn.GroupNorm, torch.nn.LayerNorm)):
            mod.register_forward_pre_hook(lambda m, a, mname=mname: hook(m, a, mname))
    x = torch.randn(batch, 3, 224, 224, device="cuda")
    model(x).sum().backward()
    return rows


def main(argv):
    p = argparse.ArgumentParser(prog="python3 -m validate op-probe", description=__doc__.split("\n\n")[0])
    p.add_argument("--only", default="", help="comma-separated snippet names (default: all): " + ", ".join(SNIPPETS))
    p.add_argument("--timm", default="", help="comma-separated timm models whose norm inputs to report")
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    import torch
    names = [n for n in a.only.split(",") if n] or list(SNIPPETS)
    with open(a.out, "w") as f:
        for name in names:
            fwd, bwd, state = SNIPPETS[name](torch)
            _, fe = _events(torch, fwd)
            _, be = _events(torch, bwd)
            facts = {k: v for k, v in state.items() if isinstance(v, (str, int, float, bool, list))}
            f.write(json.dumps({"snippet": name, "facts": facts, "forward": fe, "backward": be}) + "\n")
            print(name, facts, "forward", [(x[0], x[1]) for x in fe][:12], "backward", [(x[0], x[1]) for x in be][:16])
            del state
            torch.cuda.empty_cache()
        for model in [m for m in a.timm.split(",") if m]:
            rows = timm_norm_inputs(torch, model, 8)
            f.write(json.dumps({"timm": model, "norm_inputs": rows}) + "\n")
            print(model, rows[:6])
    return 0
