// The exporter's merges of equal initializers and equal calls, undone
// (merged_initializers.h).
#include "frontends/merged_initializers.h"

#include <algorithm>
#include <map>
#include <unordered_set>

namespace memest {

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

// A BatchNormalization whose scale and bias are one initializer, where the scale is a
// folded parameter expression merged with the zeros of a None bias: timm's
// ScaledStdConv2d standardizes its weight by F.batch_norm(w, None, None,
// weight=(gain * scale).view(-1)), and NormFreeBlock starts its conv3's gain at zero, so
// that scale and the zero bias are one merged [C] initializer, taken for a buffer
// (nf_resnet50 read 36,096 bytes of parameters short). The module's parameter that no FX
// call takes and no tensor holds is that initializer (one per module instance: the
// merge was split per module before). Returns how many were claimed.
int claim_merged_batch_norm_scales(Graph& g, const ParameterReads& reads,
                                   std::map<std::string_view, std::vector<std::string_view>> untaken) {
  int claimed = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (n.dead || n.op != "BatchNormalization" || n.inputs.size() < 3 || n.inputs[1] < 0 || n.inputs[1] != n.inputs[2]) {
      continue;
    }
    Tensor& t = g.tensors[n.inputs[1]];
    auto it = untaken.find(n.module);
    if (t.producer >= 0 || t.kind != TensorKind::Buffer || it == untaken.end() || it->second.empty() ||
        !reads.of(static_cast<int>(k)).empty()) {
      continue;
    }
    t.kind = TensorKind::Parameter;
    it->second.erase(it->second.begin());
    ++claimed;
  }
  return claimed;
}

}  // namespace

