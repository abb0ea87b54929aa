// Elementwise ops: broadcasting arithmetic, comparisons and logic, unary math,
// casts. Known contents are folded so shape arithmetic stays symbolic, including
// the float detour exporters take (Cast(Shape) * 2.0 -> Floor -> Cast).
#include <cmath>

#include "estimator/ops/registry.h"
#include "estimator/ops/shape_util.h"

namespace memest {
namespace {

// ---- Folding known contents ----------------------------------------------------

// One element of a folded binary op; nullopt when it cannot be decided (a
// symbolic operand where only constants make sense).
using Fold2 = std::optional<Expr> (*)(const Expr&, const Expr&);
using Fold1 = std::optional<Expr> (*)(const Expr&);

std::optional<Expr> fold_add(const Expr& a, const Expr& b) { return a + b; }
std::optional<Expr> fold_sub(const Expr& a, const Expr& b) { return a - b; }
std::optional<Expr> fold_mul(const Expr& a, const Expr& b) { return a * b; }

// Whether a dim expression is >= 0 wherever its symbols are sizes (>= 1): its
// value at 1 and at a large size, which decides the polynomials shapes are made of.
bool nonnegative(const Expr& e) {
  for (int64_t at : {1, 1 << 10}) {
    Bindings b;
    for (SymbolId s : e.symbols()) b.set(s, at);
    if (e.eval(b) < 0) return false;
  }
  return true;
}

// Integer division truncates toward zero, as ONNX Runtime and C++ do; a symbolic
// quotient is kept only when it is exact ("12*batch / 4").
std::optional<Expr> fold_div(const Expr& a, const Expr& b) {
  auto x = a.as_const(), y = b.as_const();
  if (x && y) {
    if (*y == 0 || (*x == INT64_MIN && *y == -1)) return std::nullopt;
    return Expr(*x / *y);
  }
  if (auto q = a.div_exact(b)) return q;
  // A dim expression is a size, so truncation is floor: (seq + 1) / 2 when 2
  // divides the symbolic part.
  if (y && *y > 0 && nonnegative(a)) return floor_div(a, *y);
  return std::nullopt;
}

// ONNX Mod with fmod=0: the result takes the divisor's sign (Python's %).
std::optional<Expr> fold_mod(const Expr& a, const Expr& b) {
  auto x = a.as_const(), y = b.as_const();
  if (!x || !y || *y == 0 || (*x == INT64_MIN && *y == -1)) return std::nullopt;
  int64_t r = *x % *y;
  if (r != 0 && ((r < 0) != (*y < 0))) r += *y;
  return Expr(r);
}

// Comparisons decide what dim ranges allow: batch == -1 is false, batch >= 1 true.
std::optional<Expr> as_bool(std::optional<bool> b) {
  if (!b) return std::nullopt;
  return Expr(*b ? 1 : 0);
}
std::optional<Expr> fold_equal(const Expr& a, const Expr& b) {
  if (a == b) return Expr(1);
  if (dim_less(a, b, false) == true || dim_less(b, a, false) == true) return Expr(0);
  return std::nullopt;  // two different expressions may still be equal at run time
}
std::optional<Expr> fold_less(const Expr& a, const Expr& b) { return as_bool(dim_less(a, b, false)); }
std::optional<Expr> fold_greater(const Expr& a, const Expr& b) { return as_bool(dim_less(b, a, false)); }
std::optional<Expr> fold_less_eq(const Expr& a, const Expr& b) { return as_bool(dim_less(a, b, true)); }
std::optional<Expr> fold_greater_eq(const Expr& a, const Expr& b) { return as_bool(dim_less(b, a, true)); }

// Min/Max: the smaller or larger when the ranges tell (Max(batch, 1) is batch).
template <bool Min>
std::optional<Expr> fold_minmax(const Expr& a, const Expr& b) {
  if (dim_less(a, b, true) == true) return Min ? a : b;
  if (dim_less(b, a, true) == true) return Min ? b : a;
  return std::nullopt;
}

template <bool (*Op)(bool, bool)>
std::optional<Expr> fold_logic(const Expr& a, const Expr& b) {
  auto x = a.as_const(), y = b.as_const();
  if (!x || !y) return std::nullopt;
  return Expr(Op(*x != 0, *y != 0) ? 1 : 0);
}
bool both(bool a, bool b) { return a && b; }
bool either(bool a, bool b) { return a || b; }
bool one_of(bool a, bool b) { return a != b; }

std::optional<Expr> fold_neg(const Expr& a) { return Expr(0) - a; }
std::optional<Expr> fold_not(const Expr& a) {
  auto x = a.as_const();
  if (!x) return std::nullopt;
  return Expr(*x == 0 ? 1 : 0);
}
std::optional<Expr> fold_abs(const Expr& a) {
  auto x = a.as_const();
  if (!x || *x == INT64_MIN) return std::nullopt;
  return Expr(*x < 0 ? -*x : *x);
}

// Known contents of input i as integers: its integer contents, or float contents
// that are all whole numbers (a shape cast to float and scaled by 2.0).
std::optional<std::vector<Expr>> whole_contents(const ShapeContext& ctx, size_t i) {
  if (const auto* v = ctx.in_value(i)) return *v;
  const auto* f = ctx.in_fvalue(i);
  if (!f) return std::nullopt;
  std::vector<Expr> out;
  for (double x : *f) {
    if (!std::isfinite(x) || x != std::floor(x) || std::fabs(x) >= 9.2e18) return std::nullopt;
    out.push_back(Expr(static_cast<int64_t>(x)));
  }
  return out;
}

// Folds input contents into output 0's when every input's contents are known,
// broadcasting numpy's way (a [2, 1] pad table against a [1, 2] one); an input
// whose dims are not all constant must be full-sized or a single element. Integer
// contents may be symbolic; float ones are constants.
template <typename T, size_t N, typename Read, typename Apply, typename Store>
void fold(ShapeContext& ctx, const Shape& out, Read read, Apply apply, Store store) {
  auto n = foldable_numel(out);
  if (!n) return;
  const auto out_dims = const_dims(out);
  std::optional<std::vector<T>> in[N];
  std::vector<size_t> map[N];
  for (size_t i = 0; i < N; ++i) {
    in[i] = read(ctx, i);
    if (!in[i]) return;
    auto dims = const_dims(ctx.in_shape(i));
    if (in[i]->size() == *n || in[i]->size() == 1) continue;  // read directly
    if (!out_dims || !dims || static_cast<size_t>(product(ctx.in_shape(i)).as_const().value_or(-1)) != in[i]->size()) {
      return;
    }
    map[i] = broadcast_map(*out_dims, *dims);
    if (map[i].size() != *n) return;
  }
  std::vector<T> result;
  result.reserve(*n);
  for (size_t k = 0; k < *n; ++k) {
    const T* e[N];
    for (size_t i = 0; i < N; ++i) {
      const std::vector<T>& v = *in[i];
      e[i] = !map[i].empty() ? &v[map[i][k]] : v.size() == *n ? &v[k] : &v[0];
    }
    std::optional<T> r = apply(e);
    if (!r) return;
    result.push_back(std::move(*r));
  }
  store(ctx, std::move(result));
}

template <size_t N, typename Apply>
void fold_values(ShapeContext& ctx, const Shape& out, Apply apply) {
  fold<Expr, N>(ctx, out, whole_contents, apply,
                [](ShapeContext& c, std::vector<Expr> v) { c.set_value(0, std::move(v)); });
}

template <size_t N, typename Apply>
void fold_floats(ShapeContext& ctx, const Shape& out, Apply apply) {
  fold<double, N>(ctx, out, const_floats, apply,
                  [](ShapeContext& c, std::vector<double> v) { c.set_fvalue(0, std::move(v)); });
}

using FoldF = double (*)(double, double);
double fadd(double a, double b) { return a + b; }
double fsub(double a, double b) { return a - b; }
double fmul(double a, double b) { return a * b; }
double fdiv(double a, double b) { return a / b; }

// ---- Shape rules -----------------------------------------------------------------

// Integer contents fold through F (possibly symbolic); a float result also gets
// float contents through G when every operand's are constant.
template <Fold2 F, FoldF G>
void fold_binary(ShapeContext& ctx, const Shape& out, DType t) {
  if constexpr (F != nullptr) {
    fold_values<2>(ctx, out, [](const Expr* const* e) { return F(*e[0], *e[1]); });
  }
  if constexpr (G != nullptr) {
    if (is_floating(t)) {
      fold_floats<2>(ctx, out, [](const double* const* e) -> std::optional<double> { return G(*e[0], *e[1]); });
    }
  }
}

template <Fold2 F, FoldF G>
void binary(ShapeContext& ctx) {
  Shape out = broadcast(ctx, ctx.in_shape(0), ctx.in_shape(1));
  const DType t = promote(ctx.in_dtype(0), ctx.in_dtype(1));
  ctx.set_output(0, t, out);
  fold_binary<F, G>(ctx, out, t);
}

// Float division keeps integer contents only when exact; integer division truncates.
std::optional<Expr> fold_exact_div(const Expr& a, const Expr& b) {
  auto x = a.as_const(), y = b.as_const();
  if (x && y && (*y == 0 || *x % *y != 0)) return std::nullopt;
  if (x && y) return fold_div(a, b);
  return a.div_exact(b);
}

void div_rule(ShapeContext& ctx) {
  Shape out = broadcast(ctx, ctx.in_shape(0), ctx.in_shape(1));
  const DType t = promote(ctx.in_dtype(0), ctx.in_dtype(1));
  ctx.set_output(0, t, out);
  if (is_floating(t)) {
    fold_binary<fold_exact_div, fdiv>(ctx, out, t);
  } else {
    fold_binary<fold_div, nullptr>(ctx, out, t);
  }
}

// Pow's output keeps the base's dtype (the exponent may be an integer). Constant float
// powers fold: dinov2's position grid side, int(256 ** 0.5) in the legacy export, is part
// of a Reshape target that must be known.
void pow_rule(ShapeContext& ctx) {
  const Shape out = broadcast(ctx, ctx.in_shape(0), ctx.in_shape(1));
  const DType t = ctx.in_dtype(0);
  ctx.set_output(0, t, out);
  if (is_floating(t)) {
    fold_floats<2>(ctx, out, [](const double* const* e) -> std::optional<double> {
      const double r = std::pow(*e[0], *e[1]);
      if (!std::isfinite(r)) return std::nullopt;
      return r;
    });
  }
}

template <Fold2 F>
void predicate(ShapeContext& ctx) {
  Shape out = broadcast(ctx, ctx.in_shape(0), ctx.in_shape(1));
  ctx.set_output(0, DType::Bool, out);
  fold_values<2>(ctx, out, [](const Expr* const* e) { return F(*e[0], *e[1]); });
}

template <Fold2 F>
void variadic(ShapeContext& ctx) {
  Shape out = broadcast_inputs(ctx);
  DType t = DType::Undefined;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.has_input(i)) t = promote(t, ctx.in_dtype(i));
  }
  ctx.set_output(0, t, out);
  if (ctx.num_inputs() == 1) {
    if (const auto* v = ctx.in_value(0)) ctx.set_value(0, *v);
    if (const auto* f = ctx.in_fvalue(0)) ctx.set_fvalue(0, *f);
  } else if constexpr (F != nullptr) {
    if (ctx.num_inputs() == 2) {
      fold_values<2>(ctx, out, [](const Expr* const* e) { return F(*e[0], *e[1]); });
    }
  }
}

