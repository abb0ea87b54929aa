"""`validate parallel`: protocol.md's loop under torch.distributed, one JSON line per case and rank.

protocol.md "Data-parallel training, per rank":
    model = DistributedDataParallel(model.cuda())                               # ddp       (--ddp N)
    model = DistributedDataParallel(model.cuda(), gradient_as_bucket_view=True) # ddp-view  (--ddp N --bucket-view)
    for block in blocks: fully_shard(block); fully_shard(model)                 # fsdp      (--fsdp N)
and `none`: the same process setup without a wrapper (the baseline the increments are read against).

Measurement is validate/loop.py's, unchanged: the allocator is empty before the model is
built, the peak is reset there, three iterations, max_memory_allocated/max_memory_reserved
per phase. The wrapper is applied by run_case(wrap=...) right after model.to(device).

Each case runs in a process of its own: NCCL communicators and FSDP's streams outlive a
case, and a fresh process starts from an empty allocator. The world comes from torchrun's
variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT); without them the case
process makes a one-rank group on the port the parent gave it, so cases may run side by
side (each process reads only its own allocator's counters). Memory NCCL takes outside the
caching allocator is read with cudaMemGetInfo around init (valid only when no other process
uses the GPU at that moment: rows say whether they ran alone).

A case that fails (an API missing in this torch, out of memory) writes a row with its
status and the rest go on. On a machine without CUDA everything runs on the CPU with gloo
(DDP only: FSDP2 needs torch >= 2.6), so that all but the numbers can be tested.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid

from validate import zoo

MODES = ("none", "ddp", "ddp-view", "fsdp")
# (model, configs), the most telling first: a CNN, an encoder, two decoder LMs, a 1.1B decoder.
DEFAULT_CASES = [
    ("resnet50", ("b1-fp32-adam", "b1-fp16-adam", "b2-fp16-sgdm")),
    ("bert_hf", ("b1-fp32-adamw", "b1-fp16-adamw", "b1-bf16-adamw")),
    # gpt2_hf under fp16: GradScaler skips the first step (inf gradients at scale 65536), so
    # the rebuilding iteration runs without optimizer state; memest assumes every step runs.
    ("gpt2_hf", ("b1-fp32-adam", "b1-bf16-adamw", "b2-bf16-adam")),
    ("llama_hf", ("b1-bf16-adamw", "b1-fp32-adam")),
    ("llama1b", ("b1-bf16-adamw",)),
]
NCCL_NOTE = ("outside_allocator_*: cudaMemGetInfo's used bytes minus the caching allocator's reserved bytes, "
             "relative to the CUDA context alone (before init_process_group): after_init covers NCCL's "
             "communicator (created by a first all_reduce), at_end also cuBLAS/cuDNN handles made by the step; "
             "meaningful only when the row ran alone on the GPU")


# ---------------------------------------------------------------- blocks and wrappers

def block_paths(model):
    """The repeated blocks of protocol.md (what `--checkpoint blocks` wraps): each module
    path up to its first index segment (`layers.3`, `h.0`, `encoder.layer.7`) that names a
    container, in module order. Mirrors estimator/segments.cc block_of_module."""
    paths = []
    seen = set()
    for name, mod in model.named_modules():
        parts = name.split(".") if name else []
        for i, part in enumerate(parts):
            if part.isdigit():
                path = ".".join(parts[:i + 1])
                if path not in seen and name == path and any(True for _ in mod.children()):
                    seen.add(path)
                    paths.append(path)
                break
    return paths


def make_wrap(mode, device, info):
    """The wrapper of a mode, as a function of the model run_case built (on the device)."""
    if mode == "none":
        return None

    def ddp(model):
        from torch.nn.parallel import DistributedDataParallel as DDP
        info["wrap"] = "DistributedDataParallel(model%s)" % (", gradient_as_bucket_view=True" if mode == "ddp-view" else "")
        return DDP(model, gradient_as_bucket_view=(mode == "ddp-view"))

    def fsdp(model):
        from torch.distributed.fsdp import fully_shard  # torch >= 2.6
        paths = block_paths(model)
        for path in paths:
            fully_shard(model.get_submodule(path))
        fully_shard(model)
        info["wrap"] = "fully_shard on %d blocks (%s ... %s) and the root" % (
            len(paths), paths[0] if paths else "-", paths[-1] if paths else "-")
        info["fsdp_blocks"] = len(paths)
        return model

    return ddp if mode.startswith("ddp") else fsdp


def parallel_args(mode, world):
    """memest's flags for a mode (protocol.md's command-line contract)."""
    return {"none": [], "ddp": ["--ddp", str(world)], "ddp-view": ["--ddp", str(world), "--bucket-view"],
            "fsdp": ["--fsdp", str(world)]}[mode]


# ---------------------------------------------------------------- one case, in its own process

def _outside_allocator(torch, base_free):
    free, _total = torch.cuda.mem_get_info()
    return (base_free - free) - torch.cuda.memory_reserved()


def run_one(args):
    """The case process: init the group, run the case, write one row, tear the group down."""
    import torch
    import torch.distributed as dist
    from validate import loop
    from validate.measure import _status_of, base_record, record_phases, versions

    cuda = args.device.startswith("cuda")
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", str(rank)))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.port))
    os.environ.setdefault("RANK", str(rank))
    os.environ.setdefault("WORLD_SIZE", str(world))
    device = "cuda:%d" % local if cuda else "cpu"
    torch.set_num_threads(max(1, args.threads))
    entry = zoo.lookup(args.model)
    cfg = zoo.parse_config(entry, args.config)
    ns = argparse.Namespace(command="parallel")
    rec = base_record(entry, cfg, ns, args.run_id)
    rec["case"] = "%s/%s/%s" % (entry.name, cfg.name, args.mode)
    rec.update(parallel=args.mode.split("-")[0], bucket_view=args.mode == "ddp-view", mode=args.mode,
               world_size=world, rank=rank, alone=bool(args.alone))
    rec["memest_args"] = rec["memest_args"] + parallel_args(args.mode, world)
    rec["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    info = {}
    phases = loop.Phases(device)
    t0 = time.time()
    try:
        if cuda:
            torch.cuda.set_device(local)
            base_free = torch.cuda.mem_get_info()[0]  # the CUDA context exists from here on
        if args.mode != "none" or cuda:
            dist.init_process_group("nccl" if cuda else "gloo", rank=rank, world_size=world)
            t = torch.ones(1, device=device)
            dist.all_reduce(t, async_op=True).wait()  # creates the communicator now, outside the measured window
            del t
            if cuda:
                torch.cuda.synchronize()
                for _ in range(50):  # a collective's inputs may stay stashed until the watchdog sees it done
                    if torch.cuda.memory_allocated() == 0:
                        break
                    time.sleep(0.1)
                loop.clean_allocator(device, require_empty=False)
                rec["outside_allocator_after_init"] = _outside_allocator(torch, base_free)
        torch.manual_seed(0)
        cpu_model = entry.build()
        loop.run_case(entry, cfg, phases, device, cpu_model, info=info, wrap=make_wrap(args.mode, device, info))
        rec["status"] = "ok"
        if cuda:
            torch.cuda.synchronize()
            rec["outside_allocator_at_end"] = _outside_allocator(torch, base_free)
            rec["outside_allocator_note"] = NCCL_NOTE
    except Exception as exc:  # one failing case must not stop the others
        rec["status"] = _status_of(exc)
    rec["time_s"] = round(time.time() - t0, 3)
    record_phases(rec, phases, info)
    try:
        rec["versions"] = versions(device)
    except Exception:
        rec["versions"] = {"torch": torch.__version__}
    with open(args.out, "a") as f:
        f.write(json.dumps(rec) + "\n")
    try:
        if dist.is_initialized():
            dist.destroy_process_group()
    except Exception:
        pass
    return 0 if rec["status"] == "ok" else 1


# ---------------------------------------------------------------- the parent: schedules cases

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def case_list(models, configs, modes):
    cases = []
    table = DEFAULT_CASES
    if models:
        wanted = models.split(",")
        table = [(m, c) for m, c in DEFAULT_CASES if m in wanted] + [
            (m, ()) for m in wanted if m not in dict(DEFAULT_CASES)]
    for model, cfgs in table:
        for cfg in (configs.split(",") if configs else cfgs):
            for mode in modes:
                cases.append((model, cfg, mode))
    return cases


def _error_row(out, model, cfg, mode, status, run_id):
    entry = zoo.lookup(model)
    row = {"case": "%s/%s/%s" % (model, cfg, mode), "model": model, "config": cfg, "mode": mode,
           "parallel": mode.split("-")[0], "world_size": int(os.environ.get("WORLD_SIZE", "1")),
           "rank": int(os.environ.get("RANK", "0")), "status": status, "onnx": entry.onnx, "run_id": run_id}
    with open(out, "a") as f:
        f.write(json.dumps(row) + "\n")


def main(argv):
    p = argparse.ArgumentParser(prog="python3 -m validate parallel", description=__doc__.split("\n")[0])
    p.add_argument("--models", default=None, help="comma-separated (default: %s)" % ",".join(m for m, _ in DEFAULT_CASES))
    p.add_argument("--configs", default=None, help="comma-separated, e.g. b1-fp16-adam (default: per model)")
    p.add_argument("--modes", default=",".join(MODES), help="comma-separated of %s" % ", ".join(MODES))
    p.add_argument("--out", required=True, help="JSONL file to append to")
    p.add_argument("--device", default="cuda", help="cuda, or cpu for a dry run (gloo, DDP only)")
    p.add_argument("--jobs", type=int, default=1, help="cases run side by side (after one alone per mode)")
    p.add_argument("--deadline", type=float, default=0, help="epoch seconds: start no case after it")
    p.add_argument("--timeout", type=int, default=300, help="seconds per case")
    p.add_argument("--threads", type=int, default=4, help="torch CPU threads per case process")
    p.add_argument("--logs", default=None, help="folder for each case's output")
    p.add_argument("--alone-first", type=int, default=1,
                   help="1: the first case of each mode runs alone (a clean reading of NCCL's memory); 0: no")
    # the case process
    p.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--model", help=argparse.SUPPRESS)
    p.add_argument("--config", help=argparse.SUPPRESS)
    p.add_argument("--mode", help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, default=29500, help=argparse.SUPPRESS)
    p.add_argument("--alone", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--run-id", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        return run_one(args)
    modes = [m for m in args.modes.split(",") if m]
    bad = [m for m in modes if m not in MODES]
    if bad:
        p.error("unknown mode(s) %s; known: %s" % (",".join(bad), ", ".join(MODES)))
    run_id = args.run_id or uuid.uuid4().hex[:12]
    cases = case_list(args.models, args.configs, modes)
    logs = args.logs or tempfile.mkdtemp(prefix="parallel-logs-")
    os.makedirs(logs, exist_ok=True)
    # The first case of each mode runs alone (its outside-allocator reading is clean); then up to --jobs at once.
    firsts, rest, seen = [], [], set()
    for c in cases:
        (rest if c[2] in seen or not args.alone_first else firsts).append(c)
        seen.add(c[2])
    running = []  # (proc, case, started, log)

    def start(case, alone):
        model, cfg, mode = case
        log = open(os.path.join(logs, "%s_%s_%s.log" % case), "w")
        cmd = [sys.executable, "-m", "validate", "parallel", "--one", "--model", model, "--config", cfg, "--mode", mode,
               "--out", args.out, "--device", args.device, "--port", str(free_port()), "--alone", str(int(alone)),
               "--threads", str(args.threads), "--run-id", run_id]
        env = dict(os.environ)
        if "WORLD_SIZE" not in os.environ:  # each case makes its own one-rank group
            for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT"):
                env.pop(k, None)
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        running.append((proc, case, time.time(), log))
        print("start %s/%s/%s%s" % (model, cfg, mode, " (alone)" if alone else ""), flush=True)

    def reap(block):
        while running:
            for item in list(running):
                proc, case, t0, log = item
                rc = proc.poll()
                if rc is None and time.time() - t0 > args.timeout:
                    proc.kill()
                    proc.wait()
                    _error_row(args.out, *case, status="error: timed out after %ds" % args.timeout, run_id=run_id)
                    rc = -9
                if rc is None:
                    continue
                log.close()
                running.remove(item)
                if rc not in (0, 1, -9):  # the process died before writing its row
                    _error_row(args.out, *case, status="error: case process exited %d" % rc, run_id=run_id)
                print("done  %s/%s/%s rc=%d %.0fs" % (case + (rc, time.time() - t0)), flush=True)
            if not block or not running:
                return
            if len(running) < block:
                return
            time.sleep(0.5)

    for case in firsts:
        if args.deadline and time.time() > args.deadline:
            break
        start(case, True)
        reap(1)
    for case in rest:
        if args.deadline and time.time() > args.deadline:
            print("deadline reached; %d case(s) not started" % (len(rest) - rest.index(case)), flush=True)
            break
        while len(running) >= max(1, args.jobs):
            reap(max(1, args.jobs))
        start(case, args.jobs <= 1)
    while running:
        reap(1)
    return 0
