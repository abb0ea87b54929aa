// Helpers shared by the simulator's tests (simulate_test.cc, inplace_test.cc).
#pragma once

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

}  // namespace memest::testing