namespace {

// The readers of one parameter among an initializer's readers: the name its copy takes
// ("" for the name the module's own parameter would have), its module, its nodes.
struct ReaderGroup {
  std::string name;
  std::string module;
  std::vector<int> nodes;
};

// Readers by module instance, in graph order (files without FX metadata).
std::vector<ReaderGroup> groups_by_module(const Graph& g, int id) {
  std::vector<ReaderGroup> groups;
  std::map<std::string, size_t> at;
  for (int c : g.tensors[id].consumers) {
    const Node& n = g.nodes[c];
    if (n.dead) continue;
    auto [it, fresh] = at.try_emplace(n.module, groups.size());
    if (fresh) groups.push_back({"", n.module, {}});
    std::vector<int>& nodes = groups[it->second].nodes;
    if (nodes.empty() || nodes.back() != c) nodes.push_back(c);
  }
  return groups;
}

// Readers by the parameter their FX calls take. A reader's candidates are the parameters
// its call takes that have no tensor of their own name (merged into another, or folded),
// or the initializer's own; readers whose candidates meet read one parameter (a module
// called from two places, CoaT's shared cpe1, or a tied weight that embedding and
// lm_head both take), readers whose candidates are disjoint read different parameters
// whose equal contents the exporter merged. A reader whose call names no candidate
// (a merged scalar's, a statistic's) joins the first group. Empty when no reader's call
// names one: then the FX metadata says nothing about this initializer.
std::vector<ReaderGroup> groups_by_parameter(const Graph& g, int id, const ParameterReads& reads,
                                             const std::map<std::string_view, std::vector<std::string_view>>& untaken,
                                             std::map<std::string_view, std::vector<std::string_view>>& folded_values) {
  const Tensor& t = g.tensors[id];
  std::vector<std::vector<std::string_view>> sets;  // per group: the candidates its readers take
  std::vector<ReaderGroup> groups;
  std::vector<int> unnamed;
  std::unordered_set<std::string_view> inferred;  // parameters read through a folded value
  for (int c : t.consumers) {
    const Node& n = g.nodes[c];
    if (n.dead) continue;
    std::vector<std::string_view> mine;
    for (std::string_view p : reads.of(c)) {
      if (p == t.name || g.find_tensor(p) < 0) mine.push_back(p);
    }
    // A call that takes a value the exporter folded (`mul(%x, %view_3)`, poolformerv2's
    // res_scale, its scale viewed) names no parameter; its module's parameter that no call
    // takes and no tensor holds is the one it reads, if what it reads is a weight at all
    // (not the zeros a None bias becomes, which ScaledStdConv2d's modules share).
    // A module with several such parameters (EvoNorm's weight and v, both ones, read as
    // `view` and `view_2`) has its reads told apart by the folded value each call takes:
    // the initializer's own name, or one no tensor holds and no node computes. Distinct
    // values take the module's untaken parameters in turn (`folded_values`, kept across
    // initializers), never more of them than it has.
    if (mine.empty() && t.kind == TensorKind::Parameter && static_cast<size_t>(c) < reads.values_by_node.size()) {
      const auto it = untaken.find(n.module);
      std::string_view value;
      for (std::string_view v : reads.values_by_node[static_cast<size_t>(c)]) {
        const bool computed = std::find(reads.name_by_node.begin(), reads.name_by_node.end(), v) != reads.name_by_node.end();
        if (v == t.name || (g.find_tensor(v) < 0 && !computed)) {
          value = v;
          break;
        }
      }
      if (it != untaken.end() && !value.empty()) {
        std::vector<std::string_view>& seen = folded_values[n.module];
        auto at = std::find(seen.begin(), seen.end(), value);
        if (at == seen.end() && seen.size() < it->second.size()) {
          seen.push_back(value);
          at = seen.end() - 1;
        }
        if (at != seen.end()) {
          mine.push_back(it->second[static_cast<size_t>(at - seen.begin())]);
          inferred.insert(mine.back());
        }
      }
    }
    if (mine.empty()) {
      unnamed.push_back(c);
      continue;
    }
    size_t into = groups.size();
    for (size_t k = 0; k < groups.size() && into == groups.size(); ++k) {
      for (std::string_view p : mine) {
        if (std::find(sets[k].begin(), sets[k].end(), p) != sets[k].end()) into = k;
      }
    }
    if (into == groups.size()) {
      groups.push_back({"", n.module, {}});
      sets.emplace_back();
    }
    sets[into].insert(sets[into].end(), mine.begin(), mine.end());
    if (groups[into].nodes.empty() || groups[into].nodes.back() != c) groups[into].nodes.push_back(c);
  }
  if (groups.empty()) return groups;
  // The group that takes the initializer's own name keeps it; the others are named after
  // the parameter of theirs whose last component the initializer's has (the LayerNorm
  // weight `norm.weight` of `norm.weight`, `norm.bias` merged into one initializer).
  const size_t dot = t.name.rfind('.');
  const std::string_view leaf = dot == std::string::npos ? std::string_view() : std::string_view(t.name).substr(dot);
  for (size_t k = 0; k < groups.size(); ++k) {
    if (std::find(sets[k].begin(), sets[k].end(), t.name) != sets[k].end()) {
      std::swap(groups[k], groups[0]);
      std::swap(sets[k], sets[0]);
    }
  }
  for (size_t k = 1; k < groups.size(); ++k) {
    for (std::string_view p : sets[k]) {
      if (!leaf.empty() && p.ends_with(leaf)) {
        groups[k].name = std::string(p);
        break;
      }
    }
    // An initializer of the exporter's name (`view`) that a group reads as one parameter
    // through folded values is it. (A parameter a call takes by name need not be what
    // the call reads here: swinv2's qkv bias, cat(q_bias, k_bias, v_bias) folded, is read
    // by the linear that takes qkv.weight.)
    const bool one = std::all_of(sets[k].begin(), sets[k].end(), [&](std::string_view p) { return p == sets[k].front(); });
    if (groups[k].name.empty() && !sets[k].empty() && one && inferred.count(sets[k].front())) {
      groups[k].name = std::string(sets[k].front());
    }
  }
  for (int c : unnamed) groups[0].nodes.push_back(c);
  return groups;
}

}  // namespace

