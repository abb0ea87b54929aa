// Layout and indexing: Reshape, Transpose, Concat, Split, Slice, Gather, Expand,
// Pad, ... (resampling is ops/resample.cc). Rules fold known contents (a Shape's dims flowing through
// Gather, Slice, Concat, Unsqueeze) so Reshape targets stay symbolic.
#include <algorithm>
#include <cmath>

#include "estimator/ops/registry.h"
#include "estimator/ops/shape_util.h"

namespace memest {
namespace {

void pass_value(ShapeContext& ctx) {
  if (const auto* v = ctx.in_value(0)) ctx.set_value(0, *v);
}

// ---- Reshaping views -------------------------------------------------------------

// 0 copies the input's dim (unless allowzero), -1 takes what is left:
// numel / product(the rest), exact or an error.
void reshape(ShapeContext& ctx) {
  const Shape& x = ctx.in_shape(0);
  std::vector<Expr> target;
  if (ctx.has_attr("shape")) {  // opset < 5
    for (int64_t d : ctx.attr_ints("shape")) target.push_back(Expr(d));
  } else if (const auto* v = ctx.in_value(1)) {
    target = *v;
  } else {
    return;
  }
  const bool allowzero = ctx.attr_int("allowzero", 0) != 0;
  Shape out;
  int infer = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    auto c = target[i].as_const();
    if (c && *c == 0 && !allowzero) {
      if (i >= x.size()) ctx.fail("0 at position " + std::to_string(i) + " has no input dim to copy");
      out.push_back(x[i]);
    } else if (c && *c == -1) {
      if (infer >= 0) ctx.fail("more than one -1 in shape " + shape_str(target));
      infer = static_cast<int>(i);
      out.push_back(Expr(1));
    } else if (c && *c < -1) {
      ctx.fail("negative dim " + std::to_string(*c) + " in shape " + shape_str(target));
    } else {
      out.push_back(target[i]);
    }
  }
  if (infer >= 0) {
    // Cancel the dims both sides share first, so [b, s+1, 768] -> [b, s+1, 12, -1]
    // divides 768 by 12 instead of a sum of terms by another.
    Shape num = x, den = out;
    den.erase(den.begin() + infer);
    for (auto it = den.begin(); it != den.end();) {
      auto same = std::find(num.begin(), num.end(), *it);
      if (same == num.end()) {
        ++it;
      } else {
        num.erase(same);
        it = den.erase(it);
      }
    }
    const Expr total = product(num), known = product(den);
    auto rest = total.div_exact(known);
    if (!rest) {
      // A constant mismatch is a broken graph; a symbolic one may only be beyond div_exact.
      if (total.is_const() && known.is_const()) {
        ctx.fail("cannot reshape " + shape_str(x) + " to " + shape_str(target) + ": " + total.str() +
                 " elements do not divide by " + known.str());
      }
      ctx.warn("cannot infer -1 of Reshape: " + total.str() + " / (" + known.str() + ") is not exact");
      return;
    }
    out[infer] = *rest;
  } else if (auto a = product(x).as_const(), b = product(out).as_const(); a && b && *a != *b) {
    ctx.fail("cannot reshape " + shape_str(x) + " (" + std::to_string(*a) + " elements) to " + shape_str(out));
  }
  ctx.set_output(0, ctx.in_dtype(0), out);
  pass_value(ctx);
}

void flatten(ShapeContext& ctx) {
  const Shape& x = ctx.in_shape(0);
  const int64_t r = static_cast<int64_t>(x.size());
  int64_t axis = ctx.attr_int("axis", 1);
  if (axis < -r || axis > r) {
    ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  }
  if (axis < 0) axis += r;
  ctx.set_output(0, ctx.in_dtype(0),
                 {product(Shape(x.begin(), x.begin() + axis)), product(Shape(x.begin() + axis, x.end()))});
  pass_value(ctx);
}

// Axes are an attribute before opset 13 and input 1 after; whichever the node has.
// Returns false when input 1 exists but is not known.
bool axes_of(const ShapeContext& ctx, std::optional<std::vector<int64_t>>& axes) {
  if (ctx.has_attr("axes")) {
    axes = ctx.attr_ints("axes");
  } else if (ctx.has_input(1)) {
    axes = const_ints(ctx, 1);
    if (!axes) return false;
  }
  return true;
}

// Without axes, drops every dim known to be 1 (a symbolic dim is kept).
void squeeze(ShapeContext& ctx) {
  const Shape& x = ctx.in_shape(0);
  std::optional<std::vector<int64_t>> axes;
  if (!axes_of(ctx, axes)) return;
  Shape out;
  if (!axes) {
    for (const auto& d : x) {
      if (d != Expr(1)) out.push_back(d);
    }
  } else {
    const auto ax = norm_axes(ctx, *axes, x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::find(ax.begin(), ax.end(), static_cast<int64_t>(i)) == ax.end()) {
        out.push_back(x[i]);
      } else if (x[i].is_const() && x[i] != Expr(1)) {
        ctx.fail("cannot squeeze axis " + std::to_string(i) + " of " + shape_str(x));
      }
    }
  }
  ctx.set_output(0, ctx.in_dtype(0), out);
  pass_value(ctx);
}

