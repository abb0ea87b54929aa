// The training-step simulator. Each mechanism it models is named where it acts:
// autocast casts and its weight cache, what autograd saves (from the op tables),
// gradient flow and accumulation, zero_grad(set_to_none), the foreach optimizers,
// GradScaler, the cuBLAS workspace, and the previous iteration's out and loss.
#include "estimator/simulate_builder.h"

#include "estimator/gradient_reach.h"

namespace memest::sim {
namespace {

// The parameters in model.parameters() order, the order their modules registered them.
// The graph does not record registration, so the order follows first use: the forward's
// first node that reads the parameter, and its input slot there (Conv before its
// BatchNorm, weight before bias). Modules registered in another order
// than they run (BERT's token-type embedding, used before the position one) come out
// swapped, a difference of order among a few parameters.
std::vector<int> torch_parameter_order(const Graph& g) {
  std::vector<std::pair<int64_t, int>> first_use;  // (node * 2^16 + slot, tensor)
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const Tensor& ten = g.tensors[t];
    if (ten.kind != TensorKind::Parameter) continue;
    int64_t key = INT64_MAX;
    for (int c : ten.consumers) {
      const auto& ins = g.nodes[c].inputs;
      const auto slot = std::find(ins.begin(), ins.end(), static_cast<int>(t)) - ins.begin();
      key = std::min(key, (static_cast<int64_t>(c) << 16) + std::min<int64_t>(slot, 0xffff));
    }
    first_use.push_back({key, static_cast<int>(t)});
  }
  std::stable_sort(first_use.begin(), first_use.end());
  std::vector<int> order;
  order.reserve(first_use.size());
  for (const auto& f : first_use) order.push_back(f.second);
  return order;
}

}  // namespace

Builder::Builder(const Graph& g, const TrainConfig& cfg) : g_(g), cfg_(cfg) {
  index_graph();
  const size_t nt = g.tensors.size(), nn = g.nodes.size();
  // About 7 blocks and 12 events per node over three iterations; growing there
  // copies them several times over.
  prog_.blocks.reserve(nn * 8);
  prog_.events.reserve(nn * 14);
  refs_.reserve(nn * 8);
  block_of_.assign(nt, -1);
  run_dtype_.assign(nt, DType::Undefined);
  requires_grad_.assign(nt, false);
  layout_.assign(nt, {});
  grad_.assign(nt, -1);
  grad_slot_.assign(nt, -1);
  cache_.assign(nt, -1);
  numel_.resize(nt);
  for (size_t t = 0; t < nt; ++t) {
    const Tensor& ten = g.tensors[t];
    run_dtype_[t] = ten.dtype;
    numel_[t] = ten.shape ? product(*ten.shape) : Expr(0);
  }
  node_rg_.assign(nn, false);
  trainable_ = trainable_parameters(g, cfg.train, cfg.freeze);
  gradless_.assign(g.tensors.size(), false);
  for (int t : g.gradless_parameters) gradless_[static_cast<size_t>(t)] = true;
  lora_a_.assign(nn, false);
  for (size_t k = 0; k < nn; ++k) {
    const std::string& m = g.nodes[k].module;
    lora_a_[k] = m.find(".lora_A.") != std::string::npos || m.ends_with(".lora_A");
  }
  frame_release_ = frame_release_nodes(g);
  frame_held_.resize(nn);
  prog_.saved_by_node.resize(nn);
  low_ = cfg.amp == Amp::BF16 ? DType::BF16 : DType::F16;
  plan_checkpoints();
  par_ = make_parallel(g, cfg, *this, prog_.notes);
}

// Per-tensor facts, each node's op and its inputs and outputs packed in one array, which
// nodes are dead and which make the loss (seed_: the loss's output).
// torch.export writes `x.new_empty(shape).bernoulli_(keep)` (timm's DropPath, stochastic
// depth) as RandomUniformLike -> Less -> Cast -> Div(keep): a Cast to the dtype x had when
// it was exported. At run time new_empty takes x's dtype, bf16 under autocast, so x * mask
// stays bf16 (traces32 st_nextvit_small: 1.8 MB blocks where memest promoted the scaled
// branch and the residual sums after it to fp32, +9%). Whether tensor t is such a mask: a
// Cast of a comparison of random numbers, perhaps scaled by constants.
bool random_mask(const Graph& g, int t) {
  static constexpr std::string_view kRandom[] = {"RandomUniformLike", "RandomUniform", "RandomNormalLike",
                                                 "RandomNormal"};
  static constexpr std::string_view kCompare[] = {"Less", "LessOrEqual", "Greater", "GreaterOrEqual"};
  auto made_by = [&](int u, auto& ops) {
    const int p = u >= 0 ? g.tensors[u].producer : -1;
    return p >= 0 && std::find(std::begin(ops), std::end(ops), g.nodes[p].op.str()) != std::end(ops) ? p : -1;
  };
  static constexpr std::string_view kScale[] = {"Div", "Mul"};
  for (int p; (p = made_by(t, kScale)) >= 0;) {
    const Node& n = g.nodes[p];
    const Tensor* c = n.inputs.size() == 2 && n.inputs[1] >= 0 ? &g.tensors[n.inputs[1]] : nullptr;
    if (!c || (c->kind != TensorKind::Constant && !c->fvalue && !c->value)) return false;  // the keep probability
    t = n.inputs[0];
  }
  const int cast = t >= 0 ? g.tensors[t].producer : -1;
  if (cast < 0 || g.nodes[cast].op != "Cast" || g.nodes[cast].inputs.empty()) return false;
  const int cmp = made_by(g.nodes[cast].inputs[0], kCompare);
  if (cmp < 0) return false;
  for (int in : g.nodes[cmp].inputs) {
    if (made_by(in, kRandom) >= 0) return true;
  }
  return false;
}

