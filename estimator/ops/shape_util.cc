// Broadcasting and attribute helpers for shape rules.
#include "estimator/ops/shape_util.h"

#include <algorithm>
#include <cmath>

namespace memest {

Shape broadcast(const ShapeContext& ctx, const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const Expr one(1);
    const Expr& x = i + a.size() >= n ? a[i + a.size() - n] : one;
    const Expr& y = i + b.size() >= n ? b[i + b.size() - n] : one;
    if (x == y || y == one) {
      out[i] = x;
    } else if (x == one) {
      out[i] = y;
    } else if (x.is_const() && y.is_const()) {
      ctx.fail("cannot broadcast " + shape_str(a) + " with " + shape_str(b));
    } else {
      // Symbolic against another value: the graph promises they agree at run time.
      out[i] = x.is_const() ? x : y;
    }
  }
  return out;
}

int64_t norm_axis(const ShapeContext& ctx, int64_t axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= std::max<int64_t>(r, 1)) {
    ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + r : axis;
}

std::optional<std::vector<int64_t>> const_ints(const ShapeContext& ctx, size_t i) {
  const std::vector<Expr>* v = ctx.in_value(i);
  if (!v) return std::nullopt;
  std::vector<int64_t> out;
  out.reserve(v->size());
  for (const auto& e : *v) {
    auto c = e.as_const();
    if (!c) return std::nullopt;
    out.push_back(*c);
  }
  return out;
}

std::optional<std::vector<int64_t>> ints_from_attr_or_input(const ShapeContext& ctx, const char* attr,
                                                            size_t input) {
  if (ctx.has_attr(attr)) return ctx.attr_ints(attr);
  if (ctx.has_input(input)) return const_ints(ctx, input);
  return std::nullopt;
}

Shape broadcast_inputs(const ShapeContext& ctx) {
  Shape out;
  bool first = true;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    out = first ? ctx.in_shape(i) : broadcast(ctx, out, ctx.in_shape(i));
    first = false;
  }
  return out;
}

namespace {
// Rank of a float dtype in promotion order; float16 and bfloat16 tie.
int float_rank(DType t) {
  switch (t) {
    case DType::F8: return 0;
    case DType::F16: case DType::BF16: return 1;
    case DType::F32: return 2;
    case DType::F64: return 3;
    default: return -1;
  }
}
}  // namespace

DType promote(DType a, DType b) {
  if (a == b || b == DType::Undefined) return a;
  if (a == DType::Undefined) return b;
  if (is_floating(a) != is_floating(b)) return is_floating(a) ? a : b;
  if (is_floating(a)) {
    int ra = float_rank(a), rb = float_rank(b);
    if (ra == rb) return DType::F32;  // float16 with bfloat16
    return ra > rb ? a : b;
  }
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  return dtype_size(a) >= dtype_size(b) ? a : b;
}

std::vector<int64_t> norm_axes(const ShapeContext& ctx, const std::vector<int64_t>& axes, size_t rank) {
  std::vector<int64_t> out;
  out.reserve(axes.size());
  for (int64_t a : axes) {
    int64_t n = norm_axis(ctx, a, rank);
    if (std::find(out.begin(), out.end(), n) != out.end()) ctx.fail("axis " + std::to_string(a) + " is repeated");
    out.push_back(n);
  }
  return out;
}

int64_t constant_term(const Expr& e) {
  Bindings zero;
  for (SymbolId s : e.symbols()) zero.set(s, 0);
  return e.eval(zero);
}

std::optional<Expr> floor_div(const Expr& e, int64_t d) {
  if (d <= 0) return std::nullopt;
  const int64_t c = constant_term(e);
  auto sym = (e - Expr(c)).div_exact(Expr(d));
  if (!sym) return std::nullopt;
  int64_t q = c / d;
  if (c % d != 0 && c < 0) --q;
  return *sym + Expr(q);
}

