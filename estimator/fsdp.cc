// FSDP2 (fully_shard on every repeated block and on the root), one rank: sharded
// parameters, unsharding around each block's forward and backward with the default
// backward prefetch, and the reduce-scatter of each block's gradients into sharded
// gradients. Mechanisms from torch/distributed/fsdp/_fully_shard/: _fsdp_param.py
// (_init_sharded_param: padded shards), _fsdp_param_group.py (unshard,
// wait_for_unshard, reshard, pre_backward/_backward_prefetch, post_backward),
// _fsdp_collectives.py (foreach_all_gather, foreach_reduce) and _fsdp_state.py (the
// root: not resharded after forward, the final callback after backward).
#include <numeric>

#include "estimator/parallel_impl.h"

namespace memest {

namespace {

class Fsdp : public ParallelModel {
 public:
  Fsdp(const Graph& g, const TrainConfig& cfg, StepMemory& mem)
      : g_(g), n_(cfg.world_size), mem_(mem), groups_(fsdp_groups(g)) {
    root_ = static_cast<int>(groups_.size()) - 1;
    const size_t nt = g.tensors.size(), nn = g.nodes.size();
    shard_.assign(nt, 0);
    unsharded_.assign(nt, 0);
    for (const FsdpGroup& grp : groups_) {
      for (int p : grp.params) {
        const std::vector<int64_t> shape = constant_shape(g.tensors[p]);
        const int64_t size = dtype_size(g.tensors[p].dtype);
        shard_[p] = checked_mul(fsdp_shard_numel(shape, n_), size);
        unsharded_[p] = checked_mul(fsdp_unsharded_numel(shape, n_), size);
      }
    }
    starts_at_.resize(nn);
    ends_at_.resize(nn);
    group_at_.assign(nn, -1);
    for (int i = 0; i < root_; ++i) {
      starts_at_[groups_[i].first].push_back(i);
      ends_at_[groups_[i].last].push_back(i);
      for (int k = groups_[i].first; k <= groups_[i].last; ++k) {
        if (group_at_[k] < 0) group_at_[k] = i;
      }
    }
    loss_.assign(nn, false);
    for (size_t k = 0; k < nn; ++k) {
      const Node& n = g.nodes[k];
      if (n.dead) continue;
      if (first_node_ < 0) first_node_ = static_cast<int>(k);
      loss_[k] = n.domain == "memest" && n.module == "loss";
      if (loss_[k] && first_loss_ < 0) first_loss_ = static_cast<int>(k);
    }
    live_.resize(groups_.size());
    pre_done_.assign(groups_.size(), false);
    unsharded_grad_.assign(nt, -1);
    sharded_grad_.assign(nt, -1);
    next_post_ = root_ - 1;
  }

  void wrap(const std::vector<int>& /*params*/, std::vector<int>& block_of) override {
    // fully_shard(block) for each block, then fully_shard(model): each parameter gets a
    // new padded shard (new_zeros + copy) while the module still holds the original,
    // which goes when fully_shard returns.
    for (const FsdpGroup& grp : groups_) {
      std::vector<int> old;
      for (int p : grp.params) {
        old.push_back(block_of[p]);
        block_of[p] = mem_.allocate(Expr(shard_[p]), Category::Parameters, -1);
      }
      for (int b : old) mem_.release(b);
    }
  }

  void zero_grad() override {
    for (int& b : sharded_grad_) {
      if (b >= 0) mem_.release(b);
      b = -1;
    }
  }

  void before_forward(int node) override {
    if (node == first_node_) unshard(root_, true);  // the root's pre_forward
    if (node == first_loss_) root_post_forward();
    for (int grp : starts_at_[node]) unshard(grp, true);
  }

  void after_forward(int node) override {
    // post_forward: reshard (reshard_after_forward=True for every block) and record the
    // post-forward order that backward prefetching follows in reverse.
    for (int grp : ends_at_[node]) {
      reshard(grp);
      order_.push_back(grp);
    }
  }

  void backward_begin() override {
    if (!root_recorded_) root_post_forward();
    root_pre_pending_ = true;
  }

  void visit_backward(int node) override {
    // RegisterPostBackwardFunction on a block's inputs runs once backward has passed
    // the block's first node: when it reaches a node before the block.
    while (next_post_ >= 0 && node < groups_[next_post_].first) post_backward(next_post_--);
  }

  void before_backward(int node) override {
    // The root's pre-backward hook sits on the model's output: after the loss's backward.
    if (root_pre_pending_ && !loss_[node]) {
      root_pre_pending_ = false;
      pre_backward(root_);
    }
    const int grp = group_at_[node];
    if (grp >= 0 && !pre_done_[grp]) pre_backward(grp);
  }

  void backward_end() override {
    // _root_post_backward_final_callback: post_backward of every group not done yet
    // (the root's inputs need no gradient, so its hook never fires), then the last
    // reduce-scatter input goes.
    while (next_post_ >= 0) post_backward(next_post_--);
    post_backward(root_);
    mem_.release(rs_input_);
    rs_input_ = -1;
    order_.clear();
    root_recorded_ = false;
    pre_done_.assign(groups_.size(), false);
    next_post_ = root_ - 1;
  }

  bool takes_grad(int tensor, int g) override {
    // AccumulateGrad on the unsharded parameter: the first gradient becomes its .grad,
    // later ones (tied uses) are added in place.
    if (unsharded_grad_[tensor] < 0) {
      unsharded_grad_[tensor] = g;
    } else {
      mem_.release(g);
    }
    return true;
  }

