// Packed per-tensor and per-input facts the simulator's loops read (simulate.cc only).
#pragma once

#include "estimator/ir.h"

namespace memest {

// What a node's input looked like to the op: the tensor, or autocast's cast copy.
struct EffectiveInput {
  int tensor = -1;
  int block = -1;
  DType dtype = DType::Undefined;
  bool cast = false;
};

// What the program's loops ask of a tensor, packed: a graph Tensor is a few hundred
// bytes, and reading a field of it was a cache miss per visit (a third of the time).
struct TensorFacts {
  int producer = -1;
  int uses = 0;  ///< consumer entries, one per consuming input
  TensorKind kind = TensorKind::Activation;
  bool on_gpu = false;  ///< tensors whose contents are known are shape arithmetic, done on the host
  bool graph_output = false;
  DType dtype = DType::Undefined;  ///< as the graph declares it (forward_node's starting point)
  /// A stochastic-depth mask (random_mask in simulate.cc): made at run time in the dtype of
  /// the tensor it scales, whatever dtype the export wrote for it.
  bool random_mask = false;
};

}  // namespace memest
