// The simulator's backward pass: gradient flow and accumulation, the saved tensors each
// node releases, activation-checkpoint recomputation, and the CUDA reductions that sum
// broadcast gradients (see simulate_builder.h).
#include <numeric>

#include "estimator/simulate_builder.h"

namespace memest::sim {

// ---- backward ------------------------------------------------------------------
void Builder::accumulate(int t, int g, bool narrow) {
  if (facts_[t].kind == TensorKind::Parameter && par_ && par_->takes_grad(t, g)) {
    if (grad_slot_[t] < 0) {  // the optimizer still sees a gradient; the wrapper holds its memory
      grad_slot_[t] = static_cast<int>(param_grads_.size());
      param_grads_.push_back({t, -1});
    }
    return;
  }
  if (facts_[t].kind == TensorKind::Parameter) {
    // AccumulateGrad steals the first gradient as .grad and adds later ones in place.
    // (A slot per tensor, not a search of param_grads_: that was quadratic in parameters.)
    // A narrowed view breaks the layout contract a .grad keeps: it is cloned
    // (accumulate_grad.h, clone_obey_contract).
    if (narrow) {
      const int clone = alloc(bytes_of(t, run_dtype_[t]), Category::Gradients, -1);
      unref(g);
      g = clone;
    }
    if (grad_slot_[t] < 0) {
      grad_slot_[t] = static_cast<int>(param_grads_.size());
      param_grads_.push_back({t, g});
    } else {
      unref(g);
    }
    return;
  }
  if (grad_[t] < 0) {
    grad_[t] = g;
    grad_narrow_[t] = narrow;
  } else if (refs_[grad_[t]] > 1) {
    // The buffer aliases another gradient: the engine adds out of place.
    int sum = alloc(bytes_of(t, run_dtype_[t]), Category::Temporaries, -1);
    unref(grad_[t]);
    unref(g);
    grad_[t] = sum;
    grad_narrow_[t] = false;
  } else {
    unref(g);  // added in place
  }
}

void Builder::backward() {
  // loss.backward() (or scaler.scale(loss).backward()) seeds a ones-like gradient.
  const int seed_t = seed_;
  if (seed_t >= 0 && requires_grad_[seed_t]) {
    if (cfg_.amp == Amp::FP16) {
      int scaled = alloc(Expr(4), Category::Temporaries, -1);  // loss * scale
      grad_[seed_t] = alloc(Expr(4), Category::Temporaries, -1);
      unref(scaled);
    } else {
      grad_[seed_t] = alloc(Expr(4), Category::Temporaries, -1);
    }
    if (cfg_.grad_accum > 1) {  // DivBackward0 of `/ K`: grad / K, a new scalar
      const int divided = alloc(Expr(4), Category::Temporaries, -1);
      unref(grad_[seed_t]);
      grad_[seed_t] = divided;
    }
  }
  if (par_) par_->backward_begin();
  for (int k = static_cast<int>(g_.nodes.size()) - 1; k >= 0; --k) {
    if (par_) par_->visit_backward(k);
    if (dead_[k]) continue;
    if (!node_rg_[k]) {
      release_saved(k);
      continue;
    }
    bool have = false;
    for (int o : outputs(k)) have |= o >= 0 && grad_[o] >= 0;
    const int seg = segment_of_[k];
    if (have && par_) par_->before_backward(k);  // FSDP unshards before checkpoint recomputes
    if (have && seg >= 0 && !recomputed_[seg]) recompute_segment(seg);
    if (have) backward_node(k);
    if (seg >= 0 && k == segments_[seg].first) {
      for (int b : seg_held_[seg]) unref(b);
      seg_held_[seg].clear();
      recomputed_[seg] = false;
    }
    release_saved(k);
    hand_on_gradients();
    for (const CastBack& c : cast_backs_) {
      const bool param = facts_[c.tensor].kind == TensorKind::Parameter;
      int back = alloc(bytes_of(c.tensor, run_dtype_[c.tensor]), param ? Category::Gradients : Category::Temporaries,
                       c.node);
      unref(c.grad);
      accumulate(c.tensor, back);
    }
    cast_backs_.clear();
  }
  for (size_t t = 0; t < grad_.size(); ++t) {
    if (grad_[t] >= 0) unref(grad_[t]);
    grad_[t] = -1;
  }
  if (par_) par_->backward_end();
}

// Whether a Concat's narrow views of its output's gradient are contiguous: every dim
// before the concat axis is 1, so each input's part is one block of memory.
bool Builder::narrows_outermost(const Node& n, int out0) const {
  const auto& shape = g_.tensors[out0].shape;
  if (!shape) return false;
  int64_t axis = n.attr_int("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(shape->size());
  for (int64_t i = 0; i < axis && i < static_cast<int64_t>(shape->size()); ++i) {
    if ((*shape)[static_cast<size_t>(i)].as_const() != std::optional<int64_t>(1)) return false;
  }
  return true;
}

// The engine hands a node's gradients on once the node has returned (engine.cpp
// evaluate_function): call_function makes all of them, with their workspaces, and lets
// the incoming gradients go; release_variables drops what the node saved; then each
// gradient is added into its input's buffer, where an in-place add frees it. traces8
// resnet18 b2-fp32-adamw: a block input's gradient from conv1 outlives conv1's weight
// gradient and its 69.5 MB workspace, and goes after conv1's incoming gradient.
void Builder::hand_on_gradients() {
  for (const Made& m : made_) accumulate(m.tensor, m.grad, m.narrow);
  made_.clear();
}

// Backward reached a checkpointed segment: run its forward again, keeping what
// autograd saves this time. Autocast's weight casts are made anew and dropped with
// the saved tensors that hold them.
void Builder::recompute_segment(int seg) {
  recomputed_[seg] = true;
  // A cache of its own, empty (spare_cache_ is all -1 between recomputes); the
  // outer one is kept aside. Swaps and the list of what was cached, not copies of
  // a per-tensor vector per segment.
  std::swap(cache_, spare_cache_);
  cached_.clear();
  for (int j = segments_[seg].first; j <= segments_[seg].last; ++j) {
    if (!dead_[j]) forward_node(j, /*recompute=*/true);
  }
  std::sort(cached_.begin(), cached_.end());  // released in tensor order
  for (int t : cached_) {
    unref(cache_[t]);
    cache_[t] = -1;
  }
  cached_.clear();
  std::swap(cache_, spare_cache_);
}

// What node k saved is freed after its backward, or, for an inner layer of one library
// call (OpInfo::call_start), after the backward of the call's first node.
void Builder::release_saved(int k) {
  if (const OpInfo* info = info_[k]; info && info->call_start) {
    if (const int first = info->call_start(g_, g_.nodes[k]); first >= 0 && first < k) {
      auto& held = saved_now_[first];
      held.insert(held.end(), saved_now_[k].begin(), saved_now_[k].end());
      saved_now_[k].clear();
      return;
    }
  }
  for (int b : saved_now_[k]) unref(b);
  if (iter_ == 0) prog_.saved_by_node[k] = saved_now_[k];  // reported per layer
  saved_now_[k].clear();
}

// A CUDA reduction that spreads each output over several blocks sums their partials
// through a global buffer, allocated after the output and freed as the call returns
// (OpInfo::reduced_axes, reduce_kernel.h). Its size depends on the launch at the
// concrete sizes: the block's bytes are the outputs' count, bounded by the launch.
// -1 when there is none (or the input's strides are unknown).
int Builder::reduction_buffer(int k, const Node& n, const OpInfo& info, const EffectiveInput& in) {
  if (in.tensor < 0) return -1;
  return reduction_buffer(k, in.tensor, info.reduced_axes(g_, n), in.dtype);
}

// The same for a reduction of tensor t (in its layout) over `axes`, run in `dtype`.
int Builder::reduction_buffer(int k, int t, const std::optional<std::vector<int64_t>>& axes, DType dtype) {
  return t < 0 ? -1 : reduction_buffer(k, t, axes, dtype, layout_[t]);
}

// ... of a tensor of t's shape stored in `layout`.
int Builder::reduction_buffer(int k, int t, const std::optional<std::vector<int64_t>>& axes, DType dtype,
                              const std::vector<int8_t>& layout) {
  const Target& target = *cfg_.target;
  if (target.sm_count == 0 || t < 0 || !g_.tensors[t].shape || !axes) return -1;
  auto plan = plan_reduction(*g_.tensors[t].shape, layout, *axes, dtype, target.sm_count, target.threads_per_sm);
  if (!plan) return -1;
  const int b = alloc(plan->outputs, Category::Temporaries, k);
  prog_.blocks[b].bounded = true;
  SizeBound sb;
  sb.reduce = plan->launch;
  sb.reduce_inputs = std::move(plan->inputs);
  prog_.bounds.push_back({b, std::move(sb)});
  return b;
}

// The layout of t's gradient. A gradient mostly comes in its tensor's layout (an
// elementwise backward follows the incoming gradient, cuDNN and pooling allocate in the
// input's memory format), but the backward of a mean or sum expands the gradient and
// divides it into a fresh, contiguous tensor (MeanBackward0). With several consumers
// the sum's order is not followed: t's layout.
// The same holds of a backward that allocates its input's gradient contiguous
// (OpInfo::input_grad_contiguous); views between (an unsqueeze before a mean) pass the
// gradient through. A permute's backward permutes its output's gradient back: where that
// gradient is not in the permuted view's own layout (a LayerNorm's contiguous dX of
// `x.transpose(-2, -1)`), t's is strided (permuted_grad_layout).
std::vector<int8_t> Builder::grad_layout(int t, int depth) const {
  int u = t;
  for (int hops = 0; hops < 8; ++hops) {
    const IdList& users = g_.tensors[u].consumers;
    if (users.size() != 1) break;
    const OpInfo* c = info_[users[0]];
    if (!c) break;
    if (c->reduced_axes || c->input_grad_contiguous) return {};
    const Node& v = g_.nodes[users[0]];
    if (!c->view || v.outputs.empty() || v.outputs[0] < 0) break;
    if (c->layout == Layout::Permute) return u == t && depth < 4 ? permuted_grad_layout(t, v, depth) : layout_[t];
    if (c->layout != Layout::UnitDims && c->layout != Layout::Reshape) break;
    u = v.outputs[0];
  }
  return layout_[t];
}

// The gradient layout of t, read by permute node v alone: v's output's gradient,
// permuted back. t's own layout when that gradient keeps the view's layout.
std::vector<int8_t> Builder::permuted_grad_layout(int t, const Node& v, int depth) const {
  const int out = v.outputs[0];
  const std::vector<int8_t> g = grad_layout(out, depth + 1);
  const auto& shape = g_.tensors[t].shape;
  const size_t rank = shape ? shape->size() : 0;
  const std::optional<std::vector<int64_t>> perm = transpose_perm(v, rank);
  if (g == layout_[out] || rank == 0 || !perm) return layout_[t];
  if (g.size() == 1 && g[0] == -1) return g;
  if (!g.empty() && g.size() != rank) return layout_[t];
  // The output's dim j is t's dim perm[j], at memory position g[j].
  std::vector<int8_t> back(rank);
  bool identity = true;
  for (size_t j = 0; j < rank; ++j) back[static_cast<size_t>((*perm)[j])] = g.empty() ? static_cast<int8_t>(j) : g[j];
  for (size_t i = 0; i < rank; ++i) identity &= back[i] == static_cast<int8_t>(i);
  return identity ? std::vector<int8_t>{} : back;
}

// The gradient of an input broadcast over the output's leading dims (a bias) sums the
// output's gradient over M rows of N columns: one Reduce.cuh reduction (reduction_buffer),
// whose launch spreads long columns over several blocks and stages their fp32 partials in
// a global buffer, held only during the sum. kernels-h200 "sum0" rows measured 8 M N
// bytes for 256 <= N <= 4096 and M >= 1024 (at most 132 MiB), which the launch model gives
// to the byte; below 256 columns it also stages (traces37 rnd14_85: a Linear's bias, 8,192
// rows of 192, 12,582,912 B), which a threshold at 256 had left out.
// Inputs in `summed` (a full-shape gradient summed by reduction_buffer) are skipped.
void Builder::reduction_scratch(int k, const Node& n, const std::vector<std::pair<int, int>>& summed) {
  if (n.outputs.empty() || n.outputs[0] < 0) return;
  const int out0 = n.outputs[0];
  const auto& out = g_.tensors[out0].shape;
  if (!out) return;
  for (int in : n.inputs) {
    if (in < 0 || !requires_grad_[in] || !g_.tensors[in].shape) continue;
    if (std::any_of(summed.begin(), summed.end(), [&](const auto& s) { return s.second == in; })) continue;
    const Shape& full = *g_.tensors[in].shape;
    auto first = full.begin();
    while (first != full.end() && *first == Expr(1)) ++first;  // [1, N] broadcasts as [N]
    const long dims = full.end() - first;
    if (dims == 0 || static_cast<size_t>(dims) >= out->size()) continue;
    if (!std::equal(first, full.end(), out->end() - dims)) continue;
    std::vector<int64_t> rows(out->size() - static_cast<size_t>(dims));
    std::iota(rows.begin(), rows.end(), int64_t{0});
    unref(reduction_buffer(k, out0, rows, run_dtype_[out0], grad_layout(out0)));
  }
}

void Builder::backward_node(int k) {
  const Node& n = g_.nodes[k];
  const OpInfo* info = info_[k];
  const std::span<const int> outs = outputs(k);
  const int out0 = outs.empty() ? -1 : outs[0];
  // A kernel that reads its incoming gradient contiguous copies a narrowed one first.
  int contiguous = -1;
  if (info && info->contiguous_grad_out && out0 >= 0 && grad_[out0] >= 0 && grad_narrow_[out0]) {
    contiguous = alloc(bytes_of(out0, run_dtype_[out0]), Category::Temporaries, k);
  }
  const std::vector<int> conv_copies = contiguous < 0 ? conv_1d_backward_copies(k) : std::vector<int>{};
  // (full-shape gradient, input) of broadcast inputs, summed below
  const std::vector<std::pair<int, int>> full = input_gradients(k);
  first_cublas_call(k);  // when no gradient was allocated above
  // sum_to_size of each full-shape gradient is one Reduce.cuh reduction over the dims
  // the input was broadcast along, with its global buffer while the full gradient lives
  // (traces26 rnd21_151: an SE gate's x * s[N, C, 1, 1] on a channels-last map, 52 MB
  // beside two 26 MB maps; none when the map is contiguous, its H x W innermost).
  for (const auto& [b, t] : full) {
    if (info && info->bmm_operands) {  // its sum (a bmm's output, contiguous) not modelled
      unref(b);
      continue;
    }
    // The full gradient is grad * other: TensorIterator lays it out like the incoming
    // gradient, its first operand and of the full shape.
    const auto axes = g_.tensors[t].shape && g_.tensors[out0].shape
                          ? broadcast_axes(*g_.tensors[t].shape, *g_.tensors[out0].shape)
                          : std::nullopt;
    unref(reduction_buffer(k, out0, axes, run_dtype_[out0], grad_layout(out0)));
    unref(b);
  }
  if (info && info->sums_broadcast_grads) reduction_scratch(k, n, full);
  grad_format_copy(k);
  backward_workspace(k);
  bias_gradient_reduction(k);
  unref(contiguous);
  for (int b : conv_copies) unref(b);
  for (int o : outs) {
    if (o >= 0 && grad_[o] >= 0) {
      unref(grad_[o]);
      grad_[o] = -1;
    }
  }
}

// convolution_backward of a 1-D layer makes the saved input contiguous again before
// viewing it as 2-D, and cuDNN reads the output's gradient contiguous
// (grad_output.contiguous(memory_format), the input's format, contiguous after that
// copy): a strided input and a strided gradient (a transpose's backward of a
// LayerNorm's contiguous dX) are copied before the input's gradient and held for the
// call. seqtrace34 sh_data2vec-audio_aud conv_layers.1: the 104.8 MB input, then the
// 52.4 MB gradient, then dX and the workspaces, both copies freed at the end.
std::vector<int> Builder::conv_1d_backward_copies(int k) {
  const std::span<const int> outs = outputs(k);
  const int out0 = outs.empty() ? -1 : outs[0];
  if (!info_[k] || !info_[k]->contiguous_1d) return {};
  if (out0 < 0 || grad_[out0] < 0 || !g_.tensors[out0].shape || g_.tensors[out0].shape->size() != 3) return {};
  std::vector<int> copies;
  const std::span<const EffectiveInput> eff = effective(k);
  if (strided_1d_conv_input(k) && !eff.empty() && eff[0].tensor >= 0) {
    copies.push_back(alloc(bytes_of(eff[0].tensor, eff[0].dtype), Category::Temporaries, k));
  }
  if (!grad_layout(out0).empty()) copies.push_back(alloc(bytes_of(out0, run_dtype_[out0]), Category::Temporaries, k));
  return copies;
}

// Backward runs on autograd's device thread, whose cuBLAS handle has its own
// workspace, created by the first cuBLAS call there: after that call's output (GPU
// traces: the LM head's weight gradient, then the 32 MiB workspace, then the input's).
void Builder::first_cublas_call(int k) {
  const OpInfo* info = info_[k];
  if (info && info->cublas && !cublas_bwd_ && cfg_.target->cublas_backward_workspace) {
    cublas_bwd_ = true;
    alloc(Expr(cfg_.target->cublas_workspace), Category::Workspace, k);
  }
}

// The gradient of each input that needs one, in the order autograd makes them, handed
// to accumulate (or, for autocast's cast copies, to the ToCopyBackward that follows).
// Returns the full-shape gradients of broadcast inputs (with their inputs), which the
// caller sums.
std::vector<std::pair<int, int>> Builder::input_gradients(int k) {
  const Node& n = g_.nodes[k];
  const OpInfo* info = info_[k];
  const std::span<const int> ins = inputs(k), outs = outputs(k);
  const std::span<const EffectiveInput> eff = effective(k);
  const int out0 = outs.empty() ? -1 : outs[0];
  const bool swap = info && info->second_grad_first && ins.size() == 2;
  std::vector<std::pair<int, int>> full;
  std::vector<int> wide;  // gradients made in the output's dtype, cast down by the engine
  for (size_t step = 0; step < ins.size(); ++step) {
    const size_t i = swap ? 1 - step : step;
    int t = ins[i];
    if (t < 0 || !requires_grad_[t]) continue;
    char letter = info ? info->grad_of(i) : 'A';
    if (letter == 'N') continue;
    const bool param = facts_[t].kind == TensorKind::Parameter;
    const DType d = eff[i].dtype;
    if (info && info->view_when_dtype_kept && i == 0 && out0 >= 0 && d == run_dtype_[out0]) letter = 'V';
    const bool summed = letter == 'A' && info && info->full_broadcast_grads && out0 >= 0 &&
                        g_.tensors[t].shape != g_.tensors[out0].shape;
    int gblock;
    bool narrow = false;
    // 'V': the output's gradient passes through, whole (same shape) or narrowed (a Concat's).
    const bool through = letter == 'V' && out0 >= 0 && grad_[out0] >= 0 && d == run_dtype_[out0];
    const bool whole = through && g_.tensors[t].shape && g_.tensors[out0].shape &&
                       *g_.tensors[t].shape == *g_.tensors[out0].shape;
    if (whole || (through && info->narrows_grads)) {
      gblock = grad_[out0];
      ref(gblock);
      narrow = whole ? grad_narrow_[out0] != 0 : !narrows_outermost(n, out0);
    } else {
      if (summed) {
        full.push_back({alloc(bytes_of(out0, run_dtype_[out0]), Category::Temporaries, k), t});
      } else if (const auto e = bmm_expansion(k, t); e && e->first != BmmBatch::Spanned && letter == 'A') {
        // BmmBackward makes a broadcast operand's gradient expanded, [batch, rows, cols];
        // ExpandBackward sums it to the operand's shape.
        full.push_back({alloc(e->second * Expr(dtype_size(d)), Category::Temporaries, k), t});
      } else if (letter == 'A' && computed_wider(k, d)) {
        wide.push_back(alloc(bytes_of(t, run_dtype_[out0]), Category::Temporaries, k));
      }
      std::vector<int> formula;  // OpInfo::grad_temporaries, live until the gradient is made
      for (int j = 0; i == 0 && info && j < info->grad_temporaries; ++j) {
        formula.push_back(alloc(bytes_of(t, d), Category::Temporaries, k));
      }
      gblock = alloc(bytes_of(t, d), param && !eff[i].cast ? Category::Gradients : Category::Temporaries, k);
      for (auto it = formula.rbegin(); it != formula.rend(); ++it) unref(*it);
      first_cublas_call(k);
      if (i == 0 && info && info->bwd_data_workspace) {
        const DType sd = info->scratch_is_temporary && out0 >= 0 ? run_dtype_[out0] : d;
        unref(scratch(info->bwd_data_workspace(g_, n, sd, true, channels_last(t)), info->scratch_is_temporary, k));
      }
    }
    if (eff[i].cast) {
      // ToCopyBackward casts the gradient of autocast's copy back; it is a node of its
      // own, run after this one has released its saved tensors and incoming gradients.
      cast_backs_.push_back({t, gblock, k});
      continue;
    }
    made_.push_back({t, gblock, narrow});
  }
  for (int b : wide) unref(b);
  return full;
}

// Whether node k computes the gradient of an input of dtype `d` in its output's wider
// dtype: a promoting op of mixed inputs (autocast's fp16 x times an fp32 tensor) forms
// grad * other in the output's dtype, and autograd's engine casts it to the input's dtype
// once the node's backward has returned (engine.cpp validate_outputs), so the wide
// gradient lives beside the node's other gradients. GPU trace of GPT-2's tanh GELU under
// fp16 (traces34 sh_gpt2_cls): MulBackward0 allocates 4 + 4 + 2 MiB for 0.5 * x (fp16)
// times the fp32 1 + tanh(...), where memest had 4 + 2 (2.4% under).
bool Builder::computed_wider(int k, DType d) const {
  const std::span<const int> outs = outputs(k);
  if (outs.empty() || outs[0] < 0 || policy_of(k) != Autocast::Promote) return false;
  const DType out = run_dtype_[outs[0]];
  return is_floating(out) && is_floating(d) && dtype_size(out) > dtype_size(d);
}

// The op's backward workspace (OpInfo::bwd_workspace: wgrad's), and what a bound says
// it may take beyond it (Program::workspace_excess).
void Builder::backward_workspace(int k) {
  const Node& n = g_.nodes[k];
  const OpInfo* info = info_[k];
  const std::span<const EffectiveInput> eff = effective(k);
  if (!info || !info->bwd_workspace || eff.empty()) return;
  const bool input_grad = eff[0].tensor >= 0 && requires_grad_[eff[0].tensor];
  const bool cl = channels_last(eff[0].tensor);
  Workspace ws = info->bwd_workspace(g_, n, eff[0].dtype, input_grad, cl);
  if (info->bwd_workspace_bound) {
    prog_.workspace_excess.push_back({k, info->bwd_workspace_bound(g_, n, eff[0].dtype, input_grad, cl).bytes - ws.bytes});
  }
  unref(scratch(std::move(ws), info->scratch_is_temporary, k));
}

// A convolution's bias gradient sums the output's gradient over every dim but the
// channels, a CUDA reduction, after the weight's gradient (convprobe-depthwise traces:
// grad_input, grad_weight, wgrad workspace, grad_bias, the reduction's buffer). The
// gradient is taken in the output's layout: on a channels-last map the channels are
// innermost and the buffer reaches 132 MiB.
void Builder::bias_gradient_reduction(int k) {
  const OpInfo* info = info_[k];
  const std::span<const int> ins = inputs(k), outs = outputs(k);
  const int out0 = outs.empty() ? -1 : outs[0];
  if (!info || !info->bias_grad_is_reduction || ins.size() <= 2 || ins[2] < 0 || !requires_grad_[ins[2]] || out0 < 0 ||
      !g_.tensors[out0].shape) {
    return;
  }
  std::vector<int64_t> axes;
  for (size_t i = 0; i < g_.tensors[out0].shape->size(); ++i) {
    if (i != 1) axes.push_back(static_cast<int64_t>(i));
  }
  unref(reduction_buffer(k, out0, axes, run_dtype_[out0]));
}

// Pooling's backward reads the output's gradient in the memory format it gave the output
// (OpInfo::grad_in_input_format): channels-last when the output is, else contiguous. A
// gradient laid out otherwise is copied after the input's gradient is made and freed as
// the call returns. traces36 rnd25_48: a 3-D max pool of a channels-last map (a channel
// LayerNorm's permute-back) before a reflect pad, whose backward hands a contiguous
// gradient: MaxPool3DWithIndicesBackward0 took 64 MiB, then an 8 MiB copy.
void Builder::grad_format_copy(int k) {
  const OpInfo* info = info_[k];
  const std::span<const int> ins = inputs(k), outs = outputs(k);
  if (!info || !info->grad_in_input_format || ins.empty() || outs.empty()) return;
  const int in0 = ins[0], out0 = outs[0];
  if (in0 < 0 || out0 < 0 || !requires_grad_[in0] || grad_[out0] < 0) return;
  const std::vector<int8_t> got = grad_layout(out0);
  if (got.size() == 1 && got[0] == -1) return;  // unknown
  if (channels_last(out0) ? got == layout_[out0] : got.empty()) return;
  unref(alloc(bytes_of(out0, run_dtype_[out0]), Category::Temporaries, k));
}

}  // namespace memest::sim
