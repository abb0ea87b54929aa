// Matrix products of float32-cast operands run with autocast off (upcast_matmuls.h).
#include "estimator/upcast_matmuls.h"

#include <vector>

#include "estimator/ops/op_info.h"

namespace memest {
namespace {

// Cast (not CastLike, whose dtype is another tensor's) to float32 from float32 or from
// an integer type: the code's own `.float()`.
bool explicit_float_cast(const Graph& g, const Node& n) {
  if (!n.info || !n.info->view_when_dtype_kept || n.info->autocast != Autocast::None) return false;
  if (n.inputs.empty() || n.inputs[0] < 0 || n.outputs.empty() || n.outputs[0] < 0) return false;
  if (g.tensors[n.outputs[0]].dtype != DType::F32) return false;
  const DType in = g.tensors[n.inputs[0]].dtype;
  return in == DType::F32 || !is_floating(in);
}

// Whether tensor t is, through views, a float32 cast of the code's or an output of an op
// this pass marked.
bool float32_by_code(const Graph& g, int t, const std::vector<char>& marked) {
  while (t >= 0) {
    const int p = g.tensors[t].producer;
    if (p < 0) return false;
    const Node& n = g.nodes[p];
    if (n.dead || !n.info) return false;
    if (marked[p] || explicit_float_cast(g, n)) return true;
    if (!n.info->view || n.inputs.empty()) return false;
    t = n.inputs[0];
  }
  return false;
}

bool activation(const Tensor& t) {
  return t.kind != TensorKind::Parameter && t.kind != TensorKind::Buffer && t.kind != TensorKind::Constant &&
         !t.value && !t.fvalue;
}

}  // namespace

int mark_upcast_matmuls(Graph& g) {
  std::vector<char> marked(g.nodes.size(), 0);
  int count = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    Node& n = g.nodes[k];
    if (n.dead || n.autocast_off || !n.info || n.info->autocast != Autocast::Lower) continue;
    int operands = 0;
    bool all = true;
    for (int in : n.inputs) {
      if (in < 0 || !is_floating(g.tensors[in].dtype) || !activation(g.tensors[in])) continue;
      ++operands;
      all &= float32_by_code(g, in, marked);
    }
    if (operands < 2 || !all) continue;
    n.autocast_off = true;
    marked[k] = 1;
    ++count;
  }
  return count;
}

}  // namespace memest
