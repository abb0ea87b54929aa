// Resampling: Resize and Upsample (interpolate), GridSample, DepthToSpace and
// SpaceToDepth (pixel_shuffle). Output sizes from scales or sizes, symbolic where the
// scale is whole.
#include <cmath>

#include "estimator/ops/registry.h"
#include "estimator/ops/shape_util.h"

namespace memest {
namespace {

// Whether input i is present and not an empty placeholder (exporters pass an
// empty scales tensor when they give sizes).
bool given(const ShapeContext& ctx, size_t i) {
  return ctx.has_input(i) && product(ctx.in_shape(i)) != Expr(0);
}

// floor(d * scale): exact for a constant d; for a symbolic one only when the scale is whole.
std::optional<Expr> scaled(const Expr& d, double scale) {
  if (auto c = d.as_const()) {
    const double out = std::floor(static_cast<double>(*c) * scale);
    if (!(out >= 0 && out < 9e18)) return std::nullopt;
    return Expr(static_cast<int64_t>(out));
  }
  if (scale == std::floor(scale) && scale > 0 && scale < 1e9) return d * Expr(static_cast<int64_t>(scale));
  return std::nullopt;
}

// Resampling over all axes or `axes` (opset 18): sizes (input 3) when given,
// else scales (the attribute, or input `scales_at`).
void resample(ShapeContext& ctx, size_t scales_at, bool has_sizes) {
  const Shape& x = ctx.in_shape(0);
  std::vector<int64_t> axes = ctx.attr_ints("axes");
  if (axes.empty()) {
    for (size_t i = 0; i < x.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  axes = norm_axes(ctx, axes, x.size());
  Shape out = x;
  if (has_sizes && given(ctx, 3)) {
    const auto* sizes = ctx.in_value(3);
    if (!sizes) return;
    if (sizes->size() != axes.size()) ctx.fail("sizes has " + std::to_string(sizes->size()) + " entries");
    const std::string policy = ctx.attr_string("keep_aspect_ratio_policy", "stretch");
    if (policy == "stretch") {
      for (size_t i = 0; i < axes.size(); ++i) out[axes[i]] = (*sizes)[i];
    } else {
      // One scale for every axis: the smallest (not_larger) or largest (not_smaller) ratio.
      const bool smallest = policy == "not_larger";
      double scale = smallest ? INFINITY : 0;
      for (size_t i = 0; i < axes.size(); ++i) {
        auto s = (*sizes)[i].as_const(), d = x[axes[i]].as_const();
        if (!s || !d || *d == 0) return;
        const double r = static_cast<double>(*s) / static_cast<double>(*d);
        scale = smallest ? std::min(scale, r) : std::max(scale, r);
      }
      for (int64_t a : axes) {
        const double d = std::round(static_cast<double>(*x[a].as_const()) * scale);
        if (!(d >= 0 && d < 9e18)) ctx.fail("sizes give an unusable scale");
        out[a] = Expr(static_cast<int64_t>(d));
      }
    }
  } else {
    std::optional<std::vector<double>> scales;
    if (const Attribute* a = ctx.node().attr("scales")) {
      scales = a->kind == Attribute::Floats ? a->extra().floats : std::vector<double>(a->ints.begin(), a->ints.end());
    } else {
      scales = const_floats(ctx, scales_at);
    }
    if (!scales) return;
    if (scales->size() != axes.size()) ctx.fail("scales has " + std::to_string(scales->size()) + " entries");
    for (size_t i = 0; i < axes.size(); ++i) {
      auto d = scaled(x[axes[i]], (*scales)[i]);
      if (!d) return;
      out[axes[i]] = *d;
    }
  }
  ctx.set_output(0, ctx.in_dtype(0), out);
}

// Resize takes X, scales at opset 10; X, roi, scales, sizes from 11.
void resize(ShapeContext& ctx) { resample(ctx, ctx.opset() < 11 ? 1 : 2, ctx.opset() >= 11); }
// Upsample takes scales as an attribute (opset 7) or input 1 (9).
void upsample(ShapeContext& ctx) { resample(ctx, 1, false); }

// grid [N, H_out, W_out(, D_out), rank-2] gives the output's spatial dims.
void grid_sample(ShapeContext& ctx) {
  const Shape& x = ctx.in_shape(0);
  const Shape& grid = ctx.in_shape(1);
  if (x.size() < 3 || grid.size() != x.size()) {
    ctx.fail("input " + shape_str(x) + " and grid " + shape_str(grid) + " do not match");
  }
  Shape out = {x[0], x[1]};
  out.insert(out.end(), grid.begin() + 1, grid.end() - 1);
  ctx.set_output(0, ctx.in_dtype(0), out);
}

int64_t blocksize(const ShapeContext& ctx) {
  if (ctx.rank(0) != 4) ctx.fail("input must be [N, C, H, W], got " + shape_str(ctx.in_shape(0)));
  const int64_t b = ctx.attr_int("blocksize", 0);
  if (b <= 0) ctx.fail("blocksize must be positive");
  return b;
}

void depth_to_space(ShapeContext& ctx) {
  const int64_t b = blocksize(ctx);
  const Shape& x = ctx.in_shape(0);
  auto c = x[1].div_exact(Expr(checked_mul(b, b)));
  if (!c) ctx.fail(x[1].str() + " channels do not divide by blocksize^2");
  ctx.set_output(0, ctx.in_dtype(0), {x[0], *c, x[2] * Expr(b), x[3] * Expr(b)});
}

void space_to_depth(ShapeContext& ctx) {
  const int64_t b = blocksize(ctx);
  const Shape& x = ctx.in_shape(0);
  auto h = x[2].div_exact(Expr(b)), w = x[3].div_exact(Expr(b));
  if (!h || !w) ctx.fail("spatial dims " + shape_str(x) + " do not divide by blocksize " + std::to_string(b));
  ctx.set_output(0, ctx.in_dtype(0), {x[0], x[1] * Expr(checked_mul(b, b)), *h, *w});
}

constexpr const char* kFamily = "resample";

const OpInfo kOps[] = {
    {.op = "Resize", .family = kFamily, .shape = resize, .autocast = Autocast::Fp32, .grads = "ANNN",
     .layout = Layout::Conv, .note = "interpolate: nothing kept; autocast runs it in fp32"},
    {.op = "Upsample", .family = kFamily, .shape = upsample, .autocast = Autocast::Fp32, .grads = "AN",
     .layout = Layout::Conv, .note = "Resize before opset 10"},
    {.op = "Interpolate", .family = kFamily, .autocast = Autocast::Fp32, .grads = "A", .layout = Layout::Conv,
     .domain = "memest",
     .note = "an upsampling module the dynamo exporter decomposed (fuse.cc): one kernel, fp32 under autocast, nothing kept"},
    {.op = "GridSample", .family = kFamily, .shape = grid_sample, .autocast = Autocast::Promote,
     .saved_inputs = bits({0, 1}), .grads = "AA", .note = "grid_sampler: keeps input and grid"},
    {.op = "DepthToSpace", .family = kFamily, .shape = depth_to_space, .grads = "A",
     .note = "pixel_shuffle: reshape, permute and a copy"},
    {.op = "SpaceToDepth", .family = kFamily, .shape = space_to_depth, .grads = "A",
     .note = "pixel_unshuffle: reshape, permute and a copy"},
};

}  // namespace

OpTable resample_ops() { return {kOps, sizeof(kOps) / sizeof(kOps[0])}; }

}  // namespace memest
