"""`python3 -m validate matrix`: every model of a set through every way a user exports it.

Variants (issue 17): the legacy exporter in training mode (opset 17), the default
(dynamo) exporter in training mode and in eval mode, each with a dynamic batch (and a
dynamic sequence where the model has one); a static export; and for sequence models a
dynamic batch with the sequence fixed. Each file is stripped of its weights
(onnx_strip) and carries its torch parameter bytes in metadata (`memest.param_bytes`);
one manifest line per attempt records the file, memest's arguments, and the exporter's
error where it failed. Models are exported in parallel worker processes (one torch
thread each); a deadline stops starting new ones.

    python3 -m validate matrix --set corpus --out models/matrix --jobs 12 --deadline UNIX_TIME
    python3 -m validate matrix --set random:1:100 --variants legacy-train-dyn,dynamo-train-dyn
"""
import argparse
import json
import os
import tempfile
import time

VARIANTS = ["legacy-train-dyn", "dynamo-train-dyn", "dynamo-eval-dyn", "dynamo-train-static",
            "legacy-train-batch", "dynamo-train-batch"]


def _axes_for(entry, dyn):
    """Per-input {axis: name} for `dyn` = dyn (batch and seq), batch (batch only), static."""
    axes = {}
    for spec in entry.inputs:
        a = {} if dyn == "static" else {0: "batch"}
        if dyn == "dyn":
            for i, d in enumerate(spec.shape):
                if isinstance(d, str):
                    a[i + 1] = d
        axes[spec.name] = a
    out = {} if dyn == "static" else ({k: v for k, v in entry.output_axes.items() if v == "batch"}
                                      if dyn == "batch" else dict(entry.output_axes))
    axes["logits"] = out
    return axes


def _legacy(entry, model, example, path, dyn, train):
    import inspect
    import torch
    kw = dict(export_params=True, training=torch.onnx.TrainingMode.TRAINING if train else torch.onnx.TrainingMode.EVAL,
              do_constant_folding=not train, opset_version=17, input_names=[s.name for s in entry.inputs],
              output_names=["logits"], dynamic_axes={k: v for k, v in _axes_for(entry, dyn).items() if v})
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kw["dynamo"] = False
    model.train(train)
    torch.onnx.export(model, example, path, **kw)
    import onnx
    return onnx.load(path)


def _dynamo(entry, model, example, dyn, train):
    import torch
    from torch.export import Dim
    axes = _axes_for(entry, dyn)
    shapes = []
    for spec in entry.inputs:
        shapes.append({i: Dim.DYNAMIC for i in axes[spec.name]} or None)
    model.train(train)
    kw = dict(dynamo=True, opset_version=18, input_names=[s.name for s in entry.inputs], output_names=["logits"])
    if dyn != "static":
        kw["dynamic_shapes"] = tuple(shapes)
    prog = torch.onnx.export(model, example, **kw)
    proto = prog.model_proto
    mapping = {}
    for spec, vi in zip(entry.inputs, proto.graph.input):
        names = ["batch"] + [d if isinstance(d, str) else None for d in spec.shape]
        for d, want in zip(vi.type.tensor_type.shape.dim, names):
            if want and d.HasField("dim_param") and d.dim_param != want:
                mapping[d.dim_param] = want
    from validate.onnx_strip import rename_dims
    rename_dims(proto, mapping)
    return proto


def memest_args(entry, dyn):
    """memest's arguments for a file of this variant (fixed sequence: no --dim)."""
    args = ["--loss", entry.loss]
    if dyn == "dyn":
        for k, v in entry.dims.items():
            args += ["--dim", "%s=%d" % (k, v)]
    return args