void Builder::index_graph() {
  const size_t nt = g_.tensors.size(), nn = g_.nodes.size();
  facts_.resize(nt);
  for (size_t t = 0; t < nt; ++t) {
    const Tensor& ten = g_.tensors[t];
    facts_[t] = {ten.producer, static_cast<int>(ten.consumers.size()), ten.kind,
                 !ten.value && dtype_size(ten.dtype) > 0, ten.graph_output, ten.dtype,
                 random_mask(g_, static_cast<int>(t))};
    if (ten.graph_output && ten.producer >= 0 && g_.nodes[ten.producer].module == "loss") seed_ = static_cast<int>(t);
  }
  params_in_order_ = torch_parameter_order(g_);
  dead_.resize(nn);
  loss_node_.resize(nn);
  info_.resize(nn);
  io_at_.resize(2 * nn + 1);
  size_t ids = 0;  // sized once: growing copied it over and over (14 MB at 1M nodes)
  for (const Node& n : g_.nodes) ids += n.inputs.size() + n.outputs.size();
  io_.reserve(ids);
  for (size_t k = 0; k < nn; ++k) {
    const Node& n = g_.nodes[k];
    info_[k] = n.info;
    io_at_[2 * k] = static_cast<uint32_t>(io_.size());
    io_.insert(io_.end(), n.inputs.begin(), n.inputs.end());
    io_at_[2 * k + 1] = static_cast<uint32_t>(io_.size());
    io_.insert(io_.end(), n.outputs.begin(), n.outputs.end());
  }
  io_at_[2 * nn] = static_cast<uint32_t>(io_.size());
  eff_.resize(io_.size());
  for (size_t k = 0; k < nn; ++k) {
    dead_[k] = g_.nodes[k].dead;
    loss_node_[k] = g_.nodes[k].domain == "memest" && g_.nodes[k].module == "loss";
  }
  mark_gradient_paths();
}

// Which nodes backward reaches: those with an output whose gradient the loss needs, or
// that is a graph output the caller holds, through every input that is not integral or
// boolean (autograd's rule; OpInfo::grad_of is memest's model of which gradients it
// makes, and a fused attention's learned bias has none there but is trained). Autograd
// keeps nothing for the rest: DeepSeek V3.2's and GLM-MoE-DSA's sparse-attention
// indexer runs under `@torch.no_grad()` (its scores only pick top-k indices), and a
// recorded graph with no way to the loss is freed with its last output (sample17
// sh_glm_moe_dsa_lm: its saved operands held through backward, +11.6%). Without a loss
// every node counts as reached.
void Builder::mark_gradient_paths() {
  const size_t nn = g_.nodes.size();
  on_grad_path_.assign(nn, true);
  if (seed_ < 0) return;
  const std::vector<bool> needed = gradient_reach(g_, [&](const Node& n, size_t i) {
    const DType d = g_.tensors[n.inputs[i]].dtype;
    return is_floating(d) || d == DType::Undefined || d == DType::C64 || d == DType::C128;
  });
  for (size_t k = 0; k < nn; ++k) {
    bool reached = false;
    for (int o : g_.nodes[k].outputs) reached |= o >= 0 && needed[static_cast<size_t>(o)];
    on_grad_path_[k] = reached;
  }
}

// --checkpoint's segments (segments.cc), each node's segment, and what each segment's
// checkpoint() keeps: the activations that flow into it from outside.
void Builder::plan_checkpoints() {
  const size_t nt = g_.tensors.size();
  segment_of_.assign(g_.nodes.size(), -1);
  segments_ = checkpoint_segments(g_, cfg_.checkpoint);
  for (size_t s = 0; s < segments_.size(); ++s) {
    for (int k = segments_[s].first; k <= segments_[s].last; ++k) segment_of_[k] = static_cast<int>(s);
  }
  seg_inputs_.resize(segments_.size());
  seg_held_.resize(segments_.size());
  if (!segments_.empty()) spare_cache_.assign(nt, -1);
  std::vector<int> seen(segments_.empty() ? 0 : nt, -1);  // the last segment that saw each tensor
  for (size_t s = 0; s < segments_.size(); ++s) {
    for (int k = segments_[s].first; k <= segments_[s].last; ++k) {
      for (int t : g_.nodes[k].inputs) {
        if (t < 0 || seen[t] == static_cast<int>(s)) continue;
        seen[t] = static_cast<int>(s);
        const int p = g_.tensors[t].producer;
        if (p >= 0 && segment_of_[p] != static_cast<int>(s)) seg_inputs_[s].push_back(t);
      }
    }
  }
}

