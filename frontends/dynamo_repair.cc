// Repairs of what torch's dynamo ONNX exporter drops (dynamo_repair.h).
#include "frontends/dynamo_repair.h"

#include "frontends/fx_node.h"

#include "frontends/merged_initializers.h"

#include <algorithm>
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

namespace {

// The op an FX node's name was made from: its counter dropped ("permute_3" -> "permute",
// "_to_copy_2" -> "_to_copy", "index" stays).
std::string_view fx_call_op(std::string_view name) {
  while (!name.empty() && name.back() >= '0' && name.back() <= '9') name.remove_suffix(1);
  if (name.ends_with('_')) name.remove_suffix(1);
  return name;
}

// Whether `name` is that of an FX node of an op that only lays a tensor out or casts it
// ("permute_3", "t", "_to_copy_2"): an initializer of that name is the value of such a
// call the exporter computed once (falcon's `matmul(%layer_norm, %permute)`, where
// `permute` was its dense.weight transposed), so it is whatever it was computed from.
// Other FX names ("index_5", "clone_2", "expand_2") are values computed from parameters
// and buffers, no longer either.
bool names_layout_call(std::string_view name) {
  static constexpr std::string_view kLayout[] = {"permute", "t", "transpose", "view", "_unsafe_view",
                                                 "reshape", "_to_copy", "unsqueeze", "squeeze"};
  const std::string_view op = fx_call_op(name);
  return std::find(std::begin(kLayout), std::end(kLayout), op) != std::end(kLayout);
}

// Whether an initializer's name is an indexing call's FX name ("index", "index_5"): a
// table the exporter computed by gathering a parameter, larger than the parameter.
bool names_index_call(std::string_view name) { return fx_call_op(name) == "index"; }

}  // namespace

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

namespace {

// What the exporter's optimizer says it folded into each initializer (its metadata's
// folded_from, ParameterReads::folded_from), read against the signature's lists.
class FoldedNotes {
 public:
  FoldedNotes(const std::unordered_map<int, std::vector<std::string_view>>& from,
              const std::vector<std::string_view>& parameters, const std::vector<std::string_view>& buffers)
      : from_(from), parameters_(parameters.begin(), parameters.end()), buffers_(buffers.begin(), buffers.end()) {}

  // Whether tensor t is a parameter by its notes: folded from a listed parameter, yes
  // (timm's mixed RoPE: `rope.freqs` selected and unsqueezed, read by a top-level matmul,
  // as unsqueeze_1); from listed buffers and constants alone, no (`rope.t_x`); nullopt
  // where there are no notes or only the exporter's own values.
  std::optional<bool> source(int t) const {
    const auto* names = of(t);
    if (!names) return std::nullopt;
    if (any(*names, parameters_)) return true;
    if (any(*names, buffers_)) return false;
    return std::nullopt;
  }

  // Whether a parameter was folded into t with a buffer or through an indexing call: a
  // table gathered or computed from the parameter by indices or a lookup, larger than it
  // (LeViT's and EfficientViT's attention biases by attention_bias_idxs, MaxViT's relative
  // position table by height_lookup). A parameter merely selected or reshaped (the mixed
  // RoPE's freqs) keeps its size.
  bool table(int t) const {
    const auto* names = of(t);
    if (!names || !any(*names, parameters_)) return false;
    return any(*names, buffers_) || std::any_of(names->begin(), names->end(), names_index_call);
  }

 private:
  const std::vector<std::string_view>* of(int t) const {
    const auto it = from_.find(t);
    return it == from_.end() ? nullptr : &it->second;
  }
  static bool any(const std::vector<std::string_view>& names, const std::unordered_set<std::string_view>& set) {
    return std::any_of(names.begin(), names.end(), [&](std::string_view n) { return set.count(n) > 0; });
  }

  const std::unordered_map<int, std::vector<std::string_view>>& from_;
  std::unordered_set<std::string_view> parameters_, buffers_;
};

// One warning for the tables in Graph::derived_parameters, naming the first three.
void warn_derived_parameters(Graph& g) {
  const auto& ids = g.derived_parameters;
  if (ids.empty()) return;
  std::string names;
  for (size_t k = 0; k < ids.size() && k < 3; ++k) names += (k ? ", " : "") + g.tensors[ids[k]].name;
  if (ids.size() > 3) names += ", ...";
  g.warn(std::to_string(ids.size()) + (ids.size() == 1 ? " table" : " tables") +
         " the exporter computed from a parameter with a buffer or indices (" + names +
         ") count as parameters: the parameter bytes are over torch's by an amount the file does not hold "
         "(the tables are larger than the parameters they come from: LeViT's attention biases, Swin's and "
         "MaxViT's relative position tables, EVA's q/k/v bias with its zero k part); the legacy exporter (torch.onnx.export(..., dynamo=False)) keeps "
         "the parameters themselves");
}

}  // namespace