namespace {

// A copy of a table the exporter computed from a parameter (Graph::derived_parameters) is
// such a table too: EVA02's q/k/v bias with its zero k part, equal in every block of a
// fresh model, merged into one `cat_1` and split per block, was named as derived for one
// block and read 9,216 bytes over torch's count for the other eleven.
void share_derived(Graph& g, int orig, int copy) {
  const std::vector<int>& d = g.derived_parameters;
  if (std::find(d.begin(), d.end(), orig) != d.end()) g.derived_parameters.push_back(copy);
}

// A node that reads one merged initializer at several inputs, where its FX call takes as
// many parameters with no tensor of their own (or the initializer's), reads that many
// parameters: levit's BatchNorms start with weight and bias both zero, so one initializer
// is their scale and their bias. The inputs take the call's parameters in order (aten's
// batch_norm, layer_norm, conv and linear list weight before bias, as ONNX does); each
// input but the one of the initializer's own name reads a copy named after its parameter.
// Returns whether any input was rewired.
bool split_repeated_reads(Graph& g, const ParameterReads& reads) {
  bool rewired = false;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (g.nodes[k].dead) continue;
    const std::vector<int> inputs = g.nodes[k].inputs;  // a copy: new_tensor() may move the tensors
    for (size_t i = 0; i < inputs.size(); ++i) {
      const int id = inputs[i];
      if (id < 0 || std::find(inputs.begin(), inputs.begin() + static_cast<std::ptrdiff_t>(i), id) !=
                        inputs.begin() + static_cast<std::ptrdiff_t>(i)) {
        continue;
      }
      std::vector<size_t> at;
      for (size_t j = i; j < inputs.size(); ++j) {
        if (inputs[j] == id) at.push_back(j);
      }
      const Tensor& t = g.tensors[id];
      if (at.size() < 2 || t.producer >= 0 || !is_floating(t.dtype) || !t.shape ||
          (t.kind != TensorKind::Parameter && t.kind != TensorKind::Buffer)) {
        continue;
      }
      std::vector<std::string> params;
      for (std::string_view p : reads.of(static_cast<int>(k))) {
        if (p == t.name || g.find_tensor(p) < 0) params.emplace_back(p);
      }
      if (params.size() != at.size()) continue;
      for (size_t j = 0; j < at.size(); ++j) {
        if (params[j] == g.tensors[id].name) continue;
        const int copy = g.new_tensor(params[j]);  // may move the tensors
        share_derived(g, id, copy);
        Tensor& c = g.tensors[copy];
        const Tensor& orig = g.tensors[id];
        c.dtype = orig.dtype;
        c.kind = TensorKind::Parameter;
        c.shape = orig.shape;
        c.declared = orig.declared;
        c.fvalue = orig.fvalue;
        c.module = module_from_param_name(params[j]);
        g.nodes[k].inputs[at[j]] = copy;
        rewired = true;
      }
    }
  }
  return rewired;
}

// The parameters one FX call takes that no tensor holds (or the initializer's own), in
// the call's order, the first given as the initializer's name: its first reader keeps the
// initializer and each later reader takes the next. A decomposed group_norm(%x, 32,
// %p_weight, %p_bias) reads a zero-initialised weight (timm's zero_init_last) and its
// zero bias, merged into one folded [C, 1, 1] value, in its Mul and then its Add
// (resnet50_gn read 8,960 parameters short).
std::vector<std::string> call_parameters(const Graph& g, size_t id, const ParameterReads& reads,
                                         const std::vector<int>& nodes) {
  std::vector<std::string> params;
  for (std::string_view p : reads.of(nodes.front())) {
    const bool stands = p == g.tensors[id].name || g.find_tensor(p) < 0;
    if (stands && std::find(params.begin(), params.end(), p) == params.end()) params.emplace_back(p);
  }
  if (params.size() != nodes.size()) return {};
  for (int n : nodes) {
    if (!std::ranges::equal(reads.of(n), reads.of(nodes.front()))) return {};
  }
  if (std::find(params.begin(), params.end(), g.tensors[id].name) == params.end()) params.front() = g.tensors[id].name;
  return params;
}