void where_rule(ShapeContext& ctx) {
  Shape out = broadcast_inputs(ctx);
  ctx.set_output(0, promote(ctx.in_dtype(1), ctx.in_dtype(2)), out);
  fold_values<3>(ctx, out, [](const Expr* const* e) -> std::optional<Expr> {
    auto c = e[0]->as_const();
    if (!c) return std::nullopt;
    return *c != 0 ? *e[1] : *e[2];
  });
}

void same(ShapeContext& ctx) { ctx.set_output(0, ctx.in_dtype(0), ctx.in_shape(0)); }

template <Fold1 F>
void unary_folded(ShapeContext& ctx) {
  same(ctx);
  fold_values<1>(ctx, ctx.in_shape(0), [](const Expr* const* e) { return F(*e[0]); });
}

// Floor, Ceil and Round: whole numbers stay as they are; constant floats are rounded.
template <double (*R)(double)>
void rounding(ShapeContext& ctx) {
  same(ctx);
  if (const auto* v = ctx.in_value(0)) ctx.set_value(0, *v);
  fold_floats<1>(ctx, ctx.in_shape(0), [](const double* const* e) -> std::optional<double> { return R(*e[0]); });
}
double round_down(double x) { return std::floor(x); }
double round_up(double x) { return std::ceil(x); }
double round_half_even(double x) { return std::nearbyint(x); }  // ONNX Round: halves to even

