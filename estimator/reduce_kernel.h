// The global buffer a CUDA reduction (TensorIterator's sum, mean, norm ...) allocates when
// it splits each output's inputs over several thread blocks: PyTorch's
// aten/src/ATen/native/cuda/Reduce.cuh (setReduceConfig, ReduceConfig::global_memory_size).
#pragma once

#include <cstdint>

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
};

/// Bytes of the global buffer for `outputs` outputs of `inputs` inputs each; 0 when the
/// launch reduces within a block (or the GPU's size is not known).
int64_t reduce_buffer_bytes(int64_t outputs, int64_t inputs, const ReduceLaunch& l);

}  // namespace memest