// The same across the nodes of one FX call: GRN's addcmul(%view, %view_1, %x), written
// as Mul(view_1, x) and Add(view, ...), reads one initializer `view` in both, its weight
// and bias being both zero (convnextv2). Where the call takes as many values that are
// the initializer's name or that no tensor holds and no node computes as it has nodes
// reading the initializer, each node after the first reads a copy named after the next;
// failing such values, the same with the parameters the call takes (call_parameters).
bool split_call_reads(Graph& g, const ParameterReads& reads) {
  std::unordered_set<std::string_view> computed(reads.name_by_node.begin(), reads.name_by_node.end());
  bool rewired = false;
  const size_t n_tensors = g.tensors.size();
  for (size_t id = 0; id < n_tensors; ++id) {
    {
      const Tensor& t = g.tensors[id];
      if (t.producer >= 0 || !is_floating(t.dtype) || !t.shape || t.consumers.size() < 2 ||
          (t.kind != TensorKind::Parameter && t.kind != TensorKind::Buffer)) {
        continue;
      }
    }
    // Readers by FX call, in graph order.
    std::map<std::string_view, std::vector<int>> by_call;
    for (int c : g.tensors[id].consumers) {
      if (g.nodes[c].dead || static_cast<size_t>(c) >= reads.name_by_node.size()) continue;
      const std::string_view call = reads.name_by_node[static_cast<size_t>(c)];
      if (call.empty()) continue;
      std::vector<int>& nodes = by_call[call];
      if (std::find(nodes.begin(), nodes.end(), c) == nodes.end()) nodes.push_back(c);
    }
    for (auto& [call, nodes] : by_call) {
      if (nodes.size() < 2) continue;
      std::vector<std::string> names;
      for (std::string_view v : reads.values_by_node[static_cast<size_t>(nodes.front())]) {
        const bool stands = v == g.tensors[id].name || (g.find_tensor(v) < 0 && !computed.count(v));
        if (stands && std::find(names.begin(), names.end(), v) == names.end()) names.emplace_back(v);
      }
      if (names.size() < nodes.size()) names = call_parameters(g, id, reads, nodes);
      if (names.size() < nodes.size()) continue;
      std::erase(names, g.tensors[id].name);
      for (size_t j = 1; j < nodes.size() && j - 1 < names.size(); ++j) {
        const int copy = g.new_tensor(names[j - 1]);  // may move the tensors
        share_derived(g, static_cast<int>(id), copy);
        Tensor& c = g.tensors[copy];
        const Tensor& orig = g.tensors[id];
        c.dtype = orig.dtype;
        c.kind = orig.kind;
        c.shape = orig.shape;
        c.declared = orig.declared;
        c.fvalue = orig.fvalue;
        c.module = orig.module;
        for (int& in : g.nodes[nodes[j]].inputs) {
          if (in == static_cast<int>(id)) in = copy;
        }
        rewired = true;
      }
    }
  }
  return rewired;
}

}  // namespace

