#!/usr/bin/env python3
"""Protobuf corner cases for the ONNX reader, written byte by byte, then checked by
memest_reader_diff: the wire-format reader must answer each exactly as the reference
reader (libprotobuf's message classes) does.

Usage: reader_cases.py MEMEST_READER_DIFF [OUT_DIR]
Covers what protobuf tolerates and what it rejects: unknown fields of every wire
type, groups, wrong wire types, over-long and non-canonical varints, tags and
lengths, a zero tag at the top, merged singular messages, oneofs, invalid enum
values, packed and unpacked repeated fields, nesting near the recursion limit,
function inlining with attribute references, node metadata; then every
truncation and a few hundred byte mutations of a model that holds all of them.
"""
import os
import random
import struct
import subprocess
import sys
import tempfile


def varint(n, length=None):
    """n as a varint; `length` pads it to that many bytes (non-canonical but valid)."""
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        more = n != 0 or (length is not None and len(out) + 1 < length)
        out.append(b | 0x80 if more else b)
        if not more:
            return bytes(out)


def tag(num, wt):
    return varint((num << 3) | wt)


def ld(num, payload):
    return tag(num, 2) + varint(len(payload)) + payload


def vf(num, v):
    return tag(num, 0) + varint(v)


def s(num, text):
    return ld(num, text.encode() if isinstance(text, str) else text)


def f32(num, x):
    return tag(num, 5) + struct.pack("<f", x)


def f64(num, x):
    return tag(num, 1) + struct.pack("<d", x)


# onnx.proto messages, fields in the order protobuf would write them unless a case says otherwise.
def dim(value=None, param=None, raw=b""):
    b = raw
    if value is not None:
        b += vf(1, value)
    if param is not None:
        b += s(2, param)
    return b


def tensor_type(elem, dims, shape=True):
    b = vf(1, elem)
    if shape:
        b += ld(2, b"".join(ld(1, d) for d in dims))
    return ld(1, b)


def value_info(name, typ=None):
    return s(1, name) + (ld(2, typ) if typ is not None else b"")


def vi_tensor(name, elem, dims):
    return value_info(name, tensor_type(elem, [dim(value=d) if isinstance(d, int) else dim(param=d) for d in dims]))


def attr(name, typ=None, body=b""):
    return s(1, name) + body + (vf(20, typ) if typ is not None else b"")


def a_int(name, i):
    return attr(name, 2, vf(3, i))


def a_ints(name, ints, packed=False):
    body = ld(8, b"".join(varint(i) for i in ints)) if packed else b"".join(vf(8, i) for i in ints)
    return attr(name, 7, body)


def a_float(name, x):
    return attr(name, 1, f32(2, x))


def a_str(name, text):
    return attr(name, 3, s(4, text))


def node(op, ins, outs, name=None, attrs=(), domain=None, extra=b""):
    b = b"".join(s(1, i) for i in ins) + b"".join(s(2, o) for o in outs)
    if name is not None:
        b += s(3, name)
    b += s(4, op)
    b += b"".join(ld(5, a) for a in attrs)
    if domain is not None:
        b += s(7, domain)
    return b + extra


def tensor(name, elem, dims, raw=None, extra=b"", packed=True):
    b = ld(1, b"".join(varint(d) for d in dims)) if packed else b"".join(vf(1, d) for d in dims)
    b += vf(2, elem) + s(8, name)
    if raw is not None:
        b += s(9, raw)
    return b + extra


def graph(nodes, inputs=(), outputs=(), inits=(), value_infos=(), extra=b""):
    b = b"".join(ld(1, n) for n in nodes) + s(2, "g")
    b += b"".join(ld(5, t) for t in inits)
    b += b"".join(ld(11, v) for v in inputs) + b"".join(ld(12, v) for v in outputs)
    b += b"".join(ld(13, v) for v in value_infos)
    return b + extra


def opset(domain, version):
    return s(1, domain) + vf(2, version)


def model(graph_bytes, ir=8, opsets=(("", 17),), extra=b"", functions=(), metadata=()):
    b = vf(1, ir) + s(2, "pytorch") + s(3, "2.11.0")
    b += ld(7, graph_bytes) if graph_bytes is not None else b""
    b += b"".join(ld(8, opset(d, v)) for d, v in opsets)
    b += b"".join(ld(14, s(1, k) + s(2, v)) for k, v in metadata)
    b += b"".join(ld(25, f) for f in functions)
    return b + extra


