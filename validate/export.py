"""`validate export`: the zoo as shape-only ONNX files, plus models/README.md.

The TorchScript-based ("legacy") exporter is used where it works, in training mode
with constant folding off, so that BatchNorm, Dropout and everything else that
training keeps are in the graph. Where it fails (GPT-2 at opset 17, for one) the
dynamo exporter is used, in training mode if it manages, else in eval mode. Each
file records how it was made in its metadata_props (keys `memest.*`), and the
README table is regenerated from those, so it cannot drift from the files.
"""
import argparse
import glob
import inspect
import os
import tempfile
import time
import traceback

from validate import zoo

LEGACY_OPSET = 17
DYNAMO_OPSET = 18


def _example(entry, batch=2):
    import torch
    torch.manual_seed(0)
    from validate.loop import make_inputs
    if entry.export_dims:  # a symbolic dim, smaller for the trace (llama1b: seq 2048 -> 32)
        import dataclasses
        entry = dataclasses.replace(entry, dims={**entry.dims, **entry.export_dims})
    return tuple(make_inputs(entry, batch, "cpu"))


def _axes(entry):
    axes = {}
    for spec in entry.inputs:
        a = {0: "batch"}
        for i, d in enumerate(spec.shape):
            if isinstance(d, str):
                a[i + 1] = d
        axes[spec.name] = a
    axes["logits"] = dict(entry.output_axes)
    return axes


def export_legacy(entry, model, path):
    import torch
    kw = dict(export_params=True, training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
              opset_version=LEGACY_OPSET, input_names=[s.name for s in entry.inputs], output_names=["logits"],
              dynamic_axes=_axes(entry))
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kw["dynamo"] = False
    model.train()
    torch.onnx.export(model, _example(entry), path, **kw)
    import onnx
    return onnx.load(path)


def export_dynamo(entry, model, train):
    import torch
    from torch.export import Dim
    dyn = getattr(Dim, "DYNAMIC", None)
    shapes = []
    for spec in entry.inputs:
        a = {0: dyn if dyn is not None else Dim("batch")}
        for i, d in enumerate(spec.shape):
            if isinstance(d, str):
                a[i + 1] = dyn if dyn is not None else Dim(d)
        shapes.append(a)
    model.train(train)
    kw = dict(dynamo=True, dynamic_shapes=tuple(shapes), opset_version=DYNAMO_OPSET,
              input_names=[s.name for s in entry.inputs], output_names=["logits"])
    try:
        prog = torch.onnx.export(model, _example(entry), **kw)
    except TypeError:
        kw.pop("input_names"), kw.pop("output_names")
        prog = torch.onnx.export(model, _example(entry), **kw)
    proto = prog.model_proto
    # Name the symbolic dimensions as the legacy exporter does: batch, seq.
    mapping = {}
    for spec, vi in zip(entry.inputs, proto.graph.input):
        dims = vi.type.tensor_type.shape.dim
        names = ["batch"] + [d if isinstance(d, str) else None for d in spec.shape]
        for d, want in zip(dims, names):
            if want and d.HasField("dim_param") and d.dim_param != want:
                mapping[d.dim_param] = want
    from validate.onnx_strip import rename_dims
    rename_dims(proto, mapping)
    if proto.graph.output and proto.graph.output[0].name != "logits":
        old = proto.graph.output[0].name
        for node in proto.graph.node:
            for i, o in enumerate(node.output):
                if o == old:
                    node.output[i] = "logits"
        proto.graph.output[0].name = "logits"
    return proto