// Clip folds known contents between constant bounds: the legacy exporter computes
// timm's TF-"SAME" pad amounts, max((ceil(i / s) - 1) * s + (k - 1) * d + 1 - i, 0), in
// float arithmetic ending in a Clip; without it the Pad's size, and every shape after
// it, was left undecided (tf_mobilenetv3 5.5% under).
void clip(ShapeContext& ctx) {
  same(ctx);
  double lo = ctx.attr_float("min", -HUGE_VAL), hi = ctx.attr_float("max", HUGE_VAL);
  for (size_t i : {size_t{1}, size_t{2}}) {
    if (!ctx.has_input(i)) continue;
    const auto c = const_floats(ctx, i);
    if (!c || c->size() != 1) return;
    (i == 1 ? lo : hi) = (*c)[0];
  }
  if (ctx.in_fvalue(0)) {
    fold_floats<1>(ctx, ctx.in_shape(0),
                   [lo, hi](const double* const* e) -> std::optional<double> { return std::min(std::max(*e[0], lo), hi); });
  } else {
    fold_values<1>(ctx, ctx.in_shape(0), [lo, hi](const Expr* const* e) -> std::optional<Expr> {
      const auto c = e[0]->as_const();
      if (!c) return std::nullopt;
      const double v = std::min(std::max(static_cast<double>(*c), lo), hi);
      if (v != std::floor(v)) return std::nullopt;
      return Expr(static_cast<int64_t>(v));
    });
  }
}

