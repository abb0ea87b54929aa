"""`validate maxbatch`: the largest batch that trains under a memory budget.

The budget is imposed the way protocol.md defines it for `memest sweep`/`check`:
torch.cuda.set_per_process_memory_fraction(budget / total_memory), which caps what
the caching allocator may reserve. A batch is OK when 2 iterations of the protocol
loop run without an out-of-memory error. Doubling from the zoo's B1, then bisection.
"""
import argparse
import json
import time

from validate import zoo

DEFAULT_MODELS = "resnet50,vit_b_16,gpt_mini,bert_mini,unet,gpt2_hf,bert_hf"
DEFAULT_CONFIGS = "fp16-adam,fp32-sgd"

_UNITS = {"": 1, "b": 1, "kib": 2 ** 10, "mib": 2 ** 20, "gib": 2 ** 30, "tib": 2 ** 40,
          "kb": 10 ** 3, "mb": 10 ** 6, "gb": 10 ** 9, "tb": 10 ** 12}


def parse_size(text):
    t = text.strip().lower()
    num = t.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = t[len(num):]
    if unit not in _UNITS or not num:
        raise ValueError("bad size %r (e.g. 24GiB, 24GB, 512MiB, or bytes)" % text)
    return int(float(num) * _UNITS[unit])


def probe(entry, cfg, device, cpu_model, out_meta_cache):
    from validate import loop
    from validate.measure import _status_of
    phases = loop.Phases(device)
    t0 = time.time()
    try:
        out_meta = None
        if entry.loss == "mse":
            key = (entry.name, cfg.amp)
            if key not in out_meta_cache:
                out_meta_cache[key] = loop.probe_output(entry, cpu_model, cfg.amp, device)
            out_meta = out_meta_cache[key]
        loop.run_case(entry, cfg, phases, device, cpu_model, iters=2, out_meta=out_meta)
        status = "ok"
    except Exception as exc:
        status = _status_of(exc)
        del exc
    peak, peak_res, _ = phases.peak()
    loop.clean_allocator(device, require_empty=False)
    return {"batch": cfg.batch, "status": status, "peak_allocated": peak, "peak_reserved": peak_res,
            "time_s": round(time.time() - t0, 2)}


def search(entry, cfg_name, budget, device, deadline, max_batch, only=None):
    """The largest batch that runs (doubling, then bisection), or with `only`, each of
    those batches tried as given: near the cap fitting need not be monotone in the batch,
    and a bisection does not look between its probes."""
    import torch
    from validate import loop
    torch.manual_seed(0)
    cpu_model = entry.build()
    cache = {}
    probes = []

    def try_batch(b):
        cfg = zoo.parse_config(entry, "bs%d-%s" % (b, cfg_name))
        r = probe(entry, cfg, device, cpu_model, cache)
        probes.append(r)
        print("  %s %s batch %d: %s (peak %.2f GiB, reserved %.2f GiB, %.1fs)" % (
            entry.name, cfg_name, b, r["status"][:60], r["peak_allocated"] / 2 ** 30,
            r["peak_reserved"] / 2 ** 30, r["time_s"]), flush=True)
        if r["status"] != "ok" and not r["status"].startswith("OOM"):
            raise RuntimeError("batch %d failed with a non-OOM error: %s" % (b, r["status"]))
        return r["status"] == "ok"

    if only:
        for b in only:
            if deadline and time.time() > deadline:
                return None, None, probes, "deadline"
            try_batch(b)
        loop.clean_allocator(device, require_empty=False)
        return None, None, probes, "probes"
    lo, hi = 0, None
    b = min(entry.batches[0], max_batch)
    while hi is None:
        if deadline and time.time() > deadline:
            return lo, hi, probes, "deadline"
        if try_batch(b):
            lo = b
            if b >= max_batch:
                return lo, None, probes, "reached --max-batch"
            b = min(b * 2, max_batch)
        else:
            hi = b
            if b == 1:
                break
    while hi - lo > 1:
        if deadline and time.time() > deadline:
            return lo, hi, probes, "deadline"
        mid = (lo + hi) // 2
        if try_batch(mid):
            lo = mid
        else:
            hi = mid
    loop.clean_allocator(device, require_empty=False)
    return lo, hi, probes, "ok"


def main(argv):
    p = argparse.ArgumentParser(prog="python3 -m validate maxbatch")
    p.add_argument("--budget", default="24GiB")
    p.add_argument("--models", default=DEFAULT_MODELS)
    p.add_argument("--configs", default=DEFAULT_CONFIGS, help="AMP-OPTIM pairs, e.g. fp16-adam,fp32-sgd")
    p.add_argument("--out", default="maxbatch.jsonl")
    p.add_argument("--max-batch", type=int, default=8192)
    p.add_argument("--deadline", type=float, default=0, help="unix time after which no probe is started")
    p.add_argument("--device", default="cuda")
    p.add_argument("--set", default="zoo", help="zoo, holdout or blind: the model list --models picks from")
    p.add_argument("--batches", default="",
                   help="try exactly these batches (e.g. 129-135,140), no search: records status 'probes'")
    args = p.parse_args(argv)
    import torch
    from validate.measure import versions
    budget = parse_size(args.budget)
    vers = versions(args.device)
    cuda = args.device.startswith("cuda")
    total = torch.cuda.get_device_properties(0).total_memory if cuda else budget
    fraction = min(1.0, budget / float(total))
    if cuda:
        torch.cuda.set_per_process_memory_fraction(fraction)
    command = "python3 -m validate maxbatch " + " ".join(argv)
    only = []
    for part in filter(None, args.batches.split(",")):
        a, _, b = part.partition("-")
        only += list(range(int(a), int(b or a) + 1))
    for entry in zoo.select(args.models, args.set):
        for c in args.configs.split(","):
            amp, opt = c.split("-")
            cfg0 = zoo.parse_config(entry, "bs1-" + c)
            t0 = time.time()
            rec = {"model": entry.name, "config": c, "optim": cfg0.optim, "momentum": cfg0.momentum,
                   "amp": cfg0.amp_field, "loss": entry.loss, "onnx": entry.onnx, "budget": args.budget,
                   "budget_bytes": budget, "total_memory": total, "fraction": fraction, "iterations": 2}
            try:
                lo, hi, probes, why = search(entry, c, budget, args.device, args.deadline, args.max_batch, only)
                ok = [q for q in probes if q["batch"] == lo and q["status"] == "ok"]
                rec.update(status="ok" if why in ("ok", "probes") else why, max_ok_batch=lo, first_fail_batch=hi,
                           peak_allocated_at_max=ok[-1]["peak_allocated"] if ok else None,
                           peak_reserved_at_max=ok[-1]["peak_reserved"] if ok else None, probes=probes)
            except Exception as exc:
                from validate.measure import _status_of
                rec.update(status=_status_of(exc))
            args_m = cfg0.memest_args(entry)[2:]  # drop --batch
            rec["memest_args"] = ["--budget", args.budget] + args_m
            rec.update(time_s=round(time.time() - t0, 1), command=command, versions=vers,
                       timestamp=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
            with open(args.out, "a") as f:
                f.write(json.dumps(rec) + "\n")
            print("%-12s %-10s budget %s: max batch %s (first fail %s) %s %.0fs" % (
                entry.name, c, args.budget, rec.get("max_ok_batch"), rec.get("first_fail_batch"),
                rec["status"][:80], rec["time_s"]), flush=True)
    return 0
