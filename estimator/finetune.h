// Fine-tuning (protocol.md "Fine-tuning"): which parameters train. --train / --freeze
// patterns are matched against parameter names, the initializer names of the graph.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "estimator/ir.h"

namespace memest {

/// A --train/--freeze PATTERN: a glob where `*` matches any characters, dots included
/// (`*lora_*`), or a dotted prefix (`fc` matches `fc.weight`, not `fc2.weight`).
bool pattern_matches(std::string_view pattern, std::string_view name);

/// The dotted name a pattern is matched against: the initializer's own name, or for a
/// weight the dynamo exporter folded into a renamed initializer ("val_12": a Linear's
/// weight transposed), its consumer's module path + ".weight".
std::string parameter_name(const Graph& g, int tensor);

/// Per tensor: whether it is a parameter that trains (requires_grad). Every parameter
/// when both lists are empty; with `train`, only the matching ones; else all but those
/// matching `freeze`. Throws Error for a pattern that matches no parameter.
std::vector<bool> trainable_parameters(const Graph& g, const std::vector<std::string>& train,
                                       const std::vector<std::string>& freeze);

}  // namespace memest