Program Builder::run() {
  setup();
  for (int it = 0; it < cfg_.iterations; ++it) {
    iter_ = static_cast<uint8_t>(it);
    phase_ = Phase::ZeroGrad;
    if (par_) par_->zero_grad();
    for (auto& [param, block] : grads_in_parameter_order()) {
      unref(block);
      grad_slot_[param] = -1;
    }
    param_grads_.clear();
    // --grad-accum K: the .grad tensors persist across the K micro-steps, and
    // AccumulateGrad adds the 2nd..Kth gradients into them (accumulate()).
    for (int micro = 0; micro < std::max(1, cfg_.grad_accum); ++micro) {
      phase_ = Phase::Forward;
      forward();
      if (it == 0 && micro == 0) size_targets_like_outputs();
      phase_ = Phase::Backward;
      backward();
    }
    phase_ = Phase::Optimizer;
    step();
  }
  return std::move(prog_);
}

// ---- setup: model.cuda(), optimizer, x and y ----------------------------------
void Builder::setup() {
  phase_ = Phase::Setup;
  for (size_t t = 0; t < g_.tensors.size(); ++t) {
    const Tensor& ten = g_.tensors[t];
    if (ten.kind == TensorKind::Parameter && !ten.consumers.empty()) {
      block_of_[t] = alloc(bytes_of(t, ten.dtype), Category::Parameters, -1);
      requires_grad_[t] = trainable_[t];
      params_.push_back(static_cast<int>(t));
    } else if (ten.kind == TensorKind::Buffer && !ten.consumers.empty()) {
      block_of_[t] = alloc(bytes_of(t, ten.dtype), Category::Buffers, -1);
    } else if (ten.kind == TensorKind::Constant && on_gpu(t) && !ten.consumers.empty() && !ten.fvalue) {
      block_of_[t] = alloc(bytes_of(t, ten.dtype), Category::Buffers, -1);
    }
  }
  if (par_) par_->wrap(params_, block_of_);  // DDP(model) / fully_shard: before the inputs
  for (size_t t = 0; t < g_.tensors.size(); ++t) {
    if (g_.tensors[t].kind != TensorKind::Input) continue;
    block_of_[t] = alloc(bytes_of(t, g_.tensors[t].dtype), Category::Inputs, -1);
    if (g_.tensors[t].dtype_follows >= 0) follows_.push_back(static_cast<int>(t));
  }
}

// A target made like the output (mse) takes the output's run-time dtype, known only
// once the forward has run: its setup allocation is resized in place.
void Builder::size_targets_like_outputs() {
  for (int t : follows_) {
    const DType d = run_dtype_[g_.tensors[t].dtype_follows];
    if (d == DType::Undefined || d == run_dtype_[t]) continue;
    run_dtype_[t] = d;
    prog_.blocks[block_of_[t]].bytes = bytes_of(t, d);
  }
}

// ---- forward -----------------------------------------------------------------
// Type promotion (c10::result_type): among floating inputs, a zero-dim tensor (the
// exporters' constant for a Python scalar: 0.5 * x) gives way to any tensor with dims,
// so 0.5 * half stays half. GPU traces of gpt2_hf's tanh GELU under fp16 autocast:
// 0.5 * x is kept in half beside pow's fp32 chain.
DType Builder::widest_float(std::span<const EffectiveInput> in, DType fallback) const {
  DType best = DType::Undefined, best_scalar = DType::Undefined;
  for (const auto& e : in) {
    if (e.tensor < 0 || !is_floating(e.dtype) || facts_[e.tensor].random_mask) continue;
    const auto& shape = g_.tensors[e.tensor].shape;
    DType& slot = shape && shape->empty() ? best_scalar : best;
    if (slot == DType::Undefined || dtype_size(e.dtype) > dtype_size(slot)) slot = e.dtype;
  }
  if (best == DType::Undefined) best = best_scalar;
  return best == DType::Undefined ? fallback : best;
}

void Builder::forward() {
  bool released_prev_out = false;
  if (par_) par_->forward_begin();
  for (size_t k = 0; k < g_.nodes.size(); ++k) {
    if (dead_[k]) continue;
    if (par_) par_->before_forward(static_cast<int>(k));
    if (!released_prev_out && loss_node_[k]) {
      // `out = model(x)` rebinds: the previous iteration's output goes now.
      for (int b : prev_out_) unref(b);
      prev_out_.clear();
      released_prev_out = true;
    }
    const int seg = segment_of_[k];
    if (seg >= 0 && static_cast<int>(k) == segments_[seg].first) {
      for (int t : seg_inputs_[seg]) {
        ref(block_of_[t]);
        seg_held_[seg].push_back(block_of_[t]);
      }
    }
    forward_node(static_cast<int>(k));
    for (int b : frame_held_[k]) unref(b);
    frame_held_[k].clear();
    if (par_) par_->after_forward(static_cast<int>(k));
  }
  if (!released_prev_out) {
    for (int b : prev_out_) unref(b);
    prev_out_.clear();
  }
  if (cfg_.grad_accum > 1 && !cur_loss_.empty()) {
    // `loss = loss_fn(out, y) / K`: a new scalar, and the undivided loss goes (DivBackward0
    // by a Python number saves neither).
    const int divided = alloc(Expr(4), Category::Activations, -1);
    unref(cur_loss_[0]);
    cur_loss_[0] = divided;
  }
  // Leaving the autocast region clears its cache; saved references keep what backward needs.
  for (int& b : cache_) {
    if (b >= 0) unref(b);
    b = -1;
  }
  cached_.clear();
  for (int b : prev_loss_) unref(b);
  prev_loss_.clear();
  prev_out_.swap(cur_out_);
  prev_loss_.swap(cur_loss_);
}

