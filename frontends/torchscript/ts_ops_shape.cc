// Views, layout and indexing: reshape targets built from folded sizes, permutations
// from the tracked rank, concatenation and splitting (a split's arity read from the
// ListUnpack that consumes it).
#include <algorithm>
#include <limits>
#include <numeric>

#include "ts_consts.h"
#include "ts_ops.h"

namespace memest::ts {
namespace {

// A dim index made non-negative with the rank (`extra` for ops that add a dim).
std::optional<int64_t> axis(Call& c, size_t i, int extra = 0) {
  auto d = c.int_(i);
  if (!d) return std::nullopt;
  if (*d >= 0) return d;
  if (c.rank(0) < 0) return std::nullopt;
  return *d + c.rank(0) + extra;
}

int list_length(const Val& v) {
  if (v.is_const() && v.value.isIntList()) return static_cast<int>(v.value.toIntList().size());
  if (v.kind == Val::Kind::List && !v.items.empty()) return static_cast<int>(v.items.size());
  return -1;
}

// ---- Reshaping -------------------------------------------------------------------

bool lower_reshape(Call& c) {
  c.set(0, c.emit1("Reshape", {c.tensor(0), c.shape(1)})).rank = list_length(c.in(1));
  return true;
}

bool lower_reshape_as(Call& c) {
  c.set(0, c.emit1("Reshape", {c.tensor(0), c.emit1("Shape", {c.tensor(1)})})).rank = c.rank(1);
  return true;
}

// flatten(x, start, end): ONNX Flatten when it agrees (start 1, end last), else a
// Reshape that keeps the dims outside [start, end].
bool lower_flatten(Call& c) {
  auto s = c.int_(1), e = c.int_(2);
  if (!s || !e) return false;
  const int r = c.rank(0);
  int64_t start = *s < 0 && r >= 0 ? *s + r : *s;
  int64_t end = *e < 0 && r >= 0 ? *e + r : *e;
  if (r == 0) {
    c.set(0, c.emit1("Reshape", {c.tensor(0), c.ints_const({1})})).rank = 1;
    return true;
  }
  if (r > 0 && start == end) {
    c.out(0) = c.in(0);
    return true;
  }
  if (start == 1 && (*e == -1 || end == r - 1)) {
    c.set(0, c.emit1("Flatten", {c.tensor(0)}, {attr_i("axis", 1)})).rank = 2;
    return true;
  }
  if (start == 0 && (*e == -1 || end == r - 1)) {
    c.set(0, c.emit1("Reshape", {c.tensor(0), c.ints_const({-1})})).rank = 1;
    return true;
  }
  if (r < 0 || start < 0 || end < 0) return false;
  std::string x = c.tensor(0);
  std::vector<std::string> parts;
  if (start > 0) parts.push_back(c.emit1("Shape", {x}, {attr_i("start", 0), attr_i("end", start)}));
  parts.push_back(c.ints_const({-1}));
  if (end + 1 < r) parts.push_back(c.emit1("Shape", {x}, {attr_i("start", end + 1), attr_i("end", r)}));
  auto shape = c.emit1("Concat", parts, {attr_i("axis", 0)});
  c.set(0, c.emit1("Reshape", {x, shape})).rank = static_cast<int>(r - (end - start));
  return true;
}

// unflatten(x, dim, sizes): the dims before and after dim kept from the input.
bool lower_unflatten(Call& c) {
  auto d = axis(c, 1);
  const int r = c.rank(0);
  const int n = list_length(c.in(2));
  if (!d || r < 0 || n < 0) return false;
  std::string x = c.tensor(0);
  std::vector<std::string> parts;
  if (*d > 0) parts.push_back(c.emit1("Shape", {x}, {attr_i("start", 0), attr_i("end", *d)}));
  parts.push_back(c.shape(2));
  if (*d + 1 < r) parts.push_back(c.emit1("Shape", {x}, {attr_i("start", *d + 1), attr_i("end", r)}));
  auto shape = parts.size() == 1 ? parts[0] : c.emit1("Concat", parts, {attr_i("axis", 0)});
  c.set(0, c.emit1("Reshape", {x, shape})).rank = r - 1 + n;
  return true;
}

// ---- Layout ------------------------------------------------------------------------

// contiguous(x) is a Reshape to x's own shape: memest's Reshape is a view of a
// contiguous input and a copy of a strided one, which is what contiguous() does.
// (Exported ONNX drops it, losing the copy when no reshape follows.)
bool lower_contiguous(Call& c) {
  if (c.in(0).kind != Val::Kind::Tensor) return lower_identity(c);
  std::string x = c.tensor(0);
  c.set(0, c.emit1("Reshape", {x, c.emit1("Shape", {x})}));
  return true;
}

bool lower_permute(Call& c) {
  auto dims = c.ints(1);
  if (!dims) return false;
  const int64_t r = static_cast<int64_t>(dims->size());
  for (auto& d : *dims) d = d < 0 ? d + r : d;
  c.set(0, c.emit1("Transpose", {c.tensor(0)}, {attr_ints("perm", *dims)}));
  return true;
}

bool lower_transpose(Call& c) {
  auto a = axis(c, 1), b = axis(c, 2);
  const int r = c.rank(0);
  if (!a || !b || r < 0) return false;
  std::vector<int64_t> perm(static_cast<size_t>(r));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[static_cast<size_t>(*a)], perm[static_cast<size_t>(*b)]);
  c.set(0, c.emit1("Transpose", {c.tensor(0)}, {attr_ints("perm", perm)}));
  return true;
}

// t(x): a 2-D transpose; 0-D and 1-D tensors are returned as they are.
bool lower_t(Call& c) {
  if (c.rank(0) >= 0 && c.rank(0) < 2) {
    c.out(0) = c.in(0);
    return true;
  }
  c.set(0, c.emit1("Transpose", {c.tensor(0)}, {attr_ints("perm", {1, 0})})).rank = 2;
  return true;
}

bool lower_squeeze(Call& c) {
  if (c.size() < 2 || c.none(1)) {
    c.set(0, c.emit1("Squeeze", {c.tensor(0)})).rank = -1;
    return true;
  }
  auto dims = c.ints(1);
  if (!dims) return false;
  Val& out = c.set(0, c.emit1("Squeeze", {c.tensor(0), c.ints_const(*dims)}));
  out.rank = c.rank(0) < 0 ? -1 : c.rank(0) - static_cast<int>(dims->size());
  return true;
}

bool lower_unsqueeze(Call& c) {
  auto d = axis(c, 1, 1);
  if (!d) return false;
  Val& out = c.set(0, c.emit1("Unsqueeze", {c.tensor(0), c.ints_const({*d})}));
  out.rank = c.rank(0) < 0 ? -1 : c.rank(0) + 1;
  return true;
}

// expand(x, sizes): -1 keeps a dim, which ONNX's broadcasting Expand spells 1.
bool lower_expand(Call& c) {
  Val sizes = c.in(1);
  if (sizes.is_const() && sizes.value.isIntList()) {
    auto v = sizes.value.toIntVector();
    for (auto& d : v) d = d == -1 ? 1 : d;
    sizes = Val::constant(c10::IValue(v));
  } else if (sizes.kind == Val::Kind::List) {
    for (auto& item : sizes.items) {
      if (item.is_const() && item.value.isInt() && item.value.toInt() == -1) item = Val::constant(int64_t{1});
    }
  }
  Val& out = c.set(0, c.emit1("Expand", {c.tensor(0), c.shape_of(sizes)}));
  out.rank = list_length(sizes);
  return true;
}

bool lower_expand_as(Call& c) {
  c.set(0, c.emit1("Expand", {c.tensor(0), c.emit1("Shape", {c.tensor(1)})})).rank = c.rank(1);
  return true;
}

bool lower_repeat(Call& c) {
  auto reps = c.ints(1);
  if (!reps) return false;
  std::string x = c.tensor(0);
  const int r = c.rank(0);
  if (r < 0) return false;
  // repeat with more entries than dims adds leading dims of size 1 first.
  for (int k = r; k < static_cast<int>(reps->size()); ++k) x = c.emit1("Unsqueeze", {x, c.ints_const({0})});
  c.set(0, c.emit1("Tile", {x, c.ints_const(*reps)})).rank = std::max<int>(r, static_cast<int>(reps->size()));
  return true;
}

// ---- Joining and splitting -----------------------------------------------------------

std::vector<Val> tensors_of(const Val& list) {
  if (list.kind == Val::Kind::List || list.kind == Val::Kind::Tuple) return list.items;
  return {};
}

bool lower_cat(Call& c) {
  auto items = tensors_of(c.in(0));
  auto d = c.int_(1);
  if (items.empty() || !d) return false;
  std::vector<std::string> ins;
  int rank = -1;
  at::ScalarType t = at::ScalarType::Undefined;
  for (const Val& v : items) {
    ins.push_back(c.lowerer().materialize(v, at::ScalarType::Undefined, c.node()));
    rank = std::max(rank, v.rank);
    if (t == at::ScalarType::Undefined) t = v.dtype;
  }
  Val& out = c.set(0, ins.size() == 1 ? ins[0] : c.emit1("Concat", ins, {attr_i("axis", *d)}));
  out.rank = rank;
  out.dtype = t;
  return true;
}

bool lower_stack(Call& c) {
  auto items = tensors_of(c.in(0));
  auto d = c.int_(1);
  if (items.empty() || !d) return false;
  const int rank = items[0].rank;
  int64_t dim = *d;
  if (dim < 0) {
    if (rank < 0) return false;
    dim += rank + 1;
  }
  std::vector<std::string> ins;
  for (const Val& v : items) {
    ins.push_back(c.emit1("Unsqueeze", {c.lowerer().materialize(v, at::ScalarType::Undefined, c.node()),
                                        c.ints_const({dim})}));
  }
  Val& out = c.set(0, ins.size() == 1 ? ins[0] : c.emit1("Concat", ins, {attr_i("axis", dim)}));
  out.rank = rank < 0 ? -1 : rank + 1;
  out.dtype = items[0].dtype;
  return true;
}

// Output 0 as a list of `parts` tensors from one ONNX Split.
bool split_into(Call& c, int64_t dim, size_t parts, const std::string& sizes, bool squeeze) {
  if (parts == 0) return false;
  std::vector<std::string> ins = {c.tensor(0)};
  if (!sizes.empty()) ins.push_back(sizes);
  auto names = c.emit("Split", ins, {attr_i("axis", dim)}, static_cast<int>(parts));
  Val list;
  list.kind = Val::Kind::List;
  for (auto& n : names) {
    Val v = Val::tensor(n, c.rank(0), c.dtype(0));
    if (squeeze) {
      v.name = c.emit1("Squeeze", {n, c.ints_const({dim})});
      v.rank = c.rank(0) < 0 ? -1 : c.rank(0) - 1;
    }
    list.items.push_back(v);
  }
  c.out(0) = list;
  return true;
}

// split(x, size, dim): as many parts as the ListUnpack after it takes; equal
// parts unless the dim is known (then the last part is the remainder).
bool lower_split(Call& c) {
  auto d = axis(c, 2);
  if (!d) return false;
  if (auto sizes = c.ints(1); sizes && sizes->size() > 1) {  // split(x, [a, b, c], dim)
    return split_into(c, *d, sizes->size(), c.ints_const(*sizes), false);
  }
  auto size = c.int_(1);
  const Val& x = c.in(0);
  if (size && *size > 0 && static_cast<size_t>(*d) < x.dims.size() && x.dims[*d] > 0) {
    std::vector<int64_t> parts;
    for (int64_t left = x.dims[*d]; left > 0; left -= *size) parts.push_back(std::min(left, *size));
    return split_into(c, *d, parts.size(), c.ints_const(parts), false);
  }
  return split_into(c, *d, c.unpack_count(0), "", false);
}

bool lower_split_with_sizes(Call& c) {
  auto sizes = c.ints(1);
  auto d = axis(c, 2);
  if (!sizes || !d) return false;
  return split_into(c, *d, sizes->size(), c.ints_const(*sizes), false);
}

bool lower_chunk(Call& c) {
  auto n = c.int_(1);
  auto d = axis(c, 2);
  if (!n || !d) return false;
  size_t parts = c.unpack_count(0);
  return split_into(c, *d, parts ? parts : static_cast<size_t>(*n), "", false);
}

bool lower_unbind(Call& c) {
  auto d = axis(c, 1);
  if (!d) return false;
  size_t parts = c.unpack_count(0);
  const Val& x = c.in(0);
  if (!parts && static_cast<size_t>(*d) < x.dims.size() && x.dims[*d] > 0) parts = static_cast<size_t>(x.dims[*d]);
  return split_into(c, *d, parts, "", true);
}

// ---- Indexing ------------------------------------------------------------------------


// select(x, dim, i): a view, like Slice + Squeeze; its backward, like Slice's,
// writes the gradient into zeros of the input's size (select_backward). A Gather
// would copy in forward.
bool lower_select(Call& c) {
  auto d = axis(c, 1);
  if (!d) return false;
  std::string start, end;
  if (auto i = c.int_(2)) {
    start = c.ints_const({*i});
    // -1 selects the last: its slice ends at the end, not at 0.
    end = c.ints_const({*i == -1 ? std::numeric_limits<int64_t>::max() : *i + 1});
  } else {
    start = c.emit1("Unsqueeze", {c.lowerer().materialize(c.in(2), at::kLong, c.node()), c.ints_const({0})});
    end = c.emit1("Add", {start, c.ints_const({1})});
  }
  auto sliced = c.emit1("Slice", {c.tensor(0), start, end, c.ints_const({*d})});
  Val& out = c.set(0, c.emit1("Squeeze", {sliced, c.ints_const({*d})}));
  out.rank = c.rank(0) < 0 ? -1 : c.rank(0) - 1;
  return true;
}

// A 1-D int64 operand for Slice from an optional int (None: `dflt`).
std::string slice_operand(Call& c, size_t i, int64_t dflt) {
  if (c.none(i)) return c.ints_const({dflt});
  if (auto v = c.int_(i)) return c.ints_const({*v});
  return c.emit1("Unsqueeze", {c.lowerer().materialize(c.in(i), at::kLong, c.node()), c.ints_const({0})});
}

// slice(x, dim, start, end, step); x[:] slices are nothing.
// list[start:end:step] of a list holding run-time sizes (x.shape[-3:]).
bool slice_list(Call& c) {
  std::vector<Val> items = list_items(c.in(0));
  const int64_t n = static_cast<int64_t>(items.size());
  auto clamp = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  const int64_t start = c.none(1) ? 0 : clamp(c.int_(1).value_or(0));
  const int64_t end = c.none(2) ? n : clamp(c.int_(2).value_or(n));
  const int64_t step = c.int_(3).value_or(1);
  if ((!c.none(1) && !c.int_(1)) || (!c.none(2) && !c.int_(2)) || step <= 0) return false;
  Val out;
  out.kind = Val::Kind::List;
  for (int64_t i = start; i < end; i += step) out.items.push_back(items[static_cast<size_t>(i)]);
  c.out(0) = out;
  return true;
}

bool lower_slice(Call& c) {
  if (is_list(c.in(0))) return slice_list(c);
  if (c.in(0).kind != Val::Kind::Tensor) return false;
  auto d = c.int_(1);
  if (!d) return false;
  constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
  auto start = c.none(2) ? std::optional<int64_t>(0) : c.int_(2);
  auto end = c.none(3) ? std::optional<int64_t>(kEnd) : c.int_(3);
  auto step = c.int_(4).value_or(1);
  if (start && *start == 0 && end && *end >= (int64_t{1} << 62) && step == 1) {
    c.out(0) = c.in(0);
    return true;
  }
  c.set(0, c.emit1("Slice", {c.tensor(0), slice_operand(c, 2, 0), slice_operand(c, 3, kEnd), c.ints_const({*d}),
                             c.ints_const({step})}));
  return true;
}

// narrow(x, dim, start, length) = slice(x, dim, start, start + length).
bool lower_narrow(Call& c) {
  auto d = c.int_(1), start = c.int_(2), len = c.int_(3);
  if (!d || !start || !len) return false;
  c.set(0, c.emit1("Slice", {c.tensor(0), c.ints_const({*start}), c.ints_const({*start + *len}), c.ints_const({*d})}));
  return true;
}

// index(x, [None, ..., idx, ...]) with one integer index tensor is a Gather on its axis.
bool lower_index(Call& c) {
  const Val& list = c.in(1);
  if (list.kind != Val::Kind::List) return false;
  int at = -1;
  for (size_t i = 0; i < list.items.size(); ++i) {
    if (list.items[i].is_none()) continue;
    if (at >= 0) return false;
    at = static_cast<int>(i);
  }
  if (at < 0) return false;
  const Val& idx = list.items[static_cast<size_t>(at)];
  if (idx.dtype == at::kBool || idx.dtype == at::kByte) return false;  // a mask: data-dependent size
  Val& out = c.set(0, c.emit1("Gather", {c.tensor(0), c.lowerer().materialize(idx, at::kLong, c.node())},
                              {attr_i("axis", at)}));
  out.rank = c.rank(0) < 0 || idx.rank < 0 ? -1 : c.rank(0) - 1 + idx.rank;
  return true;
}

bool lower_index_select(Call& c) {
  auto d = c.int_(1);
  if (!d) return false;
  c.set(0, c.emit1("Gather", {c.tensor(0), c.tensor(2)}, {attr_i("axis", *d)}));
  return true;
}

bool lower_gather(Call& c) {
  auto d = c.int_(1);
  if (!d) return false;
  c.set(0, c.emit1("GatherElements", {c.tensor(0), c.tensor(2)}, {attr_i("axis", *d)}));
  return true;
}

const OpEntry kOps[] = {
    {"aten::view", lower_reshape, "Reshape", "Reshape, target built from folded sizes"},
    {"aten::reshape", lower_reshape, "Reshape", "Reshape, target built from folded sizes"},
    {"aten::_unsafe_view", lower_reshape, "Reshape", "Reshape"},
    {"aten::_reshape_alias", lower_reshape, "Reshape", "Reshape (strides dropped)"},
    {"aten::view_as", lower_reshape_as, "Reshape", "Reshape(x, Shape(other))"},
    {"aten::reshape_as", lower_reshape_as, "Reshape", "Reshape(x, Shape(other))"},
    {"aten::flatten", lower_flatten, "Flatten", "Flatten(axis=1), else Reshape"},
    {"aten::unflatten", lower_unflatten, "Reshape", "Reshape"},
    {"aten::permute", lower_permute, "Transpose", "Transpose(perm)"},
    {"aten::transpose", lower_transpose, "Transpose", "Transpose, perm from the tracked rank"},
    {"aten::swapaxes", lower_transpose, "Transpose", "Transpose"},
    {"aten::t", lower_t, "Transpose", "Transpose([1, 0])"},
    {"aten::contiguous", lower_contiguous, "Reshape", "Reshape to its own shape: a copy only when strided"},
    {"aten::detach", lower_identity, "", "nothing"},
    {"aten::alias", lower_identity, "", "nothing"},
    {"aten::squeeze", lower_squeeze, "Squeeze", "Squeeze"},
    {"aten::unsqueeze", lower_unsqueeze, "Unsqueeze", "Unsqueeze"},
    {"aten::expand", lower_expand, "Expand", "Expand (-1 as 1)"},
    {"aten::expand_as", lower_expand_as, "Expand", "Expand(x, Shape(other))"},
    {"aten::repeat", lower_repeat, "Tile", "Tile"},
    {"aten::cat", lower_cat, "Concat", "Concat"},
    {"aten::concat", lower_cat, "Concat", "Concat"},
    {"aten::stack", lower_stack, "Concat", "Unsqueeze + Concat"},
    {"aten::split", lower_split, "Split", "Split; arity from the ListUnpack"},
    {"aten::split_with_sizes", lower_split_with_sizes, "Split", "Split with sizes"},
    {"aten::chunk", lower_chunk, "Split", "Split into equal parts"},
    {"aten::unbind", lower_unbind, "Split", "Split + Squeeze"},
    {"aten::select", lower_select, "Slice", "Slice + Squeeze: a view"},
    {"aten::slice", lower_slice, "Slice", "Slice; whole-dim slices vanish"},
    {"aten::narrow", lower_narrow, "Slice", "Slice"},
    {"aten::index", lower_index, "Gather", "one integer index tensor: Gather; else generic"},
    {"aten::index_select", lower_index_select, "Gather", "Gather"},
    {"aten::gather", lower_gather, "GatherElements", "GatherElements"},
};

}  // namespace

OpTable shape_ops() { return {kOps, sizeof(kOps) / sizeof(kOps[0])}; }

}  // namespace memest::ts