void not_rule(ShapeContext& ctx) {
  ctx.set_output(0, DType::Bool, ctx.in_shape(0));
  fold_values<1>(ctx, ctx.in_shape(0), [](const Expr* const* e) { return fold_not(*e[0]); });
}

void to_bool(ShapeContext& ctx) { ctx.set_output(0, DType::Bool, ctx.in_shape(0)); }

void identity(ShapeContext& ctx) {
  same(ctx);
  if (const auto* v = ctx.in_value(0)) ctx.set_value(0, *v);
  if (const auto* f = ctx.in_fvalue(0)) ctx.set_fvalue(0, *f);
}

// Casts carry contents across. Integer contents survive any cast to a number
// (a shape cast to float stays symbolic, to be scaled and cast back); bool
// becomes 0/1; floats become integers by truncation, as a cast does.
void cast_to(ShapeContext& ctx, DType to) {
  if (to == DType::Undefined) ctx.fail("cast to an unknown dtype");
  ctx.set_output(0, to, ctx.in_shape(0));
  if (to == DType::Bool) {
    if (auto c = const_floats(ctx, 0)) {
      std::vector<Expr> b;
      for (double x : *c) b.push_back(Expr(x != 0 ? 1 : 0));
      ctx.set_value(0, std::move(b));
    }
    return;
  }
  if (is_floating(to)) {
    if (auto c = const_floats(ctx, 0)) ctx.set_fvalue(0, *c);
  }
  if (const auto* v = ctx.in_value(0)) {
    ctx.set_value(0, *v);
  } else if (const auto* f = ctx.in_fvalue(0); f && !is_floating(to)) {
    std::vector<Expr> ints;
    for (double x : *f) {
      if (!std::isfinite(x) || std::fabs(x) >= 9.2e18) return;
      ints.push_back(Expr(static_cast<int64_t>(x)));
    }
    ctx.set_value(0, std::move(ints));
  }
}