std::optional<Expr> ceil_div(const Expr& e, int64_t d) {
  if (d <= 0) return std::nullopt;
  return floor_div(e + Expr(d - 1), d);
}

DimRange dim_range(const Expr& e) {
  if (auto c = e.as_const()) return {c, c};
  Expr symbols(1);
  for (SymbolId s : e.symbols()) symbols = symbols * Expr::symbol(s);
  auto coeff = e.div_exact(symbols);
  auto c = coeff ? coeff->as_const() : std::nullopt;
  if (c && *c > 0) return {c, std::nullopt};
  return {};
}

std::optional<bool> dim_less(const Expr& a, const Expr& b, bool or_equal) {
  if (a == b) return or_equal;
  const DimRange x = dim_range(a), y = dim_range(b);
  if (x.hi && y.lo && (or_equal ? *x.hi <= *y.lo : *x.hi < *y.lo)) return true;
  if (x.lo && y.hi && (or_equal ? *x.lo > *y.hi : *x.lo >= *y.hi)) return false;
  return std::nullopt;
}

std::optional<Expr> window_dim(const Expr& in, int64_t kernel, int64_t stride, int64_t dilation,
                               int64_t pad_begin, int64_t pad_end, bool ceil_mode) {
  const int64_t extent = checked_add(checked_mul(dilation, kernel - 1), 1);
  const Expr span = in + Expr(checked_add(pad_begin, pad_end)) - Expr(extent);
  auto steps = ceil_mode ? ceil_div(span, stride) : floor_div(span, stride);
  if (!steps) return std::nullopt;
  Expr out = *steps + Expr(1);
  if (ceil_mode) {
    // The last window must start inside the input or the left padding.
    auto past = ((*steps) * Expr(stride) - in - Expr(pad_begin)).as_const();
    if (!past) return std::nullopt;
    if (*past >= 0) out = *steps;
  }
  return out;
}

std::optional<Shape> window_shape(const ShapeContext& ctx, const Shape& spatial,
                                  const std::vector<int64_t>& kernel, bool ceil_mode) {
  const size_t n = spatial.size();
  auto sized = [&](const char* key, std::vector<int64_t> v, size_t want) {
    if (v.size() != want) {
      ctx.fail(std::string(key) + " has " + std::to_string(v.size()) + " values, expected " + std::to_string(want));
    }
    return v;
  };
  sized("kernel_shape", kernel, n);
  const auto strides = sized("strides", ctx.attr_ints("strides", std::vector<int64_t>(n, 1)), n);
  const auto dilations = sized("dilations", ctx.attr_ints("dilations", std::vector<int64_t>(n, 1)), n);
  const auto pads = sized("pads", ctx.attr_ints("pads", std::vector<int64_t>(2 * n, 0)), 2 * n);
  const std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  Shape out;
  for (size_t i = 0; i < n; ++i) {
    if (strides[i] <= 0 || dilations[i] <= 0 || kernel[i] <= 0) {
      ctx.fail("kernel_shape, strides and dilations must be positive");
    }
    std::optional<Expr> d;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      d = ceil_div(spatial[i], strides[i]);  // padding makes up whatever the windows need
    } else if (auto_pad == "VALID") {
      d = window_dim(spatial[i], kernel[i], strides[i], dilations[i], 0, 0, ceil_mode);
    } else if (auto_pad == "NOTSET") {
      d = window_dim(spatial[i], kernel[i], strides[i], dilations[i], pads[i], pads[i + n], ceil_mode);
    } else {
      ctx.fail("unknown auto_pad '" + auto_pad + "'");
    }
    if (!d) return std::nullopt;
    if (auto c = d->as_const(); c && *c <= 0) {
      ctx.fail("spatial axis " + std::to_string(i) + " of size " + spatial[i].str() + " gives output size " +
               std::to_string(*c));
    }
    out.push_back(*d);
  }
  return out;
}

