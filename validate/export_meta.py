"""`python3 -m validate export-meta`: a shape-only ONNX file of a model too big to build,
from its configuration alone, without a byte of weights (issue 19).

The model is built on PyTorch's meta device (shapes and dtypes, no storage), in training
mode, and exported with torch's default exporter (`torch.onnx.export(dynamo=True)`) with a
dynamic batch (and sequence); each initializer is written as external data in a file that
does not exist, as validate/onnx_strip.py leaves the zoo's files. memest reads dimensions
and dtypes only, so the estimate is the one an ordinary export of the same model gets.

    python3 -m validate export-meta hf:llama --set hidden_size=8192 --set num_hidden_layers=80 \\
        --set num_attention_heads=64 --set num_key_value_heads=8 --set intermediate_size=28672 \\
        --out llama70b.onnx
    python3 -m validate export-meta path/to/config.json --task seq-cls --out model.onnx
    python3 -m validate export-meta timm:vit_large_patch16_224 --out vit_l.onnx
    python3 -m validate export-meta tv:resnet152 --out resnet152.onnx

Then: memest llama70b.onnx --batch 1 --dim seq=4096 --amp bf16 --optim adamw --lora 16

Caveats: buffers are meta too, so a graph whose shapes depend on a buffer's contents
(rare: a lookup table used as a Reshape target) cannot be exported this way; custom
kernels a model calls only on CUDA (flash-attention packages, fused MoE) are not traced;
the sequence length given is only the example's (the dimension stays symbolic).
"""
import argparse
import json
import os
import sys
import time

OPSET = 18


def _value(text):
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return text


def hf_config(source, overrides):
    from transformers import AutoConfig
    if source.startswith("hf:"):
        cfg = AutoConfig.for_model(source[3:], **overrides)
    else:
        path = source if os.path.isfile(source) else os.path.join(source, "config.json")
        with open(path) as f:
            raw = json.load(f)
        raw.update(overrides)
        cfg = AutoConfig.for_model(raw.pop("model_type"), **raw)
    if hasattr(cfg, "use_cache"):
        cfg.use_cache = False
    return cfg


def build(source, task, overrides):
    """(module, inputs spec) on the meta device: inputs spec is [(name, shape, dtype, high)]."""
    import torch
    if source.startswith("timm:") or source.startswith("tv:"):
        with torch.device("meta"):
            if source.startswith("timm:"):
                import timm
                model = timm.create_model(source[5:], pretrained=False, **overrides)
            else:
                import torchvision
                model = torchvision.models.get_model(source[3:], weights=None, **overrides)
        return model, "image"
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification
    from validate.nets import LogitsOnly
    cfg = hf_config(source, overrides)
    auto = {"causal-lm": AutoModelForCausalLM, "seq-cls": AutoModelForSequenceClassification}[task]
    with torch.device("meta"):
        model = auto.from_config(cfg)
    return LogitsOnly(model, use_cache_flag=hasattr(cfg, "use_cache")), "tokens"


def external_initializers(program, location):
    """Every weight becomes external data in `location` (never written): meta tensors
    have no bytes to serialize. Constants the exporter made with real contents stay."""
    import onnx_ir as ir
    offset = 0
    for name, value in program.model.graph.initializers.items():
        t = value.const_value
        if t is None or getattr(getattr(t, "raw", None), "device", None) is None:
            continue  # not a torch tensor: a constant with contents
        if t.raw.device.type != "meta":
            continue
        dtype = value.dtype if value.dtype is not None else t.dtype
        shape = value.shape if value.shape is not None else t.shape
        n = 1
        for d in shape:
            n *= int(d)
        nbytes = int(n * dtype.itemsize)
        value.const_value = ir.ExternalTensor(location, offset, nbytes, dtype, shape=ir.Shape(shape), name=name)
        offset += nbytes


def _export_once(model, example, shapes, names, location, optimize):
    import torch
    prog = torch.onnx.export(model, example, dynamo=True, dynamic_shapes=shapes, opset_version=OPSET,
                             input_names=names, output_names=["logits"], optimize=optimize)
    external_initializers(prog, location)
    return prog.model_proto


def export(model, kind, seq, image, batch_example, out):
    import torch
    from torch.export import Dim
    dyn = Dim.DYNAMIC
    model.train()
    if kind == "tokens":
        x = torch.zeros(batch_example, seq, dtype=torch.int64, device="meta")
        shapes = ({0: dyn, 1: dyn},)
        names = ["input_ids"]
    else:
        x = torch.zeros(batch_example, 3, image, image, device="meta")
        shapes = ({0: dyn},)
        names = ["input"]
    location = os.path.basename(out) + ".weights"
    # The default export optimizes the graph, as an ordinary export does; its constant
    # folding may trip over meta tensors, and then the graph is left as traced.
    optimized = True
    try:
        proto = _export_once(model, (x,), shapes, names, location, optimize=True)
    except Exception as exc:  # noqa: BLE001
        print("export-meta: optimized export failed (%s: %s); exporting unoptimized" % (
            type(exc).__name__, str(exc).splitlines()[0][:200]), file=sys.stderr)
        optimized = False
        proto = _export_once(model, (x,), shapes, names, location, optimize=False)
    from validate.onnx_strip import rename_dims, set_metadata
    want = ["batch", "seq"] if kind == "tokens" else ["batch"]
    mapping = {}
    for d, name in zip(proto.graph.input[0].type.tensor_type.shape.dim, want):
        if d.HasField("dim_param") and d.dim_param != name:
            mapping[d.dim_param] = name
    rename_dims(proto, mapping)
    set_metadata(proto, {"memest.export": "meta-device, dynamo, training mode, no weights",
                         "memest.optimized": optimized, "memest.torch": torch.__version__})
    import onnx
    onnx.save_model(proto, out)
    return proto


def main(argv):
    p = argparse.ArgumentParser(prog="python3 -m validate export-meta", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", help="hf:MODEL_TYPE (a transformers config class), a config.json (or its folder), "
                                  "timm:NAME or tv:NAME (torchvision)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config field (hf) or pass a constructor argument (timm, tv); repeatable")
    p.add_argument("--task", default="causal-lm", choices=["causal-lm", "seq-cls"], help="transformers head")
    p.add_argument("--seq", type=int, default=128, help="the example's sequence length (the dim stays symbolic)")
    p.add_argument("--image", type=int, default=224, help="the example's image side (vision models)")
    p.add_argument("--out", required=True, help="the .onnx file to write")
    args = p.parse_args(argv)
    overrides = {}
    for kv in args.set:
        if "=" not in kv:
            p.error("--set %r: expected KEY=VALUE" % kv)
        k, v = kv.split("=", 1)
        overrides[k] = _value(v)
    t0 = time.time()
    model, kind = build(args.source, args.task, overrides)
    params = sum(t.numel() for t in model.parameters())
    proto = export(model, kind, args.seq, args.image, 2, args.out)
    print("%s: %s parameters (%.2f GB in float32), %d nodes, %d initializers, %.1fs -> %s" % (
        args.source, format(params, ","), params * 4 / 1e9, len(proto.graph.node), len(proto.graph.initializer),
        time.time() - t0, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
