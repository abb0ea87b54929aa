// Asymmetric convolution padding back into an explicit Pad (see explicit_pads.h).
#include "estimator/explicit_pads.h"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace memest {
namespace {

// The kernel's spatial extent per axis: the attribute, else the weight's dims 2...
std::vector<int64_t> kernel_extent(const Graph& g, const Node& n) {
  std::vector<int64_t> k = n.attr_ints("kernel_shape");
  if (!k.empty() || !n.has_input(1)) return k;
  const std::optional<Shape>& w = g.tensors[n.inputs[1]].shape;
  if (!w) return {};
  for (size_t i = 2; i < w->size(); ++i) {
    const std::optional<int64_t> d = (*w)[i].as_const();
    if (!d) return {};
    k.push_back(*d);
  }
  return k;
}

// `auto_pad` SAME_UPPER / SAME_LOWER as explicit pads. At stride 1 an axis's total
// padding is dilation * (kernel - 1) whatever its size, the odd unit at the end (UPPER)
// or the beginning (LOWER): the legacy exporter writes SAME_UPPER for PyTorch's
// `padding="same"`, whose aten::_convolution_mode pads (0, 1) with constant_pad_nd when
// the total is odd. Empty when another stride makes the total depend on the size.
std::vector<int64_t> same_pads(const Graph& g, const Node& n, const std::string& auto_pad) {
  const std::vector<int64_t> k = kernel_extent(g, n);
  if (k.empty()) return {};
  const size_t axes = k.size();
  const std::vector<int64_t> strides = n.attr_ints("strides", std::vector<int64_t>(axes, 1));
  const std::vector<int64_t> dil = n.attr_ints("dilations", std::vector<int64_t>(axes, 1));
  if (strides.size() != axes || dil.size() != axes) return {};
  std::vector<int64_t> pads(2 * axes, 0);
  for (size_t i = 0; i < axes; ++i) {
    if (strides[i] != 1 || k[i] < 1) return {};
    const int64_t total = dil[i] * (k[i] - 1), low = total / 2, high = total - low;
    pads[i] = auto_pad == "SAME_LOWER" ? high : low;
    pads[i + axes] = auto_pad == "SAME_LOWER" ? low : high;
  }
  return pads;
}

// The pads [b1..bn, e1..en] of the spatial axes that an explicit Pad before the
// convolution made: all of them when they are asymmetric somewhere (PyTorch pads
// symmetrically inside a convolution), those beyond the call's own padding when the
// exporter folded a Pad in (call_pads, dynamo_repair.cc), else empty.
std::vector<int64_t> asymmetric_pads(const Graph& g, const Node& n) {
  if (n.op != "Conv" || !n.domain.empty() || n.dead || !n.has_input(0)) return {};
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") return {};
  const auto pads = auto_pad == "NOTSET" ? n.attr_ints("pads") : same_pads(g, n, auto_pad);
  // timm's pad_same by zeros (dynamo_repair.h mark_same_pad_copy): a Pad of nothing, a copy.
  if (n.attr_int("same_pad_copy", 0) == 1) {
    size_t axes = pads.size() / 2;
    if (n.has_input(1) && g.tensors[n.inputs[1]].shape && g.tensors[n.inputs[1]].shape->size() > 2) {
      axes = g.tensors[n.inputs[1]].shape->size() - 2;
    }
    return axes > 0 ? std::vector<int64_t>(2 * axes, 0) : std::vector<int64_t>{};
  }
  if (pads.empty() || pads.size() % 2 != 0) return {};
  const size_t axes = pads.size() / 2;
  for (size_t i = 0; i < axes; ++i) {
    if (pads[i] < 0 || pads[i + axes] < 0) return {};
  }
  // A Pad the dynamo exporter folded in: what exceeds the call's own padding.
  if (const std::vector<int64_t> call = n.attr_ints("call_pads"); call.size() == axes) {
    std::vector<int64_t> extra(2 * axes);
    bool any = false;
    for (size_t i = 0; i < axes; ++i) {
      extra[i] = pads[i] - call[i];
      extra[i + axes] = pads[i + axes] - call[i];
      if (extra[i] < 0 || extra[i + axes] < 0) return {};
      any |= extra[i] > 0 || extra[i + axes] > 0;
    }
    return any ? extra : std::vector<int64_t>{};
  }
  bool asymmetric = false;
  for (size_t i = 0; i < axes; ++i) asymmetric |= pads[i] != pads[i + axes];
  return asymmetric ? pads : std::vector<int64_t>{};
}

// The convolution after its Pad: the call's own padding (none but a folded Pad's
// convolution's), no auto_pad.
void pads_after_split(Node& conv, size_t count) {
  const std::vector<int64_t> call = conv.attr_ints("call_pads");
  Attribute& pads = conv.attrs["pads"];
  pads.kind = Attribute::Ints;
  pads.ints.assign(count, 0);
  if (call.size() * 2 == count) {
    for (size_t i = 0; i < call.size(); ++i) pads.ints[i] = pads.ints[i + call.size()] = call[i];
  }
  if (conv.attr("auto_pad")) {
    Attribute& mode = conv.attrs["auto_pad"];
    mode.kind = Attribute::String;
    mode.s = "NOTSET";
  }
}

// A zero constant Pad node already in the graph as the key convolutions look padded
// inputs up by: (its input, the spatial pads [b1..bn, e1..en]), or nullopt when it pads
// the batch or channel axes, pads with another value, or its amounts are not known.
std::optional<std::pair<int, std::vector<int64_t>>> pad_key(const Graph& g, const Node& n) {
  if (n.op != "Pad" || !n.domain.empty() || n.dead || !n.has_input(0) || !n.has_input(1)) return std::nullopt;
  if (n.attr_string("mode", "constant") != "constant") return std::nullopt;
  if (n.has_input(2)) {
    const Tensor& v = g.tensors[n.inputs[2]];
    const bool zero = (v.fvalue && v.fvalue->size() == 1 && (*v.fvalue)[0] == 0.0) ||
                      (v.value && v.value->size() == 1 && (*v.value)[0] == Expr(0));
    if (!zero) return std::nullopt;
  }
  if (n.inputs.size() > 3) return std::nullopt;  // Pad's axes input: not the exporters' form
  const auto& amounts = g.tensors[n.inputs[1]].value;
  if (!amounts || amounts->size() < 6 || amounts->size() % 2 != 0) return std::nullopt;
  const size_t rank = amounts->size() / 2, axes = rank - 2;
  std::vector<int64_t> pads(2 * axes);
  for (size_t i = 0; i < rank; ++i) {
    const std::optional<int64_t> b = (*amounts)[i].as_const(), e = (*amounts)[rank + i].as_const();
    if (!b || !e || *b < 0 || *e < 0 || (i < 2 && (*b != 0 || *e != 0))) return std::nullopt;
    if (i >= 2) {
      pads[i - 2] = *b;
      pads[axes + i - 2] = *e;
    }
  }
  return std::make_pair(n.inputs[0], std::move(pads));
}

}  // namespace