def function(name, domain, inputs, outputs, nodes, attributes=()):
    b = s(1, name) + b"".join(s(4, i) for i in inputs) + b"".join(s(5, o) for o in outputs)
    b += b"".join(s(6, a) for a in attributes) + b"".join(ld(7, n) for n in nodes)
    return b + ld(9, opset("", 17)) + s(10, domain)


def i64s(*xs):
    return struct.pack("<%dq" % len(xs), *xs)


X = vi_tensor("x", 1, ["batch", 16])
Y = vi_tensor("y", 1, ["batch", 4])
W = tensor("w", 1, [4, 16])
SHAPE = tensor("shp", 7, [2], raw=i64s(-1, 4))


def simple(nodes=None, inputs=(X,), outputs=(Y,), inits=(W, SHAPE), value_infos=(), gextra=b"", **kw):
    if nodes is None:
        nodes = [node("Gemm", ["x", "w"], ["g"], name="/fc/Gemm", attrs=[a_int("transB", 1)]),
                 node("Reshape", ["g", "shp"], ["y"], name="/Reshape")]
    return model(graph(nodes, inputs, outputs, inits, value_infos, gextra), **kw)


cases = {}


def case(name, data):
    cases[name] = data


base = simple()
case("base", base)
# The top level: a zero tag ends the message; an end-group tag fails it.
case("top_zero_tag_then_garbage", base + b"\x00" + b"\xff\xff\xff")
case("top_zero_tag_two_bytes", base + b"\x80\x00" + b"\x07garbage")
case("top_end_group", base + tag(1, 4))
case("top_field_zero_wt1", base + tag(0, 1) + b"\x00" * 8)
case("top_field_zero_wt0_then", base + b"\x00\x05")
for wt in range(8):
    body = {0: varint(300), 1: b"\x01" * 8, 2: varint(3) + b"abc", 3: tag(5, 0) + varint(1) + tag(99, 4),
            4: b"", 5: b"\x01" * 4, 6: b"", 7: b""}[wt]
    case("top_unknown_wt%d" % wt, base + tag(99, wt) + body)
    case("node_unknown_wt%d" % wt, simple(nodes=[node("Relu", ["x"], ["y"], extra=tag(40, wt) + body)], inits=()))
    case("attr_unknown_wt%d" % wt, simple(nodes=[node("Relu", ["x"], ["y"], attrs=[a_int("k", 1) + tag(30, wt) + body])],
                                          inits=()))
    case("tensor_unknown_wt%d" % wt, simple(inits=(W + tag(20, wt) + body, SHAPE)))
    case("dim_unknown_wt%d" % wt, simple(inputs=(value_info("x", tensor_type(1, [dim(param="batch") + tag(9, wt) + body,
                                                                                  dim(value=16)])),)))
# Groups.
case("group_nested_ok", base + tag(99, 3) + tag(98, 3) + vf(1, 5) + tag(98, 4) + tag(99, 4))
case("group_mismatched_end", base + tag(99, 3) + tag(98, 4))
case("group_unterminated", base + tag(99, 3) + vf(1, 5))
case("group_zero_tag_inside", base + tag(99, 3) + b"\x00" + tag(99, 4))
case("group_in_node_ok", simple(nodes=[node("Relu", ["x"], ["y"], extra=tag(50, 3) + s(1, "zz") + tag(50, 4))], inits=()))
case("group_known_number", simple(nodes=[node("Relu", ["x"], ["y"], extra=tag(1, 3) + tag(1, 4))], inits=()))
case("end_group_in_node", simple(nodes=[node("Relu", ["x"], ["y"], extra=tag(1, 4))], inits=()))
for depth in (60, 61, 62, 63, 64, 65):
    g = b"".join(tag(70 + i, 3) for i in range(depth)) + b"".join(tag(70 + i, 4) for i in reversed(range(depth)))
    case("groups_deep_%d_top" % depth, base + g)
    case("groups_deep_%d_node" % depth, simple(nodes=[node("Relu", ["x"], ["y"], extra=g)], inits=()))
# Nesting through messages: TypeProto.sequence_type.elem_type... and attribute subgraphs.
for depth in (27, 28, 29, 30, 31):
    t = tensor_type(1, [dim(value=3)])
    for _ in range(depth):
        t = ld(4, ld(1, t))
    case("type_nesting_%d" % depth, simple(value_infos=(value_info("g", t),)))
