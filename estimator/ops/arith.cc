// Tensor sources: shape arithmetic (Shape, Size, Constant, ConstantOfShape,
// Range), whose outputs carry known contents for the rules downstream to fold,
// and generated tensors (EyeLike, random). None has a gradient.
#include <algorithm>
#include <cmath>

#include "estimator/ops/registry.h"
#include "estimator/ops/shape_util.h"

namespace memest {
namespace {

// Dims [start, end) of the input (start/end from opset 15, clamped like Slice).
void shape_rule(ShapeContext& ctx) {
  const Shape& x = ctx.in_shape(0);
  const int64_t r = static_cast<int64_t>(x.size());
  auto clamp = [r](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + r : v, 0, r); };
  const int64_t start = clamp(ctx.attr_int("start", 0));
  const int64_t end = std::max(start, clamp(ctx.attr_int("end", r)));
  ctx.set_output(0, DType::I64, {Expr(end - start)});
  ctx.set_value(0, std::vector<Expr>(x.begin() + start, x.begin() + end));
}

void size_rule(ShapeContext& ctx) {
  ctx.set_output(0, DType::I64, {});
  ctx.set_value(0, {product(ctx.in_shape(0))});
}

std::vector<Expr> exprs(const std::vector<int64_t>& v) { return std::vector<Expr>(v.begin(), v.end()); }

// Records a tensor attribute's contents on output 0: integers as the value,
// floats as the float value.
void set_contents(ShapeContext& ctx, const Attribute& a) {
  if (a.extra().t_ints) ctx.set_value(0, exprs(*a.extra().t_ints));
  if (a.extra().t_floats) ctx.set_fvalue(0, *a.extra().t_floats);
}

void constant(ShapeContext& ctx) {
  const Node& n = ctx.node();
  if (const Attribute* a = n.attr("value")) {
    if (a->kind != Attribute::Tensor) ctx.fail("attribute 'value' is not a tensor");
    ctx.set_output(0, a->extra().t_dtype, exprs(a->extra().t_dims));
    set_contents(ctx, *a);
  } else if (const Attribute* i = n.attr("value_int")) {
    ctx.set_output(0, DType::I64, {});
    ctx.set_value(0, {Expr(i->i)});
  } else if (const Attribute* is = n.attr("value_ints")) {
    ctx.set_output(0, DType::I64, {Expr(static_cast<int64_t>(is->ints.size()))});
    ctx.set_value(0, exprs(is->ints));
  } else if (n.attr("value_float")) {
    ctx.set_output(0, DType::F32, {});
    ctx.set_fvalue(0, {ctx.attr_float("value_float", 0)});
  } else if (const Attribute* fs = n.attr("value_floats")) {
    ctx.set_output(0, DType::F32, {Expr(static_cast<int64_t>(fs->extra().floats.size()))});
    ctx.set_fvalue(0, fs->extra().floats);
  } else if (n.attr("value_string")) {
    ctx.set_output(0, DType::String, {});
  } else if (const Attribute* ss = n.attr("value_strings")) {
    ctx.set_output(0, DType::String, {Expr(static_cast<int64_t>(ss->extra().strings.size()))});
  }
  // sparse_value: left undecided, so the driver falls back to a declared shape.
}

// The shape is input 0's contents (often symbolic); the fill value's dtype the output's.
void constant_of_shape(ShapeContext& ctx) {
  const auto* dims = ctx.in_value(0);
  if (!dims) return;
  const Attribute* a = ctx.node().attr("value");
  const DType t = a && a->extra().t_dtype != DType::Undefined ? a->extra().t_dtype : DType::F32;
  ctx.set_output(0, t, *dims);
  auto n = foldable_numel(*dims);
  if (!n) return;
  if (!a) {
    ctx.set_fvalue(0, std::vector<double>(*n, 0.0));
  } else if (a->extra().t_ints && a->extra().t_ints->size() == 1) {
    ctx.set_value(0, std::vector<Expr>(*n, Expr((*a->extra().t_ints)[0])));
  } else if (a->extra().t_floats && a->extra().t_floats->size() == 1) {
    ctx.set_fvalue(0, std::vector<double>(*n, (*a->extra().t_floats)[0]));
  }
}

// max(ceil((limit - start) / delta), 0) elements; integer ranges may be symbolic
// (Range(0, seq, 1) has seq elements).
void range(ShapeContext& ctx) {
  const DType t = ctx.in_dtype(0);
  if (!is_floating(t)) {
    const auto *s = ctx.in_value(0), *l = ctx.in_value(1), *d = ctx.in_value(2);
    if (!s || !l || !d || s->size() != 1 || l->size() != 1 || d->size() != 1) return;
    auto delta = (*d)[0].as_const();
    if (!delta) return;
    if (*delta == 0) ctx.fail("delta is 0");
    const Expr span = *delta > 0 ? (*l)[0] - (*s)[0] : (*s)[0] - (*l)[0];
    auto n = ceil_div(span, *delta > 0 ? *delta : -*delta);
    if (!n) return;
    if (auto c = n->as_const(); c && *c < 0) n = Expr(0);
    ctx.set_output(0, t, {*n});
    auto count = n->as_const();
    if (count && *count <= kMaxFoldedElements) {
      std::vector<Expr> v;
      for (int64_t i = 0; i < *count; ++i) v.push_back((*s)[0] + Expr(checked_mul(i, *delta)));
      ctx.set_value(0, std::move(v));
    }
    return;
  }
  auto s = const_floats(ctx, 0), l = const_floats(ctx, 1), d = const_floats(ctx, 2);
  if (!s || !l || !d || s->size() != 1 || l->size() != 1 || d->size() != 1) return;
  if ((*d)[0] == 0) ctx.fail("delta is 0");
  const double n = std::max(std::ceil(((*l)[0] - (*s)[0]) / (*d)[0]), 0.0);
  if (!(n < 9e18)) ctx.fail("range is too long");
  const auto count = static_cast<int64_t>(n);
  ctx.set_output(0, t, {Expr(count)});
  if (count <= kMaxFoldedElements) {
    std::vector<double> v;
    for (int64_t i = 0; i < count; ++i) v.push_back((*s)[0] + static_cast<double>(i) * (*d)[0]);
    ctx.set_fvalue(0, std::move(v));
  }
}

void eye_like(ShapeContext& ctx) {
  if (ctx.rank(0) != 2) ctx.fail("input must be a matrix, got " + shape_str(ctx.in_shape(0)));
  const DType t = ctx.has_attr("dtype") ? dtype_from_onnx(static_cast<int>(ctx.attr_int("dtype", 1))) : ctx.in_dtype(0);
  ctx.set_output(0, t, ctx.in_shape(0));
}

// RandomNormalLike, RandomUniformLike, Bernoulli: the input's shape, and the
// `dtype` attribute's dtype or the input's.
void random_like(ShapeContext& ctx) {
  const DType t = ctx.has_attr("dtype") ? dtype_from_onnx(static_cast<int>(ctx.attr_int("dtype", 1))) : ctx.in_dtype(0);
  ctx.set_output(0, t, ctx.in_shape(0));
}

// RandomNormal, RandomUniform: shape and dtype (float32 by default) from attributes.
void random_tensor(ShapeContext& ctx) {
  if (!ctx.has_attr("shape")) ctx.fail("missing attribute 'shape'");
  ctx.set_output(0, dtype_from_onnx(static_cast<int>(ctx.attr_int("dtype", 1))), exprs(ctx.attr_ints("shape")));
}

// [batch, sample_size] class indices, int32 unless `dtype` says otherwise.
void multinomial(ShapeContext& ctx) {
  if (ctx.rank(0) != 2) ctx.fail("input must be [batch, classes], got " + shape_str(ctx.in_shape(0)));
  ctx.set_output(0, dtype_from_onnx(static_cast<int>(ctx.attr_int("dtype", 6))),
                 {ctx.in_shape(0)[0], Expr(ctx.attr_int("sample_size", 1))});
}

constexpr const char* kFamily = "arith";

const OpInfo kOps[] = {
    {.op = "Shape", .family = kFamily, .shape = shape_rule, .autocast = Autocast::None,
     .note = "the input's dims as an int64 tensor (folded)"},
    {.op = "Size", .family = kFamily, .shape = size_rule, .autocast = Autocast::None,
     .note = "the element count as an int64 scalar (folded)"},
    {.op = "Constant", .family = kFamily, .shape = constant, .autocast = Autocast::None,
     .note = "a literal; small contents are folded"},
    {.op = "ConstantOfShape", .family = kFamily, .shape = constant_of_shape, .autocast = Autocast::None,
     .note = "a filled tensor: allocates, no gradient"},
    {.op = "Range", .family = kFamily, .shape = range, .autocast = Autocast::None,
     .note = "arange; symbolic when its limit is a dim"},
    {.op = "EyeLike", .family = kFamily, .shape = eye_like, .autocast = Autocast::None,
     .note = "an identity matrix shaped like the input"},
    {.op = "RandomNormalLike", .family = kFamily, .shape = random_like, .autocast = Autocast::None,
     .note = "noise shaped like the input"},
    {.op = "RandomUniformLike", .family = kFamily, .shape = random_like, .autocast = Autocast::None,
     .note = "noise shaped like the input"},
    {.op = "Bernoulli", .family = kFamily, .shape = random_like, .autocast = Autocast::None,
     .note = "samples shaped like the input"},
    {.op = "RandomNormal", .family = kFamily, .shape = random_tensor, .autocast = Autocast::None,
     .note = "noise of the shape attribute"},
    {.op = "RandomUniform", .family = kFamily, .shape = random_tensor, .autocast = Autocast::None,
     .note = "noise of the shape attribute"},
    {.op = "Multinomial", .family = kFamily, .shape = multinomial, .autocast = Autocast::None,
     .note = "[batch, sample_size] class indices"},
};

}  // namespace

OpTable arith_ops() { return {kOps, sizeof(kOps) / sizeof(kOps[0])}; }

}  // namespace memest
