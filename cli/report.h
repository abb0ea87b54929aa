// What an estimate prints: the per-layer tree, components at the peak, JSON.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "estimator/analysis.h"

namespace memest {

/// One row of the layer tree: a module and, folded in, every module under it.
struct LayerRow {
  std::string module;       ///< "layer1.0" ("(top)" for nodes outside any module)
  std::string name;         ///< the path's last part, "0", shown under the tree glyphs
  std::string ops;          ///< op types of the module's own nodes (children's not included)
  std::string output_shape; ///< output of the last node in the subtree, evaluated
  int64_t parameters = 0;   ///< parameter elements the subtree uses (tied weights once)
  int64_t trainable = 0;    ///< of which train (--train / --freeze; all by default)
  int64_t saved_bytes = 0;  ///< activations the subtree produced that autograd keeps, one iteration, each once (512-B rounded)
  int64_t peak_bytes = 0;   ///< bytes alive at the peak that the subtree's nodes allocated (forward or backward)
  double share = 0;         ///< peak_bytes / the peak
  int depth = 1;            ///< 1: a top-level module
  bool last = false;        ///< the last child of its parent (drawn └─)
};

/// The tree in pre-order, children in order of first use, cut at `depth` module
/// levels (0: every level); a cut row holds its hidden descendants' figures.
std::vector<LayerRow> layer_rows(const Analysis& a, const Estimate& e, int depth);

/// Bytes the caching allocator handed out for each block of the program at this
/// estimate: what max_memory_allocated counts, so live blocks sum to the peak.
std::vector<int64_t> allocated_sizes(const Analysis& a, const Estimate& e);

/// "layer4.1.conv2 (Conv)", or "" for no node.
std::string node_label(const Analysis& a, int node);

/// The estimate as JSON, streamed to `out` as it is produced (a million-node graph's
/// report is 66 MB); `time_ms` is the time the analysis took. No trailing newline.
void write_estimate_json(std::ostream& out, const Analysis& a, const Estimate& e, int depth, double time_ms);
/// The text report: the configuration, `verdict` (a fit against a budget, if one was
/// given), the peak and its components, then the layer tree cut at `depth`.
std::string estimate_text(const Analysis& a, const Estimate& e, int depth, const std::string& verdict = "");

/// "models/resnet18.onnx | batch 8 | adam | amp none | loss ce | h200-torch2.11"
std::string config_line(const Analysis& a, int64_t batch);

}  // namespace memest
