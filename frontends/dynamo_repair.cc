// Repairs of what torch's dynamo ONNX exporter drops (dynamo_repair.h).
#include "frontends/dynamo_repair.h"

#include <algorithm>
#include <map>

namespace memest {

std::string_view namespace_op(std::string_view ns) {
  const size_t slash = ns.rfind('/');
  const std::string_view last = slash == std::string_view::npos ? ns : ns.substr(slash + 1);
  const size_t colon = last.find(": ");
  return colon == std::string_view::npos ? std::string_view() : last.substr(colon + 2);
}

bool may_hide_batch_norm(std::string_view op) {
  return op == "Conv" || op == "ConvTranspose" || op == "Gemm" || op == "MatMul";
}

bool restore_batch_norm(Graph& g, int layer, std::string_view origin_op, std::vector<int>& statistics) {
  if (!(origin_op.starts_with("aten._native_batch_norm_legit") || origin_op.starts_with("aten.batch_norm") ||
        origin_op.starts_with("aten.native_batch_norm") || origin_op.starts_with("aten.cudnn_batch_norm"))) {
    return false;
  }
  const bool training = origin_op.find("no_training") == std::string_view::npos;
  const Node& c = g.nodes[layer];
  const int weight = c.inputs.size() > 1 ? c.inputs[1] : -1;
  if (weight < 0 || !g.tensors[weight].shape || g.tensors[weight].shape->size() < 2) return false;
  // Output channels: W is [C_out, C_in/g, ...] for Conv, [C_in, C_out/g, ...] for
  // ConvTranspose, [out, in] for Gemm with transB (else [in, out]), [in, out] for MatMul.
  const Shape& w = *g.tensors[weight].shape;
  Expr channels;
  if (c.op == "Conv") {
    channels = w[0];
  } else if (c.op == "ConvTranspose") {
    channels = w[1] * Expr(c.attr_int("group", 1));
  } else if (c.op == "Gemm") {
    channels = c.attr_int("transB", 0) != 0 ? w[0] : w[1];
  } else {
    if (w.size() != 2) return false;
    channels = w[1];
  }
  const std::string bn_module = g.nodes[layer].module;
  const int out = g.nodes[layer].outputs.empty() ? -1 : g.nodes[layer].outputs[0];
  if (out < 0 || bn_module.empty()) return false;
  static constexpr const char* kSuffixes[] = {".weight", ".bias", ".running_mean", ".running_var"};
  for (const char* suffix : kSuffixes) {
    // A tensor of that name already in the graph must be that parameter, as an
    // earlier restore (a BatchNorm applied twice) left it; else nothing is restored.
    const int id = g.find_tensor(bn_module + suffix);
    if (id < 0) continue;
    const Tensor& t = g.tensors[id];
    const bool same = (t.kind == TensorKind::Parameter || t.kind == TensorKind::Buffer) && t.shape &&
                      t.shape->size() == 1 && t.shape->front() == channels;
    if (!same) return false;
  }
  const int mid = g.new_tensor(g.tensors[out].name + "_conv");
  std::vector<int> inputs = {mid};
  for (const char* suffix : kSuffixes) {
    const int id = g.tensor_id(bn_module + suffix);
    Tensor& t = g.tensors[id];
    if (!t.shape) {
      t.kind = TensorKind::Parameter;
      t.dtype = DType::F32;
      t.shape = Shape{channels};
      t.module = bn_module;
    }
    t.consumers.push_back(layer + 1);
    inputs.push_back(id);
  }
  statistics.push_back(inputs[3]);
  statistics.push_back(inputs[4]);
  Node& conv = g.nodes[layer];
  conv.outputs[0] = mid;
  g.tensors[mid].producer = layer;
  const std::string conv_module = module_from_param_name(g.tensors[weight].name);
  if (!conv_module.empty() && conv_module != g.tensors[weight].name) conv.module = conv_module;
  Node bn;
  bn.op = "BatchNormalization";
  bn.name = conv.name + "_batch_norm";
  bn.module = bn_module;
  bn.py_stack = conv.py_stack;
  bn.autocast_off = conv.autocast_off;
  bn.inputs = std::move(inputs);
  bn.outputs = {out};
  Attribute mode;
  mode.i = training ? 1 : 0;
  bn.attrs.emplace("training_mode", std::move(mode));
  g.tensors[mid].consumers.push_back(layer + 1);
  g.tensors[out].producer = layer + 1;
  g.nodes.push_back(std::move(bn));
  return true;
}

namespace {

// The longest dotted prefix two module paths share: "a.b.c", "a.b" -> "a.b".
std::string common_module(std::string_view a, std::string_view b) {
  size_t end = 0;  // the end of the shared components
  for (size_t i = 0;; ++i) {
    const bool a_end = i == a.size() || a[i] == '.';
    const bool b_end = i == b.size() || b[i] == '.';
    if (a_end && b_end) end = i;
    if (i == a.size() || i == b.size() || a[i] != b[i]) break;
  }
  return std::string(a.substr(0, end));
}

}  // namespace

void mark_training_batch_norm(Node& bn, std::string_view origin_op) {
  const bool aten_bn = origin_op.starts_with("aten._native_batch_norm_legit") || origin_op.starts_with("aten.batch_norm");
  if (!aten_bn || origin_op.find("no_training") != std::string_view::npos || bn.attr("training_mode")) return;
  Attribute a;
  a.kind = Attribute::Int;
  a.i = 1;
  bn.attrs.emplace("training_mode", std::move(a));
}

void place_untraced_nodes(Graph& g) {
  if (g.python.empty()) return;
  auto traced = [&](const Node& n) { return !n.dead && n.py_stack >= 0 && n.module != "loss"; };
  std::map<std::pair<int, size_t>, int> cut;  // (stack, frames kept) -> stack id
  int prev = -1;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (traced(g.nodes[k])) {
      prev = static_cast<int>(k);
      continue;
    }
    Node& n = g.nodes[k];
    if (n.dead || n.py_stack >= 0 || !n.module.empty() || n.op == "Constant" || prev < 0) continue;
    size_t next = k + 1;
    while (next < g.nodes.size() && !traced(g.nodes[next])) ++next;
    const Node& p = g.nodes[static_cast<size_t>(prev)];
    const std::vector<PyFrame>& ps = g.python.stacks[static_cast<size_t>(p.py_stack)];
    size_t keep = ps.size();
    if (next < g.nodes.size()) {
      const Node& q = g.nodes[next];
      const std::vector<PyFrame>& qs = g.python.stacks[static_cast<size_t>(q.py_stack)];
      keep = std::min(ps.size(), shared_frames(ps, qs) + 1);
      n.module = common_module(p.module, q.module);
    } else {
      n.module = p.module;
    }
    if (keep == ps.size()) {
      n.py_stack = p.py_stack;
      continue;
    }
    auto [it, fresh] = cut.try_emplace({p.py_stack, keep}, static_cast<int>(g.python.stacks.size()));
    if (fresh) g.python.stacks.emplace_back(ps.begin(), ps.begin() + static_cast<std::ptrdiff_t>(keep));
    n.py_stack = it->second;
  }
}

