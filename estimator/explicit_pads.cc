// Asymmetric convolution padding back into an explicit Pad (see explicit_pads.h).
#include "estimator/explicit_pads.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace memest {
namespace {

// The spatial axes' pads [b1..bn, e1..en] when they are asymmetric somewhere, else empty.
std::vector<int64_t> asymmetric_pads(const Node& n) {
  if (n.op != "Conv" || !n.domain.empty() || n.dead || !n.has_input(0)) return {};
  if (n.attr_string("auto_pad", "NOTSET") != "NOTSET") return {};
  const auto pads = n.attr_ints("pads");
  if (pads.empty() || pads.size() % 2 != 0) return {};
  const size_t axes = pads.size() / 2;
  bool asymmetric = false;
  for (size_t i = 0; i < axes; ++i) {
    if (pads[i] < 0 || pads[i + axes] < 0) return {};
    asymmetric |= pads[i] != pads[i + axes];
  }
  return asymmetric ? pads : std::vector<int64_t>{};
}

}  // namespace

int split_asymmetric_pads(Graph& g) {
  bool any = false;
  for (const Node& n : g.nodes) any |= !asymmetric_pads(n).empty();
  if (!any) return 0;
  int split = 0;
  std::map<std::pair<int, std::vector<int64_t>>, int> padded_of;
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size());
  for (Node& conv : g.nodes) {
    const std::vector<int64_t> pads = asymmetric_pads(conv);
    if (pads.empty()) {
      nodes.push_back(std::move(conv));
      continue;
    }
    // ONNX Pad's pads cover every axis, [x1_begin, ..., xr_begin, x1_end, ..., xr_end];
    // the batch and channel axes get none.
    const size_t axes = pads.size() / 2, rank = axes + 2;
    std::vector<Expr> all(2 * rank, Expr(0));
    for (size_t i = 0; i < axes; ++i) {
      all[2 + i] = Expr(pads[i]);
      all[rank + 2 + i] = Expr(pads[i + axes]);
    }
    // Convolutions that read one input with the same padding read one padded tensor
    // (WaveNet's `hp = F.pad(h, (d, 0))`, read by its filter and its gate).
    auto [at, fresh] = padded_of.try_emplace({conv.inputs[0], pads}, -1);
    if (!fresh) {
      conv.inputs[0] = at->second;
      conv.attrs["pads"].ints.assign(pads.size(), 0);
      nodes.push_back(std::move(conv));
      ++split;
      continue;
    }
    const std::string base = conv.name.empty() ? "conv" : conv.name;
    const int amounts = g.new_tensor(base + "_pads");
    {
      Tensor& t = g.tensors[amounts];
      t.kind = TensorKind::Constant;
      t.dtype = DType::I64;
      t.shape = Shape{Expr(static_cast<int64_t>(2 * rank))};
      t.value = std::move(all);
    }
    const int padded = g.new_tensor(base + "_padded");
    Node pad;
    pad.op = "Pad";
    pad.name = base + "_pad";
    pad.module = conv.module;
    pad.py_stack = conv.py_stack;
    pad.autocast_off = conv.autocast_off;
    pad.keeps_locals = conv.keeps_locals;
    pad.inputs = {conv.inputs[0], amounts};
    pad.outputs = {padded};
    Attribute mode;
    mode.kind = Attribute::String;
    mode.s = "constant";
    pad.attrs.emplace("mode", std::move(mode));
    at->second = padded;
    conv.inputs[0] = padded;
    conv.attrs["pads"].ints.assign(pads.size(), 0);
    nodes.push_back(std::move(pad));
    nodes.push_back(std::move(conv));
    ++split;
  }
  g.nodes = std::move(nodes);
  g.relink();
  return split;
}

}  // namespace memest
