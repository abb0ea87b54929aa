// Memory layouts of views: when a reshape of a permuted tensor can stay a view.
#include <algorithm>
#include <cctype>
#include <iterator>
#include <string>
#include <string_view>

#include "estimator/ops/op_info.h"
#include "estimator/simulate.h"

namespace memest {

std::optional<std::vector<int8_t>> reshape_layout(const Shape& in, const std::vector<int8_t>& given,
                                                   const Shape& out) {
  // layout[i]: memory position of logical dim i (0 outermost); {}: contiguous;
  // {-1}: strides unknown. A position no dim holds is a hole: the two dims around it
  // are not adjacent in memory (a dim cut away by a split lay there; layout_narrow).
  std::vector<int8_t> layout = given;
  if (layout.empty()) {
    for (size_t i = 0; i < in.size() && i < 64; ++i) layout.push_back(static_cast<int8_t>(i));
  }
  if (layout.size() != in.size()) return std::nullopt;
  const Expr one(1);
  std::vector<bool> held(128, false);
  for (int8_t v : layout) {
    if (v < 0) return std::nullopt;
    held[static_cast<size_t>(v)] = true;
  }
  auto hole_between = [&](int8_t a, int8_t b) {
    for (int v = a + 1; v < b; ++v) {
      if (!held[static_cast<size_t>(v)]) return true;
    }
    return false;
  };
  // Dims of size 1 have no say in memory order.
  std::vector<size_t> dims;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != one) dims.push_back(i);
  }
  std::vector<size_t> by_memory = dims;
  std::sort(by_memory.begin(), by_memory.end(), [&](size_t a, size_t b) { return layout[a] < layout[b]; });
  std::vector<int> rank(in.size(), -1);  // memory rank among dims not of size 1
  for (size_t r = 0; r < by_memory.size(); ++r) rank[by_memory[r]] = static_cast<int>(r);
  // Runs of logical dims that follow each other in memory in the same order, with no
  // hole between: what a view may merge or split (PyTorch's computeStride).
  std::vector<std::vector<size_t>> runs;
  std::vector<bool> hole_before;  // per run: a hole between it and the run outside it in memory
  for (size_t d : dims) {
    if (!runs.empty() && rank[d] == rank[runs.back().back()] + 1 && !hole_between(layout[runs.back().back()], layout[d])) {
      runs.back().push_back(d);
    } else {
      runs.push_back({d});
      hole_before.push_back(rank[d] > 0 && hole_between(layout[by_memory[static_cast<size_t>(rank[d] - 1)]], layout[d]));
    }
  }
  // Each run must be covered by whole output dims, in order.
  std::vector<int> key_run(out.size(), -1), key_sub(out.size(), 0);
  size_t j = 0;
  for (size_t r = 0; r < runs.size(); ++r) {
    Expr want(1);
    for (size_t d : runs[r]) want = want * in[d];
    Expr got(1);
    int sub = 0;
    while (got != want) {
      while (j < out.size() && out[j] == one) ++j;
      if (j == out.size()) return std::nullopt;
      got = got * out[j];
      key_run[j] = rank[runs[r].front()];
      key_sub[j] = sub++;
      ++j;
    }
  }
  for (; j < out.size(); ++j) {
    if (out[j] != one) return std::nullopt;
  }
  // The output's memory order: by run (where its first dim lies), then within the run.
  // A dim of size 1 sits just before the next dim (it has no stride that matters).
  std::vector<std::pair<std::pair<int, int>, size_t>> keyed;
  std::pair<int, int> next{static_cast<int>(in.size()) + 1, 0};
  for (size_t i = out.size(); i-- > 0;) {
    if (key_run[i] >= 0) next = {key_run[i], key_sub[i]};
    keyed.push_back({{next.first, key_run[i] >= 0 ? next.second : next.second - 1}, i});
  }
  std::sort(keyed.begin(), keyed.end());
  // A run whose first dim sits past a hole keeps a hole before it in the output.
  std::vector<bool> hole_at_rank(in.size() + 2, false);
  for (size_t r = 0; r < runs.size(); ++r) {
    if (hole_before[r]) hole_at_rank[static_cast<size_t>(rank[runs[r].front()])] = true;
  }
  std::vector<int8_t> result(out.size());
  bool identity = true;
  int shift = 0, last_run = -1;
  for (size_t p = 0; p < keyed.size(); ++p) {
    const int run = keyed[p].first.first;
    if (run != last_run && run >= 0 && static_cast<size_t>(run) < hole_at_rank.size() && hole_at_rank[static_cast<size_t>(run)]) {
      ++shift;
    }
    last_run = run;
    result[keyed[p].second] = static_cast<int8_t>(static_cast<int>(p) + shift);
    identity &= keyed[p].second == p && shift == 0;
  }
  return identity ? std::vector<int8_t>{} : result;
}

