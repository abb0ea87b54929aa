// The global buffer a CUDA reduction (TensorIterator's sum, mean, norm ...) allocates when
// it splits each output's inputs over several thread blocks: PyTorch's
// aten/src/ATen/native/cuda/Reduce.cuh (setReduceConfig, ReduceConfig::global_memory_size).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "estimator/ir.h"

namespace memest {

/// A reduction's launch as Reduce.cuh sees it once TensorIterator has coalesced its dims.
struct ReduceLaunch {
  /// The innermost dim in memory is reduced (a contiguous map's spatial mean); else an
  /// output dim is innermost (the same mean of a channels-last map, or x.sum(0)).
  bool reduces_innermost = false;
  /// The reduced dims coalesce into one (vectorized input loads need it).
  bool one_reduce_dim = true;
  int64_t acc_bytes = 4;   ///< the accumulator's element (float for half, bf16 and float input)
  int64_t input_vec = 4;   ///< elements per vectorized input load (8 for 16-bit sum and mean)
  int64_t output_vec = 4;  ///< outputs per thread where an output dim is innermost: 4, 2 or 1
  int64_t sm_count = 0;    ///< the GPU's (Target)
  int64_t threads_per_sm = 0;
  friend bool operator==(const ReduceLaunch&, const ReduceLaunch&) = default;
};

/// Bytes of the global buffer for `outputs` outputs of `inputs` inputs each; 0 when the
/// launch reduces within a block (or the GPU's size is not known).
int64_t reduce_buffer_bytes(int64_t outputs, int64_t inputs, const ReduceLaunch& l);

/// A reduction of a tensor of shape x stored in `layout` (layout.cc's convention; {}
/// contiguous) over `axes`, run in `dtype`: its launch, its outputs' count and each
/// output's inputs (symbolic; reduce_buffer_bytes takes them evaluated).
struct ReducePlan {
  ReduceLaunch launch;
  Expr outputs;
  Expr inputs;
};
/// nullopt when nothing is reduced, a shape is too large or the layout is unknown.
std::optional<ReducePlan> plan_reduction(const Shape& x, const std::vector<int8_t>& layout,
                                         const std::vector<int64_t>& axes, DType dtype, int64_t sm_count,
                                         int64_t threads_per_sm);

/// The dims of `out` along which a tensor of shape `in` is broadcast to it (numpy rules:
/// missing leading dims, and dims of size 1 against a larger one): what sum_to_size
/// reduces its gradient over. nullopt when `in` has more dims than `out`.
std::optional<std::vector<int64_t>> broadcast_axes(const Shape& in, const Shape& out);

}  // namespace memest
