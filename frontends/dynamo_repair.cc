// Repairs of what torch's dynamo ONNX exporter drops (dynamo_repair.h).
#include "frontends/dynamo_repair.h"

#include "frontends/fx_node.h"

#include "frontends/merged_initializers.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <unordered_set>

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

namespace {

std::string_view last_component(std::string_view module) {
  const size_t dot = module.rfind('.');
  return dot == std::string_view::npos ? module : module.substr(dot + 1);
}

// A statement like `s` (the same names assigned) but of its own: where `s` is, marked.
int twin_statement(PySource& py, int s) {
  const std::string where = py.statements[static_cast<size_t>(s)].where + " (the layer before)";
  for (size_t i = 0; i < py.statements.size(); ++i) {
    if (py.statements[i].where == where) return static_cast<int>(i);
  }
  PyStatement twin = py.statements[static_cast<size_t>(s)];
  twin.where = where;
  twin.code = "(the layer folded into: " + twin.code + ")";
  py.statements.push_back(std::move(twin));
  return static_cast<int>(py.statements.size()) - 1;
}

}  // namespace

// The folded layer carries the BatchNorm's stack. Where the BatchNorm's caller called it
// by name in a statement that does not call the layer (`out = self.bn1(out)`, with
// `out = self.conv1(x)` the line above: torchvision's Bottleneck), the layer ran in a
// statement of its own before it; read as the BatchNorm's, a local the layer's statement
// rebinds (the previous `out`) would stay bound until the BatchNorm returned, one
// statement late (a frozen ResNet-50's forward; seqtrace33c). The layer gets the caller's
// frames down to that call, whose statement becomes a twin assigning the same names. A
// Sequential's `input = module(input)` or a nested `self.bn(self.conv(x))` runs both in
// one statement: left as read.
void give_layer_its_statement(Graph& g, Node& layer, std::string_view bn_module) {
  if (layer.py_stack < 0 || bn_module.empty()) return;
  const std::string call = "." + std::string(last_component(bn_module)) + "(";
  const std::string layer_call = "." + std::string(last_component(layer.module)) + "(";
  const std::vector<PyFrame> stack = g.python.stacks[static_cast<size_t>(layer.py_stack)];
  for (size_t i = stack.size(); i-- > 0;) {
    const PyStatement& s = g.python.statements[static_cast<size_t>(stack[i].statement)];
    if (s.code.find(call) == std::string::npos) continue;
    if (!s.binds || s.continuation || s.code.find(layer_call) != std::string::npos) return;
    std::vector<PyFrame> own(stack.begin(), stack.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    own.back().statement = twin_statement(g.python, stack[i].statement);
    layer.py_stack = static_cast<int>(g.python.stacks.size());
    g.python.stacks.push_back(std::move(own));
    return;
  }
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
  give_layer_its_statement(g, g.nodes[layer], bn_module);
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

void classify_group_norm_initializers(Graph& g, const ParameterReads& reads) {
  auto group_norm = [&](const Node& n) {
    return !n.dead && n.call >= 0 && static_cast<size_t>(n.call) < g.calls.size() &&
           g.calls[static_cast<size_t>(n.call)].starts_with("aten.group_norm");
  };
  auto initializer = [&](int id) {
    const Tensor& t = g.tensors[id];
    return t.producer < 0 && t.shape && is_floating(t.dtype) &&
           (t.kind == TensorKind::Parameter || t.kind == TensorKind::Buffer || t.kind == TensorKind::Constant);
  };
  bool rewired = false;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (!group_norm(g.nodes[k])) continue;
    const std::string op = g.nodes[k].op;
    if (op == "Mul" || op == "Add") {
      // The call's weight and bias, in that order; a None one (timm's GroupNorm1 without
      // bias) is a constant torchlib makes, ones or zeros of C.
      const std::span<const std::string_view> takes = reads.of(static_cast<int>(k));
      bool weight = takes.size() >= 2, bias = takes.size() >= 2;
      if (takes.size() == 1) (param_leaf(takes[0]) == "bias" ? bias : weight) = true;
      const bool param = op == "Mul" ? weight : bias;
      for (int in : g.nodes[k].inputs) {
        if (in >= 0 && initializer(in)) g.tensors[in].kind = param ? TensorKind::Parameter : TensorKind::Constant;
      }
      continue;
    }
    if (op != "InstanceNormalization") continue;
    for (size_t i = 1; i < g.nodes[k].inputs.size(); ++i) {
      const int in = g.nodes[k].inputs[i];
      if (in < 0 || !initializer(in)) continue;
      // The exporter merges equal initializers: G ones may be a LayerNorm's weight as
      // well, which stays that LayerNorm's; the InstanceNormalization gets its own constant.
      bool shared = false;
      for (int c : g.tensors[in].consumers) {
        const Node& r = g.nodes[c];
        shared = shared || !(group_norm(r) && r.op == "InstanceNormalization" &&
                             std::find(r.inputs.begin() + 1, r.inputs.end(), in) != r.inputs.end());
      }
      if (!shared) {
        g.tensors[in].kind = TensorKind::Constant;
        continue;
      }
      const std::string name = g.tensors[in].name + "#group_norm";
      const bool fresh = g.find_tensor(name) < 0;
      const int copy = g.tensor_id(name);  // may move the tensors
      if (fresh) {
        Tensor& t = g.tensors[copy];
        const Tensor& orig = g.tensors[in];
        t.dtype = orig.dtype;
        t.kind = TensorKind::Constant;
        t.shape = orig.shape;
        t.declared = orig.declared;
        t.fvalue = orig.fvalue;
      }
      g.nodes[k].inputs[i] = copy;
      rewired = true;
    }
  }
  if (rewired) g.relink();
}

namespace {

// The output features of layer `n` from its weight's shape `ws`: a Gemm's, a Conv's or a
// ConvTranspose's. Empty for anything else.
std::optional<Expr> out_features(const Node& n, const Shape& ws) {
  if (n.op == "Gemm" && ws.size() == 2) return n.attr_int("transB", 0) != 0 ? ws[0] : ws[1];
  if (n.op == "Conv" && ws.size() >= 3) return ws[0];
  // ConvTranspose's weight is [C_in, C_out / group, ...]: bias has C_out.
  if (n.op == "ConvTranspose" && ws.size() >= 3) return ws[1] * Expr(n.attr_int("group", 1));
  return std::nullopt;
}

// The output features of layer `n` reading weight `w` without a bias input, where the
// exporter's optimizer may have dropped a zero bias: a Gemm with two inputs (C is its
// third), a Conv or ConvTranspose with two (B is their third).
std::optional<Expr> biasless_out_features(const Node& n, int w, const Shape& ws) {
  if (n.dead || n.inputs.size() != 2 || n.inputs[1] != w) return std::nullopt;
  return out_features(n, ws);
}

// Whether layer `n` reads weight `w` and a bias the exporter made, no parameter: folding
// a BatchNorm into the Conv before it gives the Conv a bias named after the weight
// ("fc1.weight_bias"), which stands for the Conv's own bias, if it has one, and the
// BatchNorm's shift, which restore_batch_norm puts back (rexnet's squeeze-excite fc1).
bool reads_made_bias(const Graph& g, const Node& n, int w) {
  if (n.dead || n.inputs.size() != 3 || n.inputs[1] != w || n.inputs[2] < 0) return false;
  const Tensor& b = g.tensors[n.inputs[2]];
  return b.producer < 0 && b.kind != TensorKind::Parameter && b.kind != TensorKind::Input;
}

}  // namespace

int restore_dropped_biases(Graph& g, const std::vector<std::string_view>& parameters, const ParameterReads& reads) {
  int restored = 0;
  auto restore = [&](std::string_view p, int k, const Expr& out, DType dtype, std::string module) {
    const int b = g.new_tensor(std::string(p));  // may move the tensors: nothing held across it
    Tensor& bias = g.tensors[b];
    bias.kind = TensorKind::Parameter;
    bias.dtype = dtype;
    bias.shape = Shape{out};
    bias.module = std::move(module);
    g.nodes[k].inputs.push_back(b);
    ++restored;
  };
  for (std::string_view p : parameters) {
    if (!p.ends_with(".bias") || g.find_tensor(p) >= 0) continue;
    const std::string weight = std::string(p.substr(0, p.size() - 5)) + ".weight";
    const int w = g.find_tensor(weight);
    bool done = false;
    if (w >= 0 && g.tensors[w].shape) {
      const std::vector<int> readers = g.tensors[w].consumers;  // a copy: new_tensor() may move the tensors
      for (int k : readers) {
        const bool made = reads_made_bias(g, g.nodes[k], w);
        const std::optional<Expr> out =
            made ? out_features(g.nodes[k], *g.tensors[w].shape) : biasless_out_features(g.nodes[k], w, *g.tensors[w].shape);
        if (!out) continue;
        if (made) g.nodes[k].inputs.pop_back();
        restore(p, k, *out, g.tensors[w].dtype, g.tensors[w].module);
        done = true;
        break;
      }
    }
    if (done || reads.empty()) continue;
    // The layer may read its weight computed (ScaledStdConv2d standardizes it first, into
    // an activation or, folded, an initializer of the exporter's name): its FX call still
    // takes the bias. The output features come from what the layer reads, else from the
    // weight parameter.
    for (size_t k = 0; k < g.nodes.size() && !done; ++k) {
      const std::span<const std::string_view> takes = reads.of(static_cast<int>(k));
      if (std::find(takes.begin(), takes.end(), p) == takes.end()) continue;
      const Node& n = g.nodes[k];
      if (n.inputs.size() != 2 || n.inputs[1] < 0) continue;
      const Tensor& read = g.tensors[n.inputs[1]];
      const Tensor* shaped = read.shape ? &read : w >= 0 && g.tensors[w].shape ? &g.tensors[w] : nullptr;
      if (!shaped) continue;
      const std::optional<Expr> out = biasless_out_features(n, n.inputs[1], *shaped->shape);
      if (!out) continue;
      restore(p, static_cast<int>(k), *out, shaped->dtype, module_from_param_name(std::string(p)));
      done = true;
    }
  }
  if (restored > 0) g.relink();
  return restored;
}

std::vector<std::string_view> python_strings(std::string_view list) {
  std::vector<std::string_view> out;
  for (size_t i = list.find('\''); i != std::string_view::npos; i = list.find('\'', i + 1)) {
    const size_t end = list.find('\'', i + 1);
    if (end == std::string_view::npos) break;
    out.push_back(list.substr(i + 1, end - i - 1));
    i = end;
  }
  return out;
}


// torch.export decomposes F.rms_norm (nn.RMSNorm, timm's RmsNorm) into Pow, ReduceMean,
// Add, Sqrt, Reciprocal and Mul, each node's stack trace ending in the call; on CUDA it
// runs as one kernel (aten._fused_rms_norm), which keeps its input and an fp32 rstd per
// row and none of the steps (traces25 rnd20_127: 8 KB of rstd a norm, where memest
// counted the steps' 1.5 MB; random transformers with nn.RMSNorm read +2.5% at the
// median against 0.0% for the others; a half input by an fp32 weight runs a composite
// instead, ops/norm.cc). Marks the node for fuse.cc's rms_norm.
void mark_rms_norm(Node& node, std::string_view trace) {
  if (node.op != "Pow" && node.op != "ReduceMean" && node.op != "Add" && node.op != "Sqrt" &&
      node.op != "Reciprocal" && node.op != "Mul") {
    return;
  }
  const size_t last = trace.rfind("File \"");
  if (last == std::string_view::npos) return;
  const std::string_view frame = trace.substr(last);
  const size_t code = frame.find('\n');
  if (code == std::string_view::npos || frame.find("rms_norm(", code) == std::string_view::npos) return;
  Attribute a;
  a.i = 1;
  node.attrs["from_rms_norm"] = a;
}

// The dynamo exporter's optimizer (onnxscript's rewriter) folds a constant Pad into the
// Conv after it (rule FuseConvPad: timm's BlurPool2d, `F.pad(x, p)` then
// `F.conv2d(x, filt, stride=2)`); the node's metadata names the rule and its FX call
// still shows the convolution's own padding. The Conv gets that padding as "call_pads"
// (per spatial axis), so the explicit-pads pass can put the Pad the model ran back
// (blind12's st_mobilenetv4_conv_blur_medium: the padded copies its blur convolutions
// keep, 11-13% of the peak, were missing from the dynamo export only).
void mark_folded_pad(Node& conv, std::string_view rules, std::string_view fx_node) {
  if (rules.find("FuseConvPad") == std::string_view::npos && rules.find("FusePadConv") == std::string_view::npos) return;
  const std::optional<std::vector<int64_t>> padding = fx_conv_padding(fx_node);
  if (!padding) return;
  Attribute a;
  a.kind = Attribute::Ints;
  a.ints = *padding;
  conv.attrs["call_pads"] = std::move(a);
}

// The "<module>: <class>" part of a dynamo namespace that names the node's own module
// (the one before its aten call), or "" when there is none.
namespace {
std::string_view own_module_scope(std::string_view ns) {
  const size_t call = ns.rfind('/');
  if (call == std::string_view::npos || call == 0) return {};
  const size_t module = ns.rfind('/', call - 1);
  const size_t start = module == std::string_view::npos ? 0 : module + 1;
  return ns.substr(start, call - start);
}
}  // namespace

// timm's Conv2dSame family (Conv2dSame, StdConv2dSame, ScaledStdConv2dSame) pads with
// F.pad before every call (pad_same), and aten's constant_pad_nd returns a clone when no pad
// is positive: a 1x1 stride-2 layer on an even map pads by 0 and still copies its input,
// the copy being what the convolution keeps (seqtrace33 st_vit_small_r26_s32_384: three
// downsample inputs, 132 MB). torch.export drops a pad of zeros from the graph; the legacy
// exporter keeps the Pad. The class of the convolution's own module, from the namespace
// ("... /<module>: <class>/<call>: aten.conv2d.default"), marks such a layer for
// explicit_pads.cc, which puts the copy back.
void mark_same_pad_copy(Node& conv, std::string_view ns) {
  if (conv.attr("call_pads")) return;  // a folded Pad of its own: explicit_pads splits it
  const std::string_view scope = own_module_scope(ns);
  constexpr std::string_view kSame = "Conv2dSame";
  if (scope.size() < kSame.size() || scope.substr(scope.size() - kSame.size()) != kSame) return;
  for (int64_t p : conv.attr_ints("pads")) {
    if (p != 0) return;
  }
  // Only where the padding is dynamic (timm's is_static_pad: stride 1 and an even
  // dilation * (kernel - 1) pad statically, inside the convolution, and never call F.pad).
  const std::vector<int64_t> kernel = conv.attr_ints("kernel_shape");
  const std::vector<int64_t> strides = conv.attr_ints("strides", std::vector<int64_t>(kernel.size(), 1));
  const std::vector<int64_t> dilations = conv.attr_ints("dilations", std::vector<int64_t>(kernel.size(), 1));
  if (kernel.empty() || strides.size() != kernel.size() || dilations.size() != kernel.size()) return;
  bool dynamic = false;
  for (size_t i = 0; i < kernel.size(); ++i) dynamic |= strides[i] != 1 || (dilations[i] * (kernel[i] - 1)) % 2 != 0;
  if (!dynamic) return;
  Attribute a;
  a.i = 1;
  conv.attrs["same_pad_copy"] = std::move(a);
}

namespace {

// Whether tensor t is a Transpose's view that moves an axis: strided, so `.contiguous()`
// of it copies.
bool permuted_view(const Graph& g, int t) {
  if (t < 0 || g.tensors[t].producer < 0) return false;
  const Node& p = g.nodes[g.tensors[t].producer];
  if (p.op != "Transpose" || p.dead) return false;
  const std::vector<int64_t> perm = p.attr_ints("perm");
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return true;
  }
  return perm.empty();  // no perm: the axes reversed
}

// The FX clone node k's call reads as its first argument ("clone_12" of
// "conv2d(args = (%clone_12, %p_w, ...))"), or "" when it reads something else.
std::string_view first_arg_clone(std::string_view fx) {
  const size_t args = fx.find("](args = (%");
  if (args == std::string_view::npos) return {};
  const std::string_view name = fx.substr(args + 11);
  if (!name.starts_with("clone")) return {};
  size_t end = 5;
  while (end < name.size() && (std::isalnum(static_cast<unsigned char>(name[end])) || name[end] == '_')) ++end;
  return name.substr(0, end);
}

}  // namespace