// Whether a layout is a permutation of 0..rank-1 (no hole, not unknown).
bool dense_permutation(const std::vector<int8_t>& layout) {
  std::vector<bool> seen(layout.size(), false);
  for (int8_t v : layout) {
    if (v < 0 || static_cast<size_t>(v) >= layout.size() || seen[static_cast<size_t>(v)]) return false;
    seen[static_cast<size_t>(v)] = true;
  }
  return true;
}

// A view of part of a strided tensor (Layout::Narrow): the input's strides. Where a dim
// is cut (fewer elements out than in) below the outermost, the dims outside it are no
// longer adjacent in memory to the dims inside it: the output gets a hole there
// (reshape_layout). A dim cut to one element moves out of the way (size 1: no say), its
// position left a hole; a dim cut partially keeps its position, with a hole opened just
// outside it. Timm's Hiera unbinds q from a permuted qkv and views it for q_stride's amax:
// a view in PyTorch (the amax keeps all of qkv: traces28 st_hiera_small_224); Visformer's
// unbound q, k, v reshaped to 3-D for bmm merge across the hole: copies.
std::vector<int8_t> narrow_layout(const Shape& in, const std::vector<int8_t>& layout, const Shape& out) {
  const size_t rank = in.size();
  if (layout.size() != rank || out.size() != rank || rank > 60) return {-1};
  for (int8_t v : layout) {
    if (v < 0) return {-1};
  }
  const Expr one(1);
  int outermost = -1;  // the outermost dim in memory that is not of size 1
  for (size_t i = 0; i < rank; ++i) {
    if (in[i] != one && (outermost < 0 || layout[i] < layout[static_cast<size_t>(outermost)])) {
      outermost = static_cast<int>(i);
    }
  }
  std::vector<int> pos(layout.begin(), layout.end());
  int fresh = *std::max_element(pos.begin(), pos.end()) + 1;
  for (size_t i = 0; i < rank; ++i) {
    if (out[i] == in[i] || static_cast<int>(i) == outermost) continue;
    if (out[i] == one) {
      pos[i] = fresh++;  // its old position becomes a hole
    } else {
      const int at = pos[i];
      for (int& p : pos) p += p >= at ? 1 : 0;  // a hole just outside it
      ++fresh;
    }
  }
  if (fresh > 120) return {-1};
  return std::vector<int8_t>(pos.begin(), pos.end());
}

