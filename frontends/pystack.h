// Python stack traces of a dynamo export. torch.onnx.export(dynamo=True) writes, per
// node, the Python stack it was traced in (metadata "pkg.torch.onnx.stack_trace"):
//
//   File "model.py", line 40, in forward
//       x = self.block(x)
//     File "model.py", line 21, in forward
//       h = self.ln(x)
//
// PyStackReader turns each into a Graph::python stack: per frame the statement it runs
// (with the local names that statement assigns) and the module instance whose forward
// the frame belongs to, from the node's "namespace" metadata. frames.h reads them for
// how long local variables hold tensors.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "estimator/ir.h"

namespace memest {

/// What a statement's first line assigns. "h = f(x)" -> {h}; "a, b = f(x)" -> {a, b};
/// "x: T = f(" -> {x}; "x += y" -> {x}. `binds` is false when it assigns no local name
/// ("return x", "f(x)", "self.x = y", "out[0] = y").
struct Assignment {
  std::vector<std::string> names;
  bool binds = false;
  /// An augmented assignment's operator ('+' for "x += y"); 0 for a plain one.
  char augmented = 0;
  /// An element of a tuple or an argument list written over several lines: no
  /// assignment of its own, and it ends with a comma (`query_states[..., r:],` in
  /// `query_rot, query_pass = (\n query_states[..., :r],\n query_states[..., r:],\n)`).
  /// The stack names the line of the sub-expression, not the statement's first line.
  bool continuation = false;
};
Assignment assigned_names(std::string_view code);

/// A node traced inside a higher-order op's body. torch.export turns a `with
/// torch.autocast(enabled=False):` block into a submodule whose generated code is the
/// node's only frame (File "<eval_with_key>.N"): timm's EfficientViT LiteMLA._attn,
/// transformers' rotary embeddings. Inside, `q.float()` is an aten.to call, a no-op in
/// an fp32 export and so absent from the graph, whose result the body's code names "to"
/// or "to_N": `cast_args` has bit i set when positional argument i of the node's aten
/// call is one (of the first 16).
struct HopCall {
  bool in_body = false;
  uint16_t cast_args = 0;
};
HopCall hop_call(std::string_view trace);
/// For a node in such a body: autocast off, and its .float() arguments (Node::float_inputs).
void mark_autocast_block(std::string_view trace, Node& node);

class PyStackReader {
 public:
  explicit PyStackReader(PySource& out) : out_(out) {}
  /// The stack id of a node traced at `trace` whose namespace metadata is `ns`; -1 when
  /// the trace names no frame.
  int read(std::string_view trace, std::string_view ns);

 private:
  int statement(std::string_view file, std::string_view line, std::string_view code);
  int name(const std::string& n);
  int instance(std::string_view module_path);

  PySource& out_;
  std::unordered_map<std::string, int> stacks_;      // trace + namespace scope -> stack id
  std::unordered_map<std::string, int> statements_;  // "file:line" -> statement id
  std::unordered_map<std::string, int> names_;
  std::unordered_map<std::string, int> instances_;
};

}  // namespace memest