// memest::SqueezeIf (frontends/squeeze_if.h): x.squeeze(d) as the legacy exporter writes
// it for a dim whose size the trace did not fix, If(size == 1, Squeeze, Identity). The
// dim's size here decides; a symbolic one is taken for more than 1 (x as it is), as a
// batch or a sequence is.
void squeeze_if(ShapeContext& ctx) {
  const Shape& x = ctx.in_shape(0);
  const std::vector<int64_t> axes = ctx.attr_ints("axes");
  if (axes.size() != 1) ctx.fail("needs one axis");
  const int64_t axis = norm_axis(ctx, axes[0], x.size());
  if (x.empty()) ctx.fail("cannot squeeze a scalar");
  Shape out;
  for (size_t i = 0; i < x.size(); ++i) {
    if (static_cast<int64_t>(i) != axis || x[i] != Expr(1)) out.push_back(x[i]);
  }
  ctx.set_output(0, ctx.in_dtype(0), out);
  pass_value(ctx);
}

void unsqueeze(ShapeContext& ctx) {
  const Shape& x = ctx.in_shape(0);
  std::optional<std::vector<int64_t>> axes;
  if (!axes_of(ctx, axes)) return;
  if (!axes) ctx.fail("missing axes");
  const auto ax = norm_axes(ctx, *axes, x.size() + axes->size());
  Shape out;
  auto next = x.begin();
  for (size_t i = 0; i < x.size() + ax.size(); ++i) {
    bool inserted = std::find(ax.begin(), ax.end(), static_cast<int64_t>(i)) != ax.end();
    out.push_back(inserted ? Expr(1) : *next++);
  }
  ctx.set_output(0, ctx.in_dtype(0), out);
  pass_value(ctx);
}

void transpose(ShapeContext& ctx) {
  const Shape& x = ctx.in_shape(0);
  std::vector<int64_t> perm = ctx.attr_ints("perm");
  if (perm.empty()) {
    for (size_t i = x.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  }
  if (perm.size() != x.size()) {
    ctx.fail("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(x.size()));
  }
  perm = norm_axes(ctx, perm, x.size());
  Shape out;
  for (int64_t p : perm) out.push_back(x[p]);
  ctx.set_output(0, ctx.in_dtype(0), out);
  if (x.size() <= 1) return pass_value(ctx);
  // A [k, 2] pad table transposed to [2, k] (the legacy exporter's F.pad).
  auto c = contents(ctx, 0);
  if (!c) return;
  std::vector<int64_t> out_dims, at(perm.size());
  for (int64_t p : perm) out_dims.push_back(c->dims[p]);
  std::vector<Expr> moved;
  for_each_index(out_dims, [&](const std::vector<int64_t>& idx) {
    for (size_t a = 0; a < perm.size(); ++a) at[perm[a]] = idx[a];
    moved.push_back((*c->v)[flat_index(c->dims, at)]);
  });
  ctx.set_value(0, std::move(moved));
}

// ---- Joining and splitting ---------------------------------------------------------

void concat(ShapeContext& ctx) {
  if (!ctx.has_attr("axis")) ctx.fail("missing attribute 'axis'");
  Shape out = ctx.in_shape(0);
  if (out.empty()) ctx.fail("cannot concatenate scalars");
  const int64_t axis = norm_axis(ctx, ctx.attr_int("axis", 0), out.size());
  DType t = ctx.in_dtype(0);
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    const Shape& s = ctx.in_shape(i);
    if (s.size() != out.size()) ctx.fail("inputs differ in rank: " + shape_str(out) + " and " + shape_str(s));
    for (size_t k = 0; k < s.size(); ++k) {
      if (static_cast<int64_t>(k) == axis) {
        out[k] += s[k];
      } else if (out[k] != s[k]) {
        if (out[k].is_const() && s[k].is_const()) {
          ctx.fail("inputs differ off the concat axis: " + shape_str(ctx.in_shape(0)) + " and " + shape_str(s));
        }
        if (s[k].is_const()) out[k] = s[k];
      }
    }
    t = promote(t, ctx.in_dtype(i));
  }
  ctx.set_output(0, t, out);
  // Float contents of 1-D pieces (the legacy exporter's Resize scales: Concat of two
  // Constants, [1, 1] and [2, 2]) join too; without them Resize could not size its output.
  if (out.size() == 1) {
    std::vector<double> fjoined;
    bool all = true;
    for (size_t i = 0; i < ctx.num_inputs() && all; ++i) {
      const std::vector<double>* f = ctx.in_fvalue(i);
      all = f != nullptr;
      if (all) fjoined.insert(fjoined.end(), f->begin(), f->end());
    }
    if (all) ctx.set_fvalue(0, std::move(fjoined));
  }
  // Contents join block by block: for each index before the axis, every input's
  // slab in turn.
  std::vector<Contents> parts;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    auto c = contents(ctx, i);
    if (!c) return;
    parts.push_back(std::move(*c));
  }
  size_t outer = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= static_cast<size_t>(parts[0].dims[k]);
  std::vector<Expr> joined;
  for (size_t o = 0; o < outer; ++o) {
    for (const auto& p : parts) {
      const size_t slab = outer == 0 ? 0 : p.v->size() / outer;
      joined.insert(joined.end(), p.v->begin() + o * slab, p.v->begin() + (o + 1) * slab);
    }
  }
  ctx.set_value(0, std::move(joined));
}