// select (Layout::Select): the input's strides less the picked dim's. Where that dim was
// not the outermost in memory (of those not of size 1), the dims outside it are no longer
// adjacent to those inside: narrow_layout's hole. Persimmon's `fused_qkv.view(b, s, h, 3,
// d)[..., 0, :]` is such a view, and q reshaped later copies.
std::vector<int8_t> select_layout(const Shape& in, const std::vector<int8_t>& layout, int64_t axis) {
  const size_t rank = in.size();
  if (axis < 0) axis += static_cast<int64_t>(rank);
  if (axis < 0 || static_cast<size_t>(axis) >= rank || rank > 60) return {-1};
  if (layout.size() == 1 && layout[0] == -1) return layout;
  std::vector<int8_t> given = layout;
  if (given.empty()) {
    for (size_t i = 0; i < rank; ++i) given.push_back(static_cast<int8_t>(i));
  }
  if (given.size() != rank) return {-1};
  // The innermost dim picked leaves strides no layout here spells (none is 1): unknown.
  const Expr one(1);
  bool innermost = in[static_cast<size_t>(axis)] != one;
  for (size_t i = 0; innermost && i < rank; ++i) {
    innermost = in[i] == one || given[i] <= given[static_cast<size_t>(axis)];
  }
  if (innermost && rank > 1) return {-1};
  Shape cut = in;
  cut[static_cast<size_t>(axis)] = one;
  std::vector<int8_t> pos = narrow_layout(in, given, cut);
  if (pos.size() != rank) return pos;
  pos.erase(pos.begin() + axis);
  // Positions in order with none missing between the innermost and the outermost: dense.
  std::vector<int8_t> sorted = pos;
  std::sort(sorted.begin(), sorted.end());
  bool dense = true;
  for (size_t i = 1; i < sorted.size(); ++i) dense &= sorted[i] == sorted[i - 1] + 1;
  if (!dense || sorted.empty()) return pos;
  bool identity = true;
  for (size_t i = 0; i < pos.size(); ++i) {
    pos[i] = static_cast<int8_t>(pos[i] - sorted[0]);
    identity &= pos[i] == static_cast<int8_t>(i);
  }
  return identity ? std::vector<int8_t>{} : pos;
}

namespace {

// The labels of an einsum equation's terms and output (implicit: the labels used once, in
// order), or nullopt with an ellipsis or other than two operands.
struct EinsumLabels {
  std::string a, b, out;
};
std::optional<EinsumLabels> einsum_labels(const std::string& equation) {
  std::string eq;
  for (char c : equation) {
    if (c == '.') return std::nullopt;
    if (!std::isspace(static_cast<unsigned char>(c))) eq += c;
  }
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  const size_t comma = lhs.find(',');
  if (comma == std::string::npos || lhs.find(',', comma + 1) != std::string::npos) return std::nullopt;
  EinsumLabels l{lhs.substr(0, comma), lhs.substr(comma + 1), ""};
  if (arrow != std::string::npos) {
    l.out = eq.substr(arrow + 2);
  } else {
    std::string all = l.a + l.b;
    std::sort(all.begin(), all.end());
    for (char c : all) {
      if (std::count(all.begin(), all.end(), c) == 1) l.out += c;
    }
  }
  return l;
}

}  // namespace

std::optional<bool> einsum_reshape_copies(const std::string& equation, size_t which, const Shape& a, const Shape& b,
                                          const std::vector<int8_t>& layout) {
  const auto l = einsum_labels(equation);
  if (!l || which > 1 || l->a.size() != a.size() || l->b.size() != b.size()) return std::nullopt;
  const std::string& own = which == 0 ? l->a : l->b;
  const std::string& other = which == 0 ? l->b : l->a;
  const Shape& shape = which == 0 ? a : b;
  const Shape& other_shape = which == 0 ? b : a;
  if (!layout.empty() && layout.size() != shape.size()) return std::nullopt;
  const Expr one(1);
  // A label counts where its dim is not 1 (sumproduct_pair's size checks).
  auto has = [&](const std::string& labels, const Shape& s, char c) {
    const size_t at = labels.find(c);
    return at != std::string::npos && s[at] != one;
  };
  // torch aligns the operands to the output's labels, then the summed ones by first use.
  std::string aligned = l->out;
  for (char c : l->a + l->b) {
    if (aligned.find(c) == std::string::npos) aligned += c;
  }
  std::string batch, kept, summed;
  for (char c : aligned) {
    if (!has(own, shape, c)) continue;
    const bool both = has(other, other_shape, c);
    if (l->out.find(c) == std::string::npos) {
      if (both) summed += c;  // summed in one operand alone: summed away before the bmm
    } else {
      (both ? batch : kept) += c;
    }
  }
  // A label summed in this operand alone is summed away first (a new, contiguous tensor
  // with that dim of size 1).
  bool presummed = false;
  for (size_t i = 0; i < own.size(); ++i) {
    presummed |= shape[i] != one && l->out.find(own[i]) == std::string::npos && !has(other, other_shape, own[i]);
  }
  const std::string order = which == 0 ? batch + kept + summed : batch + summed + kept;
  Shape permuted, target;
  std::vector<int8_t> moved;
  auto position = [&](size_t at) { return layout.empty() || presummed ? static_cast<int8_t>(at) : layout[at]; };
  for (char c : order) {
    const size_t at = own.find(c);
    permuted.push_back(shape[at]);
    moved.push_back(position(at));
  }
  for (size_t at = 0; at < own.size(); ++at) {  // dims of size 1 (or summed to 1): no say
    if (order.find(own[at]) != std::string::npos) continue;
    permuted.push_back(one);
    moved.push_back(position(at));
  }
  for (const std::string* group : {&batch, which == 0 ? &kept : &summed, which == 0 ? &summed : &kept}) {
    Expr n(1);
    for (char c : *group) n = n * shape[own.find(c)];
    target.push_back(n);
  }
  if (moved.empty()) return false;
  return !reshape_layout(permuted, moved, target).has_value();
}

