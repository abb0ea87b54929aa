// Memory layouts of views: when a reshape of a permuted tensor can stay a view.
#include <algorithm>

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


}  // namespace memest
