// Target profiles: constants that depend on the GPU and the torch version, each
// documented with where it was measured.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace memest {

struct Target {
  std::string name;                 ///< "h200-torch2.11"
  std::string description;
  int64_t cublas_workspace = 0;     ///< bytes, allocated through the caching allocator at the first matmul
  bool cublas_backward_workspace = false;  ///< backward's thread gets a workspace of its own
  int64_t cublaslt_workspace = 0;   ///< bytes, at the first addmm with a bias (cuBLASLt epilogue)
  int64_t alloc_round = 512;        ///< caching allocator's minimum block and rounding
  bool fused_attention = true;      ///< SDPA pattern runs as flash / memory-efficient attention
  /// The GPU's streaming multiprocessors and resident threads per SM: how many blocks a
  /// CUDA reduction spreads one output over (estimator/reduce_kernel.h); 0: not modelled.
  int64_t sm_count = 0;
  int64_t threads_per_sm = 0;
};

/// The profile named `name` ("" for the default); throws Error for unknown names.
const Target& find_target(const std::string& name);
/// All known profiles, for --help and `memest targets`.
std::vector<const Target*> all_targets();

}  // namespace memest