void cast_rule(ShapeContext& ctx) {
  if (!ctx.has_attr("to")) ctx.fail("missing attribute 'to'");
  cast_to(ctx, dtype_from_onnx(static_cast<int>(ctx.attr_int("to", 0))));
}

void cast_like(ShapeContext& ctx) { cast_to(ctx, ctx.in_dtype(1)); }

// ---- Saved tensors and the table ----------------------------------------------

// pow's backward (FunctionsManual.cpp pow_backward: grad * (exp * self.pow(exp - 1))):
// self.pow(exp - 1) and exp times it are temporaries of one expression, alive while
// the gradient is made, each as large as the input in the dtype pow ran in (fp32 under
// autocast). HF's RMSNorm (x.float().pow(2).mean(-1)) and ReLU squared take this path.
// Measured: arcee_cls (sample seed 14, ReLU squared) was 8 MB short in backward at batch
// 8, two [8, 128, 1024] fp32 tensors.
Workspace pow_backward_temporaries(const Graph& g, const Node& n, DType run, bool input_grad, bool) {
  if (!input_grad || !n.has_input(0) || !g.tensors[n.inputs[0]].shape) return Expr(0);
  return product(*g.tensors[n.inputs[0]].shape) * Expr(2 * dtype_size(run));
}

constexpr const char* kFamily = "elementwise";

