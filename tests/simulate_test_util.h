// Helpers shared by the simulator's tests (simulate_test.cc, inplace_test.cc).
#pragma once

#include <vector>

#include "estimator/analysis.h"
#include "frontends/text_reader.h"

namespace memest::testing {

inline Analysis analyze_text(const char* text, TrainConfig cfg) {
  AnalysisOptions o;
  o.train = cfg;
  return analyze(read_text_graph(text), o);
}

/// How many activation blocks (outputs) the nodes of `module` allocated, over all iterations.
inline int outputs_allocated_by(const Analysis& a, const char* module) {
  int count = 0;
  for (const Block& b : a.program.blocks) {
    if (b.node >= 0 && a.graph.nodes[b.node].module == module && b.category == Category::Activations) ++count;
  }
  return count;
}

/// Bytes (at the estimate's sizes) of the blocks allocated in `phase` of the first
/// iteration by the nodes `keep(node, block)` accepts, in allocation order.
template <typename Keep>
std::vector<int64_t> allocated_bytes(const Analysis& a, const Estimate& e, Phase phase, Keep keep) {
  std::vector<int64_t> out;
  for (const Event& ev : a.program.events) {
    const Block& b = a.program.blocks[ev.block];
    if (ev.kind == Event::Alloc && ev.iter == 0 && ev.phase == phase && b.node >= 0 && keep(a.graph.nodes[b.node], b)) {
      out.push_back(b.bytes.eval(e.bindings));
    }
  }
  return out;
}

}  // namespace memest::testing
