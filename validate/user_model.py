"""`python3 -m validate MODEL.pt --batch N ...`: measure a user's TorchScript file.

Runs protocol.md's loop on torch.jit.load(MODEL.pt), prints the measured peak and,
when a memest binary is found (--memest, else `memest` on PATH, else build/memest),
memest's estimate next to the measurement, component by component.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

from validate import zoo


def parse_shape(text):
    shape, _, dtype = text.partition(":")
    dims = tuple(int(d) for d in shape.lower().split("x") if d)
    dtype = dtype or "float32"
    if dtype not in ("float32", "int64"):
        raise SystemExit("--input-shape %s: dtype must be float32 or int64" % text)
    return dims, dtype


def find_memest(explicit):
    if explicit:
        return explicit
    for c in (shutil.which("memest"), "build/memest"):
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def memest_estimate(memest, model, args, memest_args, timeout=120):
    cmd = [memest, model] + memest_args + ["--json"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, "%s: %s" % (" ".join(cmd), exc)
    if p.returncode != 0:
        return None, "%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr.strip()[:300])
    try:
        return json.loads(p.stdout), None
    except ValueError:
        return None, "%s: stdout is not JSON: %r" % (" ".join(cmd), p.stdout[:200])


def main(argv):
    p = argparse.ArgumentParser(prog="python3 -m validate MODEL.pt")
    p.add_argument("model")
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--optim", choices=("sgd", "adam", "adamw"), default="sgd")
    p.add_argument("--momentum", type=float, default=0.0)
    p.add_argument("--amp", nargs="?", const="fp16", default=None, choices=("fp16", "bf16"))
    p.add_argument("--loss", choices=("ce", "mse", "sum"), default="ce")
    p.add_argument("--input-shape", action="append", required=True,
                   help="per-sample shape without the batch, once per input: 3x224x224 or 128:int64")
    p.add_argument("--int-high", type=int, default=2, help="random int64 inputs are drawn from [0, N)")
    p.add_argument("--memest", default=None, help="memest binary (default: memest on PATH, or build/memest)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--json", default=None, help="also write the measured record to this file")
    args = p.parse_args(argv)

    import torch
    from validate import loop
    from validate.measure import _status_of, versions

    path = args.model
    if not os.path.isfile(path):
        sys.stderr.write("validate: %s: no such file\n" % path)
        return 2
    inputs = [zoo.InputSpec("input%d" % i, *parse_shape(s)) for i, s in enumerate(args.input_shape)]
    for spec in inputs:
        spec.high = args.int_high

    def build():
        return torch.jit.load(path, map_location="cpu")

    entry = zoo.Entry(os.path.basename(path), build, inputs, args.loss, None, (args.batch, args.batch),
                      "torch.jit.load(%s)" % path)
    cfg = zoo.Config("user", args.batch, args.amp or "fp32", args.optim, args.momentum)
    try:
        out_meta = loop.probe_output(entry, None, cfg.amp, args.device)
    except Exception as exc:
        sys.stderr.write("validate: %s: the model does not run on a batch of 1: %s\n" % (path, _status_of(exc)))
        return 2
    shape = out_meta[0]
    if args.loss == "ce":
        if len(shape) == 2:
            entry.target = zoo.TargetSpec((), shape[1])
        elif len(shape) == 3:
            entry.target = zoo.TargetSpec((shape[1],), shape[2])
        elif len(shape) == 4:
            entry.target = zoo.TargetSpec((shape[2], shape[3]), shape[1])
        else:
            sys.stderr.write("validate: %s: output %s has no ce target rule (use --loss mse|sum)\n" % (path, shape))
            return 2
    phases = loop.Phases(args.device)
    info = {}
    try:
        loop.run_case(entry, cfg, phases, args.device, None, out_meta=out_meta, info=info)
        status = "ok"
    except Exception as exc:
        status = _status_of(exc)
        del exc
    loop.clean_allocator(args.device, require_empty=False)
    peak, peak_res, where = phases.peak()
    memest_args = ["--batch", str(args.batch), "--optim", args.optim]
    if args.momentum:
        memest_args += ["--momentum", "%g" % args.momentum]
    if args.amp:
        memest_args += ["--amp", args.amp]
    memest_args += ["--loss", args.loss]
    for s in args.input_shape:
        memest_args += ["--input-shape", s]
    rec = {"model": path, "batch": args.batch, "optim": args.optim, "momentum": args.momentum,
           "amp": args.amp or "none", "loss": args.loss, "status": status, "peak_allocated": peak,
           "peak_reserved": peak_res, "peak_at": where, "memest_args": memest_args,
           "phases": phases.rows, "versions": versions(args.device)}
    rec.update(info)
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(rec) + "\n")
    mib = 2.0 ** 20
    print("%s: %s" % (path, status))
    print("measured peak allocated %.1f MiB (%d bytes) at it%s/%s; peak reserved %.1f MiB" % (
        peak / mib, peak, (where or {}).get("it"), (where or {}).get("phase"), peak_res / mib))
    memest = find_memest(args.memest)
    if not memest:
        print("(no memest binary found: pass --memest PATH to compare)")
        return 0 if status == "ok" else 1
    est, err = memest_estimate(memest, path, args, memest_args)
    if err:
        print("memest failed: " + err)
        return 1
    comp = est.get("components", {})
    measured = {"parameters": info.get("param_bytes"), "buffers": info.get("buffer_bytes"),
                "inputs": (info.get("x_bytes", 0) + info.get("y_bytes", 0)) if info else None,
                "gradients": info.get("grad_bytes"), "optimizer_state": info.get("optimizer_state_bytes")}
    print("%-18s %14s %14s %8s" % ("component", "memest MiB", "measured MiB", "error"))
    for k in list(comp) + [k for k in measured if k not in comp]:
        e, m = comp.get(k), measured.get(k)
        print("%-18s %14s %14s %8s" % (k, "--" if e is None else "%.1f" % (e / mib),
                                       "--" if m is None else "%.1f" % (m / mib),
                                       "%+.1f%%" % (100.0 * (e - m) / m) if e is not None and m else "--"))
    e = est.get("peak_bytes")
    print("%-18s %14.1f %14.1f %+7.1f%%" % ("peak", e / mib, peak / mib, 100.0 * (e - peak) / peak) if e and peak
          else "peak: memest %s, measured %s" % (e, peak))
    if "reserved_bytes" in est and peak_res:
        r = est["reserved_bytes"]
        print("%-18s %14.1f %14.1f %+7.1f%%" % ("reserved", r / mib, peak_res / mib, 100.0 * (r - peak_res) / peak_res))
    return 0 if status == "ok" else 1