// How autocast treats node k. A module that disables autocast (ops/modules.cc) runs its
// ops in their own dtypes. softmax and log_softmax read half and write float in one kernel
// only for fp16 (Autocast::WidenHalf): SoftMax.cpp calls _softmax(x, dim, half_to_float)
// when the input is Half, and converts any other input first (toType). Under bf16 they run
// as autocast's fp32 list does: a float copy of the input, freed after the call, the
// gradient in fp32 and cast back by ToCopyBackward0 (op-probe softmax-bf16-1024: the 256
// MiB copy in forward; in backward the fp32 gradient and product, then the bf16 gradient;
// BoTNet's bf16 attention was 4.8% under).
//
// torch.export writes a region under autocast(enabled=False) and one under no_grad alike,
// as a higher-order op's body (wrap_with_autocast, wrap_with_set_grad_enabled), and the
// ONNX file keeps only that the op was in a body. A body no gradient reaches is a no_grad
// region, where autocast still lowers: seqtrace35b sh_deepseek_v32_lm bf16, the indexer's
// `@torch.no_grad()` wq_b linear casts its 1536 x 8192 weight to bf16 (25.2 MB, cached)
// and writes a bf16 output.
Autocast Builder::policy_of(int k) const {
  const Node& n = g_.nodes[k];
  if (n.autocast_off && !(n.body_autocast_off && !on_grad_path_[static_cast<size_t>(k)])) return Autocast::None;
  const Autocast a = info_[k] ? info_[k]->autocast : Autocast::Keep;
  if (a != Autocast::WidenHalf) return a;
  return low_ == DType::BF16 ? Autocast::Fp32 : Autocast::Widen;
}

// `recompute`: checkpoint's second forward of a segment, during backward.
// One forward call of node k, in stages: autocast's input casts, the kernel variant,
// whether autograd records it, contiguous copies, the outputs (dtype, layout, views and
// in-place ops), cuBLAS's workspaces, what autograd saves, the call's scratch, and the
// end of the inputs' forward uses.
void Builder::forward_node(int k, bool recompute) {
  const Node& n = g_.nodes[k];
  const int seg = segment_of_[k];
  ForwardCall c{k, n, info_[k], inputs(k), outputs(k), effective(k), policy_of(k), seg, recompute,
                // Inside checkpoint's first forward, saved tensors are dropped (recomputed later).
                seg < 0 || recompute};
  cast_inputs(c);
  // The backend the dispatcher picks (scaled_dot_product_attention's), by run dtype.
  if (c.info && c.info->variant && !c.eff.empty() && c.eff[0].tensor >= 0) {
    if (const OpInfo* v = c.info->variant(g_, n, Dispatch{c.eff[0].dtype, &layout_})) c.info = info_[k] = v;
  }
  c.rg = node_rg_[k] = records_grad(c);
  copy_strided_inputs(c);
  if (strided_1d_conv_input(k)) c.temps.push_back(alloc(bytes_of(c.eff[0].tensor, c.eff[0].dtype), Category::Temporaries, k));
  // Saved extras made before the outputs (OpInfo::extras_first), kept by save_for_backward.
  if (c.rg && c.info && c.keep_saved && c.info->saved_extra && c.info->extras_first) {
    for (const SavedExtra& x : c.info->saved_extra(g_, n)) {
      c.early.push_back(alloc(x.numel * Expr(dtype_size(x.dtype)), Category::Activations, k));
    }
  }
  allocate_outputs(c);
  cublas_workspaces(c);
  // cuDNN's RNN call takes its workspace before the reserve it keeps (GPU traces of
  // lstm_lm: workspace, reserve, workspace freed).
  int early_ws = -1;
  if (c.info && c.info->fwd_workspace && c.info->workspace_first && !c.eff.empty()) early_ws = forward_scratch(c, false);
  save_for_backward(c);
  if (!(c.rg && c.keep_saved) && c.info && c.info->extras_without_grad && c.info->saved_extra) {
    for (const SavedExtra& x : c.info->saved_extra(g_, n)) {
      c.temps.push_back(alloc(x.numel * Expr(dtype_size(x.dtype)), Category::Temporaries, k));
    }
  }
  if (early_ws >= 0) unref(early_ws);
  if (c.info && c.info->fwd_workspace && !c.info->workspace_first && !c.eff.empty()) {
    unref(forward_scratch(c, c.info->scratch_is_temporary));
  }
  if (c.info && c.info->reduced_axes && !c.eff.empty()) unref(reduction_buffer(k, n, *c.info, c.eff[0]));
  end_forward_uses(c);
}

