// Known exporter bugs, one table entry each: a matcher that recognises, from the node a
// shape rule rejected, a file the bug wrote, and says what the bug did.
#include "estimator/exporter_bugs.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

namespace memest {
namespace {

// Whether tensor t is a rank-0 constant (a Constant node's or a literal's).
bool scalar_constant(const Graph& g, int t) {
  const Tensor& x = g.tensors[static_cast<size_t>(t)];
  if (x.producer < 0) return x.kind == TensorKind::Constant && x.shape && x.shape->empty();
  const Node& p = g.nodes[static_cast<size_t>(x.producer)];
  const Attribute* a = p.attr("value");
  return p.op == "Constant" && ((a && a->kind == Attribute::Tensor && a->extra().t_dims.empty()) ||
                                p.attr("value_int"));
}

// The rank-0 constants a shape operand is built from, as the TorchScript exporter builds
// a list of sizes: each Unsqueeze(c, 0), a Concat, a Reshape to -1, and for expand a
// Where(Equal(size, -1), ones, size) that turns -1 into 1.
void size_constants(const Graph& g, int t, int depth, std::vector<int>& out) {
  if (t < 0 || depth > 8) return;
  if (scalar_constant(g, t)) {
    out.push_back(t);
    return;
  }
  const int p = g.tensors[static_cast<size_t>(t)].producer;
  if (p < 0) return;
  const Node& n = g.nodes[static_cast<size_t>(p)];
  if (n.op == "Concat") {
    for (int in : n.inputs) size_constants(g, in, depth + 1, out);
  } else if (n.op == "Where" && n.has_input(2)) {
    size_constants(g, n.inputs[2], depth + 1, out);
  } else if ((n.op == "Unsqueeze" || n.op == "Reshape" || n.op == "Cast" || n.op == "Identity") && n.has_input(0)) {
    size_constants(g, n.inputs[0], depth + 1, out);
  }
}

// The sizes in n's shape operand that its rule could have rejected: for Expand, those that
// neither match the input's dimension nor are 1; for Reshape, all of them unless one is
// -1 (a list that kept its -1 was not rewritten).
std::vector<int64_t> rejected_sizes(const Graph& g, const Node& n) {
  const Tensor& x = g.tensors[static_cast<size_t>(n.inputs[0])];
  const Tensor& t = g.tensors[static_cast<size_t>(n.inputs[1])];
  if (!x.shape || !t.value) return {};
  const std::vector<Expr>& target = *t.value;
  std::vector<int64_t> out;
  if (n.op == "Reshape") {
    for (const Expr& e : target) {
      auto v = e.as_const();
      if (v == -1) return {};
      if (v) out.push_back(*v);
    }
    return out;
  }
  const Shape& in = *x.shape;
  for (size_t k = 1; k <= std::min(in.size(), target.size()); ++k) {
    auto dim = in[in.size() - k].as_const();
    auto want = target[target.size() - k].as_const();
    if (dim && want && *dim != *want && *dim != 1 && *want != 1) out.push_back(*want);
  }
  return out;
}

std::string constant_name(const Graph& g, int t) {
  const Tensor& x = g.tensors[static_cast<size_t>(t)];
  if (x.producer >= 0 && !g.nodes[static_cast<size_t>(x.producer)].name.empty()) {
    return g.nodes[static_cast<size_t>(x.producer)].name.str();
  }
  return x.name.str();
}

// torch.onnx's TorchScript exporter (dynamo=False) writes repeat_interleave(x, r, dim)
// with a constant r as Unsqueeze(x, d + 1) -> Tile(1, .., r, .., 1) for the dim d it
// normalised, and normalises a negative dim by `dim += rank` on the tensor that dim's
// onnx::Constant node holds (symbolic_opset13.repeat_interleave; _maybe_get_scalar
// returns that tensor, not a copy). The exporter pools equal constants into one node, so
// every -1 of the model's code becomes d: the expand(-1) and view(..., -1, head_dim)
// sizes read the node, the stack(dim=-1) and flatten(end_dim=-1) exported after it bake
// d in. Cohere-2's rotary embedding (repeat_interleave(freqs, 2, dim=-1) on rank 3) turns
// them into 2: inv_freq[None, :, None].expand(batch, -1, 1) asks for [1, 32, 1] as
// [1, 2, 1] (aya_vision and cohere2_vision on torch 2.11, blind39 and sample47).
std::string repeat_interleave_rank(const Graph& g, const Node& n) {
  if ((n.op != "Expand" && n.op != "Reshape") || !n.has_input(0) || !n.has_input(1)) return "";
  std::vector<int> sizes;
  size_constants(g, n.inputs[1], 0, sizes);
  const std::vector<int64_t> rejected = rejected_sizes(g, n);
  if (sizes.empty() || rejected.empty()) return "";
  for (const Node& tile : g.nodes) {
    if (tile.dead || tile.op != "Tile" || tile.py_stack >= 0 || !tile.has_input(0) || !tile.has_input(1)) continue;
    const int u = g.tensors[static_cast<size_t>(tile.inputs[0])].producer;
    if (u < 0 || g.nodes[static_cast<size_t>(u)].op != "Unsqueeze") continue;
    const Node& unsq = g.nodes[static_cast<size_t>(u)];
    auto axes = unsq.has_input(1) ? constant_ints(g, unsq.inputs[1]) : std::optional(unsq.attr_ints("axes"));
    auto reps = constant_ints(g, tile.inputs[1]);
    if (!axes || axes->size() != 1 || (*axes)[0] < 1 || !reps) continue;
    const int64_t a = (*axes)[0];
    if (static_cast<int64_t>(reps->size()) <= a) continue;
    bool one_hot = true;
    for (size_t i = 0; i < reps->size(); ++i) one_hot &= static_cast<int64_t>(i) == a || (*reps)[i] == 1;
    if (!one_hot) continue;
    for (int c : sizes) {
      auto v = constant_ints(g, c);
      if (!v || v->size() != 1 || (*v)[0] != a - 1) continue;
      if (std::find(rejected.begin(), rejected.end(), a - 1) == rejected.end()) continue;
      const std::string d = std::to_string(a - 1);
      return "the file's constant '" + constant_name(g, c) + "' holds " + d +
             " where the model's code has -1: torch.onnx's TorchScript exporter (dynamo=False) rewrites the -1 "
             "it shares when it exports repeat_interleave with a negative dim (here at '" +
             (unsq.name.empty() ? unsq.op.str() : unsq.name.str()) + "', dim " + d +
             "), so the file contradicts itself; re-export with dynamo=True";
    }
  }
  return "";
}

using Explain = std::string (*)(const Graph&, const Node&);

const Explain kKnownBugs[] = {repeat_interleave_rank};

}  // namespace

std::string exporter_bug(const Graph& g, const Node& n) {
  for (Explain explain : kKnownBugs) {
    std::string why = explain(g, n);
    if (!why.empty()) return why;
  }
  return "";
}

}  // namespace memest