// An expand of a contiguous tensor (Layout::Broadcast): each dim it broadcasts (new, or
// of size 1 in the input) has stride 0. PyTorch's computeStride (TensorUtils.cpp) ends a
// chunk of mergeable dims wherever a dim's stride is not the product of the sizes and
// stride inside it, so a run of broadcast dims merges with itself but never with a dim
// that has a stride of its own: the run gets a hole on either side (reshape_layout), and
// a reshape across one copies. timm's EvoNorm group_std: x.reshape(B, G, C/G, H, W)'s
// std, expanded back over C/G, H, W and reshaped to [B, C, H, W] merges G with C/G: a
// copy (seqtrace32c: a std_full block per norm). {} when nothing is broadcast.
std::vector<int8_t> broadcast_layout(const Shape& in, const Shape& out) {
  if (out.size() < in.size() || out.size() > 60) return {-1};
  const size_t offset = out.size() - in.size();
  const Expr one(1);
  std::vector<int8_t> layout(out.size());
  int pos = 0, last = -1;  // last: whether the previous dim not of size 1 was broadcast
  bool identity = true;
  for (size_t i = 0; i < out.size(); ++i) {
    const bool broadcast = out[i] != one && (i < offset || in[i - offset] == one);
    if (out[i] != one) {
      if (last >= 0 && last != static_cast<int>(broadcast)) ++pos;  // a hole between
      last = broadcast ? 1 : 0;
    }
    layout[i] = static_cast<int8_t>(pos++);
    identity &= layout[i] == static_cast<int8_t>(i);
  }
  return identity ? std::vector<int8_t>{} : layout;
}

// LinearAlgebra.cpp's _matmul_impl hands bmm each operand of a batched product as
// `tensor.expand(batch + matrix).reshape({batch product, rows, cols})`. The expanded dims
// have stride 0, so by computeStride's rule (above) the batch dims merge as a view when
// the operand spans every batch dim of more than one element itself (its own strides
// decide, bmm_operand) or none of them (all stride 0); where it spans some and is
// broadcast over others the reshape copies the expanded operand, batch product times
// its matrix. timm's LambdaLayer: `pos_emb.transpose(-1, -2) @ v.unsqueeze(1)`, a
// [B, 1, M, V] v against [B, M, K, M], is copied as [B * M, M, V] (blind31
// st_lambda_resnet26rpt_256, -46%).
BmmBatch bmm_batch(const Shape& operand, const Shape& batch) {
  const Expr one(1);
  const size_t own = operand.size() - 2;
  bool spans = false, broadcast = false;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i] == one) continue;
    const size_t from_end = batch.size() - i;  // right-aligned against the operand's batch dims
    const bool has = from_end <= own && operand[own - from_end] != one;
    (has ? spans : broadcast) = true;
  }
  if (!broadcast) return BmmBatch::Spanned;
  return spans ? BmmBatch::Mixed : BmmBatch::Broadcast;
}

// torch.channels_last (4-D) and torch.channels_last_3d (5-D): the channels innermost.
bool is_channels_last(const std::vector<int8_t>& layout) {
  return layout == std::vector<int8_t>{0, 3, 1, 2} || layout == std::vector<int8_t>{0, 4, 1, 2, 3};
}