  Expr state_bytes(int tensor, const Expr& /*full*/) const override {
    // The optimizer holds the sharded DTensors: zeros_like of rank 0's local shard.
    return Expr(shard_[tensor]);
  }

 private:
  void unshard(int grp, bool forward) {
    std::vector<int>& live = live_[grp];
    if (!live.empty() || groups_[grp].params.empty()) return;  // unsharded already (prefetched)
    int output = -1;
    if (n_ > 1) {
      // foreach_all_gather: one flat output of world_size * the group's padded shards
      // (the input is a view into it), then a copy-out into each parameter's padded
      // unsharded tensor. (At world size 1, unshard copies each shard into its own
      // all_gather_outputs tensor directly: no flat buffer.)
      int64_t total = 0;
      for (int p : groups_[grp].params) total = checked_add(total, shard_[p]);
      output = mem_.allocate(Expr(checked_mul(total, n_)), Category::Temporaries, -1);
    }
    // wait_for_unshard in forward frees the previous group's all-gather output, kept
    // until now so that its copy-out could overlap this all-gather.
    if (forward && held_output_ >= 0) {
      mem_.release(held_output_);
      held_output_ = -1;
    }
    for (int p : groups_[grp].params) live.push_back(mem_.allocate(Expr(unsharded_[p]), Category::Parameters, -1));
    if (output >= 0) {
      if (forward) {
        held_output_ = output;
      } else {
        mem_.release(output);
      }
    }
  }

  void reshard(int grp) {
    // free_storage of the unsharded parameters: tensors that autograd saved still refer
    // to them, but their storage is resized to zero and allocated again for backward.
    for (int b : live_[grp]) mem_.release(b);
    live_[grp].clear();
  }

  void root_post_forward() {
    // The root is not resharded after forward; its post-forward frees the last
    // all-gather output and records it last in the post-forward order.
    root_recorded_ = true;
    if (held_output_ >= 0) mem_.release(held_output_);
    held_output_ = -1;
    order_.push_back(root_);
  }

  void pre_backward(int grp) {
    pre_done_[grp] = true;
    unshard(grp, false);
    // _backward_prefetch: unshard the group that ran just before this one in forward.
    int pos = -1;
    for (int i = static_cast<int>(order_.size()) - 1; i >= 0; --i) {
      if (order_[i] == grp) {
        pos = i;
        break;
      }
    }
    if (pos > 0) unshard(order_[pos - 1], false);
  }

  void post_backward(int grp) {
    std::vector<int> with_grad;
    for (int p : groups_[grp].params) {
      if (unsharded_grad_[p] >= 0) with_grad.push_back(p);
    }
    reshard(grp);
    if (with_grad.empty()) return;
    // The previous reduce-scatter's input is held until this one starts.
    mem_.release(rs_input_);
    int64_t in = 0, out = 0;
    for (int p : with_grad) {
      in = checked_add(in, unsharded_[p]);
      out = checked_add(out, shard_[p]);
    }
    // foreach_reduce: copy the gradients into one padded flat input, free them, then
    // the reduce-scatter output, which the sharded gradients view (or are added from).
    rs_input_ = mem_.allocate(Expr(in), Category::Temporaries, -1);
    for (int p : with_grad) {
      mem_.release(unsharded_grad_[p]);
      unsharded_grad_[p] = -1;
    }
    const int output = mem_.allocate(Expr(out), Category::Gradients, -1);
    for (int p : with_grad) {
      if (sharded_grad_[p] >= 0) continue;  // accumulated in place (--grad-accum)
      mem_.hold(output);
      sharded_grad_[p] = output;
    }
    mem_.release(output);
  }

  const Graph& g_;
  const int n_;
  StepMemory& mem_;
  std::vector<FsdpGroup> groups_;
  int root_ = 0;
  std::vector<int64_t> shard_, unsharded_;  // bytes per parameter tensor
  std::vector<std::vector<int>> starts_at_, ends_at_;
  std::vector<int> group_at_;
  std::vector<bool> loss_;
  int first_node_ = -1, first_loss_ = -1;
  std::vector<std::vector<int>> live_;  // per group: its unsharded parameters' blocks
  std::vector<bool> pre_done_;
  std::vector<int> order_;  // post-forward order of groups
  bool root_recorded_ = false, root_pre_pending_ = false;
  int next_post_ = -1;
  int held_output_ = -1, rs_input_ = -1;
  std::vector<int> unsharded_grad_, sharded_grad_;
};

}  // namespace

std::unique_ptr<ParallelModel> make_fsdp(const Graph& g, const TrainConfig& cfg, StepMemory& mem,
                                         std::vector<std::string>& notes) {
  const size_t blocks = fsdp_groups(g).size() - 1;
  notes.push_back("FSDP2, one rank of " + std::to_string(cfg.world_size) + ": fully_shard on " +
                  std::to_string(blocks) +
                  " repeated blocks and the root; padded shards, one block unsharded in forward, two in "
                  "backward (default prefetch). Separate CUDA streams for all-gather and reduce-scatter are "
                  "not modelled in reserved memory; NCCL's own buffers are not counted");
  return std::make_unique<Fsdp>(g, cfg, mem);
}

}  // namespace memest