// Every op here but Trilu and Identity runs through TensorIterator, whose output takes its
// operands' memory order (Layout::Elementwise): a clamp or an exp of a channels-last map
// stays channels-last (traces30 rnd23_132: a hardtanh after LayerNorm's permute back kept
// an upsampled map channels-last, so an SE gate's gradient was summed with a 132 MiB buffer).
const OpInfo kOps[] = {
    // Binary arithmetic (torch type promotion: no cast copies).
    {.op = "Add", .family = kFamily, .shape = binary<fold_add, fadd>, .autocast = Autocast::Promote, .grads = "VV",
     .layout = Layout::Elementwise, .sums_broadcast_grads = true, .augmented = '+', .overwritable_output = true,
     .note = "a + b; the gradient passes through (broadcast inputs get a sum); a ReLU after it may run in place"},
    {.op = "Sub", .family = kFamily, .shape = binary<fold_sub, fsub>, .autocast = Autocast::Promote, .grads = "VA",
     .layout = Layout::Elementwise, .sums_broadcast_grads = true, .full_broadcast_grads = true, .augmented = '-',
     .note = "a - b; b's gradient is a negated copy"},
    {.op = "Mul", .family = kFamily, .shape = binary<fold_mul, fmul>, .autocast = Autocast::Promote,
     .saved_if_other = bits({0, 1}), .grads = "AA", .layout = Layout::Elementwise, .sums_broadcast_grads = true,
     .full_broadcast_grads = true, .augmented = '*', .note = "a * b; each operand kept for the other's gradient"},
    {.op = "Div", .family = kFamily, .shape = div_rule, .autocast = Autocast::Promote, .saved_inputs = bits({1}),
     .saved_if_other = bits({0}), .grads = "AA", .layout = Layout::Elementwise, .sums_broadcast_grads = true,
     .full_broadcast_grads = true, .augmented = '/', .note = "a / b; keeps b, and a when b needs a gradient"},
    {.op = "Pow", .family = kFamily, .shape = pow_rule, .autocast = Autocast::Fp32, .saved_inputs = bits({0, 1}),
     .grads = "AA", .layout = Layout::Elementwise, .full_broadcast_grads = true, .bwd_workspace = pow_backward_temporaries,
     .scratch_is_temporary = true, .note = "a ** b; autocast runs it in fp32; backward makes two input-sized temporaries"},
    {.op = "Mod", .family = kFamily, .shape = binary<fold_mod, nullptr>, .autocast = Autocast::Promote, .grads = "VA", .layout = Layout::Elementwise,
     .note = "remainder (fmod passes a's gradient through)"},
    {.op = "BitShift", .family = kFamily, .shape = binary<nullptr, nullptr>, .autocast = Autocast::None,
     .note = "integer shift"},
    {.op = "BitwiseAnd", .family = kFamily, .shape = binary<nullptr, nullptr>, .autocast = Autocast::None,
     .note = "integer op"},
    {.op = "BitwiseOr", .family = kFamily, .shape = binary<nullptr, nullptr>, .autocast = Autocast::None,
     .note = "integer op"},
    {.op = "BitwiseXor", .family = kFamily, .shape = binary<nullptr, nullptr>, .autocast = Autocast::None,
     .note = "integer op"},
    {.op = "BitwiseNot", .family = kFamily, .shape = same, .autocast = Autocast::None, .note = "integer op"},

    // Variadic.
    {.op = "Sum", .family = kFamily, .shape = variadic<fold_add>, .autocast = Autocast::Promote, .grads = "V", .layout = Layout::Elementwise,
     .note = "sum of n tensors; gradients pass through"},
    {.op = "Mean", .family = kFamily, .shape = variadic<nullptr>, .autocast = Autocast::Promote, .grads = "A", .layout = Layout::Elementwise,
     .note = "mean of n tensors; each gradient is grad / n"},
    {.op = "Min", .family = kFamily, .shape = variadic<fold_minmax<true>>, .autocast = Autocast::Promote,
     .saved_inputs = bits({0, 1}), .grads = "A", .layout = Layout::Elementwise, .note = "elementwise minimum; keeps its operands for the mask"},
    {.op = "Max", .family = kFamily, .shape = variadic<fold_minmax<false>>, .autocast = Autocast::Promote,
     .saved_inputs = bits({0, 1}), .grads = "A", .layout = Layout::Elementwise, .note = "elementwise maximum; keeps its operands for the mask"},

    // Comparisons and logic: boolean results, no gradient.
    {.op = "Equal", .family = kFamily, .shape = predicate<fold_equal>, .autocast = Autocast::None, .layout = Layout::Elementwise,
     .note = "bool result (folded), no gradient"},
    {.op = "Less", .family = kFamily, .shape = predicate<fold_less>, .autocast = Autocast::None, .layout = Layout::Elementwise,
     .note = "bool result (folded), no gradient"},
    {.op = "Greater", .family = kFamily, .shape = predicate<fold_greater>, .autocast = Autocast::None, .layout = Layout::Elementwise,
     .note = "bool result (folded), no gradient"},
    {.op = "LessOrEqual", .family = kFamily, .shape = predicate<fold_less_eq>, .autocast = Autocast::None, .layout = Layout::Elementwise,
     .note = "bool result (folded), no gradient"},
    {.op = "GreaterOrEqual", .family = kFamily, .shape = predicate<fold_greater_eq>, .autocast = Autocast::None, .layout = Layout::Elementwise,
     .note = "bool result (folded), no gradient"},
    {.op = "And", .family = kFamily, .shape = predicate<fold_logic<both>>, .autocast = Autocast::None, .layout = Layout::Elementwise,
     .note = "bool logic, no gradient"},
    {.op = "Or", .family = kFamily, .shape = predicate<fold_logic<either>>, .autocast = Autocast::None, .layout = Layout::Elementwise,
     .note = "bool logic, no gradient"},
    {.op = "Xor", .family = kFamily, .shape = predicate<fold_logic<one_of>>, .autocast = Autocast::None, .layout = Layout::Elementwise,
     .note = "bool logic, no gradient"},
    {.op = "Not", .family = kFamily, .shape = not_rule, .autocast = Autocast::None, .layout = Layout::Elementwise, .note = "bool logic, no gradient"},
    {.op = "IsNaN", .family = kFamily, .shape = to_bool, .autocast = Autocast::None, .layout = Layout::Elementwise, .note = "bool mask, no gradient"},
    {.op = "IsInf", .family = kFamily, .shape = to_bool, .autocast = Autocast::None, .layout = Layout::Elementwise, .note = "bool mask, no gradient"},
    {.op = "Where", .family = kFamily, .shape = where_rule, .autocast = Autocast::Promote, .saved_inputs = bits({0}),
     .grads = "NAA", .layout = Layout::Elementwise, .note = "select; keeps the condition to route gradients"},

    // Unary math. What backward keeps follows derivatives.yaml: the result when the
    // derivative is written in it (sqrt, exp, reciprocal, tan), else the input.
    {.op = "Neg", .family = kFamily, .shape = unary_folded<fold_neg>, .grads = "A", .layout = Layout::Elementwise,
     .note = "backward negates the gradient (allocates)"},
    {.op = "Abs", .family = kFamily, .shape = unary_folded<fold_abs>, .saved_inputs = bits({0}), .grads = "A", .layout = Layout::Elementwise,
     .note = "backward reads the input's sign"},
    {.op = "Sqrt", .family = kFamily, .shape = same, .saved_outputs = bits({0}), .grads = "A", .layout = Layout::Elementwise,
     .note = "backward reads the result"},
    {.op = "Reciprocal", .family = kFamily, .shape = same, .autocast = Autocast::Fp32, .saved_outputs = bits({0}),
     .grads = "A", .layout = Layout::Elementwise, .note = "backward reads the result; autocast runs it in fp32"},
    {.op = "Exp", .family = kFamily, .shape = same, .autocast = Autocast::Fp32, .saved_outputs = bits({0}),
     .grads = "A", .layout = Layout::Elementwise, .note = "backward reads the result; autocast runs it in fp32"},
    {.op = "Log", .family = kFamily, .shape = same, .autocast = Autocast::Fp32, .saved_inputs = bits({0}), .grads = "A", .layout = Layout::Elementwise,
     .note = "backward reads the input; autocast runs it in fp32"},
    {.op = "Erf", .family = kFamily, .shape = same, .saved_inputs = bits({0}), .grads = "A", .layout = Layout::Elementwise,
     .grad_temporaries = 4, .note = "backward reads the input; its formula holds 4 input-sized temporaries beside the gradient"},
    {.op = "Sin", .family = kFamily, .shape = same, .saved_inputs = bits({0}), .grads = "A", .layout = Layout::Elementwise,
     .note = "backward reads the input"},
    {.op = "Cos", .family = kFamily, .shape = same, .saved_inputs = bits({0}), .grads = "A", .layout = Layout::Elementwise,
     .note = "backward reads the input"},
    {.op = "Tan", .family = kFamily, .shape = same, .autocast = Autocast::Fp32, .saved_outputs = bits({0}),
     .grads = "A", .layout = Layout::Elementwise, .note = "backward reads the result; autocast runs it in fp32"},
    {.op = "Asin", .family = kFamily, .shape = same, .autocast = Autocast::Fp32, .saved_inputs = bits({0}),
     .grads = "A", .layout = Layout::Elementwise, .note = "backward reads the input; autocast runs it in fp32"},
    {.op = "Acos", .family = kFamily, .shape = same, .autocast = Autocast::Fp32, .saved_inputs = bits({0}),
     .grads = "A", .layout = Layout::Elementwise, .note = "backward reads the input; autocast runs it in fp32"},
    {.op = "Atan", .family = kFamily, .shape = same, .saved_inputs = bits({0}), .grads = "A", .layout = Layout::Elementwise,
     .note = "backward reads the input"},
    {.op = "Sinh", .family = kFamily, .shape = same, .autocast = Autocast::Fp32, .saved_inputs = bits({0}),
     .grads = "A", .layout = Layout::Elementwise, .note = "backward reads the input; autocast runs it in fp32"},
    {.op = "Cosh", .family = kFamily, .shape = same, .autocast = Autocast::Fp32, .saved_inputs = bits({0}),
     .grads = "A", .layout = Layout::Elementwise, .note = "backward reads the input; autocast runs it in fp32"},
    {.op = "Asinh", .family = kFamily, .shape = same, .saved_inputs = bits({0}), .grads = "A", .layout = Layout::Elementwise,
     .note = "backward reads the input"},
    {.op = "Acosh", .family = kFamily, .shape = same, .saved_inputs = bits({0}), .grads = "A", .layout = Layout::Elementwise,
     .note = "backward reads the input"},
    {.op = "Atanh", .family = kFamily, .shape = same, .saved_inputs = bits({0}), .grads = "A", .layout = Layout::Elementwise,
     .note = "backward reads the input"},
    {.op = "Floor", .family = kFamily, .shape = rounding<round_down>, .grads = "A", .layout = Layout::Elementwise, .note = "gradient is zeros_like"},
    {.op = "Ceil", .family = kFamily, .shape = rounding<round_up>, .grads = "A", .layout = Layout::Elementwise, .note = "gradient is zeros_like"},
    {.op = "Round", .family = kFamily, .shape = rounding<round_half_even>, .grads = "A", .layout = Layout::Elementwise,
     .note = "gradient is zeros_like"},
    {.op = "Sign", .family = kFamily, .shape = same, .grads = "A", .layout = Layout::Elementwise, .note = "gradient is zeros_like"},
    {.op = "Clip", .family = kFamily, .shape = clip, .saved_inputs = bits({0}), .grads = "ANN", .layout = Layout::Elementwise,
     .note = "clamp; keeps its input for the in-range mask"},
    {.op = "Trilu", .family = kFamily, .shape = same, .grads = "AN", .note = "triangular mask; backward masks a copy"},

    // Identity and casts.
    {.op = "Identity", .family = kFamily, .shape = identity, .grads = "V", .view = true, .note = "aliases its input"},
    // x.contiguous(): clone(contiguous_format) of a strided tensor, the tensor itself when it
    // is contiguous; CloneBackward0 hands the gradient through (frontends/dynamo_repair.h
    // restore_dropped_contiguous).
    {.op = "Contiguous", .family = kFamily, .shape = identity, .grads = "V", .view_when_contiguous = true,
     .domain = "memest", .note = "x.contiguous(): a copy of a strided input, else the input itself"},
    {.op = "Cast", .family = kFamily, .shape = cast_rule, .autocast = Autocast::None, .grads = "A",
     .view_when_dtype_kept = true, .layout = Layout::Elementwise,
     .note = "dtype conversion; to the dtype it has, the input itself (Tensor.to returns self)"},
    {.op = "CastLike", .family = kFamily, .shape = cast_like, .autocast = Autocast::Like, .grads = "AN",
     .view_when_dtype_kept = true, .layout = Layout::Elementwise,
     .note = "Cast to input 1's dtype as it runs (half under autocast); to the dtype it has, the input itself"},
};

}  // namespace

OpTable elementwise_ops() { return {kOps, sizeof(kOps) / sizeof(kOps[0])}; }

}  // namespace memest