def export_entry(entry, out_dir, exporters=("legacy", "dynamo"), eval_mode=False):
    import torch
    from validate.onnx_strip import set_metadata, strip_weights
    torch.manual_seed(0)
    model = entry.build()
    path = os.path.join(out_dir, entry.onnx)
    order = list(exporters)
    if entry.exporters is not None:  # e.g. swin_t: the legacy exporter or nothing
        order = [e for e in order if e in entry.exporters]
    if entry.export == "dynamo" and "dynamo" in order:
        order = ["dynamo"] + [e for e in order if e != "dynamo"]
    errors = []
    proto = None
    how = None
    with tempfile.TemporaryDirectory() as tmp:
        for exp in order:
            try:
                if exp == "legacy":
                    proto = export_legacy(entry, model, os.path.join(tmp, "m.onnx"))
                    how = ("legacy", "train", LEGACY_OPSET)
                else:
                    if not hasattr(torch, "export"):
                        raise RuntimeError("torch %s has no dynamo exporter" % torch.__version__)
                    try:
                        if eval_mode:
                            raise RuntimeError("--eval: exported in eval mode")
                        proto = export_dynamo(entry, model, train=True)
                        how = ("dynamo", "train", DYNAMO_OPSET)
                    except Exception as exc:
                        errors.append("dynamo(train): %s" % _one_line(exc))
                        proto = export_dynamo(entry, model, train=False)
                        how = ("dynamo", "eval", DYNAMO_OPSET)
                break
            except Exception as exc:
                errors.append("%s: %s" % (exp, _one_line(exc)))
                if os.environ.get("VALIDATE_DEBUG"):
                    traceback.print_exc()
        if proto is None:
            return {"model": entry.name, "status": "failed", "errors": errors}
        opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), how[2])
        meta = {
            "memest.zoo_name": entry.graph or entry.name, "memest.source": entry.source, "memest.exporter": how[0],
            "memest.mode": how[1], "memest.torch": torch.__version__, "memest.opset": opset,
            "memest.loss": entry.loss, "memest.args": " ".join(entry.memest_extra()),
            "memest.batches": "%d,%d" % entry.batches, "memest.exported_at": time.strftime("%Y-%m-%d"),
        }
        if errors:
            meta["memest.fallback_reason"] = " | ".join(errors)[:400]
        set_metadata(proto, meta)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        n_ext = strip_weights(proto, path)
    return {"model": entry.name, "status": "ok", "path": path, "exporter": how[0], "mode": how[1],
            "opset": opset, "bytes": os.path.getsize(path), "external_tensors": n_ext, "errors": errors}


def _one_line(exc):
    s = str(exc).strip().splitlines()
    return "%s: %s" % (type(exc).__name__, s[0][:300] if s else "")


def save_torchscript(out_dir):
    import torch
    from validate.nets import TinyMLP
    torch.manual_seed(0)
    m = TinyMLP().train()
    traced = torch.jit.trace(m, torch.randn(2, 32))
    tag = "".join(torch.__version__.split("+")[0].split(".")[:2])
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "tiny_mlp_torch%s.pt" % tag)
    traced.save(path)
    return path


# ---------------------------------------------------------------- README

def write_readme(root):
    import onnx
    from validate.onnx_strip import metadata
    rows = []
    paths = glob.glob(os.path.join(root, "**", "*.onnx"), recursive=True)
    for path in sorted(paths, key=lambda p: (os.path.dirname(os.path.relpath(p, root)), p)):
        m = onnx.load(path, load_external_data=False)
        md = metadata(m)
        rel = os.path.relpath(path, root)
        rows.append("| `%s` | %s | %s (%s) | %s | %s | %s | `%s` |" % (
            rel, md.get("memest.source", "?").replace("|", "/"), md.get("memest.exporter", "?"),
            md.get("memest.mode", "?"), md.get("memest.torch", m.producer_version),
            md.get("memest.opset", "?"), _kib(os.path.getsize(path)), md.get("memest.args", "")))
    ts = sorted(glob.glob(os.path.join(root, "torchscript", "*.pt")))
    text = [
        "# models/: shape-only graphs of the validation zoo",
        "",
        "Generated by `python3 -m validate export` (validate/export.py); do not edit by hand:",
        "the table is rebuilt from each file's `memest.*` metadata_props.",
        "",
        "Every tensor of more than 64 elements was moved to an external-data file that was then",
        "deleted, so these files hold shapes and dtypes only (memest never reads weight bytes);",
        "small tensors (shape constants) stay inline. Each graph's batch dimension is named `batch`",
        "on every input and output; sequence dimensions are named `seq` and need `--dim seq=N`.",
        "",
        "- `models/*.onnx`: exported on the GPU machine with the torch of the measured runs",
        "  (validate/results/h200-torch2.11.jsonl names each case's file and memest arguments).",
        "- `models/torch113/*.onnx`: the same zoo exported locally with Debian's torch 1.13",
        "  (`models/make_models.sh`); models that need transformers are missing there, and so are",
        "  efficientnet_b0 and convnext_tiny (torch 1.13's exporter has no symbolic for the",
        "  `bernoulli_` of their StochasticDepth in training mode; torch 2.11's has).",
        "- `models/holdout/*.onnx`: the hold-out set (validate/zoo.py `HOLDOUT`: architectures memest",
        "  was not tuned on), exported on the GPU machine with torch 2.11 by `python3 -m validate export",
        "  --set holdout`; measured in validate/results/holdout-h200-torch2.11.jsonl. A model whose",
        "  export failed (swin_t may, it is allowed the legacy exporter only) is left out of that file.",
        "- `models/dynamo/*.onnx` and `models/dynamo/holdout/*.onnx`: the same models exported with",
        "  `torch.onnx.export(dynamo=True)`, torch 2.11's default exporter (`--exporters dynamo`; see",
        "  models/dynamo/README.md); checked against the same measurements (`validate compare",
        "  --models-dir models/dynamo`).",
        "- `models/blind/*.onnx`: the blind set (validate/zoo.py `BLIND`), measured once after the",
        "  simulator and the cuDNN table were built, never tuned or probed on; exported on the GPU machine",
        "  by `validate/gpu_blind.sh`; measured in validate/results/blind-h200-torch2.11.jsonl.",
        "- `models/torchscript/tiny_mlp_torch211.pt`: a traced 2-layer MLP (32->64->10) for the",
        "  TorchScript frontend's tests (weights included; it is tiny).",
        "",
        "Exporter `legacy` = `torch.onnx.export(dynamo=False, training=TrainingMode.TRAINING,",
        "do_constant_folding=False, opset_version=17)`: BatchNorm and Dropout are kept as in training.",
        "Exporter `dynamo` = `torch.onnx.export(dynamo=True)`; mode `eval` there means the graph was",
        "captured in eval mode (Dropout gone, BatchNorm may be folded): it shows less than training keeps.",
        "",
        "| file | source | exporter (mode) | torch | opset | size | memest args besides batch/optim/amp |",
        "|---|---|---|---|---|---|---|",
    ] + rows
    if ts:
        text += ["", "TorchScript: " + ", ".join("`%s` (%s)" % (os.path.relpath(p, root), _kib(os.path.getsize(p)))
                                              for p in ts)]
    with open(os.path.join(root, "README.md"), "w") as f:
        f.write("\n".join(text) + "\n")