for depth in (18, 19, 20, 21, 22):
    g = graph([node("Relu", ["a"], ["b"])])
    for _ in range(depth):
        g = graph([node("If", ["c"], ["d"], attrs=[attr("then_branch", 5, ld(6, g))])])
    case("subgraph_nesting_%d" % depth, simple(nodes=[node("If", ["x"], ["y"], attrs=[attr("then_branch", 5, ld(6, g))])],
                                               inits=()))
# Varints, tags and lengths at their limits.
case("ir_varint_10_bytes", simple().replace(vf(1, 8), tag(1, 0) + varint(8, length=10), 1))
case("ir_varint_11_bytes", simple().replace(vf(1, 8), tag(1, 0) + varint(8, length=11), 1))
case("ir_varint_10th_byte_7f", simple().replace(vf(1, 8), tag(1, 0) + b"\x88" + b"\x80" * 8 + b"\x7f", 1))
case("ir_negative", simple(ir=-1))
case("ir_zero", simple(ir=0))
case("tag_5_bytes", simple().replace(vf(1, 8), b"\x88\x80\x80\x80\x00" + varint(8), 1))
case("tag_5_bytes_high", simple().replace(vf(1, 8), b"\x88\x80\x80\x80\x10" + varint(8), 1))
case("tag_5_bytes_7f", simple().replace(vf(1, 8), b"\x88\x80\x80\x80\x7f" + varint(8), 1))
case("tag_6_bytes", simple().replace(vf(1, 8), b"\x88\x80\x80\x80\x80\x00" + varint(8), 1))
g = graph([node("Relu", ["x"], ["y"])], [X], [Y])
case("len_5_bytes", vf(1, 8) + tag(7, 2) + varint(len(g), length=5) + g + ld(8, opset("", 17)))
case("len_6_bytes", vf(1, 8) + tag(7, 2) + varint(len(g), length=6) + g + ld(8, opset("", 17)))
case("len_past_end", vf(1, 8) + tag(7, 2) + varint(len(g) + 1) + g)
case("len_huge", vf(1, 8) + tag(7, 2) + b"\xff\xff\xff\xff\x07" + g)
case("len_2gib", vf(1, 8) + tag(7, 2) + b"\x80\x80\x80\x80\x08" + g)
case("unknown_len_past_end", base + tag(99, 2) + varint(100) + b"abc")
case("fixed64_short", base + tag(99, 1) + b"\x01\x02")
case("fixed32_short", base + tag(99, 5) + b"\x01")
# Wrong wire types on known fields: unknown fields then.
case("graph_as_varint", vf(1, 8) + vf(7, 5) + ld(8, opset("", 17)))
case("graph_as_varint_and_graph", vf(7, 5) + base)
case("name_as_varint", simple(nodes=[node("Relu", ["x"], ["y"], extra=vf(3, 7) + vf(4, 1))], inits=()))
case("input_as_fixed32", simple(nodes=[node("Relu", ["x"], ["y"], extra=tag(1, 5) + b"abcd")], inits=()))
case("dims_as_fixed64", simple(inits=(tensor("w", 1, [4, 16], extra=tag(1, 1) + b"\x01" * 8), SHAPE)))
case("attr_f_as_varint", simple(nodes=[node("LeakyRelu", ["x"], ["y"], attrs=[attr("alpha", None, vf(2, 3))])], inits=()))
case("attr_i_as_fixed32", simple(nodes=[node("LeakyRelu", ["x"], ["y"], attrs=[attr("alpha", None, tag(3, 5) + b"\0\0\x80?")])],
                                 inits=()))
case("opset_version_as_len", simple(opsets=()) + ld(8, s(1, "") + s(2, "x")))
# Merged singular messages, last-wins scalars, oneofs.
g1 = graph([node("Relu", ["x"], ["h"], name="a")], [X], [])
g2 = graph([node("Relu", ["h"], ["y"], name="b")], [], [Y])
case("graph_twice_merges", vf(1, 8) + ld(7, g1) + ld(8, opset("", 17)) + ld(7, g2))
case("graph_empty_twice", vf(1, 8) + ld(7, b"") + ld(7, b"") + ld(8, opset("", 17)))
case("ir_twice", simple() + vf(1, 0))
case("node_name_twice", simple(nodes=[node("Relu", ["x"], ["y"], name="first", extra=s(3, "second") + s(4, "Sigmoid"))],
                               inits=()))