// Equal parts of d, the last one smaller when uneven; nullopt when d's parts cannot be
// written (a symbolic d that n may not divide).
std::optional<std::vector<Expr>> equal_parts(const Expr& d, int64_t n) {
  auto part = ceil_div(d, n);
  if (!part) return std::nullopt;
  std::vector<Expr> sizes(static_cast<size_t>(n - 1), *part);
  sizes.push_back(d - *part * Expr(n - 1));
  return sizes;
}

// Sizes from input 1 (opset 13+) or the split attribute; else num_outputs (18+)
// or the output count: equal parts. Sizes that depend on the data (a mixture of experts
// splits its tokens by each expert's count: HF's JetMoE, blind16's sh_jetmoe_cls) are
// taken as equal parts too: whatever the routing, the parts add up to the input, and so
// do the activations the experts make of them (each part taken as large as the input
// made blind16's JetMoE 4.2 x over).
void split(ShapeContext& ctx) {
  const Shape& x = ctx.in_shape(0);
  if (x.empty()) ctx.fail("cannot split a scalar");
  const int64_t axis = norm_axis(ctx, ctx.attr_int("axis", 0), x.size());
  const Expr& d = x[axis];
  const auto n = static_cast<int64_t>(ctx.num_outputs());
  std::vector<Expr> sizes;
  if (ctx.has_input(1)) {
    if (const auto* v = ctx.in_value(1)) {
      sizes = *v;
    } else {
      auto parts = n > 0 ? equal_parts(d, n) : std::nullopt;
      if (!parts) return;
      ctx.warn("Split sizes depend on the data (a mixture of experts' routing); memest takes equal parts of " + d.str() +
               ", which add up as any routing does");
      sizes = std::move(*parts);
    }
  } else if (ctx.has_attr("split")) {
    for (int64_t s : ctx.attr_ints("split")) sizes.push_back(Expr(s));
  } else {
    const int64_t k = ctx.attr_int("num_outputs", n);
    if (k <= 0) ctx.fail("num_outputs must be positive");
    auto parts = equal_parts(d, k);
    if (!parts) return;
    sizes = std::move(*parts);
  }
  if (sizes.size() != ctx.num_outputs()) {
    ctx.fail(std::to_string(sizes.size()) + " split sizes for " + std::to_string(ctx.num_outputs()) + " outputs");
  }
  Expr sum;
  for (const auto& s : sizes) sum += s;
  if (sum.is_const() && d.is_const() && sum != d) {
    ctx.fail("split sizes " + shape_str(sizes) + " do not add up to " + d.str());
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (auto c = sizes[i].as_const(); c && *c < 0) ctx.fail("negative split size in " + shape_str(sizes));
    Shape out = x;
    out[axis] = sizes[i];
    ctx.set_output(i, ctx.in_dtype(0), out);
  }
}

// ---- Slice ---------------------------------------------------------------------

// Exporters write INT64_MAX (or INT32_MAX) for "to the end" and INT64_MIN for
// "before the start" with negative steps.
bool to_end(const Expr& e) {
  auto c = e.as_const();
  return c && *c >= INT32_MAX;
}
bool before_start(const Expr& e) {
  auto c = e.as_const();
  return c && *c <= INT32_MIN;
}

