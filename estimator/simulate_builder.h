// The training-step simulator's builder, shared by its two files: simulate.cc (setup,
// forward, optimizer step) and simulate_backward.cc (gradients, recomputation,
// reductions of broadcast gradients). Internal to the simulator: build_program
// (simulate.h) is its interface.
#pragma once

#include "estimator/simulate.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>

#include "estimator/error.h"
#include "estimator/finetune.h"
#include "estimator/frames.h"
#include "estimator/inplace.h"
#include "estimator/ops/registry.h"
#include "estimator/optimizer.h"
#include "estimator/parallel.h"
#include "estimator/simulate_facts.h"

namespace memest::sim {

class Builder : public StepMemory {
 public:
  Builder(const Graph& g, const TrainConfig& cfg);

  Program run();

 private:
  // ---- allocation bookkeeping -------------------------------------------------
  // StepMemory: what a data-parallel wrapper (parallel.h) allocates and frees.
  int allocate(Expr bytes, Category c, int node) override { return alloc(std::move(bytes), c, node); }
  void hold(int b) override { ref(b); }
  void release(int b) override { unref(b); }

  int alloc(Expr bytes, Category c, int node) {
    int b = static_cast<int>(prog_.blocks.size());
    prog_.blocks.push_back({.bytes = std::move(bytes), .node = node, .category = c});
    refs_.push_back(1);
    prog_.events.push_back({Event::Alloc, phase_, iter_, b});
    return b;
  }
  // An algorithm's workspace (cuDNN): under a memory cap a refused workspace makes
  // cuDNN try the next algorithm, which needs less, rather than fail the step.
  int workspace(Expr bytes, int node) {
    const int b = alloc(std::move(bytes), Category::Workspace, node);
    prog_.blocks[b].may_fail = true;
    return b;
  }
  // An op's scratch (OpInfo's workspace hooks): a cuDNN workspace, or a temporary where
  // the op says so; -1 when it takes none. A size-dependent choice of algorithm
  // (Workspace::switch_above) goes to the block's bound, made when the program is evaluated.
  int scratch(Workspace ws, bool temporary, int node) {
    if (ws.bytes.is_zero()) return -1;
    const int b = temporary ? alloc(std::move(ws.bytes), Category::Temporaries, node) : workspace(std::move(ws.bytes), node);
    if (ws.switch_above > 0) {
      prog_.blocks[b].bounded = true;
      SizeBound sb;
      sb.switch_above = ws.switch_above;
      sb.above = std::move(ws.above);
      prog_.bounds.push_back({b, std::move(sb)});
    }
    return b;
  }
  void unref(int b) {
    if (b < 0) return;
    if (--refs_[b] == 0) prog_.events.push_back({Event::Free, phase_, iter_, b});
  }
  Expr bytes_of(int t, DType d) const { return *numel_[t] * Expr(dtype_size(d)); }
  bool on_gpu(int t) const { return facts_[t].on_gpu; }
  bool channels_last(int t) const { return t >= 0 && is_channels_last(layout_[t]); }
  std::span<const int> inputs(int k) const { return span(io_at_[2 * k], io_at_[2 * k + 1]); }
  std::span<const int> outputs(int k) const { return span(io_at_[2 * k + 1], io_at_[2 * k + 2]); }
  std::span<const int> span(uint32_t from, uint32_t to) const { return {io_.data() + from, io_.data() + to}; }
  /// Node k's inputs as its op saw them (forward fills them, backward reads them).
  std::span<EffectiveInput> effective(int k) { return {eff_.data() + io_at_[2 * k], eff_.data() + io_at_[2 * k + 1]}; }
  std::span<const EffectiveInput> effective(int k) const {
    return {eff_.data() + io_at_[2 * k], eff_.data() + io_at_[2 * k + 1]};
  }
  void ref(int b, int times = 1) {
    if (b >= 0) refs_[b] += times;
  }

  void index_graph();
  void mark_gradient_paths();
  void plan_checkpoints();
  void setup();

  void size_targets_like_outputs();

  DType widest_float(std::span<const EffectiveInput> in, DType fallback) const;

  void forward();

  /// One forward call of a node: what its stages (forward_node) share.
  struct ForwardCall {
    int k;
    const Node& n;
    const OpInfo* info;  ///< may turn into a variant (the dispatcher's backend)
    std::span<const int> ins, outs;
    std::span<EffectiveInput> eff;  ///< the inputs as the op sees them (cast_inputs)
    Autocast policy;
    int seg;
    bool recompute, keep_saved;
    bool rg = false;                ///< autograd records the node
    bool copied = false;            ///< a strided input was copied contiguous
    std::vector<int> temps = {};    ///< cast and contiguous copies owned by the call
    std::vector<int> early = {};    ///< saved extras made before the outputs
    std::vector<int> out_blocks = {};
  };

  Autocast policy_of(int k) const;
  bool computed_wider(int k, DType d) const;
  void forward_node(int k, bool recompute = false);
  void cast_inputs(ForwardCall& c);
  bool records_grad(const ForwardCall& c) const;
  void copy_strided_inputs(ForwardCall& c);
  bool strided_1d_conv_input(int k) const;
  enum class BmmOperand { Ready, Cloned, Copied };
  BmmOperand bmm_operand(const ForwardCall& c, int tensor) const;
  std::optional<std::pair<BmmBatch, Expr>> bmm_expansion(int k, int tensor) const;
  std::optional<Expr> bmm_expanded_numel(const ForwardCall& c, int tensor) const;
  std::optional<bool> einsum_copies(const ForwardCall& c, size_t i) const;
  DType output_dtype(const ForwardCall& c, int o) const;
  void allocate_outputs(ForwardCall& c);
  void hold_graph_output(ForwardCall& c, size_t j);
  void cublas_workspaces(const ForwardCall& c);
  int forward_scratch(const ForwardCall& c, bool temporary);
  bool saves_input(const ForwardCall& c, size_t i) const;
  void save_for_backward(ForwardCall& c);
  void end_forward_uses(ForwardCall& c);

