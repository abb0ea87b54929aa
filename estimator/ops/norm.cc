// Normalisations and Dropout: shapes follow the input; the interesting part is
// the statistics and masks autograd keeps, which live in saved_extra.
#include <cstring>

#include <optional>

#include "estimator/ops/registry.h"
#include "estimator/ops/shape_util.h"

namespace memest {
namespace {

void same(ShapeContext& ctx) { ctx.set_output(0, ctx.in_dtype(0), ctx.in_shape(0)); }

void check_channels(const ShapeContext& ctx) {
  if (ctx.rank(0) < 2) ctx.fail("input " + shape_str(ctx.in_shape(0)) + " has no channel axis");
}

// Outputs beyond Y are per-channel statistics: running mean/var (training_mode=1,
// opset 14+) or mean, var, saved mean, saved var (opsets 7-13).
void batch_norm(ShapeContext& ctx) {
  check_channels(ctx);
  same(ctx);
  const Expr& c = ctx.in_shape(0)[1];
  const DType stats = ctx.has_input(3) ? ctx.in_dtype(3) : ctx.in_dtype(0);
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_output(i, stats, {c});
}

int64_t layer_norm_axis(const ShapeContext& ctx) { return norm_axis(ctx, ctx.attr_int("axis", -1), ctx.rank(0)); }

// Mean and InvStdDev keep the leading axes and put 1 in each normalised one.
void layer_norm(ShapeContext& ctx) {
  same(ctx);
  const int64_t axis = layer_norm_axis(ctx);
  Shape stats = ctx.in_shape(0);
  for (size_t i = static_cast<size_t>(axis); i < stats.size(); ++i) stats[i] = Expr(1);
  const DType stash = dtype_from_onnx(static_cast<int>(ctx.attr_int("stash_type", 1)));
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_output(i, stash, stats);
}

void group_norm(ShapeContext& ctx) {
  check_channels(ctx);
  const int64_t groups = ctx.attr_int("num_groups", 0);
  if (groups <= 0) ctx.fail("num_groups must be positive");
  auto c = ctx.in_shape(0)[1].as_const();
  if (c && *c % groups != 0) {
    ctx.fail(std::to_string(*c) + " channels do not split into " + std::to_string(groups) + " groups");
  }
  same(ctx);
}

void lp_norm(ShapeContext& ctx) {
  if (ctx.rank(0) > 0) norm_axis(ctx, ctx.attr_int("axis", -1), ctx.rank(0));
  same(ctx);
}

void dropout(ShapeContext& ctx) {
  same(ctx);
  ctx.set_output(1, DType::Bool, ctx.in_shape(0));
}

// ---- What backward keeps ---------------------------------------------------------

SavedExtra stat(Expr numel, const char* what) { return {std::move(numel), DType::F32, what}; }

// cudnn/native batch_norm in training keeps save_mean and save_invstd, fp32, per channel.
std::vector<SavedExtra> batch_norm_stats(const Graph& g, const Node& n) {
  const Shape* x = input_shape(g, n, 0);
  if (!x || x->size() < 2) return {};
  return {stat((*x)[1], "batch-norm save_mean"), stat((*x)[1], "batch-norm save_invstd")};
}

// native_layer_norm keeps mean and rstd, fp32, one per normalised row.
std::vector<SavedExtra> layer_norm_stats(const Graph& g, const Node& n) {
  const Shape* x = input_shape(g, n, 0);
  if (!x || x->empty()) return {};
  int64_t axis = n.attr_int("axis", -1);
  if (axis < 0) axis += static_cast<int64_t>(x->size());
  if (axis < 0 || axis > static_cast<int64_t>(x->size())) return {};
  const Expr rows = product(Shape(x->begin(), x->begin() + axis));
  return {stat(rows, "layer-norm mean"), stat(rows, "layer-norm rstd")};
}

// ---- Contiguous copies -------------------------------------------------------------
// The CUDA layer norm reads rows of N contiguous elements. layer_norm_cuda takes
// `X = input.expect_contiguous()`, and layer_norm_backward_cuda does it again on the
// saved input before dX = empty_like(X), then LayerNormBackwardKernelImpl passes
// `dY.contiguous()` (aten/src/ATen/native/cuda/layer_norm_kernel.cu). A LayerNorm over a
// permuted view (the channels-first LN of ConvNeXt-style blocks, `ln(x.movedim(1, -1))
// .movedim(-1, 1)`) therefore copies its input in forward, and in backward holds a copy
// of the input and one of the gradient (the permute's backward hands it a permuted view)
// beside dX. Autograd saves the view, not the copy. Measured: rnd1_0 (validate/randnet.py
// seed 1; a reflect-padded 1x1 conv, then such a LayerNorm over [32, 24, 256, 256] fp32)
// peaked in backward 151 MB above memest's estimate without them.
// The forward copy is real too, but taken before the output (memest's forward workspace
// comes after it) and freed on return, never at a peak in the measured sets; modelled in
// the wrong order it moved the zoo's convnext_tiny reserved bytes from exact to -2.6%, so
// only backward's copies are modelled (layer_norm_input_copy is their first part).

// Whether tensor t is a view with permuted axes (a Transpose whose perm moves an axis).
bool permuted(const Graph& g, int t) {
  if (t < 0 || g.tensors[t].producer < 0) return false;
  const Node& p = g.nodes[g.tensors[t].producer];
  if (p.op != "Transpose") return false;
  const auto perm = p.attr_ints("perm");
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return true;
  }
  return perm.empty();  // no perm: the axes reversed
}

// Bytes of tensor t in dtype d, or 0 when its shape is unknown.
Expr bytes_in(const Graph& g, int t, DType d) {
  if (t < 0 || !g.tensors[t].shape) return Expr(0);
  return product(*g.tensors[t].shape) * Expr(dtype_size(d));
}

Expr layer_norm_input_copy(const Graph& g, const Node& n, DType run, bool, bool) {
  return n.has_input(0) && permuted(g, n.inputs[0]) ? bytes_in(g, n.inputs[0], run) : Expr(0);
}

// Whether the gradient reaching a LayerNorm's output is a strided view. Read through a
// permute back (movedim), it arrives as that permute's backward: a permuted view of the
// gradient of the permute's output, strided unless that gradient is itself in permuted
// (channels-last) order. Ops that take a channels-last input's memory format
// (suggest_memory_format) for their input's gradient hand one back in that order:
// cuDNN's 2-D/3-D convolutions (a 1-D one's input is made contiguous first), max_pool
// and avg_pool 2-D (avg_pool3d's CUDA kernel is contiguous only); elementwise backward kernels in between take their first operand's,
// the gradient's, order (TensorIterator), and dropout's mask is the input's layout.
// Anything else (mean's backward divides an expanded gradient into a fresh contiguous
// one, a linear layer) gives a contiguous gradient, hence a strided view here. Measured
// (validate/randnet.py): rnd1_36 and rnd3_17 (LayerNorm, permute, sigmoid/tanh, max/avg
// pool 3-D/2-D) and rnd1_21 (then leaky ReLU, dropout, Conv3d) show no gradient copy;
// rnd1_0 (then hardtanh, dropout, mean) and rnd2_46 (then hardtanh, avg_pool3d) need it.
bool keeps_channels_last(const Graph& g, const Node& c) {
  const int x = c.inputs.empty() ? -1 : c.inputs[0];
  const size_t rank = x >= 0 && g.tensors[x].shape ? g.tensors[x].shape->size() : 0;
  // at::_convolution makes a 1-D convolution's input contiguous before viewing it as 2-D.
  if (c.op == "Conv" || c.op == "ConvTranspose") return rank >= 4;
  if (c.op == "MaxPool") return true;
  return c.op == "AveragePool" && rank != 5;
}

bool gradient_arrives_strided(const Graph& g, const Node& ln) {
  if (ln.outputs.empty() || ln.outputs[0] < 0) return false;
  const Tensor& y = g.tensors[ln.outputs[0]];
  if (y.consumers.size() != 1 || y.graph_output) return false;
  const Node& back = g.nodes[y.consumers[0]];
  if (back.outputs.empty() || !permuted(g, back.outputs[0])) return false;
  int t = back.outputs[0];
  for (int hops = 0; hops < 16; ++hops) {
    const Tensor& cur = g.tensors[t];
    if (cur.consumers.size() != 1 || cur.graph_output) return true;
    const Node& c = g.nodes[cur.consumers[0]];
    if (keeps_channels_last(g, c)) return false;
    const bool elementwise = c.info && (std::strcmp(c.info->family, "activation") == 0 ||
                                        std::strcmp(c.info->family, "elementwise") == 0 || c.op == "Dropout");
    if (!elementwise || c.inputs.empty() || c.inputs[0] != t || c.outputs.empty() || c.outputs[0] < 0) return true;
    t = c.outputs[0];
  }
  return true;
}

// The input's copy, and the gradient's when it arrives strided.
Workspace layer_norm_backward_copies(const Graph& g, const Node& n, DType run, bool, bool) {
  Expr bytes = layer_norm_input_copy(g, n, run, false, false);
  return gradient_arrives_strided(g, n) ? bytes + bytes_in(g, n.outputs[0], run) : bytes;
}

// instance_norm runs batch_norm over a [1, N*C, ...] view with the weight repeated
// N times: it keeps that repeated weight and fp32 statistics per (n, c).
std::vector<SavedExtra> instance_norm_stats(const Graph& g, const Node& n) {
  const Shape* x = input_shape(g, n, 0);
  if (!x || x->size() < 2) return {};
  const Expr nc = (*x)[0] * (*x)[1];
  const DType w = n.has_input(1) ? g.tensors[n.inputs[1]].dtype : g.tensors[n.inputs[0]].dtype;
  return {{nc, w, "instance-norm repeated weight"}, stat(nc, "instance-norm save_mean"),
          stat(nc, "instance-norm save_invstd")};
}

// native_group_norm keeps mean and rstd per (n, group).
std::vector<SavedExtra> group_norm_stats(const Graph& g, const Node& n) {
  const Shape* x = input_shape(g, n, 0);
  if (!x || x->empty()) return {};
  const Expr ng = (*x)[0] * Expr(n.attr_int("num_groups", 1));
  return {stat(ng, "group-norm mean"), stat(ng, "group-norm rstd")};
}

// rms_norm keeps rstd per normalised row.
std::vector<SavedExtra> rms_norm_stats(const Graph& g, const Node& n) {
  auto stats = layer_norm_stats(g, n);
  if (stats.empty()) return {};
  return {stat(stats[0].numel, "rms-norm rstd")};
}

// F.rms_norm's composite (layer_norm.cpp rms_norm_symint) when the fused kernel refuses
// a half input with a weight of another dtype: the input upcast to fp32 and the fp32
// normalised rows stay, with rstd. `validate norm-probe` (norm-probe-h200-torch2.11
// .jsonl): 2 x the input's fp32 bytes + 4 B a row, bf16 and fp16, autocast or not.
std::vector<SavedExtra> rms_norm_upcast_keeps(const Graph& g, const Node& n) {
  const Shape* x = input_shape(g, n, 0);
  auto stats = layer_norm_stats(g, n);
  if (!x || stats.empty()) return {};
  return {{product(*x), DType::F32, "rms-norm input upcast to fp32"},
          {product(*x), DType::F32, "rms-norm normalised rows, fp32"},
          stat(stats[0].numel, "rms-norm rstd")};
}

// rms_norm is on no autocast list, so it runs in its input's dtype. CUDA runs it as one
// kernel (aten._fused_rms_norm) unless the input is half and the weight is not
// ("Mismatch dtype between input and weight ... Cannot dispatch to fused
// implementation"): the norm-probe's 56 configurations, grad_fn FusedRmsNormBackward0
// or the composite's ToCopyBackward0.
const OpInfo* rms_norm_kernel(const Graph& g, const Node& n, const Dispatch& d) {
  static const OpInfo* const upcast = find_op("memest", "RMSNormalizationUpcast");
  if (d.run == DType::F32 || !n.has_input(1)) return nullptr;
  return g.tensors[n.inputs[1]].dtype != d.run ? upcast : nullptr;
}

// F.normalize divides by norm(x).clamp_min(eps): the norm and its clamped copy
// stay, one value per vector along the axis.
std::vector<SavedExtra> lp_norm_stats(const Graph& g, const Node& n) {
  const Shape* x = input_shape(g, n, 0);
  if (!x || x->empty()) return {};
  int64_t axis = n.attr_int("axis", -1);
  if (axis < 0) axis += static_cast<int64_t>(x->size());
  if (axis < 0 || axis >= static_cast<int64_t>(x->size())) return {};
  auto rows = product(*x).div_exact((*x)[axis]);
  if (!rows) return {};
  return {stat(*rows, "norm"), stat(*rows, "clamped norm")};
}

// native_dropout keeps a bool mask of the input's size.
std::vector<SavedExtra> dropout_mask(const Graph& g, const Node& n) {
  const Shape* x = input_shape(g, n, 0);
  if (!x || !dropout_active(g, n)) return {};
  return {{product(*x), DType::Bool, "dropout mask"}};
}

// at::dropout with p = 0 (or not training) returns its input: no output, no mask, no
// autograd node (Dropout.cpp's _dropout_impl). torchvision's swin_t has MLP and
// attention dropouts of 0.0 in training: copying them made memest 7-8% over.
const OpInfo* dropout_backend(const Graph& g, const Node& n, const Dispatch&) {
  static const OpInfo* const identity = find_op("", "Identity");
  return dropout_active(g, n) ? nullptr : identity;
}

constexpr const char* kFamily = "norm";

const OpInfo kOps[] = {
    {.op = "BatchNormalization", .family = kFamily, .shape = batch_norm, .saved_inputs = bits({0, 1}),
     .saved_extra = batch_norm_stats, .grads = "AAANN", .layout = Layout::Conv, .overwritable_output = true,
     .contiguous_grad_out = true,
     .note = "training batch_norm: keeps input, weight and fp32 mean/invstd per channel; its output takes the "
             "input's suggested memory format (cudnn_batch_norm, batch_norm_cuda: empty_like(input, "
             "suggest_memory_format)): traces28 rnd22_69's channels-last ConvTranspose + BatchNorm + LeakyReLU "
             "reached the global mean channels-last (a 60,555,264 B reduction buffer)"},
    {.op = "LayerNormalization", .family = kFamily, .shape = layer_norm, .autocast = Autocast::Fp32,
     .saved_inputs = bits({0, 1}), .saved_extra = layer_norm_stats, .grads = "AAA", .input_grad_contiguous = true,
     .bwd_workspace = layer_norm_backward_copies,
     .scratch_is_temporary = true,
     .note = "keeps input, weight and fp32 mean/rstd per row; autocast runs it in fp32; backward copies a "
             "permuted input (and a strided gradient) contiguous, and dX is contiguous (empty_like of the "
             "contiguous X, layer_norm_kernel.cu)"},
    // at::instance_norm and at::group_norm both start from input.contiguous() (Normalization.cpp,
    // group_norm.cpp): a strided input is copied and the copy is what backward keeps.
    {.op = "InstanceNormalization", .family = kFamily, .shape = same, .saved_inputs = bits({0}),
     .saved_extra = instance_norm_stats, .grads = "AAA", .contiguous_inputs = true,
     .note = "batch_norm over N*C channels: keeps input (a contiguous copy of a strided one), the weight "
             "repeated per sample, fp32 stats"},
    {.op = "GroupNormalization", .family = kFamily, .shape = group_norm, .autocast = Autocast::Fp32,
     .saved_inputs = bits({0, 1}), .saved_extra = group_norm_stats, .grads = "AAA", .contiguous_inputs = true,
     .note = "keeps input (a contiguous copy of a strided one), weight and fp32 mean/rstd per (n, group)"},
    {.op = "RMSNormalization", .family = kFamily, .shape = layer_norm, .saved_inputs = bits({0, 1}),
     .saved_extra = rms_norm_stats, .grads = "AA", .variant = rms_norm_kernel,
     .note = "F.rms_norm: aten._fused_rms_norm keeps input, weight and rstd per row"},
    {.op = "RMSNormalizationUpcast", .family = kFamily, .shape = layer_norm, .saved_inputs = bits({1}),
     .saved_extra = rms_norm_upcast_keeps, .grads = "AA", .domain = "memest",
     .note = "F.rms_norm of a half input by an fp32 weight: the composite, fp32 copies kept"},
    {.op = "LpNormalization", .family = kFamily, .shape = lp_norm, .autocast = Autocast::Fp32,
     .saved_inputs = bits({0}), .saved_extra = lp_norm_stats, .grads = "A",
     .note = "F.normalize: keeps input and the per-vector norms"},
    {.op = "MeanVarianceNormalization", .family = kFamily, .shape = same, .saved_inputs = bits({0}), .grads = "A",
     .note = "decomposed in torch; approximated as keeping the input"},
    {.op = "Dropout", .family = kFamily, .shape = dropout, .saved_extra = dropout_mask, .extras_first = true,
     .grads = "ANN", .layout = Layout::Elementwise, .variant = dropout_backend,
     .note = "keeps a bool mask of the input's size when training with ratio > 0; else returns its input"},
};

}  // namespace

// The ratio is an attribute before opset 12 and input 1 after (0.5 when absent); input 2
// says training_mode. When neither is known, a mask output means the graph was exported
// in training mode.
std::optional<double> dropout_ratio(const Graph& g, const Node& n) {
  if (g.opset < 12) return n.attr_float("ratio", 0.5);
  if (!n.has_input(1)) return 0.5;
  if (const auto& f = g.tensors[n.inputs[1]].fvalue; f && f->size() == 1) return (*f)[0];
  return std::nullopt;
}

bool dropout_active(const Graph& g, const Node& n) {
  const std::optional<double> ratio = dropout_ratio(g, n);
  if (ratio && *ratio <= 0) return false;
  if (n.has_input(2)) {
    const Tensor& t = g.tensors[n.inputs[2]];
    if (t.value && t.value->size() == 1 && (*t.value)[0].is_const()) return !(*t.value)[0].is_zero();
    if (t.fvalue && t.fvalue->size() == 1) return (*t.fvalue)[0] != 0;
  }
  return n.outputs.size() > 1 && n.outputs[1] >= 0;
}

OpTable norm_ops() { return {kOps, sizeof(kOps) / sizeof(kOps[0])}; }

}  // namespace memest
