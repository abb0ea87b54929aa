// The segments --checkpoint wraps: top-level repeated blocks, or sqrt(n) groups of them.
#include <cctype>
#include <cmath>
#include <set>
#include <string>

#include "estimator/simulate.h"

namespace memest {

namespace {

// "layer1.0.conv1" -> "layer1.0": the path up to the first segment that is an index.
std::string block_of_module(const std::string& module) {
  size_t start = 0;
  while (start < module.size()) {
    size_t dot = module.find('.', start);
    std::string seg = module.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    size_t digits = seg.size();
    while (digits > 0 && std::isdigit(static_cast<unsigned char>(seg[digits - 1]))) --digits;
    if (digits < seg.size() && (digits == 0 || seg[digits - 1] == '_')) {
      return module.substr(0, dot == std::string::npos ? module.size() : dot);
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return "";
}

}  // namespace

std::vector<Segment> checkpoint_segments(const Graph& g, Checkpoint mode) {
  std::vector<Segment> blocks;
  if (mode == Checkpoint::None) return blocks;
  // A block is a container: some node lies in a module below it ("layer1.0.conv1" under
  // "layer1.0"). The layers of a Sequential (mlp's net.0 Linear, net.1 ReLU) are indexed
  // too, but checkpointing a single layer keeps its input and saves nothing.
  std::set<std::string> containers;
  for (const Node& n : g.nodes) {
    const std::string b = n.dead ? "" : block_of_module(n.module);
    if (!b.empty() && n.module.size() > b.size()) containers.insert(b);
  }
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (n.dead) continue;
    const std::string b = block_of_module(n.module);
    if (b.empty() || !containers.count(b)) continue;
    if (!blocks.empty() && blocks.back().module == b) {
      blocks.back().last = static_cast<int>(k);
    } else {
      blocks.push_back({static_cast<int>(k), static_cast<int>(k), b});
    }
  }
  // A block interleaved with other nodes is split above; keep the runs as they are.
  if (mode == Checkpoint::Sqrt && !blocks.empty()) {
    const size_t n = blocks.size();
    const size_t per = std::max<size_t>(1, static_cast<size_t>(std::ceil(std::sqrt(static_cast<double>(n)))));
    std::vector<Segment> grouped;
    for (size_t i = 0; i < n; i += per) {
      Segment s = blocks[i];
      s.last = blocks[std::min(n, i + per) - 1].last;
      grouped.push_back(s);
    }
    blocks = grouped;
  }
  return blocks;
}

}  // namespace memest
