// Data-parallel training, per rank (protocol.md "Data-parallel training, per rank"):
// DDP's gradient buckets and FSDP2's sharded parameters, as hooks the simulator calls
// at the points of a training step where the wrapper allocates or frees. The pure
// arithmetic (bucket assignment, shard sizes) is exposed for unit tests.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "estimator/ir.h"
#include "estimator/simulate.h"

namespace memest {

// ---- DDP: the reducer's bucket assignment ---------------------------------------

/// One tensor as compute_bucket_assignment_by_size sees it.
struct BucketTensor {
  int64_t bytes = 0;
  DType dtype = DType::F32;
};

/// torch/csrc/distributed/c10d/reducer.cpp compute_bucket_assignment_by_size: tensors
/// go, in the given order, into one open bucket per dtype; a bucket closes once its
/// bytes reach its limit (so it may exceed it by its last tensor), and the next bucket
/// of that dtype takes the next limit (the last limit repeats). `sort_by_min_index`
/// (the constructor's call, no tensor_indices) orders the buckets by their smallest
/// index; the rebuild (tensors in gradient-ready order) keeps the closing order.
std::vector<std::vector<size_t>> assign_buckets(const std::vector<BucketTensor>& tensors,
                                                const std::vector<int64_t>& limits, bool sort_by_min_index);

/// Bytes of each bucket of an assignment (checked sums).
std::vector<int64_t> bucket_bytes(const std::vector<BucketTensor>& tensors,
                                  const std::vector<std::vector<size_t>>& buckets);

constexpr int64_t kDdpFirstBucketBytes = int64_t{1} << 20;       ///< dist._DEFAULT_FIRST_BUCKET_BYTES
constexpr int64_t kDdpBucketCapBytes = int64_t{25} << 20;        ///< bucket_cap_mb=25
constexpr int64_t kDdpBroadcastBucketBytes = int64_t{250} << 20; ///< DDP's broadcast_bucket_size

// ---- FSDP2: shard sizes ---------------------------------------------------------

/// Rows of rank 0's shard of a parameter with `dim0` rows: torch.chunk's chunk size,
/// ceil(dim0 / world) (_fsdp_param.py _init_sharded_param: chunks[0] is always the
/// padded one). A 0-dim parameter counts as one row.
int64_t fsdp_shard_rows(int64_t dim0, int world);
/// Elements of rank 0's padded shard: fsdp_shard_rows * the other dims' product.
int64_t fsdp_shard_numel(const std::vector<int64_t>& shape, int world);
/// Elements of the padded unsharded parameter (dim 0 padded to a multiple of world):
/// what the all-gather writes and what the reduce-scatter reads per parameter.
int64_t fsdp_unsharded_numel(const std::vector<int64_t>& shape, int world);

/// One fully_shard'ed module: a repeated block (checkpoint_segments' blocks), or the
/// root, which manages every parameter no block claims.
struct FsdpGroup {
  std::string module;        ///< "layers.3"; "" for the root
  int first = -1, last = -1; ///< node span of the block's forward (-1: the root)
  std::vector<int> params;   ///< parameter tensors it manages, in tensor order
};

/// The groups of `fully_shard(block) for block in blocks; fully_shard(model)`: blocks
/// in forward order, the root last. A parameter belongs to the block all of whose
/// consumers lie in that block's span; a parameter used across blocks (tied) to the root.
std::vector<FsdpGroup> fsdp_groups(const Graph& g);

// ---- hooks ----------------------------------------------------------------------

/// What a data-parallel wrapper may do to the simulated step; the simulator's
/// builder implements it over its block bookkeeping.
class StepMemory {
 public:
  virtual ~StepMemory() = default;
  virtual int allocate(Expr bytes, Category c, int node) = 0;  ///< a new block, one reference
  virtual void hold(int block) = 0;                            ///< one more reference
  virtual void release(int block) = 0;                         ///< one less; freed at zero
};

/// A wrapper's actions at the points of a step where they happen (simulate.cc calls
/// them). Every hook defaults to doing nothing.
class ParallelModel {
 public:
  virtual ~ParallelModel() = default;
  /// After model.cuda(), before the optimizer: `params` in tensor order, `block_of`
  /// their blocks (FSDP swaps them for shards).
  virtual void wrap(const std::vector<int>& /*params*/, std::vector<int>& /*block_of*/) {}
  virtual void zero_grad() {}
  virtual void forward_begin() {}
  virtual void before_forward(int /*node*/) {}
  virtual void after_forward(int /*node*/) {}
  virtual void backward_begin() {}
  /// Backward reaches node `node` (every node, in reverse order, before it runs).
  virtual void visit_backward(int /*node*/) {}
  /// Node `node` is about to compute gradients.
  virtual void before_backward(int /*node*/) {}
  virtual void backward_end() {}
  /// A parameter's gradient block `g` reaches AccumulateGrad. True when the wrapper
  /// took it (the simulator then keeps no .grad block of its own for it).
  virtual bool takes_grad(int /*tensor*/, int /*g*/) { return false; }
  /// Bytes of one optimizer state tensor of parameter `tensor` (full: unsharded bytes).
  virtual Expr state_bytes(int /*tensor*/, const Expr& full) const { return full; }
};

/// The model for cfg.parallel (nullptr for none). Throws Error on a world size < 1.
std::unique_ptr<ParallelModel> make_parallel(const Graph& g, const TrainConfig& cfg, StepMemory& mem,
                                             std::vector<std::string>& notes);

const char* parallel_name(Parallel p);  ///< "none", "ddp", "fsdp"

}  // namespace memest