// The exporter also folds weights' transposes into initializers of its own names
// ("val_1188": lm_head.weight transposed), which are parameters all the same. An unlisted
// initializer is taken for a buffer when it is small, or when no module that reads it
// lists a parameter without an initializer of its name (so no weight of that module
// folded: a LoRA adapter's 8 x 512 lora_A does). A listed buffer or constant is a
// buffer whatever its size or reader (BART's final_logits_bias, read by the Add after
// lm_head, whose tied weight folded).
// With the FX metadata, a reader's own call can say it: the MatMul of `linear(%x,
// %p_fc_weight, ...)` reading val_14 reads fc.weight, whatever the modules. An
// initializer named after a layout call ("permute", "squeeze_2": names_layout_call) is
// a weight only where a folded weight no FX call takes (so only such calls read it)
// belongs to its reader's module: falcon's `permute` is, mpt's alibi `squeeze` in an
// attention whose weights the calls take is not. A table the exporter computed from a
// parameter (mvitv2's and swin's `index_N`, levit's attention biases gathered by a
// buffer of indices) keeps the module rule and stays a parameter there: its own
// parameter is in the file in no form, so its size cannot be known (parameter bytes
// read over), but torch sends gradients through the computation, and as a buffer the
// readers' saved inputs went uncounted (mvitv2_small's peak read 5.1% under). Such a
// table is listed in Graph::derived_parameters, and a warning says the parameter bytes
// are over by an amount the file does not hold. Where the exporter's optimizer says
// what it folded into an initializer (ParameterReads::folded_from), that decides before
// any of these rules (blind27's st_vit_small_patch16_rope_mixed_ape_224: its RoPE
// frequencies, a parameter read through `unsqueeze_1` at the top level, were taken for a
// buffer, so the products they enter kept nothing for backward: -7.9% -> 0.0%).
void keep_exported_parameters(Graph& g, const std::vector<std::string_view>& parameters,
                              const std::vector<std::string_view>& buffers, const ParameterReads& reads) {
  constexpr int64_t kMaxFoldedBuffer = 4096;
  std::vector<bool> listed(g.tensors.size());
  std::vector<std::string_view> folded;  // listed weights with no initializer of their name
  for (std::string_view name : parameters) {
    const int id = g.find_tensor(name);
    if (id >= 0) {
      listed[id] = true;
    } else {
      folded.push_back(name);
    }
  }
  for (std::string_view name : buffers) {
    const int id = g.find_tensor(name);
    if (id >= 0 && !listed[id] && g.tensors[id].kind == TensorKind::Parameter) g.tensors[id].kind = TensorKind::Buffer;
  }
  // Whether a reader's module lists a folded weight; for a large initializer, whether a
  // reader's module or one below it (any, for a reader of no known module) lists any
  // folded parameter.
  // With the FX metadata, a reader at the top level (no module) of an initializer its
  // call does not take, named after no layout call, says nothing: dinov3's rotary angles
  // (`tile`, 256 x 64, computed from a buffer) are read by the model's own sin and cos.
  auto reads_folded = [&](const Tensor& ten, bool below, const std::vector<std::string_view>& candidates,
                          bool top = true) {
    for (int c : ten.consumers) {
      const std::string& m = g.nodes[c].module;
      if (m.empty() && !top) continue;
      for (std::string_view f : candidates) {
        if (f.size() <= m.size() || f.compare(0, m.size(), m) != 0 || (!m.empty() && f[m.size()] != '.')) continue;
        if (below || f.substr(m.size()) == ".weight") return true;
      }
    }
    return false;
  };
  // Whether a reader's FX call takes a folded parameter; the folded parameters no FX
  // call takes, which only calls the exporter computed once read (falcon's weights).
  const std::unordered_set<std::string_view> folded_set(folded.begin(), folded.end());
  std::unordered_set<std::string_view> taken;
  for (const auto& ps : reads.by_node) taken.insert(ps.begin(), ps.end());
  std::vector<std::string_view> untaken;
  for (std::string_view f : folded) {
    if (!taken.count(f)) untaken.push_back(f);
  }
  auto takes_folded = [&](const Tensor& ten) {
    for (int c : ten.consumers) {
      for (std::string_view p : reads.of(c)) {
        if (folded_set.count(p)) return true;
      }
    }
    return false;
  };
  // Whether a reader's FX call takes a buffer or constant with no tensor of its name:
  // the initializer is that buffer under the exporter's name (CTRL's pos_encoding, a
  // 512 x 256 table gathered by position, as val_127), whatever module reads it.
  auto takes_buffer = [&](const Tensor& ten) {
    for (int c : ten.consumers) {
      for (std::string_view b : reads.buffers_of(c)) {
        if (g.find_tensor(b) < 0) return true;
      }
    }
    return false;
  };
  // A call whose nodes read as many unlisted floating initializers as it takes folded
  // parameters reads those parameters, literal-sized or not: PReLU's one-element weight
  // (0.25 in every layer, merged, as val_32 [1, 1, 1]) read as a literal scalar (conv_tasnet
  // read 196 bytes under). A call that reads more (an rms_norm's eps besides its weight)
  // says nothing.
  if (!reads.name_by_node.empty()) {
    std::map<std::string_view, std::pair<std::vector<int>, std::vector<std::string_view>>> calls;
    for (size_t k = 0; k < g.nodes.size() && k < reads.name_by_node.size(); ++k) {
      const std::string_view call = reads.name_by_node[k];
      if (g.nodes[k].dead || call.empty()) continue;
      auto& [inits, params] = calls[call];
      for (int in : g.nodes[k].inputs) {
        if (in < 0 || in >= static_cast<int>(listed.size()) || listed[in]) continue;
        const Tensor& t = g.tensors[in];
        const bool init = t.producer < 0 && t.shape && is_floating(t.dtype) &&
                          (t.kind == TensorKind::Parameter || t.kind == TensorKind::Buffer || t.kind == TensorKind::Constant);
        if (init && std::find(inits.begin(), inits.end(), in) == inits.end()) inits.push_back(in);
      }
      for (std::string_view p : reads.of(static_cast<int>(k))) {
        if (folded_set.count(p) && std::find(params.begin(), params.end(), p) == params.end()) params.push_back(p);
      }
    }
    for (const auto& [call, ip] : calls) {
      if (ip.second.empty() || ip.first.size() != ip.second.size()) continue;
      for (int id : ip.first) {
        if (g.tensors[id].kind == TensorKind::Constant) g.tensors[id].kind = TensorKind::Parameter;
      }
    }
  }
  // A layout call's value that a folded parameter no FX call takes, of the reader's own
  // module, explains whatever its name (ScaledStdConv2d's `(gain * scale).view(-1)`, as
  // `view_1`, the scale of its weight's standardization): one initializer each.
  std::unordered_set<std::string_view> claimed;
  auto claims_untaken = [&](const Tensor& ten) {
    for (int c : ten.consumers) {
      const std::string& m = g.nodes[c].module;
      if (m.empty()) continue;
      for (std::string_view f : untaken) {
        if (f.size() <= m.size() + 1 || f.compare(0, m.size(), m) != 0 || f[m.size()] != '.') continue;
        if (f.find('.', m.size() + 1) != std::string_view::npos || !claimed.insert(f).second) continue;
        return true;
      }
    }
    return false;
  };
  const FoldedNotes notes(reads.folded_from, parameters, buffers);
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    Tensor& ten = g.tensors[t];
    if (ten.kind != TensorKind::Parameter || listed[t] || !ten.shape) continue;
    int64_t numel = 1;
    for (const auto& d : *ten.shape) numel = checked_mul(numel, d.as_const().value_or(1));
    const bool below = numel > kMaxFoldedBuffer;
    const bool layout = names_layout_call(ten.name);
    bool weight = false;
    if (const auto from = notes.source(static_cast<int>(t))) {
      weight = *from;
    } else if (reads.empty()) {
      weight = reads_folded(ten, below, folded);
    } else if (takes_folded(ten)) {
      weight = true;
    } else if (!takes_buffer(ten)) {
      weight = reads_folded(ten, below, layout ? untaken : folded, layout) || (layout && claims_untaken(ten));
    }
    if (!weight) ten.kind = TensorKind::Buffer;
    if (weight && (names_index_call(ten.name) || notes.table(static_cast<int>(t)))) {
      g.derived_parameters.push_back(static_cast<int>(t));
    }
  }
  warn_derived_parameters(g);
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

}  // namespace memest