case("type_twice", simple(inputs=(value_info("x", tensor_type(1, [dim(param="batch")])) +
                                  ld(2, tensor_type(1, [dim(value=16)])),)))
case("type_oneof_switch", simple(inputs=(value_info("x", tensor_type(1, [dim(param="batch")]) + ld(4, b"") +
                                                    tensor_type(1, [dim(param="b2"), dim(value=16)])),)))
case("type_oneof_other_last", simple(inputs=(value_info("x", tensor_type(1, [dim(param="batch")]) + ld(8, b"")),)))
case("type_tensor_twice_in_type", simple(inputs=(value_info("x", tensor_type(1, [dim(param="batch")]) +
                                                            tensor_type(10, [dim(value=16)])),)))
case("type_elem_truncated", simple(inputs=(value_info("x", ld(1, vf(1, (1 << 32) + 1) + ld(2, ld(1, dim(param="batch")) +
                                                                                     ld(1, dim(value=16))))),)))
case("type_no_shape", simple(inputs=(value_info("x", ld(1, vf(1, 1))),)))
case("type_shape_twice", simple(inputs=(value_info("x", ld(1, vf(1, 1) + ld(2, ld(1, dim(param="batch"))) +
                                                         ld(2, ld(1, dim(value=16))))),)))
case("dim_value_then_param", simple(inputs=(value_info("x", tensor_type(1, [dim(value=3, param="batch"), dim(value=16)])),)))
case("dim_param_then_value", simple(inputs=(value_info("x", tensor_type(1, [dim(raw=s(2, "batch") + vf(1, 5)),
                                                                            dim(value=16)])),)))
case("dim_empty_param_input", simple(inputs=(value_info("x", tensor_type(1, [dim(param=""), dim()])),), outputs=()))
case("dim_unknown_in_value_info", simple(value_infos=(value_info("g", tensor_type(1, [dim(param="batch"), dim()])),)))
case("dim_negative", simple(inputs=(value_info("x", tensor_type(1, [dim(value=-3)])),)))
case("dim_negative_value_info", simple(value_infos=(value_info("g", tensor_type(1, [dim(value=-3)])),)))
case("input_no_type", simple(inputs=(value_info("x"),)))
case("input_empty_name", simple(inputs=(X, vi_tensor("", 1, [3]))))
case("output_empty_name", simple(outputs=(Y, vi_tensor("", 1, [3]))))
case("input_is_initializer", simple(inputs=(X, vi_tensor("w", 1, [4, 16]))))
# Attributes: enums, kinds, lists, tensors.
for t in (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 99, (1 << 32) + 2, -1, -(1 << 32) + 7):
    body = vf(3, 5) + f32(2, 1.5) + s(4, "s") + ld(8, varint(1) + varint(2)) + ld(7, struct.pack("<2f", 1, 2)) + s(9, "a")
    case("attr_type_%s" % t, simple(nodes=[node("Relu", ["x"], ["y"], attrs=[attr("a", t, body)])], inits=()))
case("attr_type_valid_then_invalid", simple(nodes=[node("Relu", ["x"], ["y"], attrs=[attr("a", 2, vf(3, 5)) + vf(20, 99)])],
                                            inits=()))
for body_name, body in [("i", vf(3, 7)), ("f", f32(2, 2.5)), ("s", s(4, "hi")), ("ints", vf(8, 3) + vf(8, 4)),
                        ("ints_empty_packed", ld(8, b"")), ("floats", f32(7, 1.0)), ("floats_packed", ld(7, struct.pack("<f", 3))),
                        ("floats_empty_packed", ld(7, b"")), ("strings", s(9, "q")), ("nothing", b"")]:
    case("attr_untyped_" + body_name, simple(nodes=[node("Relu", ["x"], ["y"], attrs=[attr("a", None, body)])], inits=()))
case("attr_ints_mixed", simple(nodes=[node("Relu", ["x"], ["y"], attrs=[attr("a", 7, vf(8, 1) + ld(8, varint(2) + varint(-3)) + vf(8, 4))])],
                               inits=()))
case("attr_ints_packed_truncated", simple(nodes=[node("Relu", ["x"], ["y"], attrs=[attr("a", 7, ld(8, varint(2) + b"\x80"))])],
                                          inits=()))