int split_asymmetric_pads(Graph& g) {
  bool any = false;
  for (const Node& n : g.nodes) any |= !asymmetric_pads(g, n).empty();
  if (!any) return 0;
  int split = 0;
  std::map<std::pair<int, std::vector<int64_t>>, int> padded_of;
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size());
  for (Node& conv : g.nodes) {
    const std::vector<int64_t> pads = asymmetric_pads(g, conv);
    if (pads.empty()) {
      // `x = F.pad(x, (0, 1, 0, 1))` read by a max pool and by a convolution the dynamo
      // exporter folded the Pad into (timm's HGNetV2 StemV2): one padded tensor in PyTorch,
      // which the convolution reads too (seqtrace34 st_hgnetv2_b1: one 39.2 MB pad, where
      // memest had made a second).
      if (auto key = pad_key(g, conv); key && conv.outputs.size() == 1 && conv.outputs[0] >= 0) {
        padded_of.try_emplace(std::move(*key), conv.outputs[0]);
      }
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
      pads_after_split(conv, pads.size());
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
    pads_after_split(conv, pads.size());
    nodes.push_back(std::move(pad));
    nodes.push_back(std::move(conv));
    ++split;
  }
  g.nodes = std::move(nodes);
  g.relink();
  return split;
}

}  // namespace memest