void split_deduplicated_initializers(Graph& g, const ParameterReads& reads,
                                     const std::vector<std::string_view>& parameters) {
  constexpr int64_t kMaxDeduplicated = 1 << 16;
  // The listed parameters no FX call takes, by module.
  std::unordered_set<std::string_view> taken;
  for (const auto& ps : reads.by_node) taken.insert(ps.begin(), ps.end());
  std::map<std::string_view, std::vector<std::string_view>> untaken, folded_values;
  for (std::string_view p : parameters) {
    if (!taken.count(p) && g.find_tensor(p) < 0) untaken[param_module(p)].push_back(p);
  }
  if (!reads.empty() && split_repeated_reads(g, reads)) g.relink();
  if (!reads.empty() && split_call_reads(g, reads)) g.relink();
  const size_t n_tensors = g.tensors.size();
  for (size_t id = 0; id < n_tensors; ++id) {
    int64_t numel = 0;
    {
      const Tensor& t = g.tensors[id];
      if (t.producer >= 0 || (t.kind != TensorKind::Parameter && t.kind != TensorKind::Buffer)) continue;
      if (!is_floating(t.dtype) || t.consumers.size() < 2) continue;
      // A one-element initializer is a literal many calls share unless the FX calls name
      // it as their parameters (StarReLU's scale and bias, merged across blocks).
      numel = constant_numel(t);
      if (numel < 1 || (numel == 1 && reads.empty())) continue;
    }
    // A BatchNorm's running statistics are one module's buffers, never merged weights; its
    // scale and bias are weights like any other (mobileone's identity BatchNorms, all ones
    // and zeros in a fresh model, read one merged pair).
    bool affine_only = true, statistic = false;
    for (int c : g.tensors[id].consumers) {
      const Node& n = g.nodes[c];
      if (n.dead) continue;
      if (n.op == "BatchNormalization") {
        for (size_t i = 3; i < n.inputs.size(); ++i) statistic = statistic || n.inputs[i] == static_cast<int>(id);
      }
      affine_only = affine_only && is_affine_use(n.op);
    }
    if (statistic) continue;
    // The FX metadata tells merged parameters from shared ones at any size; without it,
    // one per module instance, up to a size no tied weight has (tied embeddings are larger).
    std::vector<ReaderGroup> groups;
    bool by_parameter = false;
    if (!reads.empty()) {
      groups = groups_by_parameter(g, static_cast<int>(id), reads, untaken, folded_values);
      by_parameter = !groups.empty();
    }
    if (!by_parameter) {
      if (numel > kMaxDeduplicated || numel == 1) continue;
      groups = groups_by_module(g, static_cast<int>(id));
    }
    if (groups.size() < 2) continue;
    // A folded initializer the signature does not list (addcmul's alpha, as "tmp") is
    // still the modules' weight when each module scales or shifts by it; one the FX
    // calls name as their parameters is one.
    const TensorKind kind = g.tensors[id].kind == TensorKind::Buffer && (affine_only || by_parameter)
                                ? TensorKind::Parameter
                                : g.tensors[id].kind;
    g.tensors[id].kind = kind;
    g.tensors[id].module = groups.front().module;
    // Each copy takes the name the module's own parameter has (`encoder.ln.weight` for the
    // `encoder.layers.encoder_layer_0.ln_1.weight` all LayerNorms of a fresh model share),
    // so --train/--freeze patterns match it as they match model.named_parameters().
    const std::string merged = g.tensors[id].name;  // a copy: new_tensor() may move the tensors
    const size_t dot = merged.rfind('.');
    const std::string leaf = dot == std::string::npos ? "" : merged.substr(dot + 1);
    for (size_t k = 1; k < groups.size(); ++k) {
      const ReaderGroup& r = groups[k];
      std::string own = r.name;
      if (own.empty() && !r.module.empty() && !leaf.empty()) own = r.module + "." + leaf;
      const int copy = g.new_tensor(!own.empty() && g.find_tensor(own) < 0 ? own : merged + "#" + r.module);
      share_derived(g, static_cast<int>(id), copy);
      Tensor& t = g.tensors[copy];
      const Tensor& orig = g.tensors[id];
      t.dtype = orig.dtype;
      t.kind = kind;
      t.shape = orig.shape;
      t.declared = orig.declared;
      t.fvalue = orig.fvalue;
      t.module = r.module;
      for (int c : r.nodes) {
        for (int& in : g.nodes[c].inputs) {
          if (in == static_cast<int>(id)) in = copy;
        }
      }
    }
  }
  g.relink();
  if (!reads.empty()) claim_merged_batch_norm_scales(g, reads, untaken);
}

std::string_view param_leaf(std::string_view name) {
  name = name.substr(0, name.find('#'));
  const size_t dot = name.rfind('.');
  return dot == std::string_view::npos ? name : name.substr(dot + 1);
}

std::string_view param_module(std::string_view name) {
  const size_t dot = name.rfind('.');
  return dot == std::string_view::npos ? std::string_view() : name.substr(0, dot);
}

namespace {

// Whether module paths `a` and `b` have as many components and differ in exactly one.
bool differ_in_one(std::string_view a, std::string_view b) {
  int differ = 0;
  while (true) {
    const size_t da = a.find('.'), db = b.find('.');
    if (a.substr(0, da) != b.substr(0, db)) ++differ;
    if ((da == std::string_view::npos) != (db == std::string_view::npos)) return false;
    if (da == std::string_view::npos) break;
    a.remove_prefix(da + 1);
    b.remove_prefix(db + 1);
  }
  return differ == 1;
}

}  // namespace

