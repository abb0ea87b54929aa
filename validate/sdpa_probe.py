"""Which backend F.scaled_dot_product_attention takes, and what it keeps, per configuration.

Under autocast or not, with and without an attention mask (boolean, float, a float that
requires grad), dropout, a custom scale, grouped k and v: the grad_fn's name says the
backend (Flash / Efficient / Cudnn attention backward, or the math backend's
decomposition), and the allocated bytes left after forward, less the output, say what it
keeps. T5's SDPA (a float position bias plus dropout) was seen to keep about twice the
bytes memest counts (traces11: 30 MB a layer).

    python3 -m validate sdpa-probe --out FILE.jsonl
    python3 -m validate sdpa-probe --mask-lifetime --out FILE.jsonl

--mask-lifetime asks the other question: a mask made for one call and dropped by the
caller (a layer's own masked_fill'd bias, blind12's rnd20_127), does the call keep it
alive until backward? It measures the bytes still allocated after forward beyond q, k, v,
the output and what the call keeps without a mask, for boolean and float masks of several
shapes (per sample, broadcast over batch or heads, expanded views), each dtype under
autocast or not, T a multiple of 16 or not.
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


def mask_lifetime(torch, cfg):
    """Bytes alive after forward with the mask dropped by the caller, less the same call's
    bytes without a mask: what keeping the mask costs."""
    dev = "cuda"
    b, h, t, d = cfg["b"], cfg["h"], cfg["t"], cfg["d"]
    dt = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[cfg["dtype"]]
    base = torch.float32 if cfg["autocast"] else dt

    def make_mask():
        kind, shape = cfg["mask"], cfg["shape"]
        dims = {"b1t": (b, 1, 1, t), "b1tt": (b, 1, t, t), "bhtt": (b, h, t, t), "1htt": (1, h, t, t)}[shape]
        if kind == "bool":
            m = torch.rand(dims, device=dev) > 0.1
            m[..., 0] = True  # no row fully masked
            return m
        m = torch.randn(dims, device=dev, dtype=torch.float32 if cfg["mask_fp32"] else base)
        if cfg.get("expand"):
            m = m.expand(b, h, t, t)
        return m

    def run(with_mask):
        q = torch.randn(b, h, t, d, device=dev, dtype=base, requires_grad=True)
        k = torch.randn(b, h, t, d, device=dev, dtype=base, requires_grad=True)
        v = torch.randn(b, h, t, d, device=dev, dtype=base, requires_grad=True)
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        ctx = torch.autocast("cuda", dtype=dt) if cfg["autocast"] else torch.autocast("cuda", enabled=False)
        with ctx:
            mask = make_mask() if with_mask else None
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=cfg["dropout"])
            del mask
        torch.cuda.synchronize()
        kept = torch.cuda.memory_allocated() - before
        name = type(out.grad_fn).__name__ if out.grad_fn is not None else ""
        out.float().sum().backward()
        del out, q, k, v
        torch.cuda.empty_cache()
        return kept, name

    import torch.nn.functional as F
    with_mask, backend = run(True)
    without, backend_none = run(False)
    return {"kept_with_mask": with_mask, "kept_without": without, "mask_cost": with_mask - without,
            "grad_fn": backend, "grad_fn_no_mask": backend_none}


def main_mask_lifetime(out_path):
    import torch
    rows = 0
    with open(out_path, "w") as f:
        for dtype, autocast, mask, shape, t, dropout in itertools.product(
                ("bf16", "fp16", "fp32"), (True, False), ("bool", "float"), ("b1t", "b1tt", "bhtt", "1htt"),
                (128, 197), (0.0, 0.1)):
            if dtype == "fp32" and autocast:
                continue
            for mask_fp32, expand in ((False, False), (True, False), (False, True)):
                if mask == "bool" and (mask_fp32 or expand):
                    continue
                if expand and shape == "bhtt":
                    continue
                cfg = {"b": 8, "h": 4, "t": t, "d": 64, "dtype": dtype, "autocast": autocast, "mask": mask,
                       "shape": shape, "mask_fp32": mask_fp32, "expand": expand, "dropout": dropout}
                if mask_fp32 and not autocast and dtype != "fp32":
                    continue  # a float mask of another dtype than q: an error without autocast
                try:
                    rec = dict(cfg, **mask_lifetime(torch, cfg), status="ok")
                except Exception as exc:
                    rec = dict(cfg, status="error: %s" % str(exc).splitlines()[0][:200])
                rec["mask_bytes_own_dtype"] = {"b1t": 8 * 1 * 1 * t, "b1tt": 8 * t * t, "bhtt": 8 * 4 * t * t,
                                               "1htt": 4 * t * t}[shape]
                rec["versions"] = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name()}
                f.write(json.dumps(rec) + "\n")
                rows += 1
    print("sdpa-probe --mask-lifetime: %d configurations -> %s" % (rows, out_path))
    return 0


def main(argv):
    ap = argparse.ArgumentParser(prog="python3 -m validate sdpa-probe")
    ap.add_argument("--out", required=True)
    ap.add_argument("--mask-lifetime", action="store_true",
                    help="whether a mask the caller dropped stays alive until backward (see the module's doc)")
    args = ap.parse_args(argv)
    if args.mask_lifetime:
        return main_mask_lifetime(args.out)
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
