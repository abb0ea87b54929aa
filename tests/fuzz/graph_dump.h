// Everything a reader puts in a Graph, as text: two readers agree when their dumps do.
#pragma once

#include <cstdio>
#include <string>

#include "estimator/ir.h"

namespace memest::testing {

inline std::string dump_double(double d) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", d);
  return buf;
}

inline std::string dump_ints(const std::vector<int>& v) {
  std::string s = "[";
  for (int x : v) s += std::to_string(x) + ",";
  return s + "]";
}

inline std::string dump_graph(const Graph& g) {
  std::string s = "file " + g.file + "\nopset " + std::to_string(g.opset) + "\nproducer " + g.producer + "\n";
  for (const Tensor& t : g.tensors) {
    s += "tensor '" + t.name + "' " + dtype_name(t.dtype) + " " + kind_name(t.kind) + (t.graph_output ? " out" : "") +
         " producer " + std::to_string(t.producer) + " follows " + std::to_string(t.dtype_follows) + " shape " +
         (t.shape ? shape_str(*t.shape) : "?") + " declared " + (t.declared ? shape_str(*t.declared) : "?") +
         " consumers " + dump_ints(t.consumers) + " value " + (t.value ? shape_str(*t.value) : "?") + " fvalue ";
    if (t.fvalue) {
      for (double d : *t.fvalue) s += dump_double(d) + ",";
    } else {
      s += "?";
    }
    s += " module '" + t.module + "'\n";
  }
  for (const auto& stack : g.python.stacks) {
    s += "stack";
    for (const PyFrame& f : stack) {
      s += " " + g.python.statements[static_cast<size_t>(f.statement)].where + "#" + std::to_string(f.instance);
    }
    s += "\n";
  }
  for (const Node& n : g.nodes) {
    s += "node '" + n.name + "' " + n.op + " domain '" + n.domain + "' module '" + n.module + "' in " +
         dump_ints(n.inputs) + " out " + dump_ints(n.outputs) + (n.dead ? " dead" : "") +
         (n.autocast_off ? " autocast_off" : "") + (n.keeps_locals ? " keeps_locals" : "") +
         (n.casts_to_input ? " casts_to_input" : "") + " stack " + std::to_string(n.py_stack) + "\n";
    for (const auto& [key, a] : n.attrs) {
      s += "  attr '" + key + "' kind " + std::to_string(a.kind) + " i " + std::to_string(a.i) + " f " + dump_double(a.f) +
           " s '" + a.s + "' ints";
      for (int64_t x : a.ints) s += " " + std::to_string(x);
      const AttributeExtra& e = a.extra();
      s += " floats";
      for (double d : e.floats) s += " " + dump_double(d);
      s += " strings";
      for (const auto& x : e.strings) s += " '" + x + "'";
      s += std::string(" t ") + dtype_name(e.t_dtype) + " dims";
      for (int64_t x : e.t_dims) s += " " + std::to_string(x);
      s += " t_ints";
      if (e.t_ints) {
        for (int64_t x : *e.t_ints) s += " " + std::to_string(x);
      } else {
        s += " ?";
      }
      s += " t_floats";
      if (e.t_floats) {
        for (double d : *e.t_floats) s += " " + dump_double(d);
      } else {
        s += " ?";
      }
      s += "\n";
    }
  }
  s += "inputs " + dump_ints(g.inputs) + "\noutputs " + dump_ints(g.outputs) + "\n";
  for (const auto& w : g.warnings) s += "warning " + w + "\n";
  return s;
}

}  // namespace memest::testing
