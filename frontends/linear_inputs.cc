// A legacy export's initializers that linear layers read as their input (linear_inputs.h).
#include "frontends/linear_inputs.h"

#include <algorithm>

namespace memest {
namespace {

bool initializer_parameter(const Tensor& t) { return t.kind == TensorKind::Parameter && t.producer < 0; }

// Whether tensor w is a linear layer's weight operand: a parameter initializer, or one
// transposed by a Transpose node (the legacy exporter's nn.Linear).
bool weight_operand(const Graph& g, int w) {
  if (w < 0) return false;
  const Tensor& t = g.tensors[static_cast<size_t>(w)];
  if (t.producer < 0) return initializer_parameter(t);
  const Node& p = g.nodes[static_cast<size_t>(t.producer)];
  return p.op == "Transpose" && !p.inputs.empty() && p.inputs[0] >= 0 &&
         initializer_parameter(g.tensors[static_cast<size_t>(p.inputs[0])]);
}

// Whether node n reads tensor t as the input of a linear layer, and nowhere else.
bool reads_as_linear_input(const Graph& g, const Node& n, int t) {
  if ((n.op != "MatMul" && n.op != "Gemm") || n.inputs.size() < 2 || n.inputs[0] != t) return false;
  if (std::count(n.inputs.begin(), n.inputs.end(), t) != 1) return false;
  return weight_operand(g, n.inputs[1]);
}

}  // namespace

int keep_linear_inputs_as_buffers(Graph& g) {
  int kept = 0;
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const Tensor& ten = g.tensors[t];
    if (!initializer_parameter(ten) || ten.consumers.empty()) continue;
    const bool input = std::all_of(ten.consumers.begin(), ten.consumers.end(), [&](int c) {
      return reads_as_linear_input(g, g.nodes[static_cast<size_t>(c)], static_cast<int>(t));
    });
    if (!input) continue;
    g.tensors[t].kind = TensorKind::Buffer;
    ++kept;
  }
  return kept;
}

}  // namespace memest
