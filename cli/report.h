// What an estimate prints: the per-layer table, components at the peak, JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "estimator/analysis.h"

namespace memest {

/// One row of the layer table: nodes grouped by module path.
struct LayerRow {
  std::string module;       ///< "layer1.0" ("(top)" for nodes outside any module)
  std::string ops;          ///< op types, "Conv, BatchNormalization, Relu"
  std::string output_shape; ///< output of the layer's last node, evaluated
  int64_t parameters = 0;   ///< parameter elements owned by the module (tied weights once)
  int64_t saved_bytes = 0;  ///< bytes kept for backward by the layer's nodes (allocator-rounded)
  int depth = 0;
};

/// Rows grouped at `depth` module levels (0: every distinct module path).
std::vector<LayerRow> layer_rows(const Analysis& a, const Estimate& e, int depth);

nlohmann::json estimate_json(const Analysis& a, const Estimate& e, int depth);
std::string estimate_text(const Analysis& a, const Estimate& e, int depth);

}  // namespace memest