// `x.permute(0, 3, 1, 2).contiguous()` is an aten.clone in torch.export's graph, which
// the dynamo exporter writes as an Identity and its optimizer then removes: the node
// after it reads the Transpose's view, while its FX call still reads `%clone_N`, a value
// no node of the file makes. In PyTorch .contiguous() of a strided view copies it
// (TensorBase::contiguous -> clone(contiguous_format)), and the copy is the tensor the
// next layer reads and keeps (timm's CoaT: `x1_nocls = remove_cls(x1).reshape(B, H, W, C)
// .permute(0, 3, 1, 2).contiguous()` before patch_embed2; seqtrace session 40
// st_coat_lite_small b16 bf16: a 12.25 MiB fp32 copy ahead of the bf16 autocast cast,
// missing from memest). A clone of a contiguous value (nn.Dropout(p=0)'s, which eager
// does not copy at all) reads a value that is no permuted view and is left alone.
// Inserts a memest Contiguous node after the Transpose for each such clone (one for all
// the nodes that name it) and rewires its readers. Returns how many were put back.
int restore_dropped_contiguous(Graph& g, const std::vector<std::string_view>& fx_calls) {
  std::map<std::pair<int, std::string_view>, int> copy_of;  // (view, clone name) -> copy tensor
  std::map<int, std::vector<int>> after;                    // Transpose node -> copies made after it
  // A call the exporter writes as several nodes (scaled_dot_product_attention's
  // decomposition) need not read its first argument in its first node's input 0.
  std::unordered_map<std::string_view, int> nodes_of;
  for (std::string_view fx : fx_calls) ++nodes_of[fx];
  for (size_t k = 0; k < fx_calls.size() && k < g.nodes.size(); ++k) {
    const std::string_view clone = first_arg_clone(fx_calls[k]);
    Node& n = g.nodes[k];
    // reshape of a tensor it cannot view is clone + _unsafe_view in torch.export's graph,
    // a copy only where the strides say so, which the Reshape's own rule decides
    // (maxxvit's `sdpa(...).transpose(-1, -2).reshape(B, -1, H, W)`: a view of the
    // attention's [B, N, h, d] output on the GPU).
    if (clone.empty() || nodes_of[fx_calls[k]] != 1 || fx_calls[k].find("aten._unsafe_view") != std::string_view::npos) {
      continue;
    }
    if (n.dead || n.inputs.empty() || !permuted_view(g, n.inputs[0])) continue;
    if (g.find_tensor(clone) >= 0) continue;  // the file has it: not dropped
    const int view = n.inputs[0];
    auto [it, fresh] = copy_of.try_emplace({view, clone}, -1);
    if (fresh) {
      it->second = g.new_tensor(std::string(clone));  // may move the tensors
      after[g.tensors[view].producer].push_back(it->second);
    }
    g.nodes[k].inputs[0] = it->second;
  }
  if (copy_of.empty()) return 0;
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size() + copy_of.size());
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    nodes.push_back(std::move(g.nodes[k]));
    auto it = after.find(static_cast<int>(k));
    if (it == after.end()) continue;
    const Node& t = nodes.back();
    for (int copy : it->second) {
      Node c;
      c.op = "Contiguous";
      c.domain = "memest";
      c.name = t.name + "_contiguous";
      c.module = t.module;
      c.py_stack = t.py_stack;
      c.autocast_off = t.autocast_off;
      c.keeps_locals = t.keeps_locals;
      c.inputs = {t.outputs[0]};
      c.outputs = {copy};
      nodes.push_back(std::move(c));
    }
  }
  g.nodes = std::move(nodes);
  g.relink();
  return static_cast<int>(copy_of.size());
}

// torch.nn's upsampling modules (Upsample, UpsamplingNearest2d, UpsamplingBilinear2d) run
// one aten upsample kernel, which autocast runs in float32 and whose backward reads
// nothing; torch.export decomposes the linear modes into index gathers and a lerp (Sub,
// Mul, Add). The nodes of such a module are marked for fuse.cc, which folds them back.
void mark_upsample_module(Node& node, std::string_view ns) {
  const std::string_view scope = own_module_scope(ns);
  if (scope.find(": torch.nn.modules.upsampling.") == std::string_view::npos) return;
  Attribute a;
  a.i = 1;
  node.attrs["upsample_module"] = std::move(a);
}

}  // namespace memest
