// Known exporter bugs that leave a graph file inconsistent: when a shape rule rejects a
// node, the error says which bug wrote it and how to export around it.
#pragma once

#include <string>

#include "estimator/ir.h"

namespace memest {

/// Why the exporter wrote `n` so that its shape rule rejected it, and the way around
/// ("the file's constant ... ; re-export with ..."), when the graph matches a known
/// exporter bug; "" otherwise. Called only once a rule has failed at `n`, so it reads
/// constants from their nodes (nothing past `n` has been inferred).
std::string exporter_bug(const Graph& g, const Node& n);

}  // namespace memest