// Normalised bounds of one sliced axis with constant size: ONNX's clamping.
struct SliceRange {
  int64_t start, count;
};
SliceRange clamp_slice(int64_t d, int64_t s, int64_t e, int64_t step) {
  if (d == 0) return {0, 0};
  step = std::clamp<int64_t>(step, -d - 1, d + 1);  // a longer stride takes one element all the same
  if (s < 0) s += d;
  if (e < 0) e += d;
  if (step > 0) {
    s = std::clamp<int64_t>(s, 0, d);
    e = std::clamp<int64_t>(e, 0, d);
    return {s, e > s ? (e - s + step - 1) / step : 0};
  }
  s = std::clamp<int64_t>(s, 0, d - 1);
  e = std::clamp<int64_t>(e, -1, d - 1);
  return {s, s > e ? (s - e - step - 1) / -step : 0};
}

// The extent of one sliced axis of symbolic size (or with symbolic bounds):
// negative constants count from the end and the huge sentinels mean the ends.
// A constant bound is assumed to lie inside the dim. nullopt when a step > 1
// makes the count inexact.
std::optional<Expr> symbolic_slice(const Expr& d, Expr s, Expr e, int64_t step) {
  auto from_end = [&](Expr& b) {
    if (auto c = b.as_const(); c && *c < 0) b = d + b;
  };
  if (step > 0) {
    if (to_end(s)) return Expr(0);
    if (to_end(e)) e = d;
    if (before_start(e)) return Expr(0);
    from_end(s);
    from_end(e);
    return ceil_div(e - s, step);
  }
  if (to_end(s)) s = d - Expr(1);
  if (before_start(e)) {
    e = Expr(-1);
  } else {
    from_end(e);
  }
  from_end(s);
  return ceil_div(s - e, -step);
}

// A symbolic extent that goes negative for large dims ("8 - seq" from a negative
// start and a positive end) is not a size: leave the slice undecided instead.
bool plausible_extent(const Expr& n) {
  Bindings large;
  for (SymbolId s : n.symbols()) large.set(s, 1 << 10);
  return n.eval(large) >= 0;
}

void slice(ShapeContext& ctx) {
  const Shape& x = ctx.in_shape(0);
  if (x.empty()) ctx.fail("cannot slice a scalar");
  std::vector<Expr> starts, ends;
  std::vector<int64_t> axes, steps;
  if (ctx.has_attr("starts")) {  // opset < 10
    for (int64_t v : ctx.attr_ints("starts")) starts.push_back(Expr(v));
    for (int64_t v : ctx.attr_ints("ends")) ends.push_back(Expr(v));
    axes = ctx.attr_ints("axes");
  } else {
    const auto* s = ctx.in_value(1);
    const auto* e = ctx.in_value(2);
    if (!s || !e) return;
    starts = *s;
    ends = *e;
    if (ctx.has_input(3)) {
      auto a = const_ints(ctx, 3);
      if (!a) return;
      axes = *a;
    }
    if (ctx.has_input(4)) {
      auto st = const_ints(ctx, 4);
      if (!st) return;
      steps = *st;
    }
  }
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    ctx.fail("starts, ends, axes and steps differ in length");
  }
  axes = norm_axes(ctx, axes, x.size());

  Shape out = x;
  // Per axis, where a slice of constant bounds starts and its step, for folding contents.
  std::vector<int64_t> first(x.size(), 0), stride(x.size(), 1);
  bool foldable = true;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (steps[i] == 0 || steps[i] == INT64_MIN) ctx.fail("step " + std::to_string(steps[i]) + " is not usable");
    const Expr& d = x[axes[i]];
    auto dc = d.as_const(), sc = starts[i].as_const(), ec = ends[i].as_const();
    if (dc && sc && ec) {
      SliceRange r = clamp_slice(*dc, *sc, *ec, steps[i]);
      out[axes[i]] = Expr(r.count);
      first[axes[i]] = r.start;
      stride[axes[i]] = steps[i];
      continue;
    }
    foldable = false;
    auto n = symbolic_slice(d, starts[i], ends[i], steps[i]);
    if (!n) return;
    if (auto c = n->as_const(); c && *c < 0) n = Expr(0);
    if (!plausible_extent(*n)) return;
    out[axes[i]] = *n;
  }
  ctx.set_output(0, ctx.in_dtype(0), out);
  auto c = contents(ctx, 0);
  auto out_dims = const_dims(out);
  if (!foldable || !c || !out_dims) return;
  std::vector<int64_t> at(x.size());
  std::vector<Expr> picked;
  for_each_index(*out_dims, [&](const std::vector<int64_t>& idx) {
    for (size_t a = 0; a < idx.size(); ++a) at[a] = first[a] + idx[a] * stride[a];
    picked.push_back((*c->v)[flat_index(c->dims, at)]);
  });
  ctx.set_value(0, std::move(picked));
}