std::optional<size_t> foldable_numel(const Shape& s) {
  auto n = product(s).as_const();
  if (!n || *n < 0 || *n > kMaxFoldedElements) return std::nullopt;
  return static_cast<size_t>(*n);
}

std::optional<int64_t> const_scalar(const ShapeContext& ctx, size_t i) {
  auto v = const_ints(ctx, i);
  if (v && v->size() == 1) return (*v)[0];
  const std::vector<double>* f = ctx.in_fvalue(i);
  if (f && f->size() == 1 && std::nearbyint((*f)[0]) == (*f)[0]) return static_cast<int64_t>((*f)[0]);
  return std::nullopt;
}

std::optional<std::vector<double>> const_floats(const ShapeContext& ctx, size_t i) {
  if (const std::vector<double>* f = ctx.in_fvalue(i)) return *f;
  auto v = const_ints(ctx, i);
  if (!v) return std::nullopt;
  return std::vector<double>(v->begin(), v->end());
}

std::optional<std::vector<int64_t>> const_dims(const Shape& s) {
  std::vector<int64_t> out;
  out.reserve(s.size());
  for (const auto& d : s) {
    auto c = d.as_const();
    if (!c || *c < 0) return std::nullopt;
    out.push_back(*c);
  }
  return out;
}

std::optional<Contents> contents(const ShapeContext& ctx, size_t i) {
  const std::vector<Expr>* v = ctx.in_value(i);
  std::shared_ptr<std::vector<Expr>> owned;
  if (!v) {
    const std::vector<double>* f = ctx.in_fvalue(i);
    if (!f) return std::nullopt;
    owned = std::make_shared<std::vector<Expr>>();
    for (double x : *f) {
      if (!std::isfinite(x) || x != std::floor(x) || std::fabs(x) >= 9.2e18) return std::nullopt;
      owned->push_back(Expr(static_cast<int64_t>(x)));
    }
    v = owned.get();
  }
  if (!ctx.input(i).shape) return std::nullopt;
  auto dims = const_dims(ctx.in_shape(i));
  if (!dims) return std::nullopt;
  int64_t n = 1;
  for (int64_t d : *dims) n = checked_mul(n, d);
  if (static_cast<size_t>(n) != v->size()) return std::nullopt;
  return Contents{v, std::move(*dims), std::move(owned)};
}

size_t flat_index(const std::vector<int64_t>& dims, const std::vector<int64_t>& idx) {
  size_t flat = 0;
  for (size_t a = 0; a < dims.size(); ++a) flat = flat * static_cast<size_t>(dims[a]) + static_cast<size_t>(idx[a]);
  return flat;
}

std::vector<size_t> broadcast_map(const std::vector<int64_t>& out, const std::vector<int64_t>& in) {
  std::vector<size_t> map;
  if (in.size() > out.size()) return map;
  const size_t lead = out.size() - std::min(out.size(), in.size());
  std::vector<int64_t> at(in.size());
  for_each_index(out, [&](const std::vector<int64_t>& idx) {
    for (size_t a = 0; a < in.size(); ++a) at[a] = in[a] == 1 ? 0 : idx[lead + a];
    map.push_back(flat_index(in, at));
  });
  return map;
}

const Shape* input_shape(const Graph& g, const Node& n, size_t i) {
  if (!n.has_input(i)) return nullptr;
  const Tensor& t = g.tensors[n.inputs[i]];
  return t.shape ? &*t.shape : nullptr;
}

const Shape* output_shape(const Graph& g, const Node& n, size_t i) {
  if (i >= n.outputs.size() || n.outputs[i] < 0) return nullptr;
  const Tensor& t = g.tensors[n.outputs[i]];
  return t.shape ? &*t.shape : nullptr;
}

Expr output_bytes(const Graph& g, const Node& n, size_t i, DType run) {
  const Shape* s = output_shape(g, n, i);
  return s ? Expr(dtype_size(run)) * product(*s) : Expr(0);
}

}  // namespace memest
