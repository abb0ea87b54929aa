// DistributedDataParallel, one rank: the reducer's flat gradient buckets, their
// rebuild after the first backward, and the broadcasts of parameters and buffers.
// Mechanisms from torch/nn/parallel/distributed.py (_ddp_init_helper, _pre_forward,
// _sync_buffers), torch/csrc/distributed/c10d/reducer.cpp (initialize_buckets,
// mark_variable_ready_dense, rebuild_buckets) and comm.cpp (broadcast_coalesced).
#include <deque>
#include <limits>

#include "estimator/finetune.h"
#include "estimator/parallel_impl.h"

namespace memest {

namespace {

class Ddp : public ParallelModel {
 public:
  Ddp(const Graph& g, const TrainConfig& cfg, StepMemory& mem) : g_(g), cfg_(cfg), mem_(mem) {
    trainable_ = trainable_parameters(g, cfg.train, cfg.freeze);
    for (size_t t = 0; t < g.tensors.size(); ++t) {
      const Tensor& ten = g.tensors[t];
      if (ten.kind == TensorKind::Buffer && !ten.consumers.empty()) {
        buffers_.push_back({constant_bytes(ten), ten.dtype});
      }
    }
  }

  void wrap(const std::vector<int>& params, std::vector<int>& /*block_of*/) override {
    // _sync_module_states: every parameter, then every buffer, broadcast from rank 0 in
    // 250 MiB buckets (also at world size 1: nothing skips it).
    std::vector<BucketTensor> states;
    for (int p : params) states.push_back({constant_bytes(g_.tensors[p]), g_.tensors[p].dtype});
    states.insert(states.end(), buffers_.begin(), buffers_.end());
    broadcast(states);
    // The reducer takes the parameters that require grad. With find_unused_parameters=False
    // the constructor's bucket_size_limits is [sys.maxsize]: one bucket per dtype, in
    // parameter order, until the first backward has shown the gradient-ready order.
    for (int p : params) {
      if (!trainable_[p]) continue;
      grads_.push_back(p);
    }
    std::vector<BucketTensor> ts;
    for (int p : grads_) ts.push_back({constant_bytes(g_.tensors[p]), g_.tensors[p].dtype});
    allocate_buckets(ts, assign_buckets(ts, {std::numeric_limits<int64_t>::max()}, true));
    // local_used_map_dev_: one int32 per parameter on the device.
    if (!grads_.empty()) mem_.allocate(Expr(checked_mul(4, static_cast<int64_t>(grads_.size()))), Category::Buffers, -1);
  }

  void forward_begin() override {
    // _pre_forward: _rebuild_buckets() first ("before the peak memory usage increases"),
    // once, after the first backward; then the buffers' broadcast (broadcast_buffers=True).
    if (backward_seen_ && !rebuilt_) rebuild();
    broadcast(buffers_);
  }

  void backward_begin() override { backward_seen_ = true; }

  void backward_end() override {
    for (int b : retired_) mem_.release(b);
    retired_.clear();
  }

  bool takes_grad(int tensor, int g) override {
    if (!rebuilt_ && !ready_seen_[tensor]) {
      // rebuilt_params_: the order in which mark_variable_ready saw the gradients.
      ready_seen_[tensor] = true;
      ready_.push_back(tensor);
    }
    // mark_variable_ready_dense copies the gradient into its bucket view (mul_out by
    // 1/world, in place). Without gradient_as_bucket_view the .grad stays and finalize
    // copies the reduced bucket back into it: no allocation beyond the buckets. With it,
    // .grad becomes the bucket view and the autograd gradient is dropped; later
    // gradients (--grad-accum, tied uses) are added into the view in place.
    if (!cfg_.bucket_view) return false;
    mem_.release(g);
    return true;
  }

 private:
  void allocate_buckets(const std::vector<BucketTensor>& ts, const std::vector<std::vector<size_t>>& assignment) {
    for (int64_t bytes : bucket_bytes(ts, assignment)) {
      buckets_.push_back(mem_.allocate(Expr(bytes), Category::Gradients, -1));
    }
  }

