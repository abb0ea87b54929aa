// Reductions (ReduceSum, ReduceMean, ...), ArgMax/ArgMin, TopK and CumSum.
#include <algorithm>

#include "estimator/ops/registry.h"
#include "estimator/ops/shape_util.h"

namespace memest {
namespace {

using Combine = Expr (*)(const Expr&, const Expr&);
Expr add(const Expr& a, const Expr& b) { return a + b; }
Expr mul(const Expr& a, const Expr& b) { return a * b; }

// The reduced axes: the attribute in early opsets, input 1 later (ReduceSum moved
// at 13, the others at 18); whichever the node has. An empty list means every
// axis, unless noop_with_empty_axes makes the op an identity. nullopt: input 1
// exists but its contents are not known.
std::optional<std::vector<int64_t>> reduce_axes(const ShapeContext& ctx) {
  if (ctx.has_attr("axes")) return ctx.attr_ints("axes");
  if (ctx.has_input(1)) return const_ints(ctx, 1);
  return std::vector<int64_t>{};
}

// The dims a Reduce* node reduces, for the CUDA kernel's launch (OpInfo::reduced_axes):
// every dim for an empty list, none when noop_with_empty_axes makes it an identity.
std::optional<std::vector<int64_t>> node_axes(const Graph& g, const Node& n) {
  if (!n.has_input(0) || !g.tensors[n.inputs[0]].shape) return std::nullopt;
  const auto rank = static_cast<int64_t>(g.tensors[n.inputs[0]].shape->size());
  std::vector<int64_t> axes;
  if (n.attr("axes")) {
    axes = n.attr_ints("axes");
  } else if (n.has_input(1)) {
    const auto& v = g.tensors[n.inputs[1]].value;
    if (!v) return std::nullopt;
    for (const Expr& e : *v) {
      const auto c = e.as_const();
      if (!c) return std::nullopt;
      axes.push_back(*c);
    }
  }
  if (axes.empty()) {
    if (n.attr_int("noop_with_empty_axes", 0) != 0) return axes;
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  for (int64_t& a : axes) {
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) return std::nullopt;
  }
  return axes;
}

// The output shape of reducing `axes` (all when empty), keeping them as 1s or dropping them.
Shape reduced(const ShapeContext& ctx, const Shape& x, std::vector<int64_t> axes, bool keepdims) {
  if (axes.empty()) {
    for (size_t i = 0; i < x.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  axes = norm_axes(ctx, axes, x.size());
  Shape out;
  for (size_t i = 0; i < x.size(); ++i) {
    bool r = std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end();
    if (!r) {
      out.push_back(x[i]);
    } else if (keepdims) {
      out.push_back(Expr(1));
    }
  }
  return out;
}

// An upper bound on every element of an integer tensor whose contents depend on the
// data, or nullopt: 1 for booleans or a cast of them (a mask), the sum of such over axes
// times the axes' sizes, the max or min of one. Longformer sizes its global-attention
// keys by is_index_global_attn.long().sum(dim=1).max(): at most the sequence length.
std::optional<Expr> element_bound(const Graph& g, int t, int depth = 0) {
  if (t < 0 || depth > 8) return std::nullopt;
  const Tensor& x = g.tensors[t];
  if (x.dtype == DType::Bool) return Expr(1);
  if (x.value && x.value->size() == 1) return x.value->front();
  if (x.producer < 0 || is_floating(x.dtype)) return std::nullopt;
  const Node& n = g.nodes[x.producer];
  if (n.op == "Cast" && n.has_input(0) && g.tensors[n.inputs[0]].dtype == DType::Bool) return Expr(1);
  if (n.op != "ReduceSum" && n.op != "ReduceMax" && n.op != "ReduceMin") return std::nullopt;
  auto b = element_bound(g, n.has_input(0) ? n.inputs[0] : -1, depth + 1);
  if (!b || n.op != "ReduceSum") return b;
  const auto& in = g.tensors[n.inputs[0]].shape;
  if (!in) return std::nullopt;
  std::vector<int64_t> axes = n.attr_ints("axes");
  if (!n.attr("axes") && n.has_input(1)) {
    const auto& v = g.tensors[n.inputs[1]].value;
    if (!v) return std::nullopt;
    axes.clear();
    for (const Expr& e : *v) {
      const auto c = e.as_const();
      if (!c) return std::nullopt;
      axes.push_back(*c < 0 ? *c + static_cast<int64_t>(in->size()) : *c);
    }
  }
  Expr summed(1);
  for (size_t i = 0; i < in->size(); ++i) {
    if (axes.empty() || std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end()) summed = summed * (*in)[i];
  }
  return *b * summed;
}

// A data-dependent integer scalar made by a reduction (a count, a maximum count) is taken
// at its upper bound when it has one, so that sizes made from it are never underestimated.
void bound_data_dependent(ShapeContext& ctx) {
  const Node& n = ctx.node();
  if (n.outputs.empty() || n.outputs[0] < 0) return;
  const Tensor& out = ctx.graph().tensors[n.outputs[0]];
  if (out.value || !out.shape || is_floating(out.dtype)) return;
  for (const Expr& d : *out.shape) {
    if (d != Expr(1)) return;
  }
  if (auto b = element_bound(ctx.graph(), n.outputs[0])) {
    ctx.warn(n.op + " of a mask depends on the data; memest takes its upper bound, " + b->str());
    ctx.set_value(0, {*b});
  }
}

template <Combine F>
void reduce(ShapeContext& ctx) {
  const Shape& x = ctx.in_shape(0);
  auto axes = reduce_axes(ctx);
  if (!axes) return;
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  if (axes->empty() && ctx.attr_int("noop_with_empty_axes", 0) != 0) {
    ctx.set_output(0, ctx.in_dtype(0), x);
    if (const auto* v = ctx.in_value(0)) ctx.set_value(0, *v);
    return;
  }
  Shape out = reduced(ctx, x, *axes, keepdims);
  ctx.set_output(0, ctx.in_dtype(0), out);
  bound_data_dependent(ctx);
  // Folds the product or sum of known contents (ReduceProd(Shape(x)) is numel),
  // over any axes of a small tensor.
  if constexpr (F != nullptr) {
    auto c = contents(ctx, 0);
    if (!c || c->v->empty()) return;
    std::vector<int64_t> ax = *axes;
    if (ax.empty()) {
      for (size_t i = 0; i < x.size(); ++i) ax.push_back(static_cast<int64_t>(i));
    }
    ax = norm_axes(ctx, ax, x.size());
    // The kept dims, reduced ones as 1: each input element adds into one slot.
    std::vector<int64_t> kept = c->dims, at(c->dims.size());
    for (int64_t a : ax) kept[a] = 1;
    std::vector<std::optional<Expr>> acc(c->v->size() / std::max<size_t>(1, [&] {
      size_t r = 1;
      for (int64_t a : ax) r *= static_cast<size_t>(c->dims[a]);
      return r;
    }()));
    size_t k = 0;
    for_each_index(c->dims, [&](const std::vector<int64_t>& idx) {
      for (size_t a = 0; a < idx.size(); ++a) at[a] = kept[a] == 1 ? 0 : idx[a];
      auto& slot = acc[flat_index(kept, at)];
      const Expr& e = (*c->v)[k++];
      slot = slot ? F(*slot, e) : e;
    });
    std::vector<Expr> v;
    for (auto& a : acc) {
      if (!a) return;
      v.push_back(std::move(*a));
    }
    ctx.set_value(0, std::move(v));
  }
}

void arg_reduce(ShapeContext& ctx) {
  const Shape& x = ctx.in_shape(0);
  if (x.empty()) ctx.fail("input must have rank >= 1");
  const int64_t axis = norm_axis(ctx, ctx.attr_int("axis", 0), x.size());
  ctx.set_output(0, DType::I64, reduced(ctx, x, {axis}, ctx.attr_int("keepdims", 1) != 0));
}

// k is an attribute before opset 10 and input 1 after; it may be symbolic.
void topk(ShapeContext& ctx) {
  Shape out = ctx.in_shape(0);
  if (out.empty()) ctx.fail("input must have rank >= 1");
  const int64_t axis = norm_axis(ctx, ctx.attr_int("axis", -1), out.size());
  Expr k;
  if (ctx.has_attr("k")) {
    k = Expr(ctx.attr_int("k", 0));
  } else {
    const auto* v = ctx.in_value(1);
    if (!v || v->size() != 1) return;
    k = (*v)[0];
  }
  auto kc = k.as_const(), dc = out[axis].as_const();
  if (kc && (*kc < 0 || (dc && *kc > *dc))) {
    ctx.fail("k = " + std::to_string(*kc) + " is out of range for axis of size " + out[axis].str());
  }
  out[axis] = k;
  ctx.set_output(0, ctx.in_dtype(0), out);
  ctx.set_output(1, DType::I64, out);
}

void same(ShapeContext& ctx) { ctx.set_output(0, ctx.in_dtype(0), ctx.in_shape(0)); }

constexpr const char* kFamily = "reduce";

// Autocast: sum, prod, norms, logsumexp and cumsum are on the fp32 lists; mean, amax and
// amin keep their input's dtype. sum, prod and linalg_vector_norm are fp32_set_opt_dtype
// (autocast_mode.cpp): called with dtype=float, the CUDA reduction reads half and
// accumulates and writes float, with no fp32 copy of the input (Widen). Measured: timm's
// GlobalResponseNorm (x.norm(p=2, dim=...): convnextv2_atto fp16, traces21) kept only the
// norm's 20 KB result, where an fp32 copy of x per block had been counted.
const OpInfo kOps[] = {
    {.op = "ReduceSum", .family = kFamily, .shape = reduce<add>, .autocast = Autocast::Widen, .grads = "VN",
     .reduced_axes = node_axes,
     .note = "backward expands the gradient (a view)"},
    {.op = "ReduceMean", .family = kFamily, .shape = reduce<nullptr>, .grads = "AN",
     .reduced_axes = node_axes,
     .note = "backward expands and divides (allocates)"},
    {.op = "ReduceMax", .family = kFamily, .shape = reduce<nullptr>, .saved_inputs = bits({0}),
     .saved_outputs = bits({0}), .grads = "AN", .note = "amax: keeps input and result to find the maxima"},
    {.op = "ReduceMin", .family = kFamily, .shape = reduce<nullptr>, .saved_inputs = bits({0}),
     .saved_outputs = bits({0}), .grads = "AN", .note = "amin: keeps input and result to find the minima"},
    {.op = "ReduceProd", .family = kFamily, .shape = reduce<mul>, .autocast = Autocast::Widen, .saved_inputs = bits({0}),
     .saved_outputs = bits({0}), .grads = "AN",
     .reduced_axes = node_axes,
     .note = "prod_backward reads input and result; autocast runs it in fp32"},
    {.op = "ReduceL1", .family = kFamily, .shape = reduce<nullptr>, .autocast = Autocast::Widen,
     .saved_inputs = bits({0}), .saved_outputs = bits({0}), .grads = "AN", .reduced_axes = node_axes,
     .note = "linalg_vector_norm(ord=1)"},
    {.op = "ReduceL2", .family = kFamily, .shape = reduce<nullptr>, .autocast = Autocast::Widen,
     .saved_inputs = bits({0}), .saved_outputs = bits({0}), .grads = "AN", .reduced_axes = node_axes,
     .note = "linalg_vector_norm(ord=2)"},
    {.op = "ReduceLogSum", .family = kFamily, .shape = reduce<nullptr>, .autocast = Autocast::Fp32,
     .saved_outputs = bits({0}), .grads = "AN", .note = "log(sum): log keeps the (output-sized) sum"},
    {.op = "ReduceLogSumExp", .family = kFamily, .shape = reduce<nullptr>, .autocast = Autocast::Fp32,
     .saved_inputs = bits({0}), .saved_outputs = bits({0}), .grads = "AN",
     .note = "backward reads input and result; autocast runs it in fp32"},
    {.op = "ReduceSumSquare", .family = kFamily, .shape = reduce<nullptr>, .autocast = Autocast::Fp32,
     .saved_inputs = bits({0}), .grads = "AN", .reduced_axes = node_axes,
     .note = "x*x then sum: the product keeps its input"},
    // estimator/fuse.cc variance: ReduceMean, Sub, Mul, ReduceMean, Mul, Div as torch.var.
    {.op = "Variance", .family = kFamily, .shape = reduce<nullptr>, .saved_inputs = bits({0}), .grads = "A",
     .grad_temporaries = 1, .reduced_axes = node_axes, .domain = "memest",
     .note = "torch.var: one kernel keeping its input; backward makes x - mean, then the gradient"},
    {.op = "ArgMax", .family = kFamily, .shape = arg_reduce, .autocast = Autocast::None,
     .note = "int64 indices, no gradient"},
    {.op = "ArgMin", .family = kFamily, .shape = arg_reduce, .autocast = Autocast::None,
     .note = "int64 indices, no gradient"},
    {.op = "TopK", .family = kFamily, .shape = topk, .saved_outputs = bits({1}), .grads = "AN",
     .note = "keeps the int64 indices to scatter the gradient back"},
    {.op = "CumSum", .family = kFamily, .shape = same, .autocast = Autocast::Fp32, .grads = "AN",
     .note = "backward is a reversed cumsum (allocates)"},
};

}  // namespace

OpTable reduce_ops() { return {kOps, sizeof(kOps) / sizeof(kOps[0])}; }

}  // namespace memest