// Inputs as the op sees them: autocast may cast them first.
void Builder::cast_inputs(ForwardCall& c) {
  const bool amp = cfg_.amp != Amp::None;
  std::fill(c.eff.begin(), c.eff.end(), EffectiveInput{});
  for (size_t i = 0; i < c.ins.size(); ++i) {
    int t = c.ins[i];
    if (t < 0) continue;
    EffectiveInput e{t, block_of_[t], run_dtype_[t], false};
    if (amp && i == 0 && lora_a_[c.k] && e.dtype == low_ && on_gpu(t)) {
      // peft's LoRA Linear casts the adapter's input to the adapter weight's dtype
      // (`x = self._cast_input_dtype(x, lora_A.weight.dtype)`, float32), a no-op in the
      // exported graph; under autocast a half input becomes a float copy, which lora_A
      // then casts down again: that second copy is what its backward keeps. GPU trace of
      // a 1.1B Llama's LoRA on o_proj (bf16): 8 MiB per layer beside the attention output.
      c.temps.push_back(alloc(bytes_of(t, DType::F32), Category::Activations, c.k));
      e.dtype = DType::F32;
      e.cast = true;
    }
    if (amp && is_floating(e.dtype) && on_gpu(t)) {
      DType want = DType::Undefined;
      if (c.policy == Autocast::Lower && e.dtype != low_) want = low_;
      if (c.policy == Autocast::Fp32 && e.dtype != DType::F32) want = DType::F32;
      // x.float() inside a disabled autocast block (Node::float_inputs): a copy backward keeps.
      if (i < 16 && (c.n.float_inputs >> i & 1u) && e.dtype != DType::F32) want = DType::F32;
      if (want != DType::Undefined) {
        e.dtype = want;
        e.cast = true;
        if ((facts_[t].kind == TensorKind::Parameter && requires_grad_[t]) || gradless_[t]) {
          // Autocast caches the low-precision copy of a leaf weight until the region ends;
          // only of one that requires grad (autocast_mode.cpp, can_try_cache): a frozen
          // weight is cast anew at each use, the copy kept only if backward saves it. A
          // parameter read only under no_grad still requires grad: its copy is cached
          // (seqtrace35b, the DeepSeek V3.2 indexer's 25.2 MB wq_b, freed after forward).
          if (cache_[t] < 0) {
            cache_[t] = alloc(bytes_of(t, want), Category::AutocastCache, c.k);
            cached_.push_back(t);
          }
          e.block = cache_[t];
        } else {
          e.block = alloc(bytes_of(t, want), Category::Activations, c.k);
          c.temps.push_back(e.block);
        }
      }
    }
    c.eff[i] = e;
  }
}

// Does autograd record this node?
bool Builder::records_grad(const ForwardCall& c) const {
  bool rg = false;
  if (c.info && std::strlen(c.info->grads) > 0) {
    for (size_t i = 0; i < c.ins.size(); ++i) {
      if (c.ins[i] >= 0 && requires_grad_[c.ins[i]] && c.info->grad_of(i) != 'N') rg = true;
    }
  } else if (!c.info) {
    for (int t : c.ins) rg |= t >= 0 && requires_grad_[t];
  }
  return rg && on_grad_path_[static_cast<size_t>(c.k)];
}

// at::_convolution views a 1-D convolution as 2-D after `input = input.contiguous()`
// ("avoid accidentally going through NHWC for permuted 3d input", Convolution.cpp): a
// strided input (or one whose strides are not known) is copied before the output and
// the copy held for the call. seqtrace34 sh_data2vec-audio_aud: each feature-extractor
// conv after the first reads the GELU of a transposed LayerNorm output, and the GPU
// copies it (104.8 MB for conv_layers.1 at batch 16) before the conv's output.
bool Builder::strided_1d_conv_input(int k) const {
  const Node& n = g_.nodes[k];
  if (!info_[k] || !info_[k]->contiguous_1d || n.inputs.empty() || n.inputs[0] < 0) return false;
  const int x = n.inputs[0];
  return g_.tensors[x].shape && g_.tensors[x].shape->size() == 3 && !layout_[x].empty();
}

// Batched matmul reshapes its operands to [batch, rows, cols] (LinearAlgebra.cpp's
// _matmul_impl: expand, then reshape) and calls bmm. A strided operand whose batch dims
// merge is a view there (reshape's stride rule), and bmm hands cuBLAS a matrix that is
// row- or column-major as it is (q @ k.transpose(-2, -1): k's transpose, read
// transposed), so nothing is copied; one whose matrices are neither is cloned inside bmm
// (a temporary, not kept). One whose batch dims do not merge, or that is broadcast
// against the other's, is copied by the reshape, and BmmBackward keeps the copy.
// seqtrace30b st_levit_conv_128s: `v @ attn.transpose(-2, -1)` copied no N x N matrix.
void Builder::copy_strided_inputs(ForwardCall& c) {
  if (!c.info || !c.info->contiguous_inputs) return;
  for (size_t i = 0; i < c.eff.size(); ++i) {
    auto& e = c.eff[i];
    if (e.tensor < 0 || e.block < 0) continue;
    // einsum's own rule decides where it knows the equation, contiguous operands too
    // (seqtrace33 st_mvitv2_base: r_q of `byhwc,hkc->byhwk` permuted to [h, b, y, w, c]
    // and reshaped to [h, b * y * w, c], a copy of q's size a block that the bmm keeps).
    if (const auto copies = einsum_copies(c, i)) {
      if (*copies) {
        e.block = alloc(bytes_of(e.tensor, e.dtype), Category::Activations, c.k);
        c.temps.push_back(e.block);
        c.copied = true;
      }
      continue;
    }
    const Tensor& t = g_.tensors[e.tensor];
    if (!t.shape || t.shape->size() < 3) continue;
    if (const auto expanded = bmm_expanded_numel(c, e.tensor)) {
      e.block = alloc(*expanded * Expr(dtype_size(e.dtype)), Category::Activations, c.k);
      c.temps.push_back(e.block);
      c.copied = true;
      continue;
    }
    if (layout_[e.tensor].empty()) continue;
    switch (bmm_operand(c, e.tensor)) {
      case BmmOperand::Ready:
        continue;
      case BmmOperand::Cloned:
        c.temps.push_back(alloc(bytes_of(e.tensor, e.dtype), Category::Temporaries, c.k));
        continue;
      case BmmOperand::Copied:
        e.block = alloc(bytes_of(e.tensor, e.dtype), Category::Activations, c.k);
        c.temps.push_back(e.block);
        c.copied = true;
        continue;
    }
  }
}