// ---- Gathering and scattering ------------------------------------------------------

void gather(ShapeContext& ctx) {
  const Shape& x = ctx.in_shape(0);
  const Shape& idx = ctx.in_shape(1);
  if (x.empty()) ctx.fail("cannot gather from a scalar");
  const int64_t axis = norm_axis(ctx, ctx.attr_int("axis", 0), x.size());
  Shape out(x.begin(), x.begin() + axis);
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), x.begin() + axis + 1, x.end());
  ctx.set_output(0, ctx.in_dtype(0), out);
  // Gather(Shape(x), i) picks dims; any small tensor of known contents folds the same way.
  auto c = contents(ctx, 0);
  auto indices = const_ints(ctx, 1);
  if (!c || !indices) return;
  const int64_t n = c->dims[axis];
  size_t outer = 1, inner = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= static_cast<size_t>(c->dims[k]);
  for (size_t k = axis + 1; k < c->dims.size(); ++k) inner *= static_cast<size_t>(c->dims[k]);
  std::vector<Expr> picked;
  for (size_t o = 0; o < outer; ++o) {
    for (int64_t i : *indices) {
      if (i < -n || i >= n) {
        ctx.fail("index " + std::to_string(i) + " is out of range for " + std::to_string(n) + " elements");
      }
      const size_t from = (o * static_cast<size_t>(n) + static_cast<size_t>(i < 0 ? i + n : i)) * inner;
      picked.insert(picked.end(), c->v->begin() + from, c->v->begin() + from + inner);
    }
  }
  ctx.set_value(0, std::move(picked));
}

void gather_elements(ShapeContext& ctx) {
  if (ctx.rank(1) != ctx.rank(0)) ctx.fail("indices and data differ in rank");
  ctx.set_output(0, ctx.in_dtype(0), ctx.in_shape(1));
}

// indices [..., k] index the first k dims after batch_dims: the rest are copied.
void gather_nd(ShapeContext& ctx) {
  const Shape& x = ctx.in_shape(0);
  const Shape& idx = ctx.in_shape(1);
  const int64_t b = ctx.attr_int("batch_dims", 0);
  if (idx.empty()) ctx.fail("indices must have rank >= 1");
  auto k = idx.back().as_const();
  if (!k) return;
  if (b < 0 || *k < 0 || checked_add(b, *k) > static_cast<int64_t>(x.size())) {
    ctx.fail("indices " + shape_str(idx) + " index past " + shape_str(x));
  }
  Shape out(idx.begin(), idx.end() - 1);
  out.insert(out.end(), x.begin() + b + *k, x.end());
  ctx.set_output(0, ctx.in_dtype(0), out);
  // Known contents fold when the indices are constant (batch_dims 0: each index
  // tuple picks one slab of the data).
  auto c = contents(ctx, 0);
  auto indices = const_ints(ctx, 1);
  if (!c || !indices || b != 0 || *k == 0) return;
  size_t slab = 1;
  for (size_t a = *k; a < c->dims.size(); ++a) slab *= static_cast<size_t>(c->dims[a]);
  std::vector<Expr> picked;
  std::vector<int64_t> at(c->dims.size(), 0);
  for (size_t t = 0; t + *k <= indices->size(); t += *k) {
    for (int64_t a = 0; a < *k; ++a) {
      int64_t i = (*indices)[t + a], n = c->dims[a];
      if (i < -n || i >= n) ctx.fail("index " + std::to_string(i) + " is out of range for " + std::to_string(n));
      at[a] = i < 0 ? i + n : i;
    }
    const size_t from = flat_index(c->dims, at);
    picked.insert(picked.end(), c->v->begin() + from, c->v->begin() + from + slab);
  }
  ctx.set_value(0, std::move(picked));
}