int restore_merged_modules(Graph& g, const std::vector<std::string_view>& parameters,
                           const std::vector<std::string_view>& buffers, const ParameterReads& reads) {
  if (reads.empty() || reads.name_by_node.empty()) return 0;
  constexpr int kMaxWalk = 4;
  // The modules no node runs whose parameters no tensor holds and no call takes, with
  // those parameters' names.
  std::unordered_set<std::string_view> taken;
  for (const auto& ps : reads.by_node) taken.insert(ps.begin(), ps.end());
  std::map<std::string, std::vector<std::string_view>> vanished;
  for (std::string_view p : parameters) {
    if (g.find_tensor(p) >= 0 || taken.count(p)) continue;
    const std::string_view m = param_module(p);
    if (!m.empty()) vanished[std::string(m)].push_back(p);
  }
  if (vanished.empty()) return 0;
  for (const Node& n : g.nodes) {
    if (n.dead || n.module.empty()) continue;
    // A module with nodes of its own (or below) is not gone: its parameters went elsewhere.
    for (auto it = vanished.begin(); it != vanished.end();) {
      const std::string& m = it->first;
      const bool inside = n.module == m || (n.module.size() > m.size() && n.module.starts_with(m) && n.module[m.size()] == '.');
      it = inside ? vanished.erase(it) : std::next(it);
    }
  }
  if (vanished.empty()) return 0;
  std::unordered_set<std::string_view> computed(reads.name_by_node.begin(), reads.name_by_node.end());
  const std::unordered_set<std::string_view> listed_buffers(buffers.begin(), buffers.end());
  std::map<std::string, std::vector<int>> restored;  // module -> the outputs of its walk, in order
  int count = 0;
  const size_t n_nodes = g.nodes.size();
  for (size_t k = 0; k < n_nodes; ++k) {
    if (g.nodes[k].dead || k >= reads.values_by_node.size()) continue;
    // The values this call takes that no node computes, and the inputs it reads from
    // other calls that it does not name: one of each, the one read in place of the other.
    std::vector<std::string_view> lost;
    for (std::string_view v : reads.values_by_node[k]) {
      if (!computed.count(v) && g.find_tensor(v) < 0) lost.push_back(v);
    }
    if (lost.size() != 1) continue;
    const std::string_view own = reads.name_by_node[k];
    int stand_in = -1, at = -1, others = 0;
    for (size_t i = 0; i < g.nodes[k].inputs.size(); ++i) {
      const int in = g.nodes[k].inputs[i];
      if (in < 0 || g.tensors[in].producer < 0) continue;
      const int p = g.tensors[in].producer;
      if (static_cast<size_t>(p) < reads.name_by_node.size() && reads.name_by_node[p] == own) continue;
      const auto& vals = reads.values_by_node[k];
      if (std::find(vals.begin(), vals.end(), g.tensors[in].name) != vals.end()) continue;
      stand_in = in;
      at = static_cast<int>(i);
      ++others;
    }
    if (others != 1) continue;
    // A merged value has a reader of its own that names it: the first call's (GPT-NeoX's
    // attention reads `layer_norm`, its MLP reads it for `layer_norm_1`). A value only
    // this node reads was renamed in another way (a BatchNorm folded into the Conv that
    // computes its input leaves the Conv with the BatchNorm's call).
    bool named = false;
    for (int c : g.tensors[stand_in].consumers) {
      if (c == static_cast<int>(k) || static_cast<size_t>(c) >= reads.values_by_node.size()) continue;
      const auto& vals = reads.values_by_node[static_cast<size_t>(c)];
      named = named || std::find(vals.begin(), vals.end(), g.tensors[stand_in].name) != vals.end();
    }
    if (!named) continue;
    // Back from the stand-in to the node that reads the parameters of the twin module T.
    std::vector<int> walk;  // nodes, last first
    int twin = -1;
    for (int t = stand_in; walk.size() < kMaxWalk;) {
      const int p = g.tensors[t].producer;
      if (p < 0) break;
      walk.push_back(p);
      const Node& n = g.nodes[p];
      bool params = false;
      int activation = -1, activations = 0;
      for (int in : n.inputs) {
        if (in < 0) continue;
        if (g.tensors[in].kind == TensorKind::Parameter) params = true;
        if (g.tensors[in].producer >= 0 || g.tensors[in].kind == TensorKind::Input) {
          activation = in;
          ++activations;
        }
      }
      if (params) {
        twin = p;
        break;
      }
      if (activations != 1 || g.tensors[activation].producer < 0) break;
      t = activation;
    }
    if (twin < 0) continue;
    // T's parameters must be its own: a node that reads another module's (T5's decoder
    // embedding reads model.shared.weight, tied) runs a weight several names share, and
    // torch counts it once.
    const std::string twin_module = g.nodes[twin].module;
    std::vector<std::string_view> leaves;
    bool owned = true;
    for (int in : g.nodes[twin].inputs) {
      if (in < 0 || g.tensors[in].kind != TensorKind::Parameter) continue;
      const std::string_view name = g.tensors[in].name;
      const std::string_view leaf = param_leaf(name);
      const size_t hash = name.find('#');
      const bool mine = hash != std::string_view::npos
                            ? name.substr(hash + 1) == twin_module
                            : param_module(name) == twin_module && leaf == name.substr(name.rfind('.') + 1);
      owned = owned && mine;
      leaves.push_back(leaf);
    }
    if (!owned) continue;
    std::sort(leaves.begin(), leaves.end());
    const std::string* merged = nullptr;
    int matches = 0;
    for (const auto& [m, ps] : vanished) {
      if (!differ_in_one(m, twin_module) || ps.size() != leaves.size()) continue;
      std::vector<std::string_view> mine;
      for (std::string_view p : ps) mine.push_back(param_leaf(p));
      std::sort(mine.begin(), mine.end());
      if (mine != leaves) continue;
      merged = &m;
      ++matches;
    }
    if (matches != 1) continue;
    const std::string m = *merged;
    auto done = restored.find(m);
    if (done == restored.end()) {
      // The walk again, first node first, as M's: M's parameters and running statistics
      // where T's are read, the rest as T reads them.
      std::vector<int> outs;
      int prev_out = -1, prev_in = -1;
      for (auto it = walk.rbegin(); it != walk.rend(); ++it) {
        Node copy = g.nodes[*it];
        copy.name = copy.name + "#" + m;
        for (int& in : copy.inputs) {
          if (in < 0) continue;
          if (in == prev_in && prev_out >= 0) {
            in = prev_out;
            continue;
          }
          const Tensor& t = g.tensors[in];
          if (t.producer >= 0 || (t.kind != TensorKind::Parameter && t.kind != TensorKind::Buffer)) continue;
          const std::string name = m + "." + std::string(param_leaf(t.name));
          const bool param = t.kind == TensorKind::Parameter;
          if (!param && !listed_buffers.count(name)) continue;
          const int id = g.new_tensor(name);  // may move the tensors
          Tensor& c = g.tensors[id];
          const Tensor& orig = g.tensors[in];
          c.kind = orig.kind;
          c.dtype = orig.dtype;
          c.shape = orig.shape;
          c.declared = orig.declared;
          c.module = m;
          in = id;
        }
        for (int& out : copy.outputs) {
          if (out < 0) continue;
          const int id = g.new_tensor(g.tensors[out].name + "#" + m);
          g.tensors[id].dtype = g.tensors[out].dtype;
          if (out == g.nodes[*it].outputs[0]) {
            prev_in = out;
            prev_out = id;
          }
          out = id;
        }
        // T's nodes become M's ("a.bn.act" of "a.bn" becomes "b.bn.act"), and the copy is
        // no part of the original's aten call.
        if (copy.module.starts_with(twin_module)) copy.module = m + copy.module.substr(twin_module.size());
        copy.call = -1;
        g.nodes.push_back(std::move(copy));
        outs.push_back(prev_out);
      }
      done = restored.emplace(m, std::move(outs)).first;
      ++count;
    }
    g.nodes[k].inputs[static_cast<size_t>(at)] = done->second.back();
  }
  if (count > 0) g.relink();
  return count;
}

}  // namespace memest
