"""Kernel probes: the scratch memory single ops take on the GPU, outside any model.

Some of a training step's allocations are no tensor of the graph: cuDNN convolution
workspaces, the staging buffer of a reduction split across blocks (a bias gradient
is a sum over the batch), the accumulators of attention's backward. Each probe runs
one op in isolation with the allocator's history recording and writes the ordered
allocation events it saw (["a", bytes] alloc, ["f", bytes] free), so that the rule
memest uses for such buffers can be fitted and checked offline, op by op.

  python3 -m validate kernels --out kernels.jsonl [--deadline UNIX_TIME]

Probed: every convolution of the zoo and hold-out CNNs at their measured batch sizes
(forward; backward with and without the input's gradient) in fp32/fp16/bf16, plus a
grid of 1x1/3x3 convolutions; sum over the batch of [M, N] and over (0, 2, 3) of
[N, C, H, W]; scaled_dot_product_attention forward and backward; layer_norm, embedding
and cross_entropy backward. cudnn.benchmark stays False, as in protocol.md's loop.
"""
import argparse
import json
import sys
import time

MARK = 12_345 * 512  # a marker allocation's size: events after its alloc belong to the probe


def _events(torch, fn):
    """Run fn() with allocation history on; return its events as [["a"|"f", bytes], ...]."""
    torch.cuda.synchronize()
    rec = torch.cuda.memory._record_memory_history
    try:
        rec(enabled="all", context=None, stacks="python", max_entries=100_000, clear_history=True)
    except TypeError:
        rec(enabled="all", context=None, stacks="python", max_entries=100_000)
    try:
        marker = torch.empty(MARK, dtype=torch.uint8, device="cuda")
        keep = fn()
        torch.cuda.synchronize()
        snap = torch.cuda.memory._snapshot()
    finally:
        rec(enabled=None)
    del marker, keep
    trace = snap["device_traces"][0]
    start = max(i for i, e in enumerate(trace) if e["action"] == "alloc" and e["size"] == MARK)
    out = []
    for e in trace[start + 1:]:
        if e["action"] == "alloc":
            out.append(["a", e["size"]])
        elif e["action"] == "free_requested":
            out.append(["f", e["size"]])
    return out


DTYPES = ("float32", "float16", "bfloat16")


def conv_configs(torch, entries, channels_last=False):
    """(kind, N, Cin, H, W, Cout, kernel, stride, padding, dilation, groups, bias, out_pad) of each conv
    whose input is contiguous, or with `channels_last`, of each whose input is channels-last (a
    permute's view, as in ConvNeXt, runs cuDNN in NHWC)."""
    import torch.nn as nn
    from validate import loop
    found = {}
    for entry in entries:
        if entry.family not in ("cnn",) and entry.name not in ("vit_b_16", "swin_t", "convnext_tiny"):
            continue
        model = entry.build().cuda().eval()
        shapes = []

        def hook(m, inp, out):
            x = inp[0]
            if channels_last != (not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last)):
                return
            t = "convT" if isinstance(m, nn.ConvTranspose2d) else "conv"
            shapes.append((t, tuple(x.shape[1:]), m.out_channels, tuple(m.kernel_size), tuple(m.stride),
                           tuple(m.padding), tuple(m.dilation), m.groups, m.bias is not None,
                           tuple(getattr(m, "output_padding", (0, 0)))))
        hs = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d))]
        with torch.no_grad():
            model(*loop.make_inputs(entry, 1, "cuda"))
        for h in hs:
            h.remove()
        for s in shapes:
            for b in entry.batches:
                found.setdefault((s, b), set()).add(entry.name)
        del model
        torch.cuda.empty_cache()
    return found