case("attr_ints_packed_11_bytes", simple(nodes=[node("Relu", ["x"], ["y"], attrs=[attr("a", 7, ld(8, b"\x80" * 10 + b"\x01"))])],
                                         inits=()))
case("attr_ints_packed_10_bytes", simple(nodes=[node("Relu", ["x"], ["y"], attrs=[attr("a", 7, ld(8, b"\x80" * 9 + b"\x7f"))])],
                                         inits=()))
case("attr_floats_packed_bad_len", simple(nodes=[node("Relu", ["x"], ["y"], attrs=[attr("a", 6, ld(7, b"\0" * 5))])], inits=()))
case("attr_floats_mixed", simple(nodes=[node("Relu", ["x"], ["y"], attrs=[attr("a", 6, f32(7, 1) + ld(7, struct.pack("<2f", 2, 3)))])],
                                 inits=()))
case("attr_strings", simple(nodes=[node("Relu", ["x"], ["y"], attrs=[attr("a", 8, s(9, "p") + s(9, "") + s(9, "q"))])], inits=()))
case("attr_dup_names", simple(nodes=[node("Relu", ["x"], ["y"], attrs=[a_int("k", 1), a_int("k", 2), a_float("k", 3)])], inits=()))
case("attr_graph", simple(nodes=[node("If", ["x"], ["y"], name="if", attrs=[attr("then_branch", 5, ld(6, graph([])))])], inits=()))
case("attr_graphs", simple(nodes=[node("Loop", ["x"], ["y"], attrs=[attr("bodies", 10)])], inits=()))
# symbolic_opset11.squeeze's If: then Squeeze(x, axes) with axes a Constant, else Identity(x),
# lowered by both readers to memest::SqueezeIf(x, cond); with raw or int64_data axes, and
# an else branch that is not an Identity (left an If).
for sq_name, axes_t, else_op in [("if_squeeze_raw", tensor("", 7, [1], raw=i64s(1)), "Identity"),
                                 ("if_squeeze_int64_data", tensor("", 7, [1], extra=vf(7, 1)), "Identity"),
                                 ("if_squeeze_other_else", tensor("", 7, [1], raw=i64s(1)), "Relu")]:
    then_g = graph([node("Constant", [], ["ax"], attrs=[attr("value", 4, ld(5, axes_t))]),
                    node("Squeeze", ["x", "ax"], ["sq"])], outputs=[value_info("sq")])
    else_g = graph([node(else_op, ["x"], ["id"])], outputs=[value_info("id")])
    case(sq_name, simple(nodes=[node("If", ["c"], ["y"], name="if",
                                     attrs=[attr("then_branch", 5, ld(6, then_g)), attr("else_branch", 5, ld(6, else_g))])],
                         inputs=(X, vi_tensor("c", 9, [])), inits=()))
case("attr_graph_corrupt", simple(nodes=[node("If", ["x"], ["y"], attrs=[attr("then_branch", 5, ld(6, ld(1, b"\x0a\x05ab")))])],
                                  inits=()))