// How MatMul node k's batched operand `tensor` (the other batched too) reaches bmm
// (bmm_batch) and its elements as expanded over the product's batch dims, or nullopt
// where the shapes are unknown or an operand is a vector or a matrix.
std::optional<std::pair<BmmBatch, Expr>> Builder::bmm_expansion(int k, int tensor) const {
  const Node& n = g_.nodes[k];
  if (!info_[k] || !info_[k]->bmm_operands || n.inputs.size() != 2 || n.outputs.empty()) return std::nullopt;
  if (n.inputs[0] < 0 || n.inputs[1] < 0 || n.outputs[0] < 0 || tensor < 0) return std::nullopt;
  const auto& a = g_.tensors[n.inputs[0]].shape;
  const auto& b = g_.tensors[n.inputs[1]].shape;
  const auto& out = g_.tensors[n.outputs[0]].shape;
  const auto& shape = g_.tensors[tensor].shape;
  if (!a || !b || !out || !shape || a->size() < 3 || b->size() < 3 || out->size() < 3) return std::nullopt;
  const Shape batch(out->begin(), out->end() - 2);
  return std::pair{bmm_batch(*shape, batch), product(batch) * (*shape)[shape->size() - 2] * shape->back()};
}

// The elements bmm copies of operand `tensor` of MatMul c: its expansion where it spans
// the batch dims only in part (bmm_batch), nullopt where no such copy is made.
std::optional<Expr> Builder::bmm_expanded_numel(const ForwardCall& c, int tensor) const {
  const auto e = bmm_expansion(c.k, tensor);
  if (!e || e->first != BmmBatch::Mixed) return std::nullopt;
  return e->second;
}

// Whether einsum copies input i (einsum_reshape_copies), or nullopt where that rule does
// not decide (not an einsum, an equation it does not model, shapes unknown).
std::optional<bool> Builder::einsum_copies(const ForwardCall& c, size_t i) const {
  if (!c.info->einsum_operands || c.ins.size() != 2 || i > 1 || c.ins[0] < 0 || c.ins[1] < 0) return std::nullopt;
  const auto& a = g_.tensors[c.ins[0]].shape;
  const auto& b = g_.tensors[c.ins[1]].shape;
  if (!a || !b || c.eff[i].tensor != c.ins[i]) return std::nullopt;
  return einsum_reshape_copies(c.n.attr_string("equation", ""), i, *a, *b, layout_[c.ins[i]]);
}

// How bmm gets a strided operand of a MatMul whose operands are both batched alike.
Builder::BmmOperand Builder::bmm_operand(const ForwardCall& c, int tensor) const {
  if (!c.info->bmm_operands || c.ins.size() != 2 || c.ins[0] < 0 || c.ins[1] < 0) return BmmOperand::Copied;
  const auto& a = g_.tensors[c.ins[0]].shape;
  const auto& b = g_.tensors[c.ins[1]].shape;
  if (!a || !b || a->size() < 2 || b->size() < 2) return BmmOperand::Copied;
  // One that spans some batch dims and is broadcast over others copy_strided_inputs has
  // copied expanded already (bmm_expanded_numel), where the shapes say so; one broadcast
  // over all of them is a stride-0 view.
  const Shape& shape = *g_.tensors[tensor].shape;
  const Shape& other = *(tensor == c.ins[0] ? b : a);
  const size_t rank = shape.size();
  if (other.size() >= 3 && rank >= 3 && !g_.tensors[c.outs[0]].shape) return BmmOperand::Copied;
  Expr batch(1);
  for (size_t i = 0; i + 2 < rank; ++i) batch = batch * shape[i];
  const auto merged = reshape_layout(shape, layout_[tensor], Shape{batch, shape[rank - 2], shape[rank - 1]});
  if (!merged) return BmmOperand::Copied;
  // bmm (Blas.cpp, prepare_batch_matrix_for_cublas) takes a matrix whose rows or columns
  // have stride 1, whatever the batch stride; only a batch-innermost one is cloned.
  const std::vector<int8_t>& m = *merged;
  if (m.empty()) return BmmOperand::Ready;
  if (m.size() == 3 && m[0] >= 0 && m[1] >= 0 && m[2] >= 0 && (m[1] > m[0] || m[2] > m[0])) return BmmOperand::Ready;
  return BmmOperand::Cloned;
}

