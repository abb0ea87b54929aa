// Which tensors a graph output's gradient reaches: the walk shared by the weights no
// gradient reaches (analysis.cc demote_untrained_parameters) and the nodes autograd keeps
// nothing for (simulate.cc Builder::mark_gradient_paths). They differ only in which
// inputs a node passes its gradient to.
#pragma once

#include <vector>

#include "estimator/ir.h"

namespace memest {

/// Per tensor, whether a graph output depends on it through gradients. Nodes are walked
/// from the last: a live node with a needed floating output marks the inputs for which
/// `follows(node, input index)` holds. Graph outputs are needed.
template <class Follows>
std::vector<bool> gradient_reach(const Graph& g, Follows follows) {
  std::vector<bool> needed(g.tensors.size(), false);
  for (size_t t = 0; t < g.tensors.size(); ++t) needed[t] = g.tensors[t].graph_output;
  for (size_t k = g.nodes.size(); k-- > 0;) {
    const Node& n = g.nodes[k];
    if (n.dead) continue;
    bool any = false;
    for (int out : n.outputs) any |= out >= 0 && needed[static_cast<size_t>(out)] && is_floating(g.tensors[out].dtype);
    if (!any) continue;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] >= 0 && follows(n, i)) needed[static_cast<size_t>(n.inputs[i])] = true;
    }
  }
  return needed;
}

}  // namespace memest
