// Parameters the exporter folded together into one value, told apart by their siblings
// (cofolded_parameters.h).
#include "frontends/cofolded_parameters.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "estimator/ops/shape_util.h"
#include "frontends/merged_initializers.h"

namespace memest {
namespace {

// A tensor's dimensions when all are known numbers (shape_util's const_dims).
std::optional<std::vector<int64_t>> const_dims(const Tensor& t) {
  return t.shape ? memest::const_dims(*t.shape) : std::nullopt;
}

int64_t numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n = checked_mul(n, d);
  return n;
}

// Which listed parameters each folded value holds, and what the file says of each
// parameter's size where one tensor holds it alone.
class FoldedParameters {
 public:
  FoldedParameters(const Graph& g, const std::vector<std::string_view>& parameters, const ParameterReads& reads)
      : listed_(parameters.begin(), parameters.end()) {
    for (const auto& [t, names] : reads.folded_from) {
      std::vector<std::string_view> ps;
      for (std::string_view n : names) {
        if (listed_.count(n) && std::find(ps.begin(), ps.end(), n) == ps.end()) ps.push_back(n);
      }
      for (std::string_view p : ps) ++holders_[p];
      if (!ps.empty()) of_[t] = std::move(ps);
    }
    for (const auto& [t, ps] : of_) {
      if (ps.size() == 1 && holders_[ps[0]] == 1) {
        if (auto d = const_dims(g.tensors[static_cast<size_t>(t)])) count_[ps[0]] = numel(*d);
      }
    }
    for (std::string_view p : parameters) {
      const int id = g.find_tensor(p);
      if (id < 0) continue;
      if (auto d = const_dims(g.tensors[static_cast<size_t>(id)])) {
        shape_[p] = *d;
        count_[p] = numel(*d);
      }
    }
  }

  const std::map<int, std::vector<std::string_view>>& values() const { return of_; }
  bool held_elsewhere(std::string_view p, const Graph& g) const {
    return g.find_tensor(p) >= 0 || holders_.at(p) != 1;
  }

  // The dimensions d of b's shape that a's element count equals in every module whose a
  // and b the file holds apart (a: "gain", b: "weight"); empty where none does or they
  // disagree.
  std::vector<size_t> dims_for(std::string_view a, std::string_view b) const {
    std::optional<std::vector<size_t>> dims;
    for (const auto& [p, n] : count_) {
      if (param_leaf(p) != a) continue;
      const std::string q = std::string(param_module(p)) + "." + std::string(b);
      const auto s = shape_.find(q);
      if (s == shape_.end()) continue;
      std::vector<size_t> here;
      for (size_t d = 0; d < s->second.size(); ++d) {
        if (s->second[d] == n) here.push_back(d);
      }
      if (!dims) {
        dims = std::move(here);
        continue;
      }
      std::erase_if(*dims, [&](size_t d) { return std::find(here.begin(), here.end(), d) == here.end(); });
    }
    return dims.value_or(std::vector<size_t>{});
  }

 private:
  std::unordered_set<std::string_view> listed_;
  std::map<int, std::vector<std::string_view>> of_;         // value -> the listed parameters folded into it
  std::unordered_map<std::string_view, int> holders_;       // parameter -> how many values hold it
  std::map<std::string_view, int64_t> count_;               // parameter -> element count, where known
  std::unordered_map<std::string_view, std::vector<int64_t>> shape_;  // parameter -> its own initializer's shape
};

// Puts parameter `p` back, `count` elements along dimension `d` of value t's rank, and
// makes t's readers read t * p, the product made just before the first of them.
void multiply_into(Graph& g, int t, std::string_view p, size_t d, int64_t count) {
  const size_t rank = g.tensors[static_cast<size_t>(t)].shape->size();
  const int param = g.new_tensor(std::string(p));  // may move the tensors
  const int product = g.new_tensor(std::string(p) + "_applied");
  Tensor& pt = g.tensors[static_cast<size_t>(param)];
  pt.kind = TensorKind::Parameter;
  pt.dtype = g.tensors[static_cast<size_t>(t)].dtype;
  Shape shape(rank, Expr(1));
  shape[d] = count;
  pt.shape = shape;
  pt.module = std::string(param_module(p));
  const std::vector<int> readers = g.tensors[static_cast<size_t>(t)].consumers;
  const int first = *std::min_element(readers.begin(), readers.end());
  for (int r : readers) {
    for (int& in : g.nodes[static_cast<size_t>(r)].inputs) {
      if (in == t) in = product;
    }
  }
  const Node& reader = g.nodes[static_cast<size_t>(first)];
  Node mul;
  mul.op = "Mul";
  mul.name = std::string(p) + "_applied";
  mul.module = reader.module;
  mul.py_stack = reader.py_stack;
  mul.autocast_off = reader.autocast_off;
  mul.keeps_locals = reader.keeps_locals;
  mul.inputs = {t, param};
  mul.outputs = {product};
  g.nodes.insert(g.nodes.begin() + first, std::move(mul));
  g.relink();
}

}  // namespace

int restore_cofolded_parameters(Graph& g, const std::vector<std::string_view>& parameters, const ParameterReads& reads) {
  const FoldedParameters folded(g, parameters, reads);
  int restored = 0;
  for (const auto& [t, ps] : folded.values()) {
    const Tensor& value = g.tensors[static_cast<size_t>(t)];
    if (ps.size() != 2 || value.consumers.empty() || value.kind != TensorKind::Parameter) continue;
    if (param_module(ps[0]) != param_module(ps[1])) continue;
    if (folded.held_elsewhere(ps[0], g) || folded.held_elsewhere(ps[1], g)) continue;
    const std::optional<std::vector<int64_t>> dims = const_dims(value);
    if (!dims) continue;
    for (size_t k = 0; k < 2; ++k) {
      const std::string_view missing = ps[k], kept = ps[1 - k];
      const std::vector<size_t> along = folded.dims_for(param_leaf(missing), param_leaf(kept));
      if (along.empty() || along[0] >= dims->size()) continue;
      multiply_into(g, t, missing, along[0], (*dims)[along[0]]);
      ++restored;
      break;
    }
  }
  return restored;
}

}  // namespace memest
