// LoRA as peft's LoraLayer.forward computes it (peft/tuners/lora/layer.py, Linear.forward):
//   result = self.base_layer(x)
//   result = result + lora_B(lora_A(dropout(x))) * scaling
// so each wrapped Linear adds x @ A^T ([..., r]), that @ B^T ([..., out]), the product by
// the scaling and the sum, four tensors the ordinary op tables know what to save for:
// A's gradient keeps x, B's keeps x @ A^T; the frozen base weight keeps nothing of x
// when x needs no gradient.
#include "estimator/lora.h"

#include <algorithm>

#include "estimator/finetune.h"

namespace memest {
namespace {

// The Linear layers to wrap: their node index, input and output widths.
struct Site {
  int node;
  Expr in, out;
  int weight;          ///< the parameter
  std::string module;  ///< its module path
};

bool is_target(const std::vector<std::string>& targets, const std::string& module) {
  const std::string last = module.substr(module.rfind('.') == std::string::npos ? 0 : module.rfind('.') + 1);
  return std::find(targets.begin(), targets.end(), last) != targets.end();
}

// The 2-D parameter a MatMul or Gemm multiplies by, and whether it is stored [out, in]
// (torch's layout: Gemm with transB, or the legacy exporter's explicit Transpose of the
// weight in training exports) rather than [in, out] (the exporters' folded transpose).
// `producer`: per tensor, the node that makes it (a frontend's graph may not be linked yet).
std::optional<std::pair<int, bool>> linear_weight(const Graph& g, const Node& n, const std::vector<int>& producer) {
  if (!n.has_input(1)) return std::nullopt;
  int w = n.inputs[1];
  bool transposed = n.op == "Gemm" && n.attr_int("transB", 0) != 0;
  const int p = producer[w];
  if (p >= 0 && g.nodes[p].op == "Transpose" && !g.nodes[p].dead && g.nodes[p].has_input(0)) {
    w = g.nodes[p].inputs[0];
    transposed = !transposed;
  }
  const Tensor& t = g.tensors[w];
  if (t.kind != TensorKind::Parameter || !t.shape || t.shape->size() != 2) return std::nullopt;
  return std::pair{w, transposed};
}

std::optional<Site> linear_site(const Graph& g, int k, const LoraSpec& spec, const std::vector<int>& producer) {
  const Node& n = g.nodes[k];
  if (n.dead || (n.op != "MatMul" && n.op != "Gemm") || n.outputs.empty()) return std::nullopt;
  const auto weight = linear_weight(g, n, producer);
  if (!weight) return std::nullopt;
  const auto [w, transposed] = *weight;
  const std::string module = module_from_param_name(parameter_name(g, w));
  if (!is_target(spec.targets, module)) return std::nullopt;
  const Shape& s = *g.tensors[w].shape;
  return Site{k, transposed ? s[1] : s[0], transposed ? s[0] : s[1], w, module};
}

int add_parameter(Graph& g, const std::string& name, DType dtype, Shape shape, const std::string& module) {
  const int id = g.new_tensor(name);
  Tensor& t = g.tensors[id];
  t.kind = TensorKind::Parameter;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.module = module;
  return id;
}

// A node of the adapter; `submodule` is peft's ("lora_A.default"), under the wrapped
// Linear's module path: the simulator knows lora_A by it (peft casts its input to float).
Node make_node(const std::string& op, std::vector<int> inputs, int output, const Node& base, const std::string& what,
               const std::string& module, const std::string& submodule = "") {
  Node n;
  n.op = op;
  n.name = base.name + "/" + what;
  n.inputs = std::move(inputs);
  n.outputs = {output};
  n.module = submodule.empty() ? module : module + "." + submodule;
  n.py_stack = base.py_stack;
  return n;
}

// Appends to `out` the adapter nodes of `site` and rewires its output through them.
void wrap(Graph& g, const Site& site, const LoraSpec& spec, std::vector<Node>& out) {
  Node& base = out.back();
  const int x = base.inputs[0];
  const int y = base.outputs[0];
  const std::string& module = site.module;
  const DType dt = g.tensors[site.weight].dtype;
  const Expr r(spec.rank);
  // Stored transposed, as the exporters store a Linear's weight: the bytes are the same.
  const int a = add_parameter(g, module + ".lora_A.default.weight", dt, {site.in, r}, module);
  const int b = add_parameter(g, module + ".lora_B.default.weight", dt, {r, site.out}, module);
  const int scale = g.new_tensor(module + ".lora_scaling");
  g.tensors[scale].kind = TensorKind::Constant;
  g.tensors[scale].dtype = dt;
  g.tensors[scale].shape = Shape{};
  g.tensors[scale].fvalue = std::vector<double>{1.0};  // alpha / r; the value does not matter
  const int base_out = g.new_tensor(g.tensors[y].name + "/base");
  base.outputs[0] = base_out;
  const int down = g.new_tensor(module + ".lora_A.out");
  const int up = g.new_tensor(module + ".lora_B.out");
  const int scaled = g.new_tensor(module + ".lora_scaled");
  const Node copy = base;
  out.push_back(make_node("MatMul", {x, a}, down, copy, "lora_A", module, "lora_A.default"));
  out.push_back(make_node("MatMul", {down, b}, up, copy, "lora_B", module, "lora_B.default"));
  out.push_back(make_node("Mul", {up, scale}, scaled, copy, "lora_scaling", module));
  out.push_back(make_node("Add", {base_out, scaled}, y, copy, "lora_add", module));
}

// Per tensor, the live node that makes it (a frontend's graph may not be linked yet).
std::vector<int> producers(const Graph& g) {
  std::vector<int> producer(g.tensors.size(), -1);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    for (int o : g.nodes[k].outputs) {
      if (o >= 0 && !g.nodes[k].dead) producer[o] = static_cast<int>(k);
    }
  }
  return producer;
}

}  // namespace

int lora_sites(const Graph& g, const LoraSpec& spec) {
  const std::vector<int> producer = producers(g);
  int count = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) count += linear_site(g, static_cast<int>(k), spec, producer) ? 1 : 0;
  return count;
}

Graph with_lora(const Graph& g, const LoraSpec& spec, int* wrapped) {
  Graph out = g;
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size());
  const std::vector<int> producer = producers(g);
  int count = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const std::optional<Site> site = linear_site(g, static_cast<int>(k), spec, producer);
    nodes.push_back(out.nodes[k]);
    if (!site) continue;
    wrap(out, *site, spec, nodes);
    ++count;
  }
  if (wrapped) *wrapped = count;
  if (count == 0) return g;
  out.nodes = std::move(nodes);
  out.relink();
  return out;
}

}  // namespace memest
