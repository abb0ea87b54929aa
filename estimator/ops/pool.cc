// Pooling: windowed (MaxPool, AveragePool, LpPool), global, and MaxUnpool. Window
// sizes share the conv helper; ceil_mode follows PyTorch's last-window rule.
#include "estimator/ops/registry.h"
#include "estimator/ops/shape_util.h"

namespace memest {
namespace {

void check_rank(const ShapeContext& ctx) {
  if (ctx.rank(0) < 3) ctx.fail("input " + shape_str(ctx.in_shape(0)) + " needs a batch, a channel and a spatial axis");
}

// Output 1 of MaxPool, when present, holds int64 indices shaped like output 0.
void windowed(ShapeContext& ctx) {
  check_rank(ctx);
  if (!ctx.has_attr("kernel_shape")) ctx.fail("missing attribute 'kernel_shape'");
  const Shape& x = ctx.in_shape(0);
  auto spatial = window_shape(ctx, Shape(x.begin() + 2, x.end()), ctx.attr_ints("kernel_shape"),
                              ctx.attr_int("ceil_mode", 0) != 0);
  if (!spatial) return;
  Shape out = {x[0], x[1]};
  out.insert(out.end(), spatial->begin(), spatial->end());
  ctx.set_output(0, ctx.in_dtype(0), out);
  ctx.set_output(1, DType::I64, out);
}

void global(ShapeContext& ctx) {
  check_rank(ctx);
  Shape out = ctx.in_shape(0);
  for (size_t i = 2; i < out.size(); ++i) out[i] = Expr(1);
  ctx.set_output(0, ctx.in_dtype(0), out);
}

// Inverse of a strided window: (in-1)*stride + k - pads, or output_shape (input 2).
void max_unpool(ShapeContext& ctx) {
  check_rank(ctx);
  const Shape& x = ctx.in_shape(0);
  const size_t n = x.size() - 2;
  if (ctx.has_input(2)) {
    const auto* v = ctx.in_value(2);
    if (!v) return;
    ctx.set_output(0, ctx.in_dtype(0), *v);
    return;
  }
  const auto kernel = ctx.attr_ints("kernel_shape");
  const auto strides = ctx.attr_ints("strides", std::vector<int64_t>(n, 1));
  const auto pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  if (kernel.size() != n || strides.size() != n || pads.size() != 2 * n) {
    ctx.fail("kernel_shape, strides and pads must match the " + std::to_string(n) + " spatial axes");
  }
  Shape out = {x[0], x[1]};
  for (size_t i = 0; i < n; ++i) {
    out.push_back((x[i + 2] - Expr(1)) * Expr(strides[i]) + Expr(kernel[i]) - Expr(pads[i]) - Expr(pads[i + n]));
  }
  ctx.set_output(0, ctx.in_dtype(0), out);
}

// max_pool2d_with_indices keeps int64 argmax indices, one per output element,
// whether or not the ONNX graph exposes them as an output.
std::vector<SavedExtra> pool_indices(const Graph& g, const Node& n) {
  const Shape* out = output_shape(g, n, 0);
  if (!out) return {};
  return {{product(*out), DType::I64, "max-pool indices"}};
}

// lp_pool is (sign(a) * relu(|a|) * k).pow(1/p) with a = avg_pool(x.pow(p)):
// autograd keeps x^p (input-sized) and five output-sized intermediates.
std::vector<SavedExtra> lp_pool_intermediates(const Graph& g, const Node& n) {
  const Shape* x = input_shape(g, n, 0);
  const Shape* out = output_shape(g, n, 0);
  if (!x || !out) return {};
  const DType t = g.tensors[n.inputs[0]].dtype;
  return {{product(*x), t, "x^p"}, {product(*out) * Expr(5), t, "lp-pool intermediates"}};
}

// adaptive_avg_pool(x, 1) is x.mean over every spatial dim (AdaptiveAveragePooling.cpp).
std::optional<std::vector<int64_t>> spatial_axes(const Graph& g, const Node& n) {
  const Shape* x = input_shape(g, n, 0);
  if (!x) return std::nullopt;
  std::vector<int64_t> axes;
  for (size_t i = 2; i < x->size(); ++i) axes.push_back(static_cast<int64_t>(i));
  return axes;
}

constexpr const char* kFamily = "pool";

const OpInfo kOps[] = {
    {.op = "MaxPool", .family = kFamily, .shape = windowed, .saved_inputs = bits({0}), .saved_extra = pool_indices,
     .extras_without_grad = true, .grads = "A", .layout = Layout::Conv, .grad_in_input_format = true,
     .note = "keeps its input and int64 indices of the output's size (made even without a gradient)"},
    {.op = "AveragePool", .family = kFamily, .shape = windowed, .saved_inputs = bits({0}), .grads = "A",
     .layout = Layout::Conv2d, .grad_in_input_format = true,
     .note = "keeps its input (avg_pool backward reads its shape and padding)"},
    {.op = "LpPool", .family = kFamily, .shape = windowed, .saved_inputs = bits({0}),
     .saved_extra = lp_pool_intermediates, .grads = "A",
     .note = "keeps its input, x^p and five output-sized intermediates (measured)"},
    {.op = "GlobalAveragePool", .family = kFamily, .shape = global, .grads = "A", .reduced_axes = spatial_axes,
     .note = "adaptive_avg_pool(1) runs as a mean: nothing kept"},
    {.op = "GlobalMaxPool", .family = kFamily, .shape = global, .saved_inputs = bits({0}), .saved_extra = pool_indices,
     .extras_without_grad = true, .grads = "A", .note = "adaptive_max_pool(1): keeps input and indices"},
    {.op = "GlobalLpPool", .family = kFamily, .shape = global, .saved_inputs = bits({0}),
     .saved_extra = lp_pool_intermediates, .grads = "A", .note = "lp_pool over the whole plane"},
    {.op = "MaxUnpool", .family = kFamily, .shape = max_unpool, .saved_inputs = bits({1}), .grads = "ANN",
     .note = "scatter by indices; backward gathers by them"},
};

}  // namespace

OpTable pool_ops() { return {kOps, sizeof(kOps) / sizeof(kOps[0])}; }

}  // namespace memest
