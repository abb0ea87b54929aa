// Memory layouts of views: when a reshape of a permuted tensor can stay a view.
#include <algorithm>

#include "estimator/ops/op_info.h"
#include "estimator/simulate.h"

namespace memest {

std::optional<std::vector<int8_t>> reshape_layout(const Shape& in, const std::vector<int8_t>& given,
                                                   const Shape& out) {
  // layout[i]: memory position of logical dim i (0 outermost); {}: contiguous;
  // {-1}: strides unknown.
  std::vector<int8_t> layout = given;
  if (layout.empty()) {
    for (size_t i = 0; i < in.size() && i < 64; ++i) layout.push_back(static_cast<int8_t>(i));
  }
  if (layout.size() != in.size()) return std::nullopt;
  const Expr one(1);
  // Dims of size 1 have no say in memory order.
  std::vector<size_t> dims;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != one) dims.push_back(i);
  }
  std::vector<size_t> by_memory = dims;
  std::sort(by_memory.begin(), by_memory.end(), [&](size_t a, size_t b) { return layout[a] < layout[b]; });
  std::vector<int> rank(in.size(), -1);  // memory rank among dims not of size 1
  for (size_t r = 0; r < by_memory.size(); ++r) rank[by_memory[r]] = static_cast<int>(r);
  // Runs of logical dims that follow each other in memory in the same order: what a
  // view may merge or split (PyTorch's computeStride).
  std::vector<std::vector<size_t>> runs;
  for (size_t d : dims) {
    if (!runs.empty() && rank[d] == rank[runs.back().back()] + 1) {
      runs.back().push_back(d);
    } else {
      runs.push_back({d});
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
  std::vector<int8_t> result(out.size());
  bool identity = true;
  for (size_t p = 0; p < keyed.size(); ++p) {
    result[keyed[p].second] = static_cast<int8_t>(p);
    identity &= keyed[p].second == p;
  }
  return identity ? std::vector<int8_t>{} : result;
}

bool is_channels_last(const std::vector<int8_t>& layout) { return layout == std::vector<int8_t>{0, 3, 1, 2}; }

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
      std::vector<int64_t> perm = n.attr_ints("perm");
      if (perm.empty()) {
        for (size_t i = rank; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
      }
      if (perm.size() != rank || rank > 64) return {};
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
        if (perm[i] < 0 || perm[i] >= static_cast<int64_t>(rank)) return {};
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
      if (flash && in0 >= 0 && (layouts[in0].empty() || layouts[in0].size() == 4)) return layouts[in0];
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
      return {};  // a view of a contiguous tensor, or a contiguous copy
    case Layout::Elementwise: {
      const auto& out = g.tensors[n.outputs[0]].shape;
      if (!out) return {};
      for (int in : n.inputs) {
        if (in < 0 || !g.tensors[in].shape || *g.tensors[in].shape != *out) continue;
        const std::vector<int8_t>& l = layouts[in];
        return l.size() == out->size() ? l : std::vector<int8_t>{};  // {-1}: strides unknown
      }
      return {};
    }
    case Layout::Conv:
      return in0 >= 0 && is_channels_last(layouts[in0]) ? layouts[in0] : std::vector<int8_t>{};
    case Layout::Fresh:
      // Other views (squeeze, slice, split, expand) keep the input's strides.
      return view && in0 >= 0 && !layouts[in0].empty() ? std::vector<int8_t>{-1} : std::vector<int8_t>{};
  }
  return {};
}

}  // namespace memest
