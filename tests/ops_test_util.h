// Helpers for the op-family tests: build a graph from text, run the shape pass,
// and read results back as strings that compare readably in CHECK failures.
#pragma once

#include <string>

#include "estimator/error.h"
#include "estimator/ir.h"
#include "estimator/ops/registry.h"
#include "estimator/shapes.h"
#include "frontends/text_reader.h"

namespace memest::testing {

// A term's symbols print in the order they were first interned; fixing that order
// before any test runs keeps expectations like "768*batch*seq" stable whichever
// tests run first.
inline const bool kSymbolOrder = [] {
  for (const char* s : {"batch", "seq", "h", "w"}) intern_symbol(s);
  return true;
}();

/// The text graph, verified and shape-inferred.
inline Graph infer(const std::string& text) {
  Graph g = read_text_graph(text);
  verify_and_sort(g);
  infer_shapes(g);
  return g;
}

inline const Tensor& tensor(const Graph& g, const std::string& name) {
  int id = g.find_tensor(name);
  if (id < 0) throw Error("no tensor '" + name + "'");
  return g.tensors[id];
}

/// "[batch, 64, 112, 112]", or "?" when the shape is unknown.
inline std::string shape(const Graph& g, const std::string& name) {
  const Tensor& t = tensor(g, name);
  return t.shape ? shape_str(*t.shape) : "?";
}

inline std::string dtype(const Graph& g, const std::string& name) { return dtype_name(tensor(g, name).dtype); }

/// Folded integer contents, "[batch, -1]", or "?" when not known.
inline std::string value(const Graph& g, const std::string& name) {
  const Tensor& t = tensor(g, name);
  return t.value ? shape_str(*t.value) : "?";
}

/// The node producing a tensor, for its OpInfo.
inline const Node& producer(const Graph& g, const std::string& name) {
  const Tensor& t = tensor(g, name);
  if (t.producer < 0) throw Error("tensor '" + name + "' has no producer");
  return g.nodes[t.producer];
}

/// Saved extras of the node producing `name`, as "numel:dtype" joined by spaces.
inline std::string extras(const Graph& g, const std::string& name) {
  const Node& n = producer(g, name);
  if (!n.info || !n.info->saved_extra) return "";
  std::string out;
  for (const auto& e : n.info->saved_extra(g, n)) {
    out += (out.empty() ? "" : " ") + e.numel.str() + ":" + dtype_name(e.dtype);
  }
  return out;
}

}  // namespace memest::testing