T = 4
for tname, t in [("int64_raw", tensor("", 7, [3], raw=i64s(1, 2, 3))),
                 ("int64_data_packed", tensor("", 7, [3], extra=ld(7, varint(1) + varint(-2) + varint(3)))),
                 ("int64_data_unpacked", tensor("", 7, [2], extra=vf(7, 5) + vf(7, 6))),
                 ("int64_data_count_wrong", tensor("", 7, [3], extra=vf(7, 5))),
                 ("int64_raw_wrong_size", tensor("", 7, [3], raw=i64s(1, 2))),
                 ("int32_data_truncated", tensor("", 6, [2], extra=ld(5, varint((1 << 32) + 9) + varint(-5)))),
                 ("uint8_raw", tensor("", 2, [3], raw=b"\x01\xff\x80")),
                 ("int8_raw", tensor("", 3, [3], raw=b"\x01\xff\x80")),
                 ("int16_raw", tensor("", 5, [2], raw=struct.pack("<2h", -2, 300))),
                 ("bool_int32_data", tensor("", 9, [2], extra=vf(5, 1) + vf(5, 0))),
                 ("float_raw", tensor("", 1, [2], raw=struct.pack("<2f", 0.5, 2))),
                 ("float_data", tensor("", 1, [], extra=f32(4, 0.25))),
                 ("float_data_packed", tensor("", 1, [2], extra=ld(4, struct.pack("<2f", 0.5, 2)))),
                 ("double_data", tensor("", 11, [2], extra=f64(10, 0.5) + ld(10, struct.pack("<d", 3)))),
                 ("double_raw", tensor("", 11, [1], raw=struct.pack("<d", 7))),
                 ("raw_empty_scalar", tensor("", 7, [], raw=b"")),
                 ("external", tensor("", 7, [2], raw=i64s(1, 2), extra=vf(14, 1))),
                 ("external_then_invalid", tensor("", 7, [2], raw=i64s(1, 2), extra=vf(14, 1) + vf(14, 5))),
                 ("location_truncated_to_1", tensor("", 7, [2], raw=i64s(1, 2), extra=vf(14, (1 << 32) + 1))),
                 ("dims_unpacked", tensor("", 7, [2, 1], raw=i64s(1, 2), packed=False)),
                 ("dims_mixed", tensor("", 7, [2], raw=i64s(1, 2, 3, 4), extra=vf(1, 2))),
                 ("dims_negative", tensor("", 7, [2, -1])),
                 ("dims_overflow", tensor("", 7, [1 << 40, 1 << 40])),
                 ("big_numel", tensor("", 7, [65], raw=b"\0" * 520)),
                 ("big_float", tensor("", 1, [17], raw=b"\0" * 68)),
                 ("string", tensor("", 8, [1], extra=s(6, "abc")))]:
    case("attr_tensor_" + tname, simple(nodes=[node("Constant", [], ["c"], attrs=[attr("value", T, ld(5, t))])]))
    case("init_" + tname, simple(inits=(W, SHAPE, t.replace(s(8, ""), s(8, "c.t"), 1))))
case("attr_tensor_twice", simple(nodes=[node("Constant", [], ["c"], attrs=[attr("value", T, ld(5, tensor("", 7, [2])) +
                                                                                 ld(5, vf(1, 3) + s(9, i64s(1, 2, 3, 4, 5, 6))))])]))
case("attr_tensor_absent", simple(nodes=[node("Constant", [], ["c"], attrs=[attr("value", T)])]))
case("init_twice_same_name", simple(inits=(W, SHAPE, tensor("w", 7, [2], raw=i64s(1, 2)))))
case("init_running_mean", simple(inits=(W, SHAPE, tensor("bn.running_mean", 1, [4]), tensor("scalar", 1, []))))
sp = ld(1, tensor("sp", 1, [3])) + ld(2, tensor("", 7, [3])) + ld(3, varint(10)) + vf(3, 4)
case("sparse_initializer", simple(gextra=ld(15, sp)))
case("sparse_values_twice", simple(gextra=ld(15, ld(1, tensor("sp", 1, [3])) + ld(1, vf(2, 10)) + vf(3, 7))))
case("sparse_corrupt", simple(gextra=ld(15, ld(1, b"\x0a\x09"))))
# Node metadata (field 9: onnx 1.16's metadata_props, unknown to onnx 1.12).
ns = ": pkg.Root/layer1: torch.nn.Sequential/layer1.0.conv1: torch.nn.Conv2d/conv2d: aten.conv2d.default"
for mname, extra in [("namespace", ld(9, s(1, "namespace") + s(2, ns))),
                     ("other_key_first", ld(9, s(1, "pkg") + s(2, "x")) + ld(9, s(1, "namespace") + s(2, ns))),
                     ("corrupt_first", ld(9, b"\x0a\x09ab") + ld(9, s(1, "namespace") + s(2, ns))),
                     ("zero_tag", ld(9, s(1, "namespace") + b"\x00" + s(2, ns))),
                     ("group_inside", ld(9, s(1, "namespace") + tag(7, 3) + tag(7, 4) + s(2, ns))),
                     ("deep_groups", ld(9, s(1, "namespace") + tag(7, 3) * 99 + tag(7, 4) * 99 + s(2, "a: b/c: d"))),
                     ("deep_groups_100", ld(9, s(1, "namespace") + tag(7, 3) * 100 + tag(7, 4) * 100 + s(2, "a: b/c: d"))),
                     ("deeper_groups", ld(9, s(1, "namespace") + tag(7, 3) * 101 + tag(7, 4) * 101 + s(2, "a: b/c: d"))),
                     ("key_twice", ld(9, s(1, "namespace") + s(2, ns) + s(1, "other"))),
                     ("as_varint", vf(9, 3) + ld(9, s(1, "namespace") + s(2, "m: x/op: aten.relu"))),
                     ("empty_value", ld(9, s(1, "namespace") + s(2, ""))),
                     ("only_aten", ld(9, s(1, "namespace") + s(2, "relu: aten.relu"))),
                     ("no_colon", ld(9, s(1, "namespace") + s(2, "a/b/c"))),
                     ("prims", ld(9, s(1, "namespace") + s(2, ": pkg.Root/blk: M/x: prims.add")))]:
    case("metadata_" + mname, simple(nodes=[node("Relu", ["x"], ["y"], name="/layer9/Relu", extra=extra)], inits=()))