def grid_configs():
    out = []
    for n in (8, 32, 128):
        for c_in, c_out in ((64, 64), (64, 256), (256, 64), (320, 1280), (1024, 1024), (32, 3), (3, 32)):
            for hw in (7, 14, 28, 56, 112):
                for k in (1, 3):
                    if n * max(c_in, c_out) * hw * hw > 2**28:
                        continue
                    out.append((("conv", (c_in, hw, hw), c_out, (k, k), (1, 1), (k // 2, k // 2), (1, 1), 1, False,
                                 (0, 0)), n))
    return out


def probe_conv(torch, cfg, n, dtype, channels_last=False):
    import torch.nn.functional as F
    kind, (cin, h, w), cout, k, stride, pad, dil, groups, bias, opad = cfg
    dt = getattr(torch, dtype)
    x = torch.randn((n, cin, h, w), device="cuda", dtype=dt)
    if channels_last:  # y and gy (randn_like) follow
        x = x.contiguous(memory_format=torch.channels_last)
    if kind == "conv":
        wt = torch.randn((cout, cin // groups) + k, device="cuda", dtype=dt)
    else:
        wt = torch.randn((cin, cout // groups) + k, device="cuda", dtype=dt)
    b = torch.randn(cout, device="cuda", dtype=dt) if bias else None
    if kind == "conv":
        fwd = lambda: F.conv2d(x, wt, b, stride, pad, dil, groups)
    else:
        fwd = lambda: F.conv_transpose2d(x, wt, b, stride, pad, opad, groups, dil)
    rows = {"fwd": _events(torch, fwd)}
    y = fwd()
    gy = torch.randn_like(y)
    del y
    for name, mask in (("bwd", [True, True, bias]), ("bwd_first", [False, True, bias])):
        rows[name] = _events(torch, lambda: torch.ops.aten.convolution_backward(
            gy, x, wt, [cout] if bias else None, list(stride), list(pad), list(dil), kind == "convT", list(opad),
            groups, mask))
    return rows


def probe_reductions(torch, emit, deadline):
    for dtype in DTYPES:
        dt = getattr(torch, dtype)
        for m in (64, 512, 2048, 4096, 8192, 16384, 32768, 65536):
            for n in (10, 256, 512, 768, 1000, 1024, 2048, 3072, 4096, 32000):
                if m * n > 2**29 or time.time() > deadline:
                    continue
                g = torch.randn((m, n), device="cuda", dtype=dt)
                emit({"kind": "sum0", "m": m, "n": n, "dtype": dtype, "events": _events(torch, lambda: g.sum(0))})
                del g
        for nb, c, hw in ((8, 64, 56), (32, 64, 112), (32, 256, 56), (64, 32, 64), (128, 1280, 7), (32, 512, 28),
                          (256, 16, 112), (64, 3, 128)):
            if time.time() > deadline:
                break
            g = torch.randn((nb, c, hw, hw), device="cuda", dtype=dt)
            emit({"kind": "sum023", "n": nb, "c": c, "hw": hw, "dtype": dtype,
                  "events": _events(torch, lambda: g.sum((0, 2, 3)))})
            del g


def probe_misc(torch, emit, deadline):
    import torch.nn.functional as F
    # Linear through autograd, as the zoo's MLPs and transformers run it.
    for dtype in DTYPES:
        dt = getattr(torch, dtype)
        for m, k, n in ((512, 1024, 4096), (4096, 1024, 4096), (4096, 4096, 4096), (4096, 4096, 2048),
                        (4096, 2048, 10), (4096, 512, 2048), (8192, 512, 2048), (4096, 768, 3072)):
            if time.time() > deadline:
                return
            x = torch.randn((m, k), device="cuda", dtype=dt, requires_grad=True)
            lin = torch.nn.Linear(k, n).cuda().to(dt)
            y = lin(x)
            gy = torch.randn_like(y)
            emit({"kind": "linear_bwd", "m": m, "k": k, "n": n, "dtype": dtype,
                  "events": _events(torch, lambda: torch.autograd.grad(y, [x, lin.weight, lin.bias], gy,
                                                                      retain_graph=True))})
            del x, lin, y, gy
        # Attention: flash (fp16/bf16) or memory-efficient (fp32) kernels, as protocol.md runs them.
        for b, h, t, d in ((32, 8, 128, 64), (8, 8, 256, 64), (16, 8, 256, 64), (32, 12, 128, 64), (64, 12, 128, 64)):
            if time.time() > deadline:
                return
            q, k_, v = (torch.randn((b, h, t, d), device="cuda", dtype=dt, requires_grad=True) for _ in range(3))
            fwd = lambda: F.scaled_dot_product_attention(q, k_, v, is_causal=True)
            ev_f = _events(torch, fwd)
            o = fwd()
            go = torch.randn_like(o)
            ev_b = _events(torch, lambda: torch.autograd.grad(o, [q, k_, v], go, retain_graph=True))
            emit({"kind": "sdpa", "b": b, "h": h, "t": t, "d": d, "dtype": dtype, "fwd": ev_f, "bwd": ev_b})
            del q, k_, v, o, go
        for m, n in ((4096, 512), (4096, 768), (8192, 768), (2048, 512)):
            x = torch.randn((m, n), device="cuda", dtype=dt, requires_grad=True)
            ln = torch.nn.LayerNorm(n).cuda().to(dt)
            y = ln(x)
            gy = torch.randn_like(y)
            emit({"kind": "layernorm_bwd", "m": m, "n": n, "dtype": dtype,
                  "events": _events(torch, lambda: torch.autograd.grad(y, [x, ln.weight, ln.bias], gy,
                                                                      retain_graph=True))})
            del x, ln, y, gy
    for m, v, d in ((4096, 30522, 512), (2048, 32000, 512), (4096, 10000, 512), (4096, 30522, 768)):
        idx = torch.randint(0, v, (m,), device="cuda")
        w = torch.randn((v, d), device="cuda", requires_grad=True)
        y = F.embedding(idx, w)
        gy = torch.randn_like(y)
        emit({"kind": "embedding_bwd", "m": m, "v": v, "d": d, "dtype": "float32",
              "events": _events(torch, lambda: torch.autograd.grad(y, [w], gy, retain_graph=True))})
        del w, y, gy
    for dtype in DTYPES:
        for m, v in ((2048, 32000), (4096, 32000), (4096, 10000), (32, 1000), (256, 1000)):
            logits = torch.randn((m, v), device="cuda", dtype=getattr(torch, dtype), requires_grad=True)
            tgt = torch.randint(0, v, (m,), device="cuda")
            with torch.autocast("cuda", dtype=torch.float16, enabled=False):
                fwd = lambda: F.cross_entropy(logits.float() if dtype != "float32" else logits, tgt)
                ev_f = _events(torch, fwd)
                loss = fwd()
                ev_b = _events(torch, lambda: torch.autograd.grad(loss, [logits], retain_graph=True))
            emit({"kind": "cross_entropy", "m": m, "v": v, "dtype": dtype, "fwd": ev_f, "bwd": ev_b})
            del logits, loss


def probe_rnn(torch, emit, deadline):
    """cuDNN RNNs as nn.LSTM/GRU run them: one cuDNN call for all layers. Per config, the
    events of building the module on the GPU (flatten_parameters' weight buffer), of a
    training forward (workspace, reserve) and of its backward."""
    for kind in ("LSTM", "GRU"):
        for layers in (1, 2, 3):
            for hidden in (256, 512):
                for n, t in ((16, 64), (32, 128), (64, 128)):
                    for dtype in ("float32", "float16"):
                        if time.time() > deadline:
                            return
                        dt = getattr(torch, dtype)
                        built = []
                        ev_init = _events(torch, lambda: built.append(
                            getattr(torch.nn, kind)(hidden, hidden, num_layers=layers).cuda().to(dt)) or built[0])
                        rnn = built[0]
                        x = torch.randn((t, n, hidden), device="cuda", dtype=dt, requires_grad=True)
                        ev_f = _events(torch, lambda: rnn(x))
                        y = rnn(x)[0]
                        gy = torch.randn_like(y)
                        ev_b = _events(torch, lambda: torch.autograd.grad(y, [x] + list(rnn.parameters()), gy,
                                                                          retain_graph=True))
                        emit({"kind": "rnn", "rnn": kind, "layers": layers, "hidden": hidden, "input": hidden,
                              "n": n, "t": t, "dtype": dtype, "init": ev_init, "fwd": ev_f, "bwd": ev_b})
                        del rnn, built, x, y, gy
                        torch.cuda.empty_cache()


def probe_rnn_grid(torch, emit, deadline, seed=1, count=240):
    """cuDNN RNNs on a random grid (seeded): LSTM/GRU, 1-3 layers, one or two directions,
    input size apart from the hidden size, fp32 and fp16. The fixed grid of probe_rnn has
    one direction and input == hidden only; session 11 found stacked bidirectional calls
    short. Same events per configuration as probe_rnn."""
    import random
    r = random.Random(seed)
    for i in range(count):
        if time.time() > deadline:
            return
        kind = r.choice(("LSTM", "GRU"))
        layers = r.choice((1, 2, 3))
        hidden = r.choice((32, 64, 96, 128, 192, 256, 384, 512, 768, 1024))
        inp = r.choice((16, 40, 64, 80, 128, 256, 512, hidden))
        bidir = r.random() < 0.5
        n = r.choice((1, 2, 4, 8, 16, 32, 64))
        t = r.choice((16, 32, 64, 128, 256))
        dtype = r.choice(("float32", "float16"))
        dt = getattr(torch, dtype)
        built = []
        try:
            ev_init = _events(torch, lambda: built.append(getattr(torch.nn, kind)(
                inp, hidden, num_layers=layers, bidirectional=bidir).cuda().to(dt)) or built[0])
            rnn = built[0]
            x = torch.randn((t, n, inp), device="cuda", dtype=dt, requires_grad=True)
            ev_f = _events(torch, lambda: rnn(x))
            y = rnn(x)[0]
            gy = torch.randn_like(y)
            ev_b = _events(torch, lambda: torch.autograd.grad(y, [x] + list(rnn.parameters()), gy,
                                                              retain_graph=True))
            emit({"kind": "rnn", "grid_seed": seed, "i": i, "rnn": kind, "layers": layers, "hidden": hidden,
                  "input": inp, "bidirectional": bidir, "n": n, "t": t, "dtype": dtype,
                  "init": ev_init, "fwd": ev_f, "bwd": ev_b})
            del rnn, x, y, gy
        except Exception as e:  # noqa: BLE001 - a probe that fails is recorded, not fatal
            emit({"kind": "rnn", "grid_seed": seed, "i": i, "status": "%s: %s" % (type(e).__name__, str(e)[:200])})
        built.clear()
        torch.cuda.empty_cache()


def trace_cases(torch, emit, cases, budget, deadline):
    """Whole-case allocation traces (alloc/free with addresses, segment events), under a cap.

    Replaying a measured sequence through memest's allocator model separates the
    allocator model's error from the simulator's (which events, in which order)."""
    from validate import loop, trace, zoo
    if budget:
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, budget / float(total)))
    for case in cases:
        if time.time() > deadline:
            return
        name, cname = case.split("/")
        entry = zoo.lookup(name)
        cfg = zoo.parse_config(entry, cname)
        torch.manual_seed(0)
        phases = loop.Phases("cuda")
        status = "ok"
        trace.start_recording(1_000_000)
        try:
            loop.run_case(entry, cfg, phases, "cuda", entry.build(), iters=3)
        except Exception as exc:  # an OOM is a result here
            status = "%s: %s" % (type(exc).__name__, str(exc).split("\n")[0][:200])
            del exc
        snap = trace.take_snapshot()
        trace.stop_recording()
        codes = {"alloc": "a", "free_requested": "f", "segment_alloc": "sa", "segment_free": "sf", "oom": "oom"}
        events = [[codes[e["action"]], e.get("addr", 0), e.get("size", 0), e.get("stream", 0)]
                  for e in snap["device_traces"][0] if e["action"] in codes]
        peak, peak_res, at = phases.peak()
        emit({"kind": "casetrace", "case": case, "budget_bytes": budget, "status": status,
              "peak_allocated": peak, "peak_reserved": peak_res, "memest_args": cfg.memest_args(entry),
              "events": events})
        print("casetrace %s: %s, %d events, peak %.3f GiB reserved %.3f GiB" % (
            case, status[:60], len(events), peak / 2**30, peak_res / 2**30), flush=True)
        loop.clean_allocator("cuda", require_empty=False)


def main(argv):
    ap = argparse.ArgumentParser(prog="python3 -m validate kernels", description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="JSONL file to append to")
    ap.add_argument("--deadline", type=float, default=time.time() + 400, help="unix time to stop by")
    ap.add_argument("--parts", default="conv,grid,reduce,misc",
                    help="any of conv,convcl (channels-last inputs),grid,reduce,misc,rnn,rnngrid,cases")
    ap.add_argument("--grid-seed", type=int, default=1,
                    help="seed of the random grids (rnngrid); seed 1 fitted the RNN workspace, seed 2 checks it")
    ap.add_argument("--cases", default="", help="MODEL/CONFIG,... traced whole (part `cases`)")
    ap.add_argument("--budget", default="", help="cap for the traced cases, e.g. 24GiB")
    args = ap.parse_args(argv)
    import torch
    from validate import zoo
    torch.backends.cudnn.benchmark = False
    parts = args.parts.split(",")
    n = 0
    with open(args.out, "a") as f:
        def emit(row):
            nonlocal n
            row["torch"] = torch.__version__
            row["cudnn"] = torch.backends.cudnn.version()
            f.write(json.dumps(row) + "\n")
            f.flush()
            n += 1
        if "cases" in parts:
            from validate.maxbatch import parse_size
            trace_cases(torch, emit, [c for c in args.cases.split(",") if c],
                        parse_size(args.budget) if args.budget else 0, args.deadline)
            return 0
        if "reduce" in parts:
            probe_reductions(torch, emit, args.deadline)
            print("reductions done: %d rows" % n, flush=True)
        if "misc" in parts:
            probe_misc(torch, emit, args.deadline)
            print("misc done: %d rows" % n, flush=True)
        if "rnngrid" in parts:
            probe_rnn_grid(torch, emit, args.deadline, seed=args.grid_seed)
            print("rnngrid done: %d rows" % n, flush=True)
        if "rnn" in parts:
            probe_rnn(torch, emit, args.deadline)
            print("rnn done: %d rows" % n, flush=True)
        work = []
        if "conv" in parts:
            entries = [e for e in zoo.ZOO + zoo.HOLDOUT if not e.needs]
            for (cfg, b), models in sorted(conv_configs(torch, entries).items(), key=lambda kv: str(kv[0])):
                work.append((cfg, b, sorted(models)))
            print("conv configs from models: %d" % len(work), flush=True)
        if "grid" in parts:
            work += [(cfg, b, ["grid"]) for cfg, b in grid_configs()]
        work = [(cfg, b, models, False) for cfg, b, models in work]
        if "convcl" in parts:
            entries = [e for e in zoo.ZOO + zoo.HOLDOUT if not e.needs]
            found = conv_configs(torch, entries, channels_last=True)
            for (cfg, b), models in sorted(found.items(), key=lambda kv: str(kv[0])):
                work.append((cfg, b, sorted(models), True))
            print("channels-last conv configs: %d" % len(found), flush=True)
        for cfg, b, models, cl in work:
            for dtype in DTYPES:
                if time.time() > args.deadline:
                    print("deadline: stopped after %d rows" % n, flush=True)
                    return 0
                try:
                    rows = probe_conv(torch, cfg, b, dtype, channels_last=cl)
                except Exception as exc:
                    print("conv %s n=%d %s: %s" % (cfg, b, dtype, exc), flush=True)
                    continue
                row = {"kind": "conv", "cfg": cfg, "n": b, "dtype": dtype, "models": models, **rows}
                if cl:
                    row["memory_format"] = "channels_last"
                emit(row)
                torch.cuda.empty_cache()
    print("done: %d rows" % n, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
