"""Which backend F.scaled_dot_product_attention takes, and what it keeps, per configuration.

Under autocast or not, with and without an attention mask (boolean, float, a float that
requires grad), dropout, a custom scale, grouped k and v: the grad_fn's name says the
backend (Flash / Efficient / Cudnn attention backward, or the math backend's
decomposition), and the allocated bytes left after forward, less the output, say what it
keeps. T5's SDPA (a float position bias plus dropout) was seen to keep about twice the
bytes memest counts (traces11: 30 MB a layer).

    python3 -m validate sdpa-probe --out FILE.jsonl
"""
import argparse
import itertools
import json


def probe(torch, cfg):
    import torch.nn.functional as F
    dev = "cuda"
    b, h, t, d = cfg["b"], cfg["h"], cfg["t"], cfg["d"]
    kvh = h // 2 if cfg["gqa"] else h
    dt = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[cfg["dtype"]]
    base = torch.float32 if cfg["autocast"] else dt
    q = torch.randn(b, h, t, d, device=dev, dtype=base, requires_grad=True)
    k = torch.randn(b, kvh, t, d, device=dev, dtype=base, requires_grad=True)
    v = torch.randn(b, kvh, t, d, device=dev, dtype=base, requires_grad=True)
    mask = None
    if cfg["mask"] == "bool":
        mask = torch.ones(b, 1, t, t, device=dev, dtype=torch.bool).tril()
    elif cfg["mask"] in ("float", "float_grad"):
        mask = torch.randn(1, h, t, t, device=dev, dtype=torch.float32,
                           requires_grad=cfg["mask"] == "float_grad") + torch.zeros(b, 1, 1, t, device=dev)
    kw = {"dropout_p": cfg["dropout"], "attn_mask": mask}
    if cfg["scale"] is not None:
        kw["scale"] = cfg["scale"]
    if cfg["gqa"]:
        kw["enable_gqa"] = True
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    ctx = torch.autocast("cuda", dtype=dt) if cfg["autocast"] else torch.autocast("cuda", enabled=False)
    with ctx:
        out = F.scaled_dot_product_attention(q, k, v, **kw)
    torch.cuda.synchronize()
    kept = torch.cuda.memory_allocated() - before - out.numel() * out.element_size()
    names = []
    fn = out.grad_fn
    for _ in range(6):
        if fn is None:
            break
        names.append(type(fn).__name__)
        nxt = [f for f, _ in fn.next_functions if f is not None]
        fn = nxt[0] if nxt else None
    out.float().sum().backward()
    return {"grad_fn": names, "kept_bytes": kept,
            "score_bytes_fp32": b * h * t * t * 4, "qkv_bytes_fp32": 3 * b * h * t * d * 4}


def main(argv):
    ap = argparse.ArgumentParser(prog="python3 -m validate sdpa-probe")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    import torch
    rows = 0
    with open(args.out, "w") as f:
        for dtype, autocast, mask, dropout, scale, gqa in itertools.product(
                ("bf16", "fp16", "fp32"), (True, False), ("none", "bool", "float", "float_grad"), (0.0, 0.1),
                (None, 1.0), (False, True)):
            if dtype == "fp32" and autocast:
                continue
            cfg = {"b": 16, "h": 8, "t": 128, "d": 64, "dtype": dtype, "autocast": autocast, "mask": mask,
                   "dropout": dropout, "scale": scale, "gqa": gqa}
            try:
                rec = dict(cfg, **probe(torch, cfg), status="ok")
            except Exception as exc:  # a configuration no backend takes
                rec = dict(cfg, status="error: %s" % str(exc).splitlines()[0][:200])
            rec["versions"] = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name()}
            f.write(json.dumps(rec) + "\n")
            rows += 1
            torch.cuda.empty_cache()
    print("sdpa-probe: %d configurations -> %s" % (rows, args.out))
    return 0
