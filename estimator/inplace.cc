#include "estimator/inplace.h"

#include <string>
#include <string_view>

namespace memest {

bool runs_in_place(const Graph& g, const Node& n, const OpInfo* info, std::span<const EffectiveInput> eff, DType out,
                   std::span<const TensorFacts> facts, std::span<const OpInfo* const> infos) {
  if (eff.empty() || eff[0].cast || eff[0].block < 0 || eff[0].dtype != out) return false;
  if (updates_in_place(g, n, info)) return true;
  if (!info || !(info->inplace || info->inplace_when_owned)) return false;
  const TensorFacts& in = facts[eff[0].tensor];
  if (in.uses != 1 || in.graph_output || in.producer < 0) return false;
  if (n.attr_int("inplace", 0) == 1) return true;
  const OpInfo* made_by = infos[in.producer];
  if (!made_by || !made_by->overwritable_output) return false;
  const std::string& producer_module = g.nodes[in.producer].module;
  if (std::string_view(made_by->family) == "elementwise" && !n.module.empty() && !producer_module.empty() &&
      n.module != producer_module && !is_child_module(n.module, producer_module)) {
    // A residual add's own activation (torchvision's `out += identity; out =
    // self.relu(out)`: module `layer1.0.relu` reads `layer1.0`'s add) runs in place; the
    // next block's first activation does not (timm's NF-ResNet: `stages.1.0.act1`, nn.ReLU
    // without inplace, reads `stages.0.1`'s add; traces20 nf_resnet26: a new 154 MB output).
    return false;
  }
  return info->inplace ||
         (std::string_view(made_by->family) == "norm" && is_child_module(n.module, producer_module));
}

// x += y and x -= y: Tensor.__iadd__ / __isub__ call add_ / sub_, which write into x's
// storage (x keeps its shape: an in-place op cannot broadcast its self). Their gradients
// read neither operand, so autograd saves nothing the update overwrites (x *= y, x /= y
// need x's old value, which autograd would copy first: they stay out of place here).
bool updates_in_place(const Graph& g, const Node& n, const OpInfo* info) {
  if (!info || (info->augmented != '+' && info->augmented != '-') || !written_in_place(g, n, info)) return false;
  if (n.inputs.empty() || n.inputs[0] < 0) return false;
  const auto& in = g.tensors[n.inputs[0]].shape;
  const auto& out = g.tensors[n.outputs[0]].shape;
  return in && out && *in == *out;
}

bool written_in_place(const Graph& g, const Node& n, const OpInfo* info) {
  if (!info || info->augmented == 0 || n.py_stack < 0 || n.outputs.empty() || n.outputs[0] < 0) return false;
  const PyStatement* statement = g.python.statement_of(n.py_stack);
  if (!statement || statement->augmented != info->augmented) return false;
  for (int c : g.tensors[n.outputs[0]].consumers) {
    if (g.nodes[c].py_stack == n.py_stack) return false;
  }
  return true;
}

bool guessed_residual_update(const Graph& g, const Node& n, const OpInfo* info, std::span<const TensorFacts> facts,
                             std::span<const OpInfo* const> infos) {
  if (!info || info->augmented != '+' || n.py_stack >= 0 || n.module.empty()) return false;
  if (n.inputs.empty() || n.inputs[0] < 0 || n.outputs.empty() || n.outputs[0] < 0) return false;
  const TensorFacts& in = facts[n.inputs[0]];
  if (in.uses != 1 || in.graph_output || in.producer < 0) return false;
  const OpInfo* made_by = infos[in.producer];
  if (!made_by || std::string_view(made_by->family) != "norm" || !made_by->overwritable_output) return false;
  if (!is_child_module(g.nodes[in.producer].module, n.module)) return false;
  const auto& readers = g.tensors[n.outputs[0]].consumers;
  if (readers.size() != 1) return false;
  const OpInfo* next = infos[readers[0]];
  if (!next || std::string_view(next->family) != "activation" || !is_child_module(g.nodes[readers[0]].module, n.module))
    return false;
  const auto& x = g.tensors[n.inputs[0]].shape;
  const auto& out = g.tensors[n.outputs[0]].shape;
  return x && out && *x == *out;
}

}  // namespace memest
