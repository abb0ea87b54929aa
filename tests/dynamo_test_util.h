// Helpers shared by the tests of what memest reads from dynamo exports
// (dynamo_export_test.cc, dynamo_batch_norm_test.cc, merged_initializers_test.cc).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "estimator/ir.h"
#include "tests/wire_builder.h"

namespace memest::testing {

/// A float initializer of these dims, no data (shape-only, as models/ stores them).
inline std::string initializer(const std::string& name, std::initializer_list<int64_t> dims) {
  std::string d;
  for (int64_t v : dims) d += vfield(1, static_cast<uint64_t>(v));
  return lfield(5, d + vfield(2, 1) + lfield(8, name));
}
/// A ModelProto as torch 2.11's exporter writes it: IR version 10, opset 18.
inline std::string dynamo_model(const std::string& graph) {
  return vfield(1, 10) + lfield(7, graph) + lfield(8, lfield(1, "") + vfield(2, 18));
}
/// Bytes of the float32 parameters some node reads.
inline int64_t parameter_bytes(const Graph& g) {
  int64_t bytes = 0;
  for (const Tensor& t : g.tensors) {
    if (t.kind == TensorKind::Parameter && !t.consumers.empty()) bytes += product(*t.shape).as_const().value_or(0) * 4;
  }
  return bytes;
}

}  // namespace memest::testing