# Opsets, producers, domains, buffers.
case("opset_ai_onnx", simple(opsets=(("ai.onnx", 18),)))
case("opset_none", simple(opsets=()))
case("opset_only_other", simple(opsets=(("com.microsoft", 1),)))
case("opset_old", simple(opsets=(("", 5),)))
case("opset_future", simple(opsets=(("", 99),)))
case("opset_twice", simple(opsets=(("", 13), ("", 16))))
case("no_graph", model(None))
case("unknown_domain", simple(nodes=[node("Frob", ["x"], ["y"], name="f", domain="com.alien")], inits=()))
case("unknown_domain_unnamed", simple(nodes=[node("Frob", ["x"], ["y"], domain="com.alien")], inits=()))
case("domain_ai_onnx", simple(nodes=[node("Relu", ["x"], ["y"], domain="ai.onnx")], inits=()))
case("buffers", simple(inits=(W, SHAPE, tensor("a", 1, [2]), tensor("b", 1, [2])), metadata=[("memest.buffers", "a,,b,")]))
case("producer_no_version", model(graph([node("Relu", ["x"], ["y"])], [X], [Y])).replace(s(3, "2.11.0"), b"", 1))
case("training_info_corrupt", simple(extra=ld(20, ld(1, ld(1, b"\x0a\x05a")))))
case("training_info_ok", simple(extra=ld(20, ld(1, graph([node("Relu", ["a"], ["b"])])) + ld(3, s(1, "k")))))
case("annotation_corrupt", simple(gextra=ld(14, ld(2, b"\x12\x05a"))))
case("unknown_len_garbage_ok", simple(gextra=ld(99, b"\x0a\x05a\xff\xff")))
# Model-local functions.
fn = function("Block", "local", ["a"], ["b"], [node("Relu", ["a"], ["t"], name="r"),
                                               node("LeakyRelu", ["t"], ["b"], name="lr",
                                                    attrs=[attr("alpha", 1, s(21, "slope"))])], ["slope"])
call = node("Block", ["x"], ["y"], name="/blk/Block", domain="local", attrs=[a_float("slope", 0.2)])
case("function_inlined", simple(nodes=[call], inits=(), opsets=(("", 17), ("local", 1)), functions=[fn]))
case("function_ref_unresolved", simple(nodes=[node("Block", ["x"], ["y"], domain="local")], inits=(),
                                       opsets=(("", 17), ("local", 1)), functions=[fn]))
case("function_ref_dup_call_attrs", simple(nodes=[node("Block", ["x"], ["y"], domain="local",
                                                       attrs=[a_float("slope", 0.2), a_float("slope", 0.3)])],
                                           inits=(), functions=[fn]))
case("function_ref_chain", simple(nodes=[node("Block", ["x"], ["y"], domain="local",
                                              attrs=[attr("slope", 1, f32(2, 0.2) + s(21, "")), attr("", 1, f32(2, 0.9))])],
                                  inits=(), functions=[fn]))
case("function_ref_chain2", simple(nodes=[node("Block", ["x"], ["y"], domain="local",
                                               attrs=[attr("slope", 1, f32(2, 0.2) + s(21, "z")), attr("z", 1, f32(2, 0.9))])],
                                   inits=(), functions=[fn]))
fn_nested = function("Outer", "local", ["p"], ["q"], [node("Block", ["p"], ["q"], domain="local",
                                                           attrs=[attr("slope", 1, s(21, "s2"))])])
case("function_nested", simple(nodes=[node("Outer", ["x"], ["y"], name="/o/Outer", domain="local",
                                           attrs=[a_float("s2", 0.7)])], inits=(), functions=[fn, fn_nested]))
