"""Which backend each scaled_dot_product_attention call of real models takes, and why.

One training-mode forward per (model, config), as protocol.md's loop runs it (autocast,
requires_grad from --train/--freeze). Every call of F.scaled_dot_product_attention is
recorded with what the backend choice depends on: q, k, v and the mask's shapes, strides,
dtypes (after autocast's cast, which keeps strides) and requires_grad, dropout, is_causal,
scale, enable_gqa; then torch._fused_sdp_choice's answer for those arguments and, with
debug on, the reasons the flash and memory-efficient kernels give for refusing them.
This is the ground truth for estimator/ops/fused.cc's attention_backend.

    python3 -m validate sdpa-choice --set corpus --configs b1-fp32-adam,b1-bf16-adamw --out F.jsonl
"""
import argparse
import json
import time
import warnings

BACKENDS = {0: "math", 1: "flash", 2: "efficient", 3: "cudnn", 4: "overrideable"}


def _desc(t):
    if t is None:
        return None
    return {"shape": list(t.shape), "stride": list(t.stride()), "dtype": str(t.dtype).replace("torch.", ""),
            "requires_grad": bool(t.requires_grad)}


def _reasons(torch, fn, params):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            ok = bool(fn(params, True))
        except Exception as exc:  # the API moved between versions
            return None, ["error: %s" % exc]
    return ok, [str(w.message).strip() for w in caught]


def _choice(torch, q, k, v, mask, dropout, causal, scale, gqa, amp_dtype):
    def cast(t):
        if t is None or not t.is_floating_point() or amp_dtype is None:
            return t
        return t.to(amp_dtype)  # autocast's cached_cast: .to() keeps non-overlapping-dense strides
    q, k, v, mask = cast(q), cast(k), cast(v), cast(mask)
    rec = {"q": _desc(q), "k": _desc(k), "v": _desc(v), "mask": _desc(mask), "dropout": float(dropout),
           "is_causal": bool(causal), "scale": scale, "enable_gqa": bool(gqa)}
    try:
        rec["choice"] = BACKENDS.get(int(torch._fused_sdp_choice(q, k, v, mask, dropout, causal, scale=scale,
                                                                 enable_gqa=gqa)), "?")
    except Exception as exc:
        rec["choice"] = "error: %s" % exc
    try:
        params = torch.backends.cuda.SDPAParams(q, k, v, mask, dropout, causal, gqa)
        for name, fn in (("flash", torch.backends.cuda.can_use_flash_attention),
                         ("efficient", torch.backends.cuda.can_use_efficient_attention)):
            rec[name + "_ok"], rec[name + "_why"] = _reasons(torch, fn, params)
    except Exception as exc:
        rec["params_error"] = str(exc)
    return rec


def run_one(torch, entry, cfg, calls):
    from validate import loop
    model = loop.fresh_model(entry, None)
    loop.set_trainable(entry, model, {})
    model = model.cuda().train()
    names = {}
    stack = []

    def pre(mod, _args):
        stack.append(names.get(id(mod), "?"))

    def post(mod, _args, _out):
        if stack:
            stack.pop()
    handles = []
    for name, mod in model.named_modules():
        names[id(mod)] = name
        handles.append(mod.register_forward_pre_hook(pre))
        handles.append(mod.register_forward_hook(post))
    F = torch.nn.functional
    orig = F.scaled_dot_product_attention
    amp_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(cfg.amp)

    def spy(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False, **kw):
        rec = _choice(torch, q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, amp_dtype)
        rec["module"] = stack[-1] if stack else ""
        calls.append(rec)
        return orig(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
                    enable_gqa=enable_gqa, **kw)
    F.scaled_dot_product_attention = spy
    torch.nn.functional.scaled_dot_product_attention = spy
    try:
        xs = loop.make_inputs(entry, cfg.batch, "cuda")
        with loop.autocast("cuda", cfg.amp):
            out = model(*xs)
        del out
    finally:
        F.scaled_dot_product_attention = orig
        for h in handles:
            h.remove()
    del model


def main(argv):
    p = argparse.ArgumentParser(prog="python3 -m validate sdpa-choice", description=__doc__.split("\n")[0])
    p.add_argument("--set", default="corpus")
    p.add_argument("--models", default=None)
    p.add_argument("--configs", default="b1-fp32-adam,b1-bf16-adamw")
    p.add_argument("--out", required=True)
    p.add_argument("--deadline", type=float, default=0)
    args = p.parse_args(argv)
    import torch
    from validate import zoo, loop
    entries = zoo.select(args.models, args.set)
    with open(args.out, "a") as f:
        for entry in entries:
            for cname in args.configs.split(","):
                if args.deadline and time.time() > args.deadline:
                    print("deadline reached", flush=True)
                    return 0
                cfg = zoo.parse_config(entry, cname)
                calls = []
                rec = {"case": "%s/%s" % (entry.name, cname), "model": entry.name, "config": cname,
                       "batch": cfg.batch, "amp": cfg.amp, "onnx": getattr(entry, "onnx", entry.name)}
                try:
                    run_one(torch, entry, cfg, calls)
                    rec["status"] = "ok"
                except Exception as exc:
                    rec["status"] = "error: %s" % str(exc).splitlines()[0][:300] if str(exc) else repr(exc)
                groups = {}
                for c in calls:  # identical calls once, with their count and modules
                    key = json.dumps({k: v for k, v in c.items() if k != "module"}, sort_keys=True)
                    g = groups.setdefault(key, dict(c, count=0, modules=[]))
                    g["count"] += 1
                    g["modules"].append(c.get("module", ""))
                    g.pop("module", None)
                rec["calls"] = list(groups.values())
                rec["choices"] = sorted({c.get("choice", "?") for c in calls})
                f.write(json.dumps(rec) + "\n")
                f.flush()
                print(rec["case"], rec["status"], len(calls), rec["choices"], flush=True)
                loop.clean_allocator("cuda", require_empty=False)
    return 0
