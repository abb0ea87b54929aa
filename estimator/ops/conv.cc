// Convolutions (1D/2D/3D, grouped, transposed). Output sizes come from the one
// sliding-window helper that pooling shares (shape_util's window_shape).
#include "estimator/ops/registry.h"
#include "estimator/ops/shape_util.h"

namespace memest {
namespace {

// Input [N, C, D1..Dn] and weight [M, C/group, k1..kn] (Conv) or
// [C, M/group, k1..kn] (ConvTranspose): checks ranks and returns the kernel.
std::optional<std::vector<int64_t>> kernel_of(const ShapeContext& ctx) {
  const Shape& x = ctx.in_shape(0);
  const Shape& w = ctx.in_shape(1);
  if (x.size() < 3) ctx.fail("input " + shape_str(x) + " needs a batch, a channel and a spatial axis");
  if (w.size() != x.size()) ctx.fail("weight " + shape_str(w) + " and input " + shape_str(x) + " differ in rank");
  if (ctx.has_attr("kernel_shape")) return ctx.attr_ints("kernel_shape");
  std::vector<int64_t> k;
  for (size_t i = 2; i < w.size(); ++i) {
    auto c = w[i].as_const();
    if (!c) return std::nullopt;
    k.push_back(*c);
  }
  return k;
}

int64_t group_of(const ShapeContext& ctx) {
  int64_t g = ctx.attr_int("group", 1);
  if (g <= 0) ctx.fail("group must be positive");
  return g;
}

void conv(ShapeContext& ctx) {
  auto kernel = kernel_of(ctx);
  if (!kernel) return;
  const Shape& x = ctx.in_shape(0);
  const Shape& w = ctx.in_shape(1);
  const int64_t group = group_of(ctx);
  auto c = x[1].as_const(), wc = w[1].as_const();
  if (c && wc && *c != checked_mul(*wc, group)) {
    ctx.fail("input has " + std::to_string(*c) + " channels but weight " + shape_str(w) + " with group " +
             std::to_string(group) + " expects " + std::to_string(checked_mul(*wc, group)));
  }
  auto spatial = window_shape(ctx, Shape(x.begin() + 2, x.end()), *kernel, false);
  if (!spatial) return;
  Shape out = {x[0], w[0]};
  out.insert(out.end(), spatial->begin(), spatial->end());
  ctx.set_output(0, ctx.in_dtype(0), out);
}

// out = stride*(in-1) + output_padding + dilation*(k-1) + 1 - pad_begin - pad_end,
// or in*stride under SAME padding, or output_shape when the attribute gives it.
void conv_transpose(ShapeContext& ctx) {
  auto kernel = kernel_of(ctx);
  if (!kernel) return;
  const Shape& x = ctx.in_shape(0);
  const Shape& w = ctx.in_shape(1);
  const size_t n = x.size() - 2;
  if (kernel->size() != n) ctx.fail("kernel_shape has " + std::to_string(kernel->size()) + " values");
  Shape out = {x[0], w[1] * Expr(group_of(ctx))};
  if (ctx.has_attr("output_shape")) {
    auto os = ctx.attr_ints("output_shape");
    if (os.size() < n) ctx.fail("output_shape has fewer values than spatial axes");
    for (size_t i = os.size() - n; i < os.size(); ++i) out.push_back(Expr(os[i]));
    ctx.set_output(0, ctx.in_dtype(0), out);
    return;
  }
  const auto strides = ctx.attr_ints("strides", std::vector<int64_t>(n, 1));
  const auto dilations = ctx.attr_ints("dilations", std::vector<int64_t>(n, 1));
  const auto out_pad = ctx.attr_ints("output_padding", std::vector<int64_t>(n, 0));
  auto pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  const std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  if (strides.size() != n || dilations.size() != n || out_pad.size() != n || pads.size() != 2 * n) {
    ctx.fail("strides, dilations, output_padding and pads must match the " + std::to_string(n) + " spatial axes");
  }
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (auto_pad == "VALID") pads.assign(2 * n, 0);
  for (size_t i = 0; i < n; ++i) {
    if ((*kernel)[i] <= 0 || strides[i] <= 0 || dilations[i] <= 0) {
      ctx.fail("kernel_shape, strides and dilations must be positive");
    }
    const Expr& in = x[i + 2];
    if (same) {
      out.push_back(in * Expr(strides[i]));
      continue;
    }
    const Expr extent = Expr(dilations[i]) * Expr((*kernel)[i] - 1) + Expr(1);
    out.push_back(Expr(strides[i]) * (in - Expr(1)) + Expr(out_pad[i]) + extent - Expr(pads[i]) - Expr(pads[i + n]));
  }
  ctx.set_output(0, ctx.in_dtype(0), out);
}

constexpr const char* kFamily = "conv";

const OpInfo kOps[] = {
    {.op = "Conv", .family = kFamily, .shape = conv, .autocast = Autocast::Lower, .saved_if_other = bits({0, 1}),
     .grads = "AAA", .note = "convolution; input kept for the weight's gradient and weight for the input's (cuDNN)"},
    {.op = "ConvTranspose", .family = kFamily, .shape = conv_transpose, .autocast = Autocast::Lower,
     .saved_if_other = bits({0, 1}), .grads = "AAA", .note = "transposed convolution; saves like Conv"},
};

}  // namespace

OpTable conv_ops() { return {kOps, sizeof(kOps) / sizeof(kOps[0])}; }

}  // namespace memest