// The dtype output o runs in: the file's, as autocast's policy for the op changes it.
DType Builder::output_dtype(const ForwardCall& c, int o) const {
  const bool amp = cfg_.amp != Amp::None;
  DType d = facts_[o].dtype;
  if (!is_floating(d)) return d;
  switch (c.policy) {
    case Autocast::Lower: return amp ? low_ : d;
    case Autocast::Fp32:
    case Autocast::Widen:
    case Autocast::WidenHalf: return amp ? DType::F32 : d;
    case Autocast::Promote:
      // x += y keeps x's dtype; x + y takes the wider one.
      return (written_in_place(g_, c.n, c.info) || guessed_residual_update(g_, c.n, c.info, facts_, info_)) &&
                     is_floating(c.eff[0].dtype)
                 ? c.eff[0].dtype
                 : widest_float(c.eff, d);
    case Autocast::Keep: return (!c.eff.empty() && c.eff[0].tensor >= 0 && is_floating(c.eff[0].dtype)) ? c.eff[0].dtype : d;
    case Autocast::Like:
      return c.eff.size() > 1 && c.eff[1].tensor >= 0 && is_floating(c.eff[1].dtype) && is_floating(d) ? c.eff[1].dtype : d;
    case Autocast::None: return d;
  }
  return d;
}

// Each output's dtype, layout and block: a view or an in-place op shares input 0's, an
// optional output nobody reads gets none, any other a new one, referenced by its uses.
void Builder::allocate_outputs(ForwardCall& c) {
  c.out_blocks.assign(c.outs.size(), -1);
  for (size_t j = 0; j < c.outs.size(); ++j) {
    int o = c.outs[j];
    if (o < 0 || !on_gpu(o)) continue;
    const Tensor& ot = g_.tensors[o];  // read only where the facts do not say
    const TensorFacts& of = facts_[o];
    const DType d = output_dtype(c, o);
    run_dtype_[o] = d;
    requires_grad_[o] = c.rg && is_floating(d);
    const int in0 = c.eff.empty() ? -1 : c.eff[0].tensor;
    const bool strided_in = in0 >= 0 && !layout_[in0].empty();
    // A reshape of a strided tensor is a view when PyTorch's stride rule allows it.
    std::optional<std::vector<int8_t>> reshaped;
    const bool reshape_like = c.info && (c.info->layout == Layout::Reshape || c.info->layout == Layout::UnitDims);
    if (reshape_like && strided_in && g_.tensors[in0].shape && ot.shape) {
      reshaped = reshape_layout(*g_.tensors[in0].shape, layout_[in0], *ot.shape);
      if (!reshaped && c.info->layout == Layout::UnitDims) reshaped = std::vector<int8_t>{-1};  // strides unknown
    }
    const bool kept = c.info && j == 0 && in0 >= 0 &&
                      ((c.info->view_when_dtype_kept && c.eff[0].dtype == d) || (c.info->view_when_contiguous && !strided_in));
    const bool view = ((c.info && (c.info->view || kept)) && in0 >= 0 && c.eff[0].block >= 0 &&
                       !(c.info->layout == Layout::Reshape && strided_in && !reshaped)) ||
                      (j == 0 && runs_in_place(g_, c.n, c.info, c.eff, d, facts_, info_));
    layout_[o] = reshaped ? *reshaped : output_layout(g_, c.n, o, c.info, view, in0, layout_, run_dtype_[c.outs[0]]);
    int& b = c.out_blocks[j];
    if (view) {
      b = c.eff[0].block;
      ref(b);
    } else if (j > 0 && of.uses == 0 && !of.graph_output) {
      continue;  // an optional output nobody reads (BatchNorm's running stats, Dropout's mask)
    } else {
      b = alloc(bytes_of(o, d), Category::Activations, c.k);
    }
    block_of_[o] = b;
    if (!c.recompute) {
      ref(b, of.uses);
      if (!frame_release_.empty() && frame_release_[o] >= 0 && b >= 0) {
        ref(b);
        frame_held_[frame_release_[o]].push_back(b);
      }
    } else {
      for (int u : ot.consumers) {
        if (segment_of_[u] == c.seg) ref(b);
      }
    }
    if (of.graph_output && !c.recompute) hold_graph_output(c, j);
  }
}

// A graph output stays until the loss (or the loop) lets it go, with what the op keeps
// beside it (OpInfo::output_keeps).
void Builder::hold_graph_output(ForwardCall& c, size_t j) {
  ref(c.out_blocks[j]);
  auto& holder = loss_node_[c.k] ? cur_loss_ : cur_out_;
  holder.push_back(c.out_blocks[j]);
  if (j == 0 && c.info && c.info->output_keeps) {
    for (const SavedExtra& x : c.info->output_keeps(g_, c.n)) {
      holder.push_back(alloc(x.numel * Expr(dtype_size(x.dtype)), Category::Activations, c.k));
    }
  }
}

// The first cuBLAS call on the main thread creates its workspace, which then stays;
// addmm with a bias also creates cuBLASLt's. The call's output exists by then (GPU
// traces: the qkv projection's output, then the 32 MiB workspace, then 1 MiB), and
// where a block that stays lands decides which segments stay split.
void Builder::cublas_workspaces(const ForwardCall& c) {
  if (!c.info || !c.info->cublas) return;
  if (!cublas_fwd_) {
    cublas_fwd_ = true;
    alloc(Expr(cfg_.target->cublas_workspace), Category::Workspace, c.k);
  }
  // (A strided input sends F.linear down matmul + add instead: no epilogue.)
  if (!cublaslt_ && c.ins.size() > 2 && c.ins[2] >= 0 && !c.copied) {
    cublaslt_ = true;
    alloc(Expr(cfg_.target->cublaslt_workspace), Category::Workspace, c.k);
  }
}