// ScatterND: the data's shape; known contents with constant indices fold
// (reduction "none" only: a position ids tensor written into).
void scatter_nd(ShapeContext& ctx) {
  ctx.set_output(0, ctx.in_dtype(0), ctx.in_shape(0));
  auto c = contents(ctx, 0);
  auto idx = contents(ctx, 1);
  auto upd = contents(ctx, 2);
  auto indices = const_ints(ctx, 1);
  if (!c || !idx || !upd || !indices || idx->dims.empty() || ctx.attr_string("reduction", "none") != "none") return;
  const int64_t k = idx->dims.back();
  if (k <= 0 || k > static_cast<int64_t>(c->dims.size())) return;
  size_t slab = 1;
  for (size_t a = k; a < c->dims.size(); ++a) slab *= static_cast<size_t>(c->dims[a]);
  if (indices->size() / k * slab != upd->v->size()) return;
  std::vector<Expr> data = *c->v;
  std::vector<int64_t> at(c->dims.size(), 0);
  for (size_t t = 0, u = 0; t + k <= indices->size(); t += k, u += slab) {
    for (int64_t a = 0; a < k; ++a) {
      int64_t i = (*indices)[t + a], n = c->dims[a];
      if (i < -n || i >= n) ctx.fail("index " + std::to_string(i) + " is out of range for " + std::to_string(n));
      at[a] = i < 0 ? i + n : i;
    }
    std::copy(upd->v->begin() + u, upd->v->begin() + u + slab, data.begin() + flat_index(c->dims, at));
  }
  ctx.set_value(0, std::move(data));
}

void like_data(ShapeContext& ctx) { ctx.set_output(0, ctx.in_dtype(0), ctx.in_shape(0)); }

// ---- Broadcasting copies -------------------------------------------------------------

void expand(ShapeContext& ctx) {
  const auto* target = ctx.in_value(1);
  if (!target) return;
  Shape out = broadcast(ctx, ctx.in_shape(0), *target);
  ctx.set_output(0, ctx.in_dtype(0), out);
  auto c = contents(ctx, 0);
  auto n = foldable_numel(out);
  auto out_dims = const_dims(out);
  if (!c || !n || !out_dims) return;
  auto map = broadcast_map(*out_dims, c->dims);
  if (map.size() != *n) return;
  std::vector<Expr> v;
  v.reserve(*n);
  for (size_t k : map) v.push_back((*c->v)[k]);
  ctx.set_value(0, std::move(v));
}

void tile(ShapeContext& ctx) {
  const Shape& x = ctx.in_shape(0);
  const auto* reps = ctx.in_value(1);
  if (!reps) return;
  if (reps->size() != x.size()) {
    ctx.fail("repeats has " + std::to_string(reps->size()) + " entries for rank " + std::to_string(x.size()));
  }
  Shape out;
  for (size_t i = 0; i < x.size(); ++i) out.push_back(x[i] * (*reps)[i]);
  ctx.set_output(0, ctx.in_dtype(0), out);
  auto c = contents(ctx, 0);
  auto n = foldable_numel(out);
  auto out_dims = const_dims(out);
  if (!c || !n || !out_dims) return;
  std::vector<int64_t> at(x.size());
  std::vector<Expr> v;
  for_each_index(*out_dims, [&](const std::vector<int64_t>& idx) {
    for (size_t a = 0; a < idx.size(); ++a) at[a] = idx[a] % c->dims[a];
    v.push_back((*c->v)[flat_index(c->dims, at)]);
  });
  ctx.set_value(0, std::move(v));
}

