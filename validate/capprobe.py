"""What the caching allocator does next to a memory cap (issue 18: the largest batch).

    python3 -m validate capprobe --set sample:21:30 --model sh_llama_lm --config fp16-adam \
        --budget 24GiB --batches 1237,1238 --out capprobe.jsonl

Runs the protocol's loop (two iterations, as `validate maxbatch` does) at each batch under
torch.cuda.set_per_process_memory_fraction(budget / total), with the allocator's history
recorded, and writes per batch: the status, the peaks, and the last allocator events before
the end (or the OOM) with the segments then held: each segment's size and the bytes of
its blocks in use. blind15's sh_llama_lm ran out of memory at 1238 allocating 5.07 GB with
19.86 GiB reserved, where memest's capped replay fitted with 22.32 GiB: which segments the
GPU held decides it.
"""
import argparse
import json
import time

TAIL = 400  # allocator events kept before the end


def _segments(snapshot):
    out = []
    for s in snapshot.get("segments", []):
        out.append({"size": s["total_size"], "allocated": s["allocated_size"], "active": s.get("active_size", 0),
                    "stream": s.get("stream", 0), "pool": s.get("segment_type", ""),
                    "blocks": [[b["size"], b["state"]] for b in s.get("blocks", [])][:64]})
    return out


def _events(snapshot):
    trace = snapshot.get("device_traces", [[]])
    ev = trace[0] if trace else []
    return [[e.get("action"), e.get("size", 0), e.get("addr", 0)] for e in ev[-TAIL:]]


def run(entry, cfg_name, batch, device):
    import torch
    from validate import loop, zoo
    from validate.measure import _status_of
    torch.manual_seed(0)
    cpu_model = entry.build()
    cfg = zoo.parse_config(entry, "bs%d-%s" % (batch, cfg_name))
    phases = loop.Phases(device)
    torch.cuda.memory._record_memory_history(max_entries=200000, stacks="python")
    t0 = time.time()
    try:
        loop.run_case(entry, cfg, phases, device, cpu_model, iters=2)
        status = "ok"
    except Exception as exc:
        status = _status_of(exc)
        del exc
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    peak, peak_res, _ = phases.peak()
    rec = {"model": entry.name, "config": cfg_name, "batch": batch, "status": status, "peak_allocated": peak,
           "peak_reserved": peak_res, "time_s": round(time.time() - t0, 2),
           "segments": _segments(snap), "events": _events(snap)}
    loop.clean_allocator(device, require_empty=False)
    return rec


def main(argv):
    p = argparse.ArgumentParser(prog="python3 -m validate capprobe")
    p.add_argument("--set", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--config", default="fp16-adam")
    p.add_argument("--budget", default="24GiB")
    p.add_argument("--batches", required=True)
    p.add_argument("--out", default="capprobe.jsonl")
    p.add_argument("--device", default="cuda")
    args = p.parse_args(argv)
    import torch
    from validate import zoo
    from validate.maxbatch import parse_size
    budget = parse_size(args.budget)
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(min(1.0, budget / float(total)))
    entry = zoo.select(args.model, args.set)[0]
    with open(args.out, "a") as f:
        for b in [int(x) for x in args.batches.split(",")]:
            rec = run(entry, args.config, b, args.device)
            rec["budget_bytes"] = budget
            print("%s %s batch %d: %s (peak %.2f GiB, reserved %.2f GiB, %d segments)" % (
                entry.name, args.config, b, rec["status"][:80], rec["peak_allocated"] / 2 ** 30,
                rec["peak_reserved"] / 2 ** 30, len(rec["segments"])), flush=True)
            f.write(json.dumps(rec) + "\n")
    return 0
