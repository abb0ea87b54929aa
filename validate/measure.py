"""`validate measure` and `validate checkpoint`: the truth, one JSON line per case.

The parent process only schedules: it runs the cases in a worker subprocess, reads
back which ones were written, and when the worker dies (a CUDA error poisons the
context) records the case in flight as failed and starts a new worker for the rest.
Each case starts from an empty allocator (see loop.clean_allocator).
"""
import argparse
import json
import os
import subprocess
import sys
import time
import uuid

from validate import zoo

DEFAULT_TRACES = [
    "resnet50/b1-fp32-adam", "resnet50/b1-fp16-adam", "vit_b_16/b1-fp16-adam", "gpt_mini/b1-fp32-adam",
    "bert_hf/b1-fp16-adamw", "lstm_lm/b1-fp32-sgd", "mlp/b1-fp32-adam", "convnext_tiny/b1-fp16-adam",
]
# Cases memest gets wrong (or got wrong): every live block at the peak, with autograd-node labels.
TRACES2 = [
    "conv_autoencoder/b1-fp32-adam", "conv_autoencoder/b1-fp16-adam", "mlp/b2-fp32-adamw", "mlp/b1-fp16-sgdm",
    "lstm_lm/b1-fp16-adam", "vgg11_bn/b1-fp16-adam", "efficientnet_b0/b1-fp16-adam", "mobilenet_v2/b1-fp16-adam",
    "bert_mini/b1-fp16-adam",
]
CHECKPOINT_MODELS = "resnet50,vit_b_16,gpt_mini,gpt2_hf"
CHECKPOINT_CONFIGS = "b1-fp32-adam,b1-fp16-adam"


def versions(device):
    import torch
    v = {"torch": torch.__version__, "cuda": torch.version.cuda, "python": sys.version.split()[0]}
    try:
        import torchvision
        v["torchvision"] = torchvision.__version__
    except Exception:
        pass
    try:
        import transformers
        v["transformers"] = transformers.__version__
    except Exception:
        pass
    if str(device).startswith("cuda") and torch.cuda.is_available():
        v["cudnn"] = torch.backends.cudnn.version()
        v["gpu"] = torch.cuda.get_device_name()
        v["total_memory"] = torch.cuda.get_device_properties(0).total_memory
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20)
            v["driver"] = out.stdout.strip().splitlines()[0]
        except Exception:
            pass
    v["settings"] = {
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
        "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
        "matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "CUBLAS_WORKSPACE_CONFIG": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        "PYTORCH_CUDA_ALLOC_CONF": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
    }
    return v


def record_phases(rec, phases, info):
    """A case's row: its peaks (where and when), the allocator after each setup step, the
    loop's facts (`info`) and one entry per phase."""
    peak, peak_res, where = phases.peak()
    rec.update(peak_allocated=peak, peak_reserved=peak_res, peak_at=where,
               after_model=phases.after("model"), after_optimizer=phases.after("optimizer"),
               after_inputs=phases.after("inputs"))
    rec.update(info)
    rec["phases"] = [{k: r[k] for k in ("it", "micro", "phase", "peak", "allocated", "peak_reserved", "reserved")
                      if k in r} for r in phases.rows]


def _status_of(exc):
    text = "%s: %s" % (type(exc).__name__, str(exc).strip().splitlines()[0] if str(exc).strip() else "")
    if "out of memory" in str(exc).lower() or type(exc).__name__ == "OutOfMemoryError":
        return "OOM: " + text
    return "error: " + text[:500]


def base_record(entry, cfg, args, run_id):
    rec = {
        "case": "%s/%s" % (entry.name, cfg.name), "model": entry.name, "config": cfg.name,
        "batch": cfg.batch, "optim": cfg.optim, "momentum": cfg.momentum, "amp": cfg.amp_field,
        "loss": entry.loss, "onnx": entry.onnx, "memest_args": cfg.memest_args(entry),
        "iterations": 3, "command": args.command, "run_id": run_id,
    }
    if entry.train or entry.freeze or entry.accum != 1:
        rec.update(train=list(entry.train), freeze=list(entry.freeze), grad_accum=entry.accum)
    return rec