namespace {

// One operand as TensorIterator sees it: each output dim's memory position in the
// operand (larger: further in), or -1 where the operand is broadcast (stride 0) or of
// size 1. An Expand's output is read through to its input: its new dims have stride 0.
std::vector<int> operand_positions(const Graph& g, int t, const Shape& out,
                                   const std::vector<std::vector<int8_t>>& layouts, bool& unknown) {
  std::vector<int> pos(out.size(), -1);
  if (const int p = g.tensors[t].producer; p >= 0 && g.nodes[p].op == "Expand" && g.nodes[p].has_input(0)) {
    t = g.nodes[p].inputs[0];
  }
  const auto& shape = g.tensors[t].shape;
  if (!shape || shape->size() > out.size()) return pos;
  const std::vector<int8_t>& layout = layouts[t];
  if (layout.size() == 1 && layout[0] == -1) {
    unknown = true;
    return pos;
  }
  if (!layout.empty() && layout.size() != shape->size()) return pos;
  const size_t offset = out.size() - shape->size();
  const Expr one(1);
  for (size_t i = 0; i < shape->size(); ++i) {
    if ((*shape)[i] == one) continue;
    pos[offset + i] = layout.empty() ? static_cast<int>(i) : layout[i];
  }
  return pos;
}

}  // namespace