  void accumulate(int t, int g, bool narrow = false);
  void hand_on_gradients();
  bool narrows_outermost(const Node& n, int out0) const;

  void backward();

  void recompute_segment(int seg);

  void release_saved(int k);

  int reduction_buffer(int k, const Node& n, const OpInfo& info, const EffectiveInput& in);
  int reduction_buffer(int k, int t, const std::optional<std::vector<int64_t>>& axes, DType dtype);
  int reduction_buffer(int k, int t, const std::optional<std::vector<int64_t>>& axes, DType dtype,
                       const std::vector<int8_t>& layout);

  std::vector<int8_t> grad_layout(int t, int depth = 0) const;
  std::vector<int8_t> permuted_grad_layout(int t, const Node& v, int depth) const;

  void reduction_scratch(int k, const Node& n, const std::vector<std::pair<int, int>>& summed);

  void backward_node(int k);
  void first_cublas_call(int k);
  std::vector<std::pair<int, int>> input_gradients(int k);
  void backward_workspace(int k);
  void bias_gradient_reduction(int k);
  void grad_format_copy(int k);
  std::vector<int> conv_1d_backward_copies(int k);

  void step();
  /// param_grads_ in model.parameters() order (torch_parameter_order): the order in which
  /// the optimizer makes its state and zero_grad lets the gradients go.
  std::vector<std::pair<int, int>> grads_in_parameter_order() const;

  Expr state_bytes(int p) const;

  const Graph& g_;
  const TrainConfig& cfg_;
  std::unique_ptr<ParallelModel> par_;  // --ddp / --fsdp (parallel.h), or none
  std::vector<TensorFacts> facts_;
  std::vector<bool> dead_, loss_node_;
  std::vector<bool> on_grad_path_;  // per node: backward reaches it (mark_gradient_paths)
  // Each node's input tensors then its output tensors, packed like facts_: node k's
  // inputs are io_[io_at_[2k], io_at_[2k+1]), its outputs run to io_at_[2k+2].
  std::vector<int> io_;
  std::vector<uint32_t> io_at_;
  std::vector<const OpInfo*> info_;
  int seed_ = -1;  ///< the loss: backward starts from its gradient
  Program prog_;
  Phase phase_ = Phase::Setup;
  uint8_t iter_ = 0;
  DType low_;
  std::vector<int> refs_;
  std::vector<int> block_of_;
  std::vector<DType> run_dtype_;
  std::vector<bool> requires_grad_, node_rg_;
  std::vector<bool> gradless_;   // per tensor: a parameter no gradient reaches (Graph::gradless_parameters)
  std::vector<bool> trainable_;  // per tensor: a parameter that trains (--train / --freeze)
  std::vector<bool> lora_a_;     // per node: in a peft LoRA adapter's lora_A (its input is cast to float)
  // Per tensor: for each logical dim, the storage dim it lives in; empty = contiguous.
  std::vector<std::vector<int8_t>> layout_;
  std::vector<int> grad_, cache_;
  std::vector<int> spare_cache_;  // a recompute's autocast cache (checkpoint)
  std::vector<int> cached_;       // tensors cached since the last recompute began
  std::vector<ExprRef> numel_;  // interned: a few distinct sizes, 8 bytes a tensor, not 24
  std::vector<EffectiveInput> eff_;  // per node input, at the inputs' offsets in io_ (see effective)
  std::vector<int> params_, follows_;
  struct CastBack {
    int tensor, grad, node;
  };
  std::vector<CastBack> cast_backs_;  // gradients of autocast copies, cast back after their node
  std::vector<Segment> segments_;
  std::vector<int> segment_of_;
  std::vector<std::vector<int>> seg_inputs_, seg_held_;
  std::vector<bool> recomputed_ = std::vector<bool>(g_.nodes.size(), false);
  std::vector<std::pair<int, int>> param_grads_;  // (parameter, .grad block) in first-gradient order
  std::vector<int> grad_slot_;                     // per tensor: its index in param_grads_, or -1
  struct Made {
    int tensor, grad;
    bool narrow;  ///< a narrowed view of the output's gradient (OpInfo::narrows_grads)
  };
  std::vector<Made> made_;                         // the gradients of the node backward runs
  std::vector<char> grad_narrow_ = std::vector<char>(g_.tensors.size(), 0);  // grad_[t] is a narrowed view
  std::vector<int> params_in_order_;               // model.parameters() order (torch_parameter_order)
  std::vector<int> prev_out_, cur_out_, prev_loss_, cur_loss_;
  std::vector<int> frame_release_;             // per tensor: frames.h
  // Per node, a few blocks each, held inline (id_list.h): a vector apiece was a heap block
  // for most of a million nodes.
  std::vector<IdList> frame_held_;   // blocks its frames let go after it
  std::vector<IdList> saved_now_ = std::vector<IdList>(g_.nodes.size());
  bool cublas_fwd_ = false, cublas_bwd_ = false, cublaslt_ = false, scaler_ = false;
};

}  // namespace memest::sim