// The op's forward workspace (OpInfo::fwd_workspace), as a scratch block.
int Builder::forward_scratch(const ForwardCall& c, bool temporary) {
  const EffectiveInput& in = c.eff[0];
  return scratch(c.info->fwd_workspace(g_, c.n, in.dtype, in.tensor >= 0 && requires_grad_[in.tensor],
                                       channels_last(in.tensor)),
                 temporary, c.k);
}

// Whether backward reads input i: always (OpInfo::saves_input), or when another operand
// needs a gradient (saved_if_other: mul keeps each operand for the other's gradient).
bool Builder::saves_input(const ForwardCall& c, size_t i) const {
  if (c.info->saves_input(i)) return true;
  if (i >= 32 || !((c.info->saved_if_other >> i) & 1u)) return false;
  for (size_t j = 0; j < c.eff.size(); ++j) {
    // A bias (a third input outside the mask: Linear's, Gemm's C) needs neither
    // operand for its gradient (addmm's derivative formulas).
    const bool operand = j < 2 || (j < 32 && (c.info->saved_if_other >> j) & 1u);
    if (j != i && operand && c.eff[j].tensor >= 0 && requires_grad_[c.eff[j].tensor] && c.info->grad_of(j) != 'N') {
      return true;
    }
  }
  return false;
}

// What autograd keeps for backward.
void Builder::save_for_backward(ForwardCall& c) {
  if (!c.rg || !c.keep_saved) return;
  auto& saved = saved_now_[c.k];
  if (!c.info) {
    // An op memest has no entry for: assume its backward reads every input, the most
    // it could keep short of its own outputs, so the estimate errs high.
    for (const auto& in : c.eff) {
      if (in.tensor < 0 || in.block < 0) continue;
      ref(in.block);
      saved.push_back(in.block);
    }
    return;
  }
  for (size_t i = 0; i < c.eff.size(); ++i) {
    if (c.eff[i].tensor < 0 || c.eff[i].block < 0 || !saves_input(c, i)) continue;
    ref(c.eff[i].block);
    saved.push_back(c.eff[i].block);
  }
  for (size_t j = 0; j < c.out_blocks.size(); ++j) {
    if (c.out_blocks[j] >= 0 && c.info->saves_output(j)) {
      ref(c.out_blocks[j]);
      saved.push_back(c.out_blocks[j]);
    }
  }
  saved.insert(saved.end(), c.early.begin(), c.early.end());
  if (c.info->saved_extra && !c.info->extras_first) {
    for (const SavedExtra& x : c.info->saved_extra(g_, c.n)) {
      const bool as_out = x.output_dtype && !c.outs.empty() && c.outs[0] >= 0;
      const DType d = as_out ? run_dtype_[c.outs[0]] : x.dtype;
      saved.push_back(alloc(x.numel * Expr(dtype_size(d)), Category::Activations, c.k));
    }
  }
}

// Forward uses end: inputs, cast copies, and the outputs' creation references.
// (Parameters, buffers and inputs are held by the model and the loop, not by uses.)
void Builder::end_forward_uses(ForwardCall& c) {
  for (size_t i = 0; i < c.ins.size(); ++i) {
    const int t = c.ins[i];
    if (t < 0 || facts_[t].producer < 0) continue;
    // In a recompute, inputs from outside the segment are held by checkpoint, not by uses.
    if (c.recompute && segment_of_[facts_[t].producer] != c.seg) continue;
    unref(block_of_[t]);
  }
  for (int b : c.temps) unref(b);
  for (int b : c.out_blocks) unref(b);
}

// ---- optimizer step ------------------------------------------------------------
void Builder::step() {
  std::vector<Expr> states;
  states.reserve(param_grads_.size());
  for (const auto& pg : grads_in_parameter_order()) states.push_back(state_bytes(pg.first));
  optimizer_step(*this, cfg_, iter_ == 0, states, scaler_);
}

// torch.optim walks group["params"] (model.parameters()) and zero_grad(set_to_none) sets
// each p.grad to None in that order, not in the order backward made the gradients (about
// its reverse). traces8 resnet18 b2-fp32-adamw: Adam's first step makes exp_avg and
// exp_avg_sq of layer3.0.conv1 (1.2 MB) first of the parameters above 1 MB and fc's
// (2.0 MB) last; zero_grad frees them in the same order.
std::vector<std::pair<int, int>> Builder::grads_in_parameter_order() const {
  std::vector<std::pair<int, int>> out;
  out.reserve(param_grads_.size());
  for (int p : params_in_order_) {
    if (grad_slot_[p] >= 0) out.push_back(param_grads_[grad_slot_[p]]);
  }
  return out;
}

// One optimizer state tensor of parameter p: a shard under FSDP.
Expr Builder::state_bytes(int p) const {
  Expr full = bytes_of(p, run_dtype_[p]);
  return par_ ? par_->state_bytes(p, full) : full;
}

}  // namespace memest::sim

namespace memest {

Program build_program(const Graph& g, const TrainConfig& cfg) {
  TrainConfig c = cfg;
  if (!c.target) c.target = &find_target("");
  sim::Builder b(g, c);
  return b.run();
}

}  // namespace memest
