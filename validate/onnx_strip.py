"""Shape-only ONNX: weights moved to an external-data file that is then deleted.

memest reads dimensions and dtypes only, so the committed graphs keep every tensor's
shape and dtype but not its bytes. Tensors of at most 64 elements stay inline: those
are the shape constants (Reshape targets, Slice bounds, ...) a reader must see.
"""
import os
import re

import onnx
from onnx import external_data_helper, numpy_helper

INLINE_MAX_ELEMENTS = 64


def _graphs(graph):
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _graphs(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    yield from _graphs(g)


def all_tensors(model):
    for g in _graphs(model.graph):
        yield from g.initializer
        for node in g.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.TENSOR:
                    yield attr.t
                elif attr.type == onnx.AttributeProto.TENSORS:
                    yield from attr.tensors


def _numel(t):
    n = 1
    for d in t.dims:
        n *= d
    return n


def strip_weights(model, path):
    """Save `model` to `path` with every tensor of more than 64 elements external, then drop the data."""
    folder = os.path.dirname(os.path.abspath(path))
    location = os.path.basename(path) + ".weights"
    n_ext = 0
    for t in all_tensors(model):
        if _numel(t) <= INLINE_MAX_ELEMENTS or t.data_location == onnx.TensorProto.EXTERNAL:
            continue
        if not t.HasField("raw_data"):
            name = t.name
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t), name))
        external_data_helper.set_external_data(t, location)
        n_ext += 1
    model = external_data_helper.write_external_data_tensors(model, folder)
    onnx.save_model(model, path)
    data = os.path.join(folder, location)
    if os.path.exists(data):
        os.remove(data)
    return n_ext


def rename_dims(model, mapping):
    """Rename symbolic dimensions (also inside expressions such as `2*s0`) everywhere in the graph."""
    if not mapping:
        return
    pat = re.compile(r"\b(%s)\b" % "|".join(re.escape(k) for k in sorted(mapping, key=len, reverse=True)))

    def fix(vi):
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            return
        for d in tt.shape.dim:
            if d.HasField("dim_param"):
                d.dim_param = pat.sub(lambda m: mapping[m.group(1)], d.dim_param)

    for g in _graphs(model.graph):
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            fix(vi)


def set_metadata(model, items):
    keep = [p for p in model.metadata_props if p.key not in items]
    del model.metadata_props[:]
    model.metadata_props.extend(keep)
    for k, v in items.items():
        p = model.metadata_props.add()
        p.key, p.value = k, str(v)


def metadata(model):
    return {p.key: p.value for p in model.metadata_props}