// pads [begin..., end...] from the attribute (opset < 11) or input 1, over
// every axis or the axes of input 3 (opset 18).
void pad(ShapeContext& ctx) {
  const Shape& x = ctx.in_shape(0);
  std::vector<Expr> pads;
  if (ctx.has_attr("pads")) {
    for (int64_t p : ctx.attr_ints("pads")) pads.push_back(Expr(p));
  } else if (const auto* v = ctx.in_value(1)) {
    pads = *v;
  } else {
    return;
  }
  std::vector<int64_t> axes;
  if (ctx.has_input(3)) {
    auto a = const_ints(ctx, 3);
    if (!a) return;
    axes = norm_axes(ctx, *a, x.size());
  } else {
    for (size_t i = 0; i < x.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (pads.size() != 2 * axes.size()) {
    ctx.fail(std::to_string(pads.size()) + " pads for " + std::to_string(axes.size()) + " axes");
  }
  Shape out = x;
  for (size_t i = 0; i < axes.size(); ++i) out[axes[i]] = x[axes[i]] + pads[i] + pads[i + axes.size()];
  for (const auto& d : out) {
    if (auto c = d.as_const(); c && *c < 0) ctx.fail("padding gives a negative size: " + shape_str(out));
  }
  ctx.set_output(0, ctx.in_dtype(0), out);
}

// ---- Index-valued ----------------------------------------------------------------

// depth (input 1) becomes a new axis at `axis`; values (input 2) give the dtype.
void one_hot(ShapeContext& ctx) {
  const Shape& idx = ctx.in_shape(0);
  Expr depth;
  if (auto c = const_scalar(ctx, 1)) {
    depth = Expr(*c);
  } else if (const auto* v = ctx.in_value(1); v && v->size() == 1) {
    depth = (*v)[0];
  } else {
    return;
  }
  const int64_t axis = norm_axis(ctx, ctx.attr_int("axis", -1), idx.size() + 1);
  Shape out = idx;
  out.insert(out.begin() + axis, depth);
  ctx.set_output(0, ctx.in_dtype(2), out);
}

// The count of nonzero elements depends on the data. It is taken at its upper bound,
// every element of the input, so that what is gathered with it is never underestimated
// (mt5's classifier picks the EOS positions, hidden[eos_mask]: one row per sample, bounded
// by one per token). A symbol of its own would leave every size downstream unknown.
void non_zero(ShapeContext& ctx) {
  const Expr count = product(ctx.in_shape(0));
  ctx.warn("NonZero's output size depends on the data; memest takes its upper bound, every element of its input (" +
           count.str() + ")");
  ctx.set_output(0, DType::I64, {Expr(static_cast<int64_t>(ctx.rank(0))), count});
}

// F.pad's modes run different kernels with different autograd formulas (derivatives.yaml):
// constant_pad_nd's backward is constant_pad_nd(grad, -pad) and saves nothing, but
// reflection_padNd and replication_padNd (ONNX modes "reflect" and "edge") save `self`:
// their backward kernels take the input tensor (for its sizes), so autograd keeps it
// alive until backward. A ReflectionPad/ReplicationPad in front of a convolution
// (Conv2d(padding_mode="reflect"|"replicate")) thus keeps the unpadded input as well as
// the padded one the convolution keeps. Measured: rnd3_69 (validate/randnet.py seed 3,
// a replicate-padded conv after a squeeze-excitation Mul, fp16) kept 32 MiB more at the
// end of forward than memest counted: the Mul's fp32 output, which only the Pad reads.
// "wrap" (circular) is torch's _pad_circular, slices copied into a new tensor: nothing
// kept (PadCircular below).
const OpInfo* pad_mode(const Graph&, const Node& n, const Dispatch&) {
  static const OpInfo* const keeping = find_op("memest", "PadKeepingInput");
  static const OpInfo* const circular = find_op("memest", "PadCircular");
  const std::string mode = n.attr_string("mode", "constant");
  if (mode == "wrap") return circular;
  return mode == "reflect" || mode == "edge" ? keeping : nullptr;
}

// torch's _pad_circular (PadNd.cpp) copies the input into the middle of a new tensor and
// then each side's wrapped slice into place: copy_ into views of one base, which autograd
// records as CopySlices, one per copy. Each CopySlices' backward clones the base's
// gradient (result = grad.clone, its slice zeroed for the next) and SliceBackward0 makes a
// gradient of the base's size from the slice's: a tensor of the padded size beside the
// incoming gradient and the input's. traces37 rnd21_157 (2-D circular pad, fp32 before
// an autocast conv): at CopySlices' peak 50.3 + 50.3 MB (padded) + 47.2 MB (the input's
// gradient), where memest had one padded and the input's.
Workspace circular_pad_backward_copy(const Graph& g, const Node& n, DType run, bool, bool) {
  return output_bytes(g, n, 0, run);
}

// Integer indexing (x[:, 0], x[..., 0, :], unbind's pieces in a dynamo export) is
// aten::select: a view (TensorShape.cpp, select's as_strided), whose backward
// (select_backward) writes the gradient into zeros of the input's size. Both exporters
// write it as a Gather with a 0-d constant index (the dynamo exporter names the node
// "node_select"); index_select and embedding index with a tensor of rank >= 1 and copy.
// seqtrace29 sh_persimmon_cls: the q, k, v picked from the fused projection are views that
// keep it until backward; memest had copied them and freed the projection.
const OpInfo* gather_select(const Graph& g, const Node& n, const Dispatch&) {
  static const OpInfo* const select = find_op("memest", "Select");
  if (!n.has_input(1)) return nullptr;
  const Tensor& index = g.tensors[n.inputs[1]];
  return index.shape && index.shape->empty() && index.value ? select : nullptr;
}

constexpr const char* kFamily = "shape";

const OpInfo kOps[] = {
    {.op = "Reshape", .family = kFamily, .shape = reshape, .grads = "VN", .view = true, .layout = Layout::Reshape,
     .note = "a view of a contiguous input"},
    {.op = "Flatten", .family = kFamily, .shape = flatten, .grads = "V", .view = true, .layout = Layout::Reshape,
     .note = "a view of a contiguous input"},
    {.op = "Squeeze", .family = kFamily, .shape = squeeze, .grads = "VN", .view = true, .layout = Layout::UnitDims,
     .note = "a view"},
    {.op = "SqueezeIf", .family = kFamily, .shape = squeeze_if, .grads = "VN", .view = true,
     .layout = Layout::UnitDims, .domain = "memest",
     .note = "x.squeeze(d) of a dim of unknown size (legacy exporter's If); a view of input 0, the condition unread"},
    {.op = "Unsqueeze", .family = kFamily, .shape = unsqueeze, .grads = "VN", .view = true,
     .layout = Layout::UnitDims, .note = "a view"},
    {.op = "Transpose", .family = kFamily, .shape = transpose, .grads = "V", .view = true, .layout = Layout::Permute,
     .note = "a strided view; a later op may copy it to make it contiguous"},
    {.op = "Concat", .family = kFamily, .shape = concat, .autocast = Autocast::Promote, .grads = "V",
     .narrows_grads = true, .note = "allocates its result; backward narrows the gradient (views)"},
    {.op = "Split", .family = kFamily, .shape = split, .grads = "AN", .view = true, .layout = Layout::Narrow,
     .note = "outputs are views; backward concatenates the gradients (allocates)"},
    {.op = "Slice", .family = kFamily, .shape = slice, .grads = "ANNNN", .view = true, .layout = Layout::Narrow,
     .note = "a view; backward writes the gradient into zeros of the input's size"},
    {.op = "Gather", .family = kFamily, .shape = gather, .saved_inputs = bits({1}), .grads = "AN",
     .variant = gather_select,
     .note = "index_select/embedding: keeps the indices; backward allocates a dense gradient of the data"},
    {.op = "Select", .family = kFamily, .shape = gather, .grads = "AN", .view = true, .layout = Layout::Select,
     .domain = "memest", .note = "Gather with a 0-d constant index (x[:, 0]): a view; backward writes the gradient "
                                 "into zeros of the input's size"},
    {.op = "GatherElements", .family = kFamily, .shape = gather_elements, .saved_inputs = bits({0, 1}), .grads = "AN",
     .note = "torch.gather: gather_backward keeps the data and the indices"},
    {.op = "GatherND", .family = kFamily, .shape = gather_nd, .saved_inputs = bits({1}), .grads = "AN",
     .note = "advanced indexing: keeps the indices"},
    {.op = "ScatterND", .family = kFamily, .shape = scatter_nd, .autocast = Autocast::Promote, .saved_inputs = bits({1}),
     .grads = "ANA", .note = "index_put: keeps the indices"},
    {.op = "ScatterElements", .family = kFamily, .shape = like_data, .saved_inputs = bits({1}), .grads = "ANA",
     .note = "scatter: keeps the indices"},
    {.op = "Scatter", .family = kFamily, .shape = like_data, .saved_inputs = bits({1}), .grads = "ANA",
     .note = "ScatterElements before opset 11"},
    {.op = "Expand", .family = kFamily, .shape = expand, .grads = "AN", .view = true, .layout = Layout::Broadcast,
     .note = "a broadcast view; backward sums the gradient back (allocates)"},
    {.op = "Tile", .family = kFamily, .shape = tile, .grads = "AN", .note = "repeat: copies; backward sums"},
    {.op = "Pad", .family = kFamily, .shape = pad, .grads = "ANNN", .variant = pad_mode,
     .note = "copies; constant mode keeps nothing (backward slices the gradient)"},
    {.op = "PadKeepingInput", .family = kFamily, .shape = pad, .saved_inputs = bits({0}), .grads = "ANNN",
     .input_grad_contiguous = true, .domain = "memest", .note = "Pad in reflect/edge mode (reflection_pad, replication_pad): keeps its input"},
    {.op = "PadCircular", .family = kFamily, .shape = pad, .grads = "ANNN",
     .bwd_data_workspace = circular_pad_backward_copy, .scratch_is_temporary = true, .domain = "memest",
     .note = "Pad in wrap mode (_pad_circular: slices copied into a new tensor): keeps nothing; backward "
             "holds a padded-size copy of the gradient beside the input's"},
    // Every upsample_* kernel is on autocast's fp32 list (autocast_mode.cpp AT_FORALL_FP32):
    // a half input is cast up and the result is fp32 (traces13 rnd5_27: trilinear).
    // A channels-last input gives a channels-last output (upsample_*_out_cuda allocate in
    // the input's suggested memory format).
    {.op = "OneHot", .family = kFamily, .shape = one_hot, .autocast = Autocast::None,
     .note = "depth from input 1, dtype of the values; no gradient"},
    {.op = "NonZero", .family = kFamily, .shape = non_zero, .autocast = Autocast::None,
     .note = "data-dependent size: a fresh symbol"},
};

}  // namespace

OpTable shape_ops() { return {kOps, sizeof(kOps) / sizeof(kOps[0])}; }

}  // namespace memest