  void rebuild() {
    rebuilt_ = true;
    // initialize_buckets clears buckets_ before allocating the new ones, yet the old ones
    // may stay allocated through the rebuilding iteration's forward and backward: measured
    // on the H200 (torch 2.11, per-phase allocated counters) with gradient_as_bucket_view
    // (resnet50 batch 32: one bucket set, 97.5 MiB, higher from the rebuild to the end of
    // that backward than in the iteration after), and without it in some runs only
    // (parallel-h200-torch2.11.jsonl: bert_hf and llama_hf under bf16 hold them, the same
    // models under fp16 do not; -9.9% and -9.0% when released at once). What holds them
    // was not found in reducer.cpp (a completed allreduce's work object, released by the
    // process group's watchdog thread on its own schedule, would explain the runs that
    // differ); an underestimate runs out of memory, so they are held in both modes until
    // the end of that backward.
    for (int b : buckets_) retired_.push_back(b);
    buckets_.clear();
    std::vector<BucketTensor> ts;
    for (int p : ready_) ts.push_back({constant_bytes(g_.tensors[p]), g_.tensors[p].dtype});
    // A parameter that got no gradient is not in rebuilt_params_ (the reducer would have
    // failed with find_unused_parameters=False); it is bucketed last here.
    for (int p : grads_) {
      if (!ready_seen_[p]) ts.push_back({constant_bytes(g_.tensors[p]), g_.tensors[p].dtype});
    }
    allocate_buckets(ts, assign_buckets(ts, {kDdpFirstBucketBytes, kDdpBucketCapBytes}, false));
  }

  // comm.cpp broadcast_coalesced: each bucket is flattened (at::cat, a new tensor,
  // except for a bucket of one tensor, which flatten_dense_tensors only views),
  // broadcast, and copied back; at most two buckets are in flight.
  void broadcast(const std::vector<BucketTensor>& ts) {
    if (ts.empty()) return;
    const auto assignment = assign_buckets(ts, {kDdpBroadcastBucketBytes}, true);
    const std::vector<int64_t> bytes = bucket_bytes(ts, assignment);
    std::deque<int> in_flight;
    for (size_t i = 0; i < assignment.size(); ++i) {
      if (in_flight.size() >= 2) {
        mem_.release(in_flight.front());
        in_flight.pop_front();
      }
      in_flight.push_back(assignment[i].size() > 1 ? mem_.allocate(Expr(bytes[i]), Category::Temporaries, -1) : -1);
    }
    for (int b : in_flight) mem_.release(b);
  }

  const Graph& g_;
  const TrainConfig& cfg_;
  StepMemory& mem_;
  std::vector<bool> trainable_;
  std::vector<BucketTensor> buffers_;
  std::vector<int> grads_;  // the reducer's parameters
  std::vector<int> buckets_;
  std::vector<int> retired_;  // the constructor's buckets, until the rebuild's backward ends
  std::vector<int> ready_;
  std::vector<bool> ready_seen_ = std::vector<bool>(g_.tensors.size(), false);
  bool backward_seen_ = false, rebuilt_ = false;
};

}  // namespace

std::unique_ptr<ParallelModel> make_ddp(const Graph& g, const TrainConfig& cfg, StepMemory& mem,
                                        std::vector<std::string>& notes) {
  notes.push_back("DDP, one rank of " + std::to_string(cfg.world_size) +
                  ": flat gradient buckets beside the parameters (bucket_cap_mb=25, first bucket 1 MiB after "
                  "the rebuild)" +
                  (cfg.bucket_view ? "; .grad are views into them" : "; .grad are separate tensors") +
                  ". The buckets replaced by the rebuild in iteration 2 are counted until its backward ends (one "
                  "more set of gradient bytes; a long iteration may free them sooner). NCCL's own buffers are outside "
                  "the caching allocator and not counted");
  return std::make_unique<Ddp>(g, cfg, mem);
}

}  // namespace memest
