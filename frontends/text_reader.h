// A tiny line-oriented text format that builds a Graph, so tests state a graph in
// a few lines instead of a binary .onnx fixture (the way ninja's tests build state).
//
//   # comment                              (also after any line)
//   opset 17
//   input x float32 batch,3,32,32          dims: integers or symbol names; "-" for a scalar
//   param conv.weight float32 8,3,3,3      a trainable weight; module taken from the name
//   buffer bn.running_mean float32 8       non-trainable state
//   const shp int64 2 = 0,-1               a constant with known contents (ints or symbols;
//                                          floats for floating dtypes)
//   declare y float32 batch,8              the shape the file declares for a tensor (value_info)
//   node Conv x conv.weight -> y kernel_shape=3,3 pads=1,1,1,1 :myconv @layer1.conv
//   node Dropout y -> z mask ratio=0.1     "-" for an omitted input or output
//   output z
//
// Attributes: k=3 Int, k=3,3 or k=[3] or k=[] Ints, k=0.5 Float, k=0.5,1 Floats,
// k="s" or k=word String, k=tensor:int64:2:0,-1 a Tensor (dtype:dims:contents; dims
// "-" for a scalar; contents optional). `:name` names the node, `@path` sets its
// module, and `domain::Op` its domain (memest::Linear).
#pragma once

#include <string>

#include "estimator/ir.h"

namespace memest {

/// Builds a Graph from the text format above; throws Error naming the line on
/// anything malformed. Runs no pass: callers verify and infer shapes themselves.
Graph read_text_graph(const std::string& text, const std::string& file = "<text>");

}  // namespace memest