// TensorIteratorBase::reorder_dimensions: output dims sorted innermost first by an
// insertion sort whose comparison asks the operands in order, skipping one broadcast in
// either dim; ambiguous pairs keep their order. The output is allocated in that order.
// So a broadcast operand has a say in the dims it is not broadcast in: T5's position
// bias [1, H, T, T], a permuted embedding whose heads are innermost, plus a [B, 1, 1, T]
// mask gives a [B, H, T, T] sum whose heads are innermost too (sdpa-choice: stride
// (.., 1, H*T, H), which sends scaled_dot_product_attention to its math backend).
std::vector<int8_t> elementwise_layout(const Graph& g, const Node& n, const std::vector<std::vector<int8_t>>& layouts) {
  const auto& out = g.tensors[n.outputs[0]].shape;
  if (!out || out->size() < 2 || out->size() > 64) return {};
  // Where(mask, fill, x) with a one-element fill is Tensor.masked_fill as both exporters
  // write it, and masked_fill clones x contiguous (expand_outplace, then
  // clone(MemoryFormat::Contiguous)): not TensorIterator's order. sdpa-choice: a permuted
  // bias masked_fill'ed with a causal mask reaches SDPA contiguous (rnd8_76, rnd9_29).
  if (n.op == "Where" && n.has_input(1)) {
    const auto& fill = g.tensors[n.inputs[1]].shape;
    if (fill && product(*fill) == Expr(1)) return {};
  }
  const int rank = static_cast<int>(out->size());
  std::vector<std::vector<int>> ops;
  bool first_full_unknown = false, seen_full = false;
  for (int in : n.inputs) {
    if (in < 0) continue;
    bool unknown = false;
    ops.push_back(operand_positions(g, in, *out, layouts, unknown));
    const bool full = g.tensors[in].shape && *g.tensors[in].shape == *out;
    if (full && !seen_full) first_full_unknown = unknown;
    seen_full |= full;
  }
  if (first_full_unknown) return {-1};  // the strides that would decide are unknown
  auto should_swap = [&](int d0, int d1) {
    for (const auto& p : ops) {
      if (p[d0] < 0 || p[d1] < 0) continue;
      return p[d0] > p[d1] ? -1 : 1;  // further in: smaller stride, goes first
    }
    return 0;
  };
  std::vector<int> perm(rank);  // perm[0]: the innermost dim
  for (int i = 0; i < rank; ++i) perm[i] = rank - 1 - i;
  for (int i = 1; i < rank; ++i) {
    int d1 = i;
    for (int d0 = i - 1; d0 >= 0; --d0) {
      const int c = should_swap(perm[d0], perm[d1]);
      if (c > 0) {
        std::swap(perm[d0], perm[d1]);
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  std::vector<int8_t> layout(rank);
  bool identity = true;
  for (int k = 0; k < rank; ++k) {
    layout[perm[k]] = static_cast<int8_t>(rank - 1 - k);
    identity &= perm[k] == rank - 1 - k;
  }
  return identity ? std::vector<int8_t>{} : layout;
}

std::optional<std::vector<int64_t>> transpose_perm(const Node& n, size_t rank) {
  std::vector<int64_t> perm = n.attr_ints("perm");
  if (perm.empty()) {
    for (size_t i = rank; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  }
  if (perm.size() != rank || rank > 64) return std::nullopt;
  // The TorchScript exporter writes movedim(-1, 1) as perm (0, -1, 1, 2): counted from
  // the end, as the shape rule reads it.
  for (int64_t& p : perm) {
    p += p < 0 ? static_cast<int64_t>(rank) : 0;
    if (p < 0 || p >= static_cast<int64_t>(rank)) return std::nullopt;
  }
  return perm;
}

bool Dispatch::last_dim_contiguous(const Graph& g, const Node& n, size_t i) const {
  if (!layouts || !n.has_input(i)) return true;
  const Tensor& t = g.tensors[n.inputs[i]];
  return !t.shape || last_dim_innermost(*t.shape, (*layouts)[n.inputs[i]]);
}

bool last_dim_innermost(const Shape& shape, const std::vector<int8_t>& layout) {
  if (layout.empty() || layout.size() != shape.size() || (layout.size() == 1 && layout[0] == -1)) return true;
  const Expr one(1);
  for (size_t i = 0; i + 1 < shape.size(); ++i) {
    if (shape[i] != one && layout[i] > layout.back()) return false;
  }
  return true;
}

namespace {

// The dynamo exporter writes some ops that return a new tensor as Transpose, the op on
// a leading axis, Transpose back: advanced indexing on an inner axis (aten.index.Tensor:
// TinyViT's and LeViT's attention biases) and a slice assigned into a copy
// (aten.slice_scatter: `k[..., :d] = k_nope`, DeepSeek-V3's expand_kv). The op allocates
// its result in its own order (index: TensorIterator over the index tensor; the scatters
// clone `self`, contiguous), so that last Transpose is no permuted view. The node's `call`
// (the aten op it was traced from) says so.
bool transposes_a_fresh_result(const Graph& g, const Node& n) {
  if (n.call < 0) return false;
  static constexpr std::string_view kFresh[] = {"aten.index.Tensor", "aten.slice_scatter.default",
                                                "aten.select_scatter.default", "aten.index_put.default"};
  const std::string& call = g.calls[static_cast<size_t>(n.call)];
  return std::find(std::begin(kFresh), std::end(kFresh), call) != std::end(kFresh);
}

}  // namespace

// Permute composes the perm with the input's layout; HeadsMajor is attention's output
// (see below); Reshape is a view of a contiguous tensor or a contiguous copy; other
// views keep the input's strides (marked unknown), other ops make contiguous tensors.
std::vector<int8_t> output_layout(const Graph& g, const Node& n, int out, const OpInfo* info, bool view, int in0,
                                  const std::vector<std::vector<int8_t>>& layouts, DType out_run) {
  if (!info) return {};
  const Tensor* t = in0 >= 0 ? &g.tensors[in0] : nullptr;
  const size_t rank = t && t->shape ? t->shape->size() : 0;
  switch (info->layout) {
    case Layout::Permute: {
      if (transposes_a_fresh_result(g, n)) return {};
      const std::optional<std::vector<int64_t>> found = transpose_perm(n, rank);
      if (!found) return {};
      const std::vector<int64_t>& perm = *found;
      std::vector<int8_t> in = layouts[in0];
      if (in.empty()) {
        for (size_t i = 0; i < rank; ++i) in.push_back(static_cast<int8_t>(i));
      }
      // {-1}: the input's strides are unknown, and so are the permuted ones. (Indexing the
      // one-entry marker by perm read past it: ASan, coatnet's legacy export.)
      if (in.size() != rank) return in.size() == 1 && in[0] == -1 ? in : std::vector<int8_t>{};
      std::vector<int8_t> out(rank);
      bool identity = true;
      for (size_t i = 0; i < rank; ++i) {
        out[i] = in[perm[i]];
        identity &= out[i] == static_cast<int8_t>(i);
      }
      return identity ? std::vector<int8_t>{} : out;
    }
    case Layout::HeadsMajor: {
      if (!g.tensors[n.outputs[0]].shape || g.tensors[n.outputs[0]].shape->size() != 4) return {};
      // Flash attention (half precision) allocates its output like the query
      // (empty_like of q.transpose(1, 2)); the memory-efficient kernel (fp32) writes
      // [B, T, H, D] whatever the query's strides.
      const DType run = out_run;
      const bool flash = run == DType::F16 || run == DType::BF16;
      // empty_like keeps q's strides only where q is dense: a q with a hole (unbound from
      // qkv: layout_narrow) gets [B, T, H, D], as the memory-efficient kernel writes.
      if (flash && in0 >= 0 && (layouts[in0].empty() || (layouts[in0].size() == 4 && dense_permutation(layouts[in0])))) {
        return layouts[in0];
      }
      return {0, 2, 1, 3};
    }
    case Layout::Recurrent: {
      // cuDNN writes Y as [seq, batch, dirs * hidden] (RNN.cpp's _cudnn_rnn); ONNX's Y
      // (layout 0) puts dirs before batch, and the exporter's Transpose(0, 2, 1, 3) +
      // Reshape back to PyTorch's [seq, batch, dirs * hidden] is a view, not a copy.
      const auto& s = g.tensors[out].shape;
      if (n.outputs.empty() || out != n.outputs[0] || !s || s->size() != 4 || n.attr_int("layout", 0) != 0) return {};
      return {0, 2, 1, 3};
    }
    case Layout::Reshape:
    case Layout::UnitDims:
      return {};
    case Layout::Broadcast: {
      const auto& s = g.tensors[out].shape;
      if (!view || !t || !t->shape || !s) return {};
      // unsqueeze-expand-reshape is how both exporters write repeat_interleave (GQA's k
      // and v), which copies (clone, then flatten) whatever the strides: a dim that an
      // Unsqueeze just made and the expand broadcasts marks the strides unknown, so the
      // reshape copies. Otherwise the broadcast dims have stride 0 (broadcast_layout).
      const int src = t->producer;
      const bool fresh_unit = src >= 0 && g.nodes[src].op == "Unsqueeze";
      const size_t offset = s->size() - t->shape->size();
      const Expr one(1);
      for (size_t i = 0; fresh_unit && i < t->shape->size() && offset <= s->size(); ++i) {
        if ((*t->shape)[i] == one && (*s)[offset + i] != one) return {-1};
      }
      // A leading dim broadcast from 1 (a table expanded to the batch: ConViT's
      // rel_indices.expand(B, -1, -1, -1)) has stride 0; flattening it into the next dim,
      // as a batched matmul or a Linear of rank >= 3 does, copies.
      if (offset == 0 && !t->shape->empty() && (*t->shape)[0] == one && (*s)[0] != one && s->size() >= 3) return {-1};
      return layouts[in0].empty() ? broadcast_layout(*t->shape, *s) : std::vector<int8_t>{-1};
    }  // a view of a contiguous tensor, or a contiguous copy
    case Layout::Narrow: {
      const auto& s = g.tensors[out].shape;
      if (!view || !t || !t->shape || !s || layouts[in0].empty()) return {};
      return narrow_layout(*t->shape, layouts[in0], *s);
    }
    case Layout::Select: {
      const auto& s = g.tensors[out].shape;
      if (!view || !t || !t->shape || !s || s->size() + 1 != rank) return {};
      return select_layout(*t->shape, layouts[in0], n.attr_int("axis", 0));
    }
    case Layout::Elementwise:
      return elementwise_layout(g, n, layouts);
    case Layout::Conv:
      return in0 >= 0 && is_channels_last(layouts[in0]) ? layouts[in0] : std::vector<int8_t>{};
    case Layout::Conv2d:
      return in0 >= 0 && layouts[in0].size() == 4 && is_channels_last(layouts[in0]) ? layouts[in0]
                                                                                   : std::vector<int8_t>{};
    case Layout::Fresh:
      // Other views (squeeze, slice, split, expand) keep the input's strides.
      return view && in0 >= 0 && !layouts[in0].empty() ? std::vector<int8_t>{-1} : std::vector<int8_t>{};
  }
  return {};
}

}  // namespace memest