namespace {

// Ops through which a per-channel initializer is a model's own weight (a scale or a
// shift), not a constant of an op's definition.
bool is_affine_use(std::string_view op) { return op == "Mul" || op == "Add" || op == "Sub" || op == "Div"; }

// Elements of a tensor whose shape is all constants, or -1.
int64_t constant_numel(const Tensor& t) {
  if (!t.shape) return -1;
  int64_t n = 1;
  for (const Expr& d : *t.shape) {
    const auto v = d.as_const();
    if (!v) return -1;
    n *= *v;
  }
  return n;
}

}  // namespace

void split_deduplicated_initializers(Graph& g) {
  constexpr int64_t kMaxDeduplicated = 1 << 16;
  const size_t n_tensors = g.tensors.size();
  for (size_t id = 0; id < n_tensors; ++id) {
    {
      const Tensor& t = g.tensors[id];
      if (t.producer >= 0 || (t.kind != TensorKind::Parameter && t.kind != TensorKind::Buffer)) continue;
      if (!is_floating(t.dtype) || t.consumers.size() < 2) continue;
      const int64_t numel = constant_numel(t);
      if (numel <= 1 || numel > kMaxDeduplicated) continue;
    }
    // Consumers by module instance, in graph order.
    std::map<std::string, std::vector<int>> by_module;
    std::vector<std::string> order;
    bool affine_only = true, statistic = false;
    for (int c : g.tensors[id].consumers) {
      const Node& n = g.nodes[c];
      if (n.dead) continue;
      if (n.op == "BatchNormalization") statistic = true;
      affine_only = affine_only && is_affine_use(n.op);
      auto [it, fresh] = by_module.try_emplace(n.module);
      if (fresh) order.push_back(n.module);
      if (it->second.empty() || it->second.back() != c) it->second.push_back(c);
    }
    if (statistic || order.size() < 2) continue;
    // A folded initializer the signature does not list (addcmul's alpha, as "tmp") is
    // still the modules' weight when each module scales or shifts by it.
    const TensorKind kind = g.tensors[id].kind == TensorKind::Buffer && affine_only ? TensorKind::Parameter
                                                                                    : g.tensors[id].kind;
    g.tensors[id].kind = kind;
    g.tensors[id].module = order.front();
    // Each copy takes the name the module's own parameter has (`encoder.ln.weight` for the
    // `encoder.layers.encoder_layer_0.ln_1.weight` all LayerNorms of a fresh model share),
    // so --train/--freeze patterns match it as they match model.named_parameters().
    const std::string merged = g.tensors[id].name;  // a copy: new_tensor() may move the tensors
    const size_t dot = merged.rfind('.');
    const std::string leaf = dot == std::string::npos ? "" : merged.substr(dot + 1);
    for (size_t k = 1; k < order.size(); ++k) {
      const std::string own = order[k].empty() || leaf.empty() ? "" : order[k] + "." + leaf;
      const int copy = g.new_tensor(!own.empty() && g.find_tensor(own) < 0 ? own : merged + "#" + order[k]);
      Tensor& t = g.tensors[copy];
      const Tensor& orig = g.tensors[id];
      t.dtype = orig.dtype;
      t.kind = kind;
      t.shape = orig.shape;
      t.declared = orig.declared;
      t.fvalue = orig.fvalue;
      t.module = order[k];
      for (int c : by_module[order[k]]) {
        for (int& in : g.nodes[c].inputs) {
          if (in == static_cast<int>(id)) in = copy;
        }
      }
    }
  }
  g.relink();
}

