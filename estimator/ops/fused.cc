// memest's own ops: patterns PyTorch runs as one kernel (Linear, scaled dot-product
// attention, GELU, SiLU) that exporters spell as several nodes, and the losses.
#include "estimator/ops/registry.h"
#include "estimator/ops/shape_util.h"

namespace memest {
namespace {

// Linear(x, W[out, in], b?): x[..., in] -> [..., out]. Like F.linear: one output.
void shape_linear(ShapeContext& c) {
  Shape s = c.in_shape(0);
  const Shape& w = c.in_shape(1);
  if (s.empty() || w.size() != 2) c.fail("expects x of rank >= 1 and a 2-D weight");
  s.back() = w[0];
  c.set_output(0, c.in_dtype(0), s);
}

// Attention(q[..., Tq, D], k[..., Tk, D], v[..., Tk, Dv], mask?) -> [..., Tq, Dv].
void shape_attention(ShapeContext& c) {
  Shape s = c.in_shape(0);
  const Shape& v = c.in_shape(2);
  if (s.empty() || v.empty()) c.fail("expects q, k, v of rank >= 2");
  s.back() = v.back();
  c.set_output(0, c.in_dtype(0), s);
}

void shape_same(ShapeContext& c) { c.set_output(0, c.in_dtype(0), c.in_shape(0)); }
void shape_scalar(ShapeContext& c) { c.set_output(0, DType::F32, {}); }

// Flash attention (fp16/bf16) keeps logsumexp [.., H, Tq] in fp32; the memory-efficient
// kernel (fp32) pads Tq to 32. Both are what _scaled_dot_product_*_attention returns.
std::vector<SavedExtra> attention_extra(const Graph& g, const Node& n) {
  const Tensor& q = g.tensors[n.inputs[0]];
  if (!q.shape || q.shape->empty()) return {};
  Shape rows(q.shape->begin(), q.shape->end() - 1);
  return {{product(rows), DType::F32, "logsumexp"}};
}

// scaled_dot_product_attention(enable_gqa=True) in fp32: neither flash (half only) nor
// the memory-efficient kernel takes grouped k and v, so it runs the math backend:
// q * sqrt(scale), k and v repeated to q's heads (k also scaled), the scores and their
// softmax [.., H, Tq, Tk]. Backward keeps q's and k's scaled copies (bmm), the softmax
// (SafeSoftmaxBackward and the second bmm) and the repeated v; not q, k, v themselves
// nor the output. GPU: llama_hf fp32 (traces5-h200-torch2.11.jsonl), 18 MiB a layer
// more than the fused kernel keeps; a probe of F.scaled_dot_product_attention shows
// the autograd chain (Bmm, SafeSoftmax, Add). Half inputs are upcast first: the math
// backend computes in fp32 for accuracy (_scaled_dot_product_attention_math: query_acc =
// query.to(kFloat) for half and bfloat16), so all four are fp32 under autocast too. GPU:
// falcon fp16 (broadcast k, v; traces16), 8 MiB of fp32 softmax and three 2 MiB fp32
// q/k/v copies a layer where half sizes gave half of that.
std::vector<SavedExtra> attention_math_extra(const Graph& g, const Node& n) {
  const auto& q = g.tensors[n.inputs[0]].shape;
  const auto& k = g.tensors[n.inputs[1]].shape;
  const auto& v = g.tensors[n.inputs[2]].shape;
  if (!q || !k || !v || q->size() < 2 || k->size() < 2 || v->size() < 2) return {};
  Shape lead(q->begin(), q->end() - 2);  // [.., H]
  // Tk from v: the legacy exporter's k may still be [B, Tk, H, D] (its transpose fused away).
  const Expr tq = (*q)[q->size() - 2], tk = (*v)[v->size() - 2];
  const Expr d = q->back(), dv = v->back();
  const Expr rows = product(lead);
  std::vector<SavedExtra> kept = {{rows * tq * d, DType::F32, "q * sqrt(scale), fp32"},
                                   {rows * tk * d, DType::F32, "k repeated to q's heads, scaled, fp32"},
                                   {rows * tq * tk, DType::F32, "softmax of the scores, fp32"},
                                   {rows * tk * dv, DType::F32, "v repeated to q's heads, fp32"}};
  // With dropout it runs at::dropout on the softmax: the dropped copy (read by the bmm
  // with v) and native_dropout's bool mask are kept too. sdpa-probe, fp32 with grouped
  // k and v: 10 MiB more with dropout 0.1 than without, one fp32 and one bool [16, 8,
  // 128, 128]; traces16 gpt_bigcode fp32: two 16 MiB fp32 score tensors a layer.
  if (n.attr_float("dropout", 0) > 0) {
    kept.push_back({rows * tq * tk, DType::F32, "dropped softmax, fp32"});
    kept.push_back({rows * tq * tk, DType::Bool, "dropout mask"});
  }
  return kept;
}

// Its backward: three fp32 [.., H, Tq, Tk] at once: BmmBackward0's gradient of the softmax,
// then SafeSoftmaxBackward0's two (traces17, rnd9_17 bf16: three 16 MiB blocks at the peak;
// two undercounted it by 5.3%, rnd1_34 by 3.9%).
Workspace attention_math_bwd(const Graph& g, const Node& n, DType, bool, bool) {
  const auto& q = g.tensors[n.inputs[0]].shape;
  const auto& v = g.tensors[n.inputs[2]].shape;
  if (!q || !v || q->size() < 2 || v->size() < 2) return Expr(0);
  Shape rows(q->begin(), q->end() - 1);  // [.., H, Tq]
  return Expr(3 * dtype_size(DType::F32)) * product(rows) * (*v)[v->size() - 2];
}

// transformers' bloom_gelu_back (modeling_bloom.py), GeLUFunction's backward, recomputes
// tanh from the saved input in Python, one input-sized temporary per operation:
//     tanh_out = torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x))
//     ff = 0.5 * x * ((1 - tanh_out * tanh_out) * (0.79788456 + 0.1070322243 * x * x)) + 0.5 * (1 + tanh_out)
//     return ff * g
// At its most, when `0.79788456 + 0.1070322243 * x * x` is made, tanh_out, 0.5 * x,
// 1 - tanh_out^2, 0.1070322243 * x * x and the sum are live: five, in the input's dtype.
Workspace bloom_gelu_bwd(const Graph& g, const Node& n, DType run, bool, bool) {
  const auto& x = g.tensors[n.inputs[0]].shape;
  if (!x) return Expr(0);
  return Expr(5 * dtype_size(run)) * product(*x);
}

// The first input of p that is not contiguous (a layout of its own), or -1: the operand
// the walks below follow back toward the permute that made a tensor strided.
int strided_operand(const Node& p, const std::vector<std::vector<int8_t>>& layouts) {
  for (int in : p.inputs) {
    if (in >= 0 && !layouts[in].empty()) return in;
  }
  return -1;
}

// ONNX has no .contiguous(): both exporters drop it, so a permuted bias may have been made
// contiguous before the call. The relative-position tables of timm and transformers
// (beit, coatnet, maxvit, swin) are indexed by a flat index and viewed back to [N, N, H]
// before the permute, and every one of them calls .contiguous() after it (sdpa-choice:
// their masks have stride(-1) == 1, fused kernels); T5's bias is an embedding of a
// [Tq, Tk] bucket matrix, permuted and never made contiguous (math). So a permute of a
// reshaped lookup counts as contiguous: the one signal the graph keeps.
//
// (The dynamo exporter's Transpose, GatherND, Transpose for `biases[:, idxs]`, TinyViT's
// and LeViT's, is no permuted view at all: layout.cc's transposes_a_fresh_result.)
bool permuted_lookup_made_contiguous(const Graph& g, int t, const std::vector<std::vector<int8_t>>& layouts) {
  for (int guard = 0; guard < 8 && t >= 0; ++guard) {
    const int k = g.tensors[t].producer;
    if (k < 0) return false;
    const Node& p = g.nodes[k];
    if (p.op == "Transpose") {
      const int src = p.has_input(0) ? g.tensors[p.inputs[0]].producer : -1;
      if (src < 0 || g.nodes[src].op != "Reshape" || !g.nodes[src].has_input(0)) return false;
      const int lookup = g.tensors[g.nodes[src].inputs[0]].producer;
      return lookup >= 0 && (g.nodes[lookup].op == "Gather" || g.nodes[lookup].op == "GatherND");  // legacy, dynamo
    }
    t = strided_operand(p, layouts);
  }
  return false;
}

// Whether the code made a strided q, k or v (tensor t) contiguous before the call, as a
// dynamo export's stack trace shows: ONNX has no .contiguous(), so a statement that calls it
// on the way from the permute to the call (CoAtNet's `q.transpose(-1, -2).contiguous()`,
// an argument line of the call) is the one sign. A file without a trace (the legacy
// exporter) cannot say, and counts as contiguous: taking every strided q as math put
// CoAtNet's legacy export 18% over (session 33), CPUBone's stays 1-5% under.
bool contiguous_in_code(const Graph& g, const Node& call, int t, const std::vector<std::vector<int8_t>>& layouts) {
  if (call.py_stack < 0) return true;
  auto calls_contiguous = [&](const Node& n) {
    const PyStatement* s = g.python.statement_of(n.py_stack);
    return s && s->code.find(".contiguous(") != std::string::npos;
  };
  if (calls_contiguous(call)) return true;
  for (int guard = 0; guard < 16 && t >= 0 && !layouts[t].empty(); ++guard) {
    const int k = g.tensors[t].producer;
    if (k < 0) return false;
    const Node& p = g.nodes[k];
    if (calls_contiguous(p)) return true;
    t = strided_operand(p, layouts);
  }
  return false;
}

// Which backend scaled_dot_product_attention takes (sdp_utils.cpp's checks): grouped k
// and v (fuse.cc's `gqa`) in fp32, and k and v of one head broadcast to q's, go to the
// math one; so do a q, k, v or mask whose last dim is not contiguous in memory: every fused
// kernel requires stride(-1) == 1 (check_last_dim_stride_equals_1_dense; CPUBone's q, k, v
// split off a permuted projection: seqtrace33 st_cpubone_s0 shows the math backend's
// cuBLAS workspace allocated at its first attention, memest had it at the head). T5's
// relative position bias is a permuted embedding, heads innermost: `validate sdpa-choice`
// (sdpa-choice-h200-torch2.11.jsonl) shows its self-attention on the math backend and its
// cross-attention (a contiguous bias) on a fused kernel, and the random sets' permuted
// biases on math in fp32 and fp16 alike; every call with a contiguous mask was fused.
//
// The fused kernels keep the mask for backward, the caller's reference dropped or not
// (derivatives.yaml: the efficient and cuDNN backward take attn_bias). `validate
// sdpa-probe --mask-lifetime` (sdpa-mask-lifetime-h200-torch2.11.jsonl.xz, 268
// configurations): a mask made for the call alone cost its numel x q's element size
// after forward in every one, boolean masks converted, float ones autocast-cast;
// traces25 rnd20_127: each layer's masked_fill'd bias alive to its backward. The
// exporters' traces also hold masks no run sees (fuse_attention.cc's carries_data):
// those stay out (mask_kept unset).
const OpInfo* attention_backend(const Graph& g, const Node& n, const Dispatch& d) {
  static const OpInfo* const math = find_op("memest", "AttentionMath");
  static const OpInfo* const keeps_mask = find_op("memest", "AttentionKeepsMask");
  if (n.attr_int("broadcast_heads", 0) == 1) return math;
  // Every fused kernel takes 4-D q, k and v only (sdp_utils.cpp check_tensor_shapes):
  // NesT's [B, heads, blocks, tokens, dim] runs math (traces27 st_nest_small_jx: fp32 q, k,
  // v copies and a [16, 12, 196, 196] fp32 softmax a block, -32.7% when counted fused).
  if (const auto& q = g.tensors[n.inputs[0]].shape; q && q->size() != 4) return math;
  if (!d.last_dim_contiguous(g, n, 3) && !permuted_lookup_made_contiguous(g, n.inputs[3], *d.layouts)) return math;
  for (size_t i = 0; i < 3; ++i) {
    if (!d.last_dim_contiguous(g, n, i) && !contiguous_in_code(g, n, n.inputs[i], *d.layouts)) return math;
  }
  if (d.run == DType::F32 && n.attr_int("gqa", 0) == 1) return math;
  return n.has_input(3) && n.attr_int("mask_kept", 0) == 1 ? keeps_mask : nullptr;
}

// nll_loss keeps total_weight, a scalar.
std::vector<SavedExtra> nll_extra(const Graph&, const Node&) { return {{Expr(1), DType::F32, "total_weight"}}; }

// Measured, mechanism not pinned down: in GPU traces of conv_autoencoder (torch 2.11,
// validate/results/traces2-h200-torch2.11.jsonl, fp32 and fp16 alike) F.mse_loss
// allocates an fp32 block of the input's size in forward that is still alive at the
// backward peak, after MseLossBackward has run, and only one such block is alive (the
// previous iteration's is gone). memest holds it as long as the loss is held.
std::vector<SavedExtra> mse_keeps(const Graph& g, const Node& n) {
  const auto& in = g.tensors[n.inputs[0]].shape;
  if (!in) return {};
  return {{product(*in), DType::F32, "fp32 buffer of the input's size, alive with the loss"}};
}

// native_group_norm keeps mean and rstd per (n, group), in fp32.
std::vector<SavedExtra> group_norm_stats(const Graph& g, const Node& n) {
  const auto& in = g.tensors[n.inputs[0]].shape;
  if (!in || in->empty()) return {};
  const Expr ng = (*in)[0] * Expr(n.attr_int("num_groups", 1));
  return {{ng, DType::F32, "group-norm mean"}, {ng, DType::F32, "group-norm rstd"}};
}

const OpInfo kOps[] = {
    {.op = "Linear", .family = "fused", .shape = shape_linear, .autocast = Autocast::Lower,
     .saved_if_other = bits({0, 1}), .grads = "AAA", .second_grad_first = true, .contiguous_inputs = true,
     .cublas = true,
     .sums_broadcast_grads = true, .domain = "memest",
     .note = "MatMul(+Transpose)+Add of a weight and bias: F.linear, one output"},
    {.op = "Attention", .family = "fused", .shape = shape_attention, .autocast = Autocast::Lower,
     .saved_inputs = bits({0, 1, 2}), .saved_outputs = bits({0}), .saved_extra = attention_extra, .grads = "AAAN",
     .layout = Layout::HeadsMajor, .variant = attention_backend, .domain = "memest",
     .note = "MatMul-scale-Softmax-MatMul: scaled_dot_product_attention, no TxT matrix"},
    {.op = "AttentionKeepsMask", .family = "fused", .shape = shape_attention, .autocast = Autocast::Lower,
     .saved_inputs = bits({0, 1, 2, 3}), .saved_outputs = bits({0}), .saved_extra = attention_extra, .grads = "AAAN",
     .layout = Layout::HeadsMajor, .domain = "memest",
     .note = "a fused scaled_dot_product_attention whose mask carries data: keeps it to backward"},
    {.op = "AttentionMath", .family = "fused", .shape = shape_attention, .autocast = Autocast::Lower,
     .saved_extra = attention_math_extra, .grads = "AAAN", .bwd_workspace = attention_math_bwd, .domain = "memest",
     .note = "scaled_dot_product_attention's math backend (grouped k, v in fp32; a q, k, v or mask whose last dim is strided; not 4-D): keeps the TxT softmax"},
    {.op = "CustomFunction", .family = "fused", .shape = shape_same, .autocast = Autocast::Keep,
     .saved_inputs = bits({0}), .grads = "A", .layout = Layout::Elementwise, .domain = "memest",
     .note = "a custom torch.autograd.Function (dynamo traces its forward's math): keeps its input, as ctx.save_for_backward(input) does"},
    {.op = "BloomGelu", .family = "fused", .shape = shape_same, .autocast = Autocast::Keep,
     .saved_inputs = bits({0}), .grads = "A", .layout = Layout::Elementwise, .bwd_workspace = bloom_gelu_bwd,
     .domain = "memest",
     .note = "transformers' BLOOM GeLUFunction: keeps its input; backward recomputes tanh in five input-sized temporaries"},
    {.op = "Gelu", .family = "fused", .shape = shape_same, .autocast = Autocast::Keep, .saved_inputs = bits({0}),
     .grads = "A", .layout = Layout::Elementwise, .domain = "memest",
     .note = "x*0.5*(1+erf(x/sqrt2)): nn.GELU, saves its input; a TensorIterator op, in its input's layout"},
    // at::group_norm runs native_group_norm on input.contiguous() on CUDA: a strided input
    // (timm's poolformerv2: channels-last after its LayerNorm2d downsampling, kept so by
    // every residual add) is copied, and the copy is what backward keeps (op-probe and
    // traces17/27: two input-sized tensors per GroupNorm, 4% under in fp32 and bf16).
    {.op = "GroupNorm", .family = "fused", .shape = shape_same, .autocast = Autocast::Fp32,
     .saved_inputs = bits({0, 1}), .saved_extra = group_norm_stats, .grads = "AAA", .contiguous_inputs = true,
     .domain = "memest",
     .note = "Reshape+InstanceNormalization+Reshape(+Mul+Add): F.group_norm, one kernel keeping input (a "
             "contiguous copy of a strided one), weight and fp32 mean/rstd per (n, group)"},
    {.op = "Rsqrt", .family = "fused", .shape = shape_same, .autocast = Autocast::Fp32, .saved_outputs = bits({0}),
     .grads = "A", .layout = Layout::Elementwise, .domain = "memest",
     .note = "Div(1, Sqrt(x)): torch.rsqrt as the legacy exporter writes it; fp32 under autocast, keeps its result"},
    {.op = "SliceAssign", .family = "fused", .shape = shape_same, .autocast = Autocast::Promote, .grads = "AA",
     .domain = "memest",
     .note = "ScatterND of indices made from shapes alone: x[slices] = y through a view; no indices, nothing saved"},
    {.op = "Silu", .family = "fused", .shape = shape_same, .autocast = Autocast::Keep, .saved_inputs = bits({0}),
     .grads = "A", .layout = Layout::Elementwise, .domain = "memest",
     .note = "x*sigmoid(x): nn.SiLU, saves its input; a TensorIterator op, in its input's layout"},
    // cross_entropy calls log_softmax(x, dim, x.scalar_type()): autocast's
    // fp32_set_opt_dtype policy respects an explicit dtype, so it runs in the logits'
    // dtype, and nll_loss (fp32 list) casts that result to fp32 and saves the copy. GPU
    // trace of gpt2_hf at batch 137 under fp16 (cases-h200-torch2.11.jsonl): fp16
    // logits, an fp16 log_softmax, an fp32 copy; in backward fp32 dlogp, its fp16 cast,
    // then log_softmax's fp16 gradient.
    {.op = "LogSoftmax", .family = "loss", .shape = shape_same, .autocast = Autocast::Keep,
     .saved_outputs = bits({0}), .grads = "A", .domain = "memest",
     .note = "cross_entropy's log_softmax: in the logits' dtype, even under autocast; saves its result"},
    {.op = "NllLoss", .family = "loss", .shape = shape_scalar, .autocast = Autocast::Fp32,
     .saved_inputs = bits({0, 1}), .saved_extra = nll_extra, .grads = "AN", .domain = "memest",
     .note = "nll_loss: fp32 (an fp32 copy of half log-probabilities); saves input, target and total_weight"},
    {.op = "MseLoss", .family = "loss", .shape = shape_scalar, .autocast = Autocast::Fp32,
     .saved_inputs = bits({0, 1}), .output_keeps = mse_keeps, .grads = "AN", .domain = "memest",
     .note = "mse_loss: fp32, saves input and target; an fp32 buffer of the input's size lives with the loss"},
    {.op = "SumLoss", .family = "loss", .shape = shape_scalar, .autocast = Autocast::Fp32, .grads = "A",
     .domain = "memest", .note = "out.float().sum(): the float copy is not kept"},
};

}  // namespace

OpTable fused_ops() { return {kOps, sizeof(kOps) / sizeof(kOps[0])}; }

}  // namespace memest
