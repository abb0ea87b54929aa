"""`validate context --out context.jsonl`: the CUDA context's reserve, in a fresh process.

What a training job cannot use although PyTorch's allocator never sees it: the CUDA
context (driver state, loaded kernel images, cuBLAS/cuDNN handles). Measured as
context_reserve = total_memory - free - memory_reserved(), from cudaMemGetInfo, after
each step that loads more: CUDA init, a cuBLAS matmul (fp32, then fp16 through cuBLASLt),
a cuDNN convolution forward and backward, and one small training step with Adam and
autocast. nvidia-smi's memory.used (whole GPU, and this process's own entry) is read
at the same points. Run it alone on the GPU: other processes' memory counts in `free`.
One JSON line per step, all with the same run_id.
"""
import argparse
import json
import os
import subprocess
import sys
import time
import uuid


def _smi(pid):
    out = {}
    try:
        p = subprocess.run(["nvidia-smi", "--query-gpu=memory.used,memory.total", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=20)
        used, total = p.stdout.strip().splitlines()[0].split(",")
        out["smi_used_mib"] = int(used)
        out["smi_total_mib"] = int(total)
    except Exception as exc:
        out["smi_error"] = str(exc)[:200]
    try:
        p = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=20)
        apps = []
        for line in p.stdout.strip().splitlines():
            a, b = [x.strip() for x in line.split(",")[:2]]
            apps.append([a, b])
        out["smi_apps"] = apps
        mine = [int(b) for a, b in apps if a.isdigit() and int(a) == pid and b.isdigit()]
        if mine:
            out["smi_this_process_mib"] = mine[0]
    except Exception as exc:
        out["smi_apps_error"] = str(exc)[:200]
    return out


def main(argv):
    p = argparse.ArgumentParser(prog="python3 -m validate context")
    p.add_argument("--out", default="context.jsonl")
    p.add_argument("--device", default="cuda")
    args = p.parse_args(argv)
    run_id = uuid.uuid4().hex[:12]
    pid = os.getpid()
    before = _smi(pid)  # before this process touches the GPU
    import torch
    cuda = args.device.startswith("cuda") and torch.cuda.is_available()
    if args.device.startswith("cuda") and not cuda:
        raise SystemExit("context: CUDA is not available here (use --device cpu for a dry run)")
    dev = "cuda" if cuda else "cpu"
    from validate.measure import versions
    vers = versions(dev)
    vers["CUDA_MODULE_LOADING"] = os.environ.get("CUDA_MODULE_LOADING")
    total = torch.cuda.get_device_properties(0).total_memory if cuda else 0
    rows = []

    def record(step):
        if cuda:
            torch.cuda.synchronize()
            free, tot = torch.cuda.mem_get_info()
            reserved = torch.cuda.memory_reserved()
            allocated = torch.cuda.memory_allocated()
        else:
            free = tot = reserved = allocated = 0
        r = {"run_id": run_id, "step": step, "total_memory": total, "mem_get_info_free": free,
             "mem_get_info_total": tot, "memory_reserved": reserved, "memory_allocated": allocated,
             "context_reserve": total - free - reserved, "context_reserve_vs_info_total": tot - free - reserved}
        r.update(_smi(pid))
        r["smi_before_process"] = before.get("smi_used_mib")
        r["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        r["versions"] = vers
        rows.append(r)
        with open(args.out, "a") as f:
            f.write(json.dumps(r) + "\n")
        print("%-28s reserve %8.1f MiB  reserved %8.1f MiB  smi used %s MiB (this process %s)" % (
            step, r["context_reserve"] / 2.0 ** 20, reserved / 2.0 ** 20, r.get("smi_used_mib"),
            r.get("smi_this_process_mib")), flush=True)

    if cuda:
        torch.cuda.init()
        torch.empty(1, device=dev)
    record("init")
    a = torch.randn(1024, 1024, device=dev)
    c = a @ a
    record("cublas_matmul_fp32")
    if cuda:
        h = a.half()
        c = h @ h
        del h
    record("cublas_matmul_fp16")
    conv = torch.nn.Conv2d(3, 64, 3, padding=1).to(dev)
    x = torch.randn(8, 3, 64, 64, device=dev, requires_grad=True)
    y = conv(x)
    record("cudnn_conv_forward")
    y.sum().backward()
    record("cudnn_conv_backward")
    del a, c, conv, x, y
    # one small training step: BatchNorm, ReLU, pooling, linear, CE, Adam (foreach), fp16 autocast
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU(),
                              torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 10)).to(dev)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    x = torch.randn(16, 3, 32, 32, device=dev)
    t = torch.randint(0, 10, (16,), device=dev)
    for amp in (False, True):
        with torch.autocast("cuda" if cuda else "cpu", enabled=amp and cuda,
                            dtype=torch.float16 if cuda else torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(net(x), t)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    record("train_step_adam_amp")
    del net, opt, x, t, loss
    if cuda:
        torch.cuda.empty_cache()
    record("after_empty_cache")
    print("context rows -> %s (run %s)" % (args.out, run_id), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
