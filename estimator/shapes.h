// The shape pass: every node's output dtype and symbolic shape, in topological order.
#pragma once

#include "estimator/ir.h"

namespace memest {

/// Orders g.nodes topologically and checks the graph is well formed: no cycle,
/// every tensor read is produced, is an input, or is an initializer. Throws Error.
void verify_and_sort(Graph& g);

/// Looks up each node's OpInfo and runs its shape rule. Unknown ops and rules
/// that cannot decide fall back to the file's declared shape, or to input 0's
/// shape, and say so in g.warnings (once per op type). Throws Error only for
/// contradictions. Returns the tensors whose shapes came from a fallback.
std::vector<int> infer_shapes(Graph& g);

}  // namespace memest