def measure_one(entry, cfg, args, run_id, vers, cpu_model, probe_cache, trace=False):
    """Run one case; returns its JSON record (and the trace record when asked)."""
    from validate import loop
    rec = base_record(entry, cfg, args, run_id)
    if args.checkpoint:
        rec["checkpoint"] = "blocks"
    rec["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    phases = loop.Phases(args.device, plain=args.plain)
    info = {}
    t0 = time.time()
    trace_rec = None
    annot = None
    if args.plain:
        rec["instrumented"] = False
    try:
        out_meta = None
        if entry.loss == "mse":
            key = (entry.name, cfg.amp)
            if key not in probe_cache:
                probe_cache[key] = loop.probe_output(entry, cpu_model, cfg.amp, args.device)
            out_meta = probe_cache[key]
        loop.clean_allocator(args.device)
        cuda = loop.is_cuda(args.device)
        if trace:
            from validate import trace as tr
            if args.trace_detail:
                annot = tr.Annotator()
            if cuda:
                tr.start_recording(args.trace_entries)
        try:
            loop.run_case(entry, cfg, phases, args.device, cpu_model, checkpoint=args.checkpoint,
                          out_meta=out_meta, info=info, hooks=annot)
        finally:
            if trace:
                if cuda:
                    snap = tr.take_snapshot()
                    tr.stop_recording()
                else:
                    snap = {"device_traces": []}  # CPU dry run: no allocator history
        rec["status"] = "ok"
    except Exception as exc:  # one failing case must not stop the others
        rec["status"] = _status_of(exc)
        snap = None
        del exc
    rec["time_s"] = round(time.time() - t0, 3)
    record_phases(rec, phases, info)
    rec["versions"] = vers
    if trace and snap is not None:
        from validate import trace as tr
        trace_rec = {k: rec[k] for k in ("run_id", "case", "model", "config", "batch", "optim", "momentum", "amp", "loss",
                                         "status", "peak_allocated", "peak_reserved", "peak_at", "onnx",
                                         "memest_args", "timestamp")}
        if args.checkpoint:
            trace_rec["checkpoint"] = "blocks"
        try:
            red = tr.reduce_snapshot(snap, phases.rows, rec["peak_allocated"], since_us=int(phases.t0 * 1e6) - 200000, annot=annot,
                                     full=args.trace_detail, n_frames=args.trace_frames)
            red["truncated"] = red["n_events"] >= args.trace_entries
            trace_rec.update(red)
        except Exception as exc:
            trace_rec["trace_error"] = _status_of(exc)
        trace_rec["versions"] = {k: vers.get(k) for k in ("torch", "cuda", "cudnn", "gpu")}
        del snap
    from validate import loop as _l
    try:
        _l.clean_allocator(args.device, require_empty=False)
    except Exception:
        pass
    return rec, trace_rec


def _summary(rec):
    gib = 2.0 ** 30
    if rec["status"] != "ok":
        return "%-36s %s" % (rec["case"], rec["status"][:120])
    pa = rec.get("peak_at") or {}
    return "%-36s peak %7.3f GiB  reserved %7.3f GiB  at it%s/%s  params %.1f MiB  %.1fs" % (
        rec["case"], rec["peak_allocated"] / gib, rec["peak_reserved"] / gib, pa.get("it"), pa.get("phase"),
        rec.get("param_bytes", 0) / 2.0 ** 20, rec["time_s"])


def worker(args):
    """Runs the given cases in this process, appending one line per case as it finishes."""
    import torch
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("measure: CUDA is not available here (use --device cpu for a dry run)")
    vers = versions(args.device)
    cases = [c for c in args.cases.split(",") if c] if args.cases else []
    traces = [c for c in args.trace.split(",") if c] if args.trace else []
    cpu_models = {}
    probe_cache = {}
    todo = [(c, False) for c in cases] + [(c, True) for c in traces]
    for case, is_trace in todo:
        if args.deadline and time.time() > args.deadline:
            print("deadline reached; stopping before %s" % case, flush=True)
            break
        name, cfg_name = case.split("/", 1)
        entry = zoo.lookup(name)
        cfg = zoo.parse_config(entry, cfg_name)
        print("case %s%s ..." % (case, " (trace)" if is_trace else ""), flush=True)
        if os.environ.get("VALIDATE_TEST_CRASH") == case:  # tests the parent's restart path
            os._exit(3)
        name = entry.onnx  # fine-tuning entries that share a graph share the built model
        if name not in cpu_models:
            cpu_models.clear()  # keep one built model at a time
            try:
                torch.manual_seed(0)
                cpu_models[name] = entry.build()
            except Exception as exc:
                cpu_models[name] = None
                rec = base_record(entry, cfg, args, args.run_id)
                rec.update(status="error: build failed: " + _status_of(exc), versions=vers,
                           timestamp=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
                if not is_trace:
                    _append(args.out, rec)
                print(_summary(rec), flush=True)
                continue
        if cpu_models[name] is None:
            rec = base_record(entry, cfg, args, args.run_id)
            rec.update(status="error: build failed", versions=vers, timestamp=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
            if not is_trace:
                _append(args.out, rec)
            continue
        rec, trace_rec = measure_one(entry, cfg, args, args.run_id, vers, cpu_models[name], probe_cache,
                                     trace=is_trace)
        if is_trace:
            if trace_rec is None:
                trace_rec = {"run_id": args.run_id, "case": case, "status": rec["status"]}
            _append(args.trace_out, trace_rec)
            print("trace " + _summary(rec) + ("  replay %s" % trace_rec.get("replay_peak")), flush=True)
        else:
            _append(args.out, rec)
            print(_summary(rec), flush=True)
        if args.device.startswith("cuda") and torch.cuda.memory_allocated() > 0:
            # Something the case made outlives it in this process: a cuDNN RNN with dropout
            # caches its dropout state (about 6 MiB on an H200) for the process's life. The
            # next case must start from an empty allocator, so the rest go to a fresh worker.
            print("%d bytes outlive %s; restarting the worker" % (torch.cuda.memory_allocated(), case), flush=True)
            sys.exit(RESTART_RC)


RESTART_RC = 75  # a worker asks for a fresh process; nothing failed


def _append(path, rec):
    with open(path, "a") as f:
        f.write(json.dumps(rec, sort_keys=False) + "\n")
        f.flush()


def _done_cases(path, run_id):
    done = set()
    if not os.path.exists(path):
        return done
    with open(path) as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("run_id") == run_id:
                done.add(r["case"])
    return done


def parent(args, argv):
    entries = zoo.select(args.models, args.set)
    cases = []
    for e in entries:
        cfgs = args.configs.split(",") if args.configs else list(e.configs or zoo.CONFIGS)
        for c in cfgs:
            zoo.parse_config(e, c)  # fail early on a typo
            cases.append("%s/%s" % (e.name, c))
    if args.only_trace:
        cases = []
    traces = args.trace.split(",") if args.trace else []
    for t in traces:
        n, c = t.split("/", 1)
        zoo.parse_config(zoo.lookup(n), c)
    run_id = uuid.uuid4().hex[:12]
    if not args.command:
        args.command = "python3 -m validate " + " ".join(argv)
    if os.path.dirname(args.out):
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
    restarts = 0
    skipped = set()
    while True:
        done = _done_cases(args.out, run_id)
        tdone = _done_cases(args.trace_out, run_id)
        remaining = [c for c in cases if c not in done]
        rtraces = [t for t in traces if t not in tdone and t not in skipped]
        if not remaining and not rtraces:
            break
        cmd = [sys.executable, "-m", "validate", "_worker", "--out", args.out, "--run-id", run_id, "--set", args.set,
               "--trace-frames", str(args.trace_frames),
               "--cases", ",".join(remaining), "--trace", ",".join(rtraces), "--trace-out",
               args.trace_out, "--device", args.device, "--command", args.command,
               "--trace-entries", str(args.trace_entries)]
        if args.checkpoint:
            cmd.append("--checkpoint")
        if args.plain:
            cmd.append("--plain")
        if args.trace_detail:
            cmd.append("--trace-detail")
        if args.deadline:
            cmd += ["--deadline", str(args.deadline)]
        rc = subprocess.call(cmd)
        if rc == 0:
            break
        if rc == RESTART_RC:
            continue
        if restarts >= args.max_restarts:
            print("worker failed (rc=%d) %d times; giving up" % (rc, restarts + 1), flush=True)
            break
        restarts += 1
        done = _done_cases(args.out, run_id)
        tdone = _done_cases(args.trace_out, run_id)
        remaining = [c for c in cases if c not in done]
        rtraces = [t for t in traces if t not in tdone and t not in skipped]
        bad = remaining[0] if remaining else (rtraces[0] if rtraces else None)
        if bad is None:
            break
        n, c = bad.split("/", 1)
        e = zoo.lookup(n)
        rec = base_record(e, zoo.parse_config(e, c), args, run_id)
        rec.update(status="error: worker process died (rc=%d) during this case" % rc,
                   timestamp=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        if remaining:
            _append(args.out, rec)
        else:
            skipped.add(bad)
            _append(args.trace_out, rec)
        print("%s: worker died (rc=%d); restarting for the rest" % (bad, rc), flush=True)
    _report(args.out, run_id)


def _report(path, run_id):
    rows = []
    if not os.path.exists(path):
        return
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get("run_id") == run_id:
                rows.append(r)
    ok = sum(1 for r in rows if r.get("status") == "ok")
    print("measured %d cases: %d ok, %d failed -> %s" % (len(rows), ok, len(rows) - ok, path), flush=True)


def add_args(p, checkpoint=False):
    p.add_argument("--out", default="checkpoint.jsonl" if checkpoint else "results.jsonl")
    p.add_argument("--models", default=CHECKPOINT_MODELS if checkpoint else None,
                   help="comma-separated zoo names (default: all)")
    p.add_argument("--configs", default=CHECKPOINT_CONFIGS if checkpoint else None,
                   help="comma-separated configs like b1-fp16-adam (default: the zoo's eight)")
    p.add_argument("--trace", default="", help="comma-separated MODEL/CONFIG cases to trace too")
    p.add_argument("--only-trace", action="store_true", help="run the traced cases only")
    p.add_argument("--trace-out", default="traces.jsonl")
    p.add_argument("--trace-detail", action="store_true",
                   help="traces: every live block at the peak (frames deduplicated) and module / autograd-node "
                        "labels from hooks (trace.Annotator)")
    p.add_argument("--trace-frames", type=int, default=3, help="Python frames per block in live_at_peak_all")
    p.add_argument("--set", default="zoo", help="zoo (default), holdout, blind or finetune: the model list --models picks from")
    p.add_argument("--trace-entries", type=int, default=2_000_000)
    p.add_argument("--device", default="cuda", help="cuda, or cpu for a dry run of the code paths")
    p.add_argument("--deadline", type=float, default=0, help="unix time after which no case is started")
    p.add_argument("--max-restarts", type=int, default=6)
    p.add_argument("--command", default="")
    p.add_argument("--plain", action="store_true",
                   help="no per-phase reads: only max_memory_allocated() at the end (a check of the method)")
    p.set_defaults(checkpoint=checkpoint)


def main(argv, checkpoint=False):
    p = argparse.ArgumentParser(prog="python3 -m validate " + ("checkpoint" if checkpoint else "measure"))
    add_args(p, checkpoint)
    args = p.parse_args(argv)
    if args.trace == "default":
        args.trace = ",".join(DEFAULT_TRACES)
    elif args.trace == "traces2":
        args.trace = ",".join(TRACES2)
    parent(args, ["checkpoint" if checkpoint else "measure"] + argv)


def worker_main(argv):
    p = argparse.ArgumentParser(prog="python3 -m validate _worker")
    add_args(p)
    p.add_argument("--run-id", required=True)
    p.add_argument("--cases", default="")
    p.add_argument("--checkpoint", action="store_true")
    worker(p.parse_args(argv))