int restore_dropped_gemm_biases(Graph& g, const std::vector<std::string_view>& parameters) {
  int restored = 0;
  for (std::string_view p : parameters) {
    if (!p.ends_with(".bias") || g.find_tensor(p) >= 0) continue;
    const std::string weight = std::string(p.substr(0, p.size() - 5)) + ".weight";
    const int w = g.find_tensor(weight);
    if (w < 0 || !g.tensors[w].shape || g.tensors[w].shape->size() != 2) continue;
    const std::vector<int> readers = g.tensors[w].consumers;  // a copy: new_tensor() may move the tensors
    for (int k : readers) {
      const Node& n = g.nodes[k];
      if (n.dead || n.op != "Gemm" || n.inputs.size() != 2 || n.inputs[1] != w) continue;
      const Shape& ws = *g.tensors[w].shape;
      const Expr out = n.attr_int("transB", 0) != 0 ? ws[0] : ws[1];
      const DType dtype = g.tensors[w].dtype;
      const std::string module = g.tensors[w].module;
      const int b = g.new_tensor(std::string(p));  // may move the tensors: nothing held across it
      Tensor& bias = g.tensors[b];
      bias.kind = TensorKind::Parameter;
      bias.dtype = dtype;
      bias.shape = Shape{out};
      bias.module = module;
      g.nodes[k].inputs.push_back(b);
      ++restored;
      break;
    }
  }
  if (restored > 0) g.relink();
  return restored;
}

}  // namespace memest