def export_model(job):
    """Worker: every variant of one model. Returns the manifest lines."""
    name, variants, out_dir, deadline = job
    import warnings
    warnings.simplefilter("ignore")
    import torch
    torch.set_num_threads(1)
    from validate import zoo
    from validate.export import _example
    from validate.onnx_strip import set_metadata, strip_weights
    entry = zoo.lookup(name)
    rows = []
    try:
        torch.manual_seed(0)
        model = entry.build()
        pbytes = sum(p.numel() * p.element_size() for p in model.parameters())
        example = _example(entry)
    except Exception as exc:
        return [{"model": name, "variant": "build", "status": "failed", "error": _one_line(exc)}]
    for v in variants:
        exporter, mode, dyn = v.split("-")
        if dyn == "batch" and not entry.dims:
            continue
        row = {"model": name, "set": entry.subdir, "family": entry.family, "variant": v, "param_bytes": pbytes,
               "memest_args": memest_args(entry, dyn), "batches": list(entry.batches)}
        if time.time() > deadline:
            row.update(status="skipped", error="deadline")
            rows.append(row)
            continue
        t0 = time.time()
        path = os.path.join(out_dir, entry.subdir, "%s.%s.onnx" % (name, v))
        try:
            with tempfile.TemporaryDirectory() as tmp:
                if exporter == "legacy":
                    proto = _legacy(entry, model, example, os.path.join(tmp, "m.onnx"), dyn, mode == "train")
                else:
                    proto = _dynamo(entry, model, example, dyn, mode == "train")
            set_metadata(proto, {"memest.zoo_name": name, "memest.source": entry.source, "memest.exporter": exporter,
                                 "memest.mode": mode, "memest.dynamic": dyn, "memest.torch": torch.__version__,
                                 "memest.param_bytes": pbytes, "memest.args": " ".join(row["memest_args"])})
            os.makedirs(os.path.dirname(path), exist_ok=True)
            strip_weights(proto, path)
            row.update(status="ok", path=os.path.relpath(path, out_dir), bytes=os.path.getsize(path))
        except Exception as exc:
            row.update(status="failed", error=_one_line(exc))
        row["time_s"] = round(time.time() - t0, 1)
        rows.append(row)
    return rows


def _one_line(exc):
    s = str(exc).strip().splitlines()
    return "%s: %s" % (type(exc).__name__, s[0][:300] if s else "")


def main(argv):
    p = argparse.ArgumentParser(prog="python3 -m validate matrix")
    p.add_argument("--set", default="corpus")
    p.add_argument("--models", default=None)
    p.add_argument("--out", default="models/matrix")
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    p.add_argument("--deadline", type=float, default=0, help="unix time after which no export is started")
    p.add_argument("--manifest", default=None, help="default: OUT/manifest-SET.jsonl")
    args = p.parse_args(argv)
    from validate import zoo
    names = [e.name for e in zoo.select(args.models, args.set)]
    deadline = args.deadline or time.time() + 10 ** 9
    variants = args.variants.split(",")
    manifest = args.manifest or os.path.join(args.out, "manifest-%s.jsonl" % args.set.replace(":", "-"))
    os.makedirs(args.out, exist_ok=True)
    import multiprocessing as mp
    ctx = mp.get_context("spawn")
    jobs = [(n, variants, args.out, deadline) for n in names]
    n_ok = n_all = 0
    with ctx.Pool(args.jobs, maxtasksperchild=4) as pool, open(manifest, "a") as f:
        it = pool.imap_unordered(export_model, jobs)
        while True:
            try:
                rows = it.next(timeout=max(1.0, deadline + 60 - time.time()))
            except StopIteration:
                break
            except mp.TimeoutError:
                print("matrix: deadline passed; %d models still exporting are left out" % (len(jobs)), flush=True)
                pool.terminate()
                break
            for r in rows:
                f.write(json.dumps(r) + "\n")
                n_all += 1
                n_ok += r.get("status") == "ok"
                print("%-28s %-20s %s %s" % (r["model"], r.get("variant"), r.get("status"), r.get("error", "")[:160]),
                      flush=True)
            f.flush()
    print("matrix: %d of %d exports ok -> %s" % (n_ok, n_all, manifest), flush=True)
    return 0
