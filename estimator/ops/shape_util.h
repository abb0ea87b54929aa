// Helpers shared by shape rules: broadcasting, axes, reading shape tensors.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "estimator/ops/op_info.h"

namespace memest {

/// Numpy-style broadcast of two shapes; fails through ctx when incompatible.
Shape broadcast(const ShapeContext& ctx, const Shape& a, const Shape& b);
/// Normalises a possibly negative axis against a rank; fails when out of range.
int64_t norm_axis(const ShapeContext& ctx, int64_t axis, size_t rank);
/// Constant integer contents of input i (every element a constant), or nullopt.
std::optional<std::vector<int64_t>> const_ints(const ShapeContext& ctx, size_t i);
/// Integer attribute list, or (opset-dependent) the same list given as input i.
std::optional<std::vector<int64_t>> ints_from_attr_or_input(const ShapeContext& ctx, const char* attr,
                                                            size_t input);
/// The ONNX default-domain output dtype of an op whose output follows input 0.
inline DType same_dtype(const ShapeContext& ctx) { return ctx.in_dtype(0); }

/// Numpy broadcast of every present input's shape (Sum, Max, Where).
Shape broadcast_inputs(const ShapeContext& ctx);
/// The dtype PyTorch's type promotion gives a binary op: floating over integer,
/// the wider float, float32 for float16 with bfloat16.
DType promote(DType a, DType b);
/// Normalises and checks a list of axes against a rank; fails on repeats.
std::vector<int64_t> norm_axes(const ShapeContext& ctx, const std::vector<int64_t>& axes, size_t rank);

// Dimension arithmetic beyond what Expr does exactly.

/// The constant term of an expression ("2*h + 3" -> 3).
int64_t constant_term(const Expr& e);
/// floor(e / d) for d > 0 when d divides e's symbolic part; exact for constants.
std::optional<Expr> floor_div(const Expr& e, int64_t d);
/// ceil(e / d) under the same condition as floor_div.
std::optional<Expr> ceil_div(const Expr& e, int64_t d);

/// The values a dimension expression can take: a constant exactly; c * (product
/// of symbols) with c > 0 at least c, since a symbol stands for a size >= 1;
/// anything else is unbounded. Decides Equal(batch, -1) and Max(batch, 1).
struct DimRange {
  std::optional<int64_t> lo, hi;  ///< nullopt: unbounded on that side
};
DimRange dim_range(const Expr& e);
/// a < b (or a <= b with `or_equal`) when the ranges decide it; nullopt otherwise.
std::optional<bool> dim_less(const Expr& a, const Expr& b, bool or_equal);

/// Output extent of one sliding-window axis (conv, pooling):
/// floor((in + pad_begin + pad_end - dilation*(k-1) - 1) / stride) + 1. With
/// ceil_mode the ceiling, minus a last window that would start in the right
/// padding (PyTorch's rule, which ONNX Runtime follows). nullopt when symbolic
/// dims make the division inexact.
std::optional<Expr> window_dim(const Expr& in, int64_t kernel, int64_t stride, int64_t dilation,
                               int64_t pad_begin, int64_t pad_end, bool ceil_mode);
/// Output spatial dims of a conv-like op (Conv, MaxPool, ...) from its strides,
/// dilations, pads and auto_pad attributes; nullopt when window_dim cannot decide.
std::optional<Shape> window_shape(const ShapeContext& ctx, const Shape& spatial,
                                  const std::vector<int64_t>& kernel, bool ceil_mode);

// Known contents (shape arithmetic).

/// Tensors with more elements than this never carry folded contents: shape
/// arithmetic is small, and a big ConstantOfShape or Range must not be expanded.
constexpr int64_t kMaxFoldedElements = 4096;
/// The element count of a shape when it is constant and at most kMaxFoldedElements.
std::optional<size_t> foldable_numel(const Shape& s);
/// The single constant integer held by input i (TopK's k, OneHot's depth).
std::optional<int64_t> const_scalar(const ShapeContext& ctx, size_t i);
/// Float contents of input i: its float contents, else its constant integer contents.
std::optional<std::vector<double>> const_floats(const ShapeContext& ctx, size_t i);
/// The dims of a shape when every one is a constant.
std::optional<std::vector<int64_t>> const_dims(const Shape& s);
/// Known integer contents of input i together with its constant dims (row-major);
/// nullopt unless both are known and agree in element count. Float contents that are
/// all whole numbers count (a shape cast to float, the -1.0 Funnel's relative
/// positions start from), as they do for elementwise arithmetic.
struct Contents {
  const std::vector<Expr>* v;
  std::vector<int64_t> dims;
  std::shared_ptr<const std::vector<Expr>> owned;  ///< what v points to when made from float contents
};
std::optional<Contents> contents(const ShapeContext& ctx, size_t i);
/// For each element of a tensor of dims `out` (row-major), the flat index of the
/// element numpy broadcasting reads from a tensor of dims `in`.
std::vector<size_t> broadcast_map(const std::vector<int64_t>& out, const std::vector<int64_t>& in);
/// Calls f(index) for every multi-index of `dims` in row-major order.
template <typename F>
void for_each_index(const std::vector<int64_t>& dims, F f) {
  for (int64_t d : dims) {
    if (d <= 0) return;
  }
  std::vector<int64_t> idx(dims.size(), 0);
  while (true) {
    f(static_cast<const std::vector<int64_t>&>(idx));
    size_t a = dims.size();
    while (a > 0 && ++idx[a - 1] == dims[a - 1]) idx[--a] = 0;
    if (a == 0) return;
  }
}
/// The flat row-major offset of a multi-index into `dims`.
size_t flat_index(const std::vector<int64_t>& dims, const std::vector<int64_t>& idx);

// For saved_extra functions, which see the graph rather than a ShapeContext.

/// Shape of a node's input i, or nullptr when absent or unknown.
const Shape* input_shape(const Graph& g, const Node& n, size_t i);
/// Shape of a node's output i, or nullptr when absent or unknown.
const Shape* output_shape(const Graph& g, const Node& n, size_t i);
/// Bytes of output i in dtype `run` (a scratch copy of it, or of its gradient); 0 when
/// its shape is unknown.
Expr output_bytes(const Graph& g, const Node& n, size_t i, DType run);

}  // namespace memest
