// The legacy exporter's dynamic squeeze (see squeeze_if.h).
#include "frontends/squeeze_if.h"

#include <vector>

#include "frontends/protowire.h"

namespace memest {
namespace {

using namespace onnx_views;

// A branch's nodes and its one output's name.
struct Branch {
  std::vector<NodeView> nodes;
  std::string_view output;
  int outputs = 0;
};

// The GraphProto an If attribute holds (AttributeProto.g, field 6), read into a Branch.
std::optional<Branch> read_branch(std::string_view attribute) {
  wire::Field f;
  std::string_view graph;
  for (wire::Fields fields(attribute); fields.next(f);) {
    if (f.number == 6 && f.type == wire::kLen) graph = f.data;
  }
  if (graph.empty()) return std::nullopt;
  Branch b;
  for (wire::Fields fields(graph); fields.next(f);) {
    if (f.type != wire::kLen) continue;
    if (f.number == 1) read_node(f.data, b.nodes.emplace_back());
    if (f.number == 12) {
      b.output = read_value_info(f.data).name;
      ++b.outputs;
    }
  }
  if (b.outputs != 1) return std::nullopt;
  return b;
}

// The node of a branch making `name`, or nullptr.
const NodeView* maker(const Branch& b, std::string_view name) {
  for (const NodeView& n : b.nodes) {
    for (std::string_view o : n.outputs) {
      if (o == name) return &n;
    }
  }
  return nullptr;
}

bool default_domain(const NodeView& n) { return n.domain.empty() || n.domain == "ai.onnx"; }

// The one integer a Constant node of the branch holds (its `value` tensor), or nullopt.
std::optional<int64_t> constant_int(const NodeView& c) {
  if (c.op_type != "Constant" || !default_domain(c)) return std::nullopt;
  for (const AttrRef& ref : c.attrs) {
    AttrView a;
    read_attr(ref, a);
    if (a.name == "value_ints") {
      const std::vector<int64_t> v = attr_ints(a);
      if (v.size() == 1) return v[0];
    }
    if (a.name != "value") continue;
    TensorView t;
    t.parts = a.t;
    std::vector<int64_t> dims;
    read_tensor(t, dims);
    const auto v = read_ints(t, 1);
    if (v && v->size() == 1) return (*v)[0];
  }
  return std::nullopt;
}

// The Squeeze axis of the then-branch: an `axes` input made by a Constant (opset >= 13) or
// the `axes` attribute.
std::optional<int64_t> squeeze_axis(const Branch& b, const NodeView& squeeze) {
  if (squeeze.inputs.size() == 2) {
    const NodeView* c = maker(b, squeeze.inputs[1]);
    return c ? constant_int(*c) : std::nullopt;
  }
  for (const AttrRef& ref : squeeze.attrs) {
    AttrView a;
    read_attr(ref, a);
    if (a.name != "axes") continue;
    const std::vector<int64_t> v = attr_ints(a);
    if (v.size() == 1) return v[0];
  }
  return std::nullopt;
}

}  // namespace

std::optional<DynamicSqueeze> dynamic_squeeze(const NodeView& n) {
  if (n.op_type != "If" || !default_domain(n) || n.inputs.size() != 1 || n.outputs.size() != 1) return std::nullopt;
  std::optional<Branch> then_b, else_b;
  for (const AttrRef& ref : n.attrs) {
    AttrView a;
    read_attr(ref, a);
    if (a.name == "then_branch") then_b = read_branch(a.bytes);
    if (a.name == "else_branch") else_b = read_branch(a.bytes);
  }
  if (!then_b || !else_b || else_b->nodes.size() != 1 || then_b->nodes.size() > 2) return std::nullopt;
  const NodeView& identity = else_b->nodes[0];
  if (identity.op_type != "Identity" || !default_domain(identity) || identity.inputs.size() != 1 ||
      identity.outputs.size() != 1 || identity.outputs[0] != else_b->output) {
    return std::nullopt;
  }
  const NodeView* squeeze = maker(*then_b, then_b->output);
  if (!squeeze || squeeze->op_type != "Squeeze" || !default_domain(*squeeze) || squeeze->inputs.empty() ||
      squeeze->inputs[0] != identity.inputs[0]) {
    return std::nullopt;
  }
  const auto axis = squeeze_axis(*then_b, *squeeze);
  if (!axis) return std::nullopt;
  return DynamicSqueeze{identity.inputs[0], *axis};
}

}  // namespace memest
