"""`python3 -m validate norm-probe --out FILE.jsonl`: what F.rms_norm keeps for backward.

torch.export writes F.rms_norm (nn.RMSNorm, timm's RmsNorm) out as Pow, ReduceMean, Add,
Sqrt, Reciprocal and Mul; on CUDA the call may run as one kernel (aten._fused_rms_norm,
input and an fp32 rstd kept) or as that composite (its fp32 steps kept). Per dtype,
autocast or not, contiguous or not, with and without a weight: the bytes still allocated
after forward beyond the input, the weight and the output, and the grad_fn's name. Also
nn.LayerNorm, whose policy memest knows, as a check of the method.
"""
import argparse
import itertools
import json


def probe(torch, cfg):
    import torch.nn.functional as F
    dev = "cuda"
    b, t, c = cfg["b"], cfg["t"], cfg["c"]
    dt = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[cfg["dtype"]]
    half_in = cfg["input"] == "half"
    base = dt if (half_in or not cfg["autocast"]) else torch.float32
    if cfg["layout"] == "transposed":
        x = torch.randn(b, c, t, device=dev, dtype=base).transpose(1, 2).requires_grad_()
    else:
        x = torch.randn(b, t, c, device=dev, dtype=base, requires_grad=True)
    w = torch.randn(c, device=dev, dtype=torch.float32, requires_grad=True) if cfg["weight"] else None
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    ctx = torch.autocast("cuda", dtype=dt) if cfg["autocast"] else torch.autocast("cuda", enabled=False)
    with ctx:
        if cfg["op"] == "rms_norm":
            y = F.rms_norm(x, (c,), w, 1e-6)
        else:
            y = F.layer_norm(x, (c,), w, None, 1e-6)
    torch.cuda.synchronize()
    kept = torch.cuda.memory_allocated() - before - y.numel() * y.element_size()
    name = type(y.grad_fn).__name__ if y.grad_fn is not None else ""
    out_dtype = str(y.dtype).replace("torch.", "")
    y.float().sum().backward()
    return {"kept_bytes": kept, "grad_fn": name, "out_dtype": out_dtype,
            "x_bytes": x.numel() * x.element_size(), "rows": b * t}


def main(argv):
    ap = argparse.ArgumentParser(prog="python3 -m validate norm-probe")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    import torch
    rows = 0
    with open(args.out, "w") as f:
        for op, dtype, autocast, inp, layout, weight in itertools.product(
                ("rms_norm", "layer_norm"), ("fp32", "bf16", "fp16"), (False, True), ("fp32", "half"),
                ("contiguous", "transposed"), (True, False)):
            if dtype == "fp32" and (autocast or inp == "half"):
                continue
            if not autocast and inp == "fp32" and dtype != "fp32":
                continue  # the same as fp32 without autocast
            cfg = {"op": op, "dtype": dtype, "autocast": autocast, "input": inp, "layout": layout, "weight": weight,
                   "b": 8, "t": 256, "c": 384}
            try:
                rec = dict(cfg, **probe(torch, cfg), status="ok")
            except Exception as exc:
                rec = dict(cfg, status="error: %s" % str(exc).splitlines()[0][:200])
            rec["versions"] = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name()}
            f.write(json.dumps(rec) + "\n")
            rows += 1
            torch.cuda.empty_cache()
    print("norm-probe: %d configurations -> %s" % (rows, args.out))
    return 0
