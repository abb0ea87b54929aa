// Helpers shared by the simulator's tests (simulate_test.cc, inplace_test.cc).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "estimator/analysis.h"
#include "frontends/text_reader.h"

namespace memest::testing {

/// Linear(64 -> 128), ReLU, Linear(128 -> 10): the simulator tests' small MLP.
inline const char* const kMlp = R"(
opset 17
input x float32 batch,64
param fc1.weight float32 128,64
param fc1.bias float32 128
param fc2.weight float32 10,128
param fc2.bias float32 10
node memest::Linear x fc1.weight fc1.bias -> h @fc1
node Relu h -> r @act
node memest::Linear r fc2.weight fc2.bias -> out @fc2
output out
)";

inline Analysis analyze_text(const char* text, TrainConfig cfg) {
  AnalysisOptions o;
  o.train = cfg;
  return analyze(read_text_graph(text), o);
}

/// The live ops of the analysed graph, by type, without the loss memest appends.
inline std::map<std::string, int> live_ops(const Analysis& a) {
  std::map<std::string, int> ops;
  for (const Node& n : a.graph.nodes) {
    if (!n.dead && n.op != "SumLoss") ++ops[n.op];
  }
  return ops;
}

/// The text graph analyzed for a step whose loss is the sum of the outputs (the
/// simulator tests' default: no loss kernel of its own to account for).
inline Analysis analyze_sum_loss(const char* text) {
  TrainConfig cfg;
  cfg.loss = Loss::Sum;
  return analyze_text(text, cfg);
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

/// The first iteration's events of `phase` at the estimate's sizes, one string each:
/// "A category bytes module" or "F ...", module "-" for setup and the optimizer.
inline std::vector<std::string> event_order(const Analysis& a, const Estimate& e, Phase phase) {
  std::vector<std::string> out;
  for (const Event& ev : a.program.events) {
    const Block& b = a.program.blocks[ev.block];
    if (ev.iter != 0 || ev.phase != phase) continue;
    out.push_back(std::string(ev.kind == Event::Alloc ? "A " : "F ") + category_key(b.category) + " " +
                  std::to_string(b.bytes.eval(e.bindings)) + " " +
                  (b.node >= 0 ? a.graph.nodes[b.node].module.str() : std::string("-")));
  }
  return out;
}

}  // namespace memest::testing
