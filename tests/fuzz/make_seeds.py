#!/usr/bin/env python3
"""Writes small ONNX models that reach the reader's and the shape pass's corners:
fuzz seeds beside models/*.onnx. Usage: make_seeds.py OUT_DIR (Debian's python3-onnx)."""
import os
import sys

from onnx import TensorProto, helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
F, I64 = TensorProto.FLOAT, TensorProto.INT64


def vi(name, shape, t=F):
    return helper.make_tensor_value_info(name, t, shape)


def w(name, dims, t=F):
    # Weights carry dims only, as shape-only exports do; tiny ints carry values.
    if t == I64:
        return helper.make_tensor(name, t, dims, list(range(1, 1 + (dims[0] if dims else 1))))
    t_ = TensorProto(name=name, data_type=t)
    t_.dims.extend(dims)
    return t_


def save(name, nodes, inputs, outputs, inits=(), opset=17, functions=(), extra_opsets=(), value_info=()):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits), value_info=list(value_info))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)] + list(extra_opsets), functions=list(functions))
    m.ir_version = 8
    with open(os.path.join(out, name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString())


n = helper.make_node
x4 = vi("x", ["batch", 3, 16, 16])
save("conv_bn_pool", [n("Conv", ["x", "cw"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
                      n("BatchNormalization", ["c", "s", "b", "m", "v"], ["bn"], training_mode=1),
                      n("Relu", ["bn"], ["r"]), n("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
                      n("GlobalAveragePool", ["p"], ["g"]), n("Flatten", ["g"], ["f"]), n("Gemm", ["f", "fw"], ["y"], transB=1)],
     [x4], [vi("y", ["batch", 10])],
     [w("cw", [8, 3, 3, 3]), w("s", [8]), w("b", [8]), w("m", [8]), w("v", [8]), w("fw", [10, 8])])
xs = vi("x", ["batch", 12, 32])
save("attention", [n("MatMul", ["x", "wq"], ["q"]), n("MatMul", ["x", "wk"], ["k"]), n("MatMul", ["x", "wv"], ["v"]),
                   n("Transpose", ["k"], ["kt"], perm=[0, 2, 1]), n("Mul", ["q", "sc"], ["qs"]), n("Mul", ["kt", "sc"], ["ks"]),
                   n("MatMul", ["qs", "ks"], ["s"]), n("Softmax", ["s"], ["p"], axis=-1), n("Dropout", ["p"], ["pd"]),
                   n("MatMul", ["pd", "v"], ["o"]), n("LayerNormalization", ["o", "g", "bb"], ["y"], axis=-1)],
     [xs], [vi("y", ["batch", 12, 32])],
     [w("wq", [32, 32]), w("wk", [32, 32]), w("wv", [32, 32]), helper.make_tensor("sc", F, [], [0.5]), w("g", [32]), w("bb", [32])])
save("shape_arith", [n("Shape", ["x"], ["s"]), n("Gather", ["s", "i0"], ["b"], axis=0), n("Unsqueeze", ["b", "ax"], ["b1"]),
                     n("Concat", ["b1", "rest"], ["ns"], axis=0), n("Reshape", ["x", "ns"], ["r"]),
                     n("Slice", ["r", "st", "en", "ax1"], ["sl"]), n("Split", ["sl"], ["a", "c"], axis=1),
                     n("Concat", ["a", "c"], ["cc"], axis=1), n("Expand", ["cc", "ns2"], ["e"]),
                     n("ReduceMean", ["e"], ["y"], axes=[2], keepdims=0)],
     [xs], [vi("y", ["batch", 12])],
     [helper.make_tensor("i0", I64, [], [0]), helper.make_tensor("ax", I64, [1], [0]),
      helper.make_tensor("rest", I64, [2], [12, 32]), helper.make_tensor("st", I64, [1], [2]),
      helper.make_tensor("en", I64, [1], [10]), helper.make_tensor("ax1", I64, [1], [1]),
      helper.make_tensor("ns2", I64, [3], [1, 8, 32])])
save("lstm", [n("LSTM", ["x", "W", "R", "B"], ["Y", "h", "c"], hidden_size=16), n("Squeeze", ["Y", "a1"], ["y"])],
     [vi("x", [12, "batch", 8])], [vi("y", [12, "batch", 16])],
     [w("W", [1, 64, 8]), w("R", [1, 64, 16]), w("B", [1, 128]), helper.make_tensor("a1", I64, [1], [1])])
fn = helper.make_function("custom", "Block", ["a", "b"], ["c"], [n("MatMul", ["a", "b"], ["t"]), n("Relu", ["t"], ["c"])],
                          [helper.make_opsetid("", 17)])
save("function", [n("Block", ["x", "w1"], ["h"], domain="custom"), n("Block", ["h", "w2"], ["y"], domain="custom")],
     [vi("x", ["batch", 16])], [vi("y", ["batch", 4])], [w("w1", [16, 8]), w("w2", [8, 4])],
     functions=[fn], extra_opsets=[helper.make_opsetid("custom", 1)])
then = helper.make_graph([n("Identity", ["x"], ["t"])], "then", [], [vi("t", ["batch", 16])])
save("subgraph", [n("ReduceSum", ["x"], ["s"], keepdims=0), n("Greater", ["s", "z"], ["cond"]),
                  n("If", ["cond"], ["i"], then_branch=then, else_branch=then), n("Relu", ["i"], ["y"])],
     [vi("x", ["batch", 16])], [vi("y", ["batch", 16])], [helper.make_tensor("z", F, [], [0.0])])
save("resize_pad", [n("Resize", ["x", "", "sc"], ["r"], mode="nearest"), n("Pad", ["r", "pads"], ["p"]),
                    n("ConvTranspose", ["p", "w"], ["y"], strides=[2, 2])],
     [x4], [vi("y", None)], [helper.make_tensor("sc", F, [4], [1, 1, 2, 2]),
                             helper.make_tensor("pads", I64, [8], [0, 0, 1, 1, 0, 0, 1, 1]), w("w", [3, 4, 2, 2])])
save("embed_gelu_cast", [n("Gather", ["emb", "ids"], ["e"]), n("Div", ["e", "r2"], ["d"]), n("Erf", ["d"], ["er"]),
                         n("Add", ["er", "one"], ["a"]), n("Mul", ["e", "a"], ["m"]), n("Mul", ["m", "half"], ["g"]),
                         n("Cast", ["g"], ["h"], to=10), n("Sigmoid", ["h"], ["sg"]), n("Mul", ["h", "sg"], ["y"])],
     [vi("ids", ["batch", 7], I64)], [vi("y", ["batch", 7, 16], TensorProto.FLOAT16)],
     [w("emb", [50, 16]), helper.make_tensor("r2", F, [], [1.4142]), helper.make_tensor("one", F, [], [1.0]),
      helper.make_tensor("half", F, [], [0.5])])
save("old_opset", [n("Upsample", ["x", "sc"], ["u"], mode="nearest"), n("Relu", ["u"], ["y"])],
     [x4], [vi("y", None)], [helper.make_tensor("sc", F, [4], [1, 1, 2, 2])], opset=9)
save("range_where", [n("Shape", ["x"], ["s"]), n("Gather", ["s", "i1"], ["t"], axis=0), n("Range", ["z", "t", "o"], ["r"]),
                     n("Less", ["r", "t"], ["lt"]), n("Where", ["lt", "x", "x"], ["wh"]),
                     n("ConstantOfShape", ["s"], ["c"]), n("Add", ["wh", "c"], ["y"])],
     [vi("x", ["batch", 9])], [vi("y", ["batch", 9])],
     [helper.make_tensor("i1", I64, [], [1]), helper.make_tensor("z", I64, [], [0]), helper.make_tensor("o", I64, [], [1])])
print("wrote seeds to", out)
