// Several folded values that are images of one parameter, read as one (parameter_images.h).
#include "frontends/parameter_images.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <unordered_set>

#include "estimator/ops/shape_util.h"
#include "frontends/fx_node.h"

namespace memest {
namespace {

// Calls whose value has one element per element of its input: pointwise functions and
// layouts. A value the optimizer folded through these alone from one parameter holds
// exactly as many elements as the parameter.
bool image_call(std::string_view name) {
  static constexpr std::string_view kPointwise[] = {"sigmoid", "sub",  "rsub",  "add",        "mul",   "div",
                                                    "neg",     "exp",  "log",   "tanh",       "abs",   "softplus",
                                                    "sqrt",    "rsqrt", "reciprocal", "clamp", "clamp_min",
                                                    "clamp_max"};
  const std::string_view op = fx_call_op(name);
  return fx_layout_call(name) || std::find(std::begin(kPointwise), std::end(kPointwise), op) != std::end(kPointwise);
}

// The one listed parameter tensor t's value is an image of, by the optimizer's notes:
// nullopt where it names none, several, a buffer, or a call that is no image call.
std::optional<std::string_view> imaged_parameter(const Tensor& t, const std::vector<std::string_view>& notes,
                                                 const std::unordered_set<std::string_view>& params,
                                                 const std::unordered_set<std::string_view>& buffers) {
  if (!fx_exporter_value(t.name) && !image_call(t.name)) return std::nullopt;
  std::optional<std::string_view> param;
  for (std::string_view n : notes) {
    if (params.count(n)) {
      if (param && *param != n) return std::nullopt;
      param = n;
    } else if (buffers.count(n) || (!fx_exporter_value(n) && !image_call(n))) {
      return std::nullopt;
    }
  }
  return param;
}

// Whether two tensors have one dtype and the same known dimensions.
bool same_layout(const Tensor& a, const Tensor& b) {
  if (a.dtype != b.dtype || !a.shape || !b.shape) return false;
  const auto da = const_dims(*a.shape), db = const_dims(*b.shape);
  return da && db && *da == *db;
}

}  // namespace

int merge_parameter_images(Graph& g, const std::vector<std::string_view>& parameters,
                           const std::vector<std::string_view>& buffers, const ParameterReads& reads) {
  const std::unordered_set<std::string_view> params(parameters.begin(), parameters.end());
  const std::unordered_set<std::string_view> bufs(buffers.begin(), buffers.end());
  const std::unordered_set<int> derived(g.derived_parameters.begin(), g.derived_parameters.end());
  std::map<std::string_view, std::vector<int>> images;  // parameter -> its images, by tensor id
  for (const auto& [id, notes] : reads.folded_from) {
    const Tensor& t = g.tensors[static_cast<size_t>(id)];
    if (t.kind != TensorKind::Parameter || t.producer >= 0 || t.consumers.empty() || derived.count(id)) continue;
    const std::optional<std::string_view> p = imaged_parameter(t, notes, params, bufs);
    if (p && g.find_tensor(*p) < 0) images[*p].push_back(id);
  }
  int moved = 0;
  for (auto& [p, ids] : images) {
    std::sort(ids.begin(), ids.end());
    const int stand = ids.front();
    const bool one_layout = std::all_of(ids.begin(), ids.end(), [&](int id) {
      return same_layout(g.tensors[static_cast<size_t>(id)], g.tensors[static_cast<size_t>(stand)]);
    });
    if (ids.size() < 2 || !one_layout) continue;
    for (size_t k = 1; k < ids.size(); ++k) {
      for (Node& n : g.nodes) std::replace(n.inputs.begin(), n.inputs.end(), ids[k], stand);
      ++moved;
    }
  }
  if (moved) g.relink();
  return moved;
}

}  // namespace memest