fn_rec = function("Rec", "local", ["a"], ["b"], [node("Rec", ["a"], ["b"], domain="local")])
case("function_recursive", simple(nodes=[node("Rec", ["x"], ["y"], domain="local")], inits=(), functions=[fn_rec]))
fn_rec2 = function("Rec", "local", ["a"], ["b"], [node("Rec", ["a"], ["b"], domain="local")])
case("function_recursive_known_domain", simple(nodes=[node("Rec", ["x"], ["y"], domain="memest")], inits=(),
                                               functions=[function("Rec", "memest", ["a"], ["b"],
                                                                   [node("Rec", ["a"], ["b"], domain="memest")])]))
case("function_twice_last_wins", simple(nodes=[call], inits=(), functions=[fn, function("Block", "local", ["a"], ["b"],
                                                                                        [node("Sigmoid", ["a"], ["b"])])]))
case("function_domain_ai_onnx", simple(nodes=[node("Relu", ["x"], ["y"], domain="ai.onnx")], inits=(),
                                       functions=[function("Relu", "", ["a"], ["b"], [node("Sigmoid", ["a"], ["b"])])]))
case("function_more_inputs", simple(nodes=[node("Block", ["x", "w"], ["y", "z"], domain="local")], inits=(W,), functions=[fn]))
case("function_empty_io", simple(nodes=[node("Block", ["", "x"], ["y"], domain="local")], inits=(), functions=[fn]))
case("function_graph_attr", simple(nodes=[node("G", ["x"], ["y"], domain="local")], inits=(),
                                   functions=[function("G", "local", ["a"], ["b"],
                                                       [node("If", ["a"], ["b"], attrs=[attr("then_branch", 5)])])]))
case("function_corrupt_node", simple(nodes=[call], inits=(), functions=[fn + ld(7, b"\x0a\x05ab")]))

# A model with most of the above that parses: then every truncation and many mutations of it.
rich = simple(nodes=[call, node("Relu", ["y"], ["y2"], name="/layer1/Relu",
                                extra=ld(9, s(1, "namespace") + s(2, ns)) + tag(60, 3) + tag(60, 4)),
                     node("Constant", [], ["c"], attrs=[attr("value", T, ld(5, tensor("", 7, [2], raw=i64s(3, 4))))]),
                     node("Conv", ["y2", "w"], ["z"], attrs=[a_ints("pads", [1, 1, 1, 1], packed=True),
                                                           a_ints("strides", [2, 2]), a_str("auto_pad", "NOTSET")])],
              inits=(W, SHAPE, tensor("bn.running_var", 1, [4]), tensor("i32", 6, [2], extra=ld(5, varint(1) + varint(2)))),
              value_infos=(value_info("y", tensor_type(1, [dim(param="batch"), dim(value=16)])),),
              opsets=(("", 17), ("local", 1)), functions=[fn], metadata=[("memest.buffers", "w")],
              extra=ld(20, ld(1, graph([]))))
case("rich", rich)


def main():
    diff = os.path.abspath(sys.argv[1])
    out = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="memest-reader-cases-")
    os.makedirs(out, exist_ok=True)
    for name, data in cases.items():
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(data)
    for cut in range(1, len(rich)):
        with open(os.path.join(out, "rich_cut_%04d.onnx" % cut), "wb") as f:
            f.write(rich[:cut])
    rnd = random.Random(11)
    for k in range(600):
        data = bytearray(rich)
        for _ in range(rnd.choice((1, 1, 2, 3))):
            i = rnd.randrange(len(data))
            how = rnd.randrange(4)
            if how == 0:
                data[i] = rnd.randrange(256)
            elif how == 1:
                data[i] ^= 1 << rnd.randrange(8)
            elif how == 2:
                del data[i]
            else:
                data.insert(i, rnd.randrange(256))
        with open(os.path.join(out, "rich_mut_%03d.onnx" % k), "wb") as f:
            f.write(bytes(data))
    p = subprocess.run([diff, out], capture_output=True, text=True)
    if p.returncode != 0:
        sys.stdout.write(p.stdout[-2000:])
        sys.stderr.write(p.stderr[-6000:])
        print("FAIL: the readers disagree (last file named above)")
        return 1
    print(p.stdout.strip().splitlines()[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