def _kib(n):
    return "%.1f KiB" % (n / 1024.0)


def main(argv):
    p = argparse.ArgumentParser(prog="python3 -m validate export")
    p.add_argument("--out", default="models", help="folder for <name>.onnx")
    p.add_argument("--models", default=None, help="comma-separated zoo names (default: all)")
    p.add_argument("--set", default="zoo", help="zoo (default), holdout, blind or finetune: which model list; "
                   "their files go to OUT/<set>/")
    p.add_argument("--exporters", default="legacy,dynamo")
    p.add_argument("--eval", action="store_true", help="dynamo: export in eval mode, as a user who called "
                   "model.eval() first would (tests memest's inference-export warning)")
    p.add_argument("--torchscript", default=None, help="also save the tiny traced MLP into this folder")
    p.add_argument("--readme-root", default=None, help="regenerate README.md of this folder (default: models "
                   "if it exists)")
    p.add_argument("--readme-only", action="store_true")
    p.add_argument("--skip-missing", action="store_true", help="skip models whose package is not installed")
    args = p.parse_args(argv)
    root = args.readme_root or ("models" if os.path.isdir("models") else args.out)
    if args.readme_only:
        write_readme(root)
        return 0
    import warnings
    warnings.simplefilter("ignore")  # the exporters warn once per traced op; keep the log readable
    import torch
    torch.set_num_threads(min(8, os.cpu_count() or 1))
    results = []
    seen = set()
    for e in zoo.select(args.models, args.set):
        if e.onnx in seen:  # fine-tuning entries that share a graph: exported once
            continue
        seen.add(e.onnx)
        if e.needs and args.skip_missing:
            try:
                __import__(e.needs)
            except ImportError:
                print("%-20s skipped (needs %s)" % (e.name, e.needs), flush=True)
                continue
        t0 = time.time()
        try:
            r = export_entry(e, args.out, tuple(args.exporters.split(",")), eval_mode=args.eval)
        except Exception as exc:
            r = {"model": e.name, "status": "failed", "errors": [_one_line(exc)]}
        r["time_s"] = round(time.time() - t0, 1)
        results.append(r)
        if r["status"] == "ok":
            print("%-20s %s (%s) opset %s, %.1f KiB, %d tensors stripped, %.1fs%s" % (
                e.name, r["exporter"], r["mode"], r["opset"], r["bytes"] / 1024.0, r["external_tensors"],
                r["time_s"], ("  [after: %s]" % " | ".join(r["errors"])) if r["errors"] else ""), flush=True)
        else:
            print("%-20s FAILED: %s" % (e.name, " | ".join(r["errors"])), flush=True)
    if args.torchscript:
        print("torchscript:", save_torchscript(args.torchscript), flush=True)
    if os.path.isdir(root):
        write_readme(root)
    failed = [r["model"] for r in results if r["status"] != "ok"]
    print("exported %d/%d%s" % (len(results) - len(failed), len(results),
                                ("; failed: " + ", ".join(failed)) if failed else ""), flush=True)
    return 0
