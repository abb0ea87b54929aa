// Which initializers of a dynamo export are parameters: the exporter's graph signature
// lists the parameters it kept by name, and its optimizer folds, merges and renames the
// rest; the readers' FX calls, modules and the optimizer's notes tell what each unlisted
// initializer was (keep_exported_parameters, declared in dynamo_repair.h).
#include "frontends/dynamo_repair.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_set>

#include "frontends/fx_node.h"

namespace memest {
namespace {

// Whether `name` is that of an FX node of an op that only lays a tensor out or casts it
// ("permute_3", "t", "_to_copy_2"): an initializer of that name is the value of such a
// call the exporter computed once (falcon's `matmul(%layer_norm, %permute)`, where
// `permute` was its dense.weight transposed), so it is whatever it was computed from.
// Other FX names ("index_5", "clone_2", "expand_2") are values computed from parameters
// and buffers, no longer either.
bool names_layout_call(std::string_view name) { return fx_layout_call(name); }

// Whether a name the optimizer's folded_from lists is a call of the traced program
// ("arange", "sub_63") rather than a value the exporter made itself ("val_58").
bool names_program_call(std::string_view name) { return !fx_exporter_value(name); }

// Whether an initializer's name is an indexing call's FX name ("index", "index_5"): a
// table the exporter computed by gathering a parameter, larger than the parameter.
bool names_index_call(std::string_view name) { return fx_call_op(name) == "index"; }

// What the exporter's optimizer says it folded into each initializer (its metadata's
// folded_from, ParameterReads::folded_from), read against the signature's lists.
class FoldedNotes {
 public:
  FoldedNotes(const std::unordered_map<int, std::vector<std::string_view>>& from,
              const std::vector<std::string_view>& parameters, const std::vector<std::string_view>& buffers)
      : from_(from), parameters_(parameters.begin(), parameters.end()), buffers_(buffers.begin(), buffers.end()) {}

  // Whether tensor t is a parameter by its notes: folded from a listed parameter, yes
  // (timm's mixed RoPE: `rope.freqs` selected and unsqueezed, read by a top-level matmul,
  // as unsqueeze_1); from listed buffers and constants alone, no (`rope.t_x`); through
  // calls of the program that read neither, no: the optimizer computed it from literals
  // (HF Swin-V2's shifted-window attention mask, `sub_63` [64, 49, 49], folded from
  // arange, slices and comparisons; as a parameter of the attention, whose weights folded,
  // it read 806,736 bytes over torch's count). Nullopt where there are no notes or only
  // the exporter's own values (`val_58`).
  std::optional<bool> source(int t) const {
    const auto* names = of(t);
    if (!names) return std::nullopt;
    if (any(*names, parameters_)) return true;
    if (any(*names, buffers_)) return false;
    if (std::any_of(names->begin(), names->end(), names_program_call)) return false;
    return std::nullopt;
  }

  // Whether a parameter was folded into t with a buffer or through an indexing call: a
  // table gathered or computed from the parameter by indices or a lookup, larger than it
  // (LeViT's and EfficientViT's attention biases by attention_bias_idxs, MaxViT's relative
  // position table by height_lookup). A parameter merely selected or reshaped (the mixed
  // RoPE's freqs) keeps its size.
  // How many distinct listed parameters the notes of tensor t name.
  size_t parameter_count(int t) const {
    const auto* names = of(t);
    if (!names) return 0;
    std::unordered_set<std::string_view> seen;
    for (std::string_view n : *names) {
      if (parameters_.count(n)) seen.insert(n);
    }
    return seen.size();
  }

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

// Whether an initializer read as a literal (one element, named after no module:
// classify_initializers' constants) is a parameter by the optimizer's notes: CLIP's
// `logits * self.logit_scale.exp()` folds the one-element parameter into `exp`, which
// read as a constant, 4 bytes under torch's count and no gradient for the scale
// (Apertus's xIELU alphas, through softplus, likewise). Only a value folded from one
// parameter is it: DiffLlama's lambda, exp(sum(q1 * k1)) - exp(sum(q2 * k2)) of four
// vectors, stays a literal, since one element makes no count right, and as a parameter
// the Mul reading it kept its other operand for the gradient, which put sh_diffllama's
// estimates 2-8 MiB further over the measurement.
bool folded_scalar_parameter(const Tensor& ten, const FoldedNotes& notes, int t) {
  return ten.kind == TensorKind::Constant && ten.producer < 0 && ten.shape && is_floating(ten.dtype) &&
         notes.source(t) == true && notes.parameter_count(t) == 1;
}

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

// The rules for one file's unlisted initializers (see keep_exported_parameters): which
// initializers the signature lists, the listed weights with no initializer of their name
// (folded by the exporter), and which of those no FX call takes.
class ExportedWeights {
 public:
  ExportedWeights(Graph& g, const std::vector<std::string_view>& parameters, const ParameterReads& reads)
      : g_(g), reads_(reads), listed_(g.tensors.size()) {
    for (std::string_view name : parameters) {
      const int id = g.find_tensor(name);
      if (id >= 0) {
        listed_[id] = true;
      } else {
        folded_.push_back(name);
      }
    }
    folded_set_.insert(folded_.begin(), folded_.end());
    std::unordered_set<std::string_view> taken;
    for (const auto& ps : reads.by_node) taken.insert(ps.begin(), ps.end());
    for (std::string_view f : folded_) {
      if (!taken.count(f)) untaken_.push_back(f);
    }
  }

  bool listed(int t) const { return listed_[t]; }

  // A call whose nodes read as many unlisted floating initializers as it takes folded
  // parameters reads those parameters, literal-sized or not: PReLU's one-element weight
  // (0.25 in every layer, merged, as val_32 [1, 1, 1]) read as a literal scalar (conv_tasnet
  // read 196 bytes under). A call that reads more (an rms_norm's eps besides its weight)
  // says nothing.
  void literal_weights() {
    std::map<std::string_view, std::pair<std::vector<int>, std::vector<std::string_view>>> calls;
    for (size_t k = 0; k < g_.nodes.size() && k < reads_.name_by_node.size(); ++k) {
      const std::string_view call = reads_.name_by_node[k];
      if (g_.nodes[k].dead || call.empty()) continue;
      auto& [inits, params] = calls[call];
      for (int in : g_.nodes[k].inputs) {
        if (in < 0 || in >= static_cast<int>(listed_.size()) || listed_[in]) continue;
        const Tensor& t = g_.tensors[in];
        const bool init = t.producer < 0 && t.shape && is_floating(t.dtype) &&
                          (t.kind == TensorKind::Parameter || t.kind == TensorKind::Buffer || t.kind == TensorKind::Constant);
        if (init && std::find(inits.begin(), inits.end(), in) == inits.end()) inits.push_back(in);
      }
      for (std::string_view p : reads_.of(static_cast<int>(k))) {
        if (folded_set_.count(p) && std::find(params.begin(), params.end(), p) == params.end()) params.push_back(p);
      }
    }
    for (const auto& [call, ip] : calls) {
      if (ip.second.empty() || ip.first.size() != ip.second.size()) continue;
      for (int id : ip.first) {
        if (g_.tensors[id].kind == TensorKind::Constant) g_.tensors[id].kind = TensorKind::Parameter;
      }
    }
  }

  // Whether the unlisted initializer ten is a weight, by the rules above, in order.
  bool weight(const Tensor& ten, std::optional<bool> noted) {
    constexpr int64_t kMaxFoldedBuffer = 4096;
    int64_t numel = 1;
    for (const auto& d : *ten.shape) numel = checked_mul(numel, d.as_const().value_or(1));
    const bool below = numel > kMaxFoldedBuffer;
    const bool layout = names_layout_call(ten.name);
    if (noted) return *noted;
    if (reads_.empty()) return reads_folded(ten, below, folded_);
    if (takes_folded(ten)) return true;
    if (takes_buffer(ten)) return false;
    return reads_folded(ten, below, layout ? untaken_ : folded_, layout) || (layout && claims_untaken(ten));
  }

 private:
  // Whether a reader's module lists a folded weight; for a large initializer, whether a
  // reader's module or one below it (any, for a reader of no known module) lists any
  // folded parameter. With the FX metadata, a reader at the top level (no module) of an
  // initializer its call does not take, named after no layout call, says nothing:
  // dinov3's rotary angles (`tile`, 256 x 64, computed from a buffer) are read by the
  // model's own sin and cos.
  bool reads_folded(const Tensor& ten, bool below, const std::vector<std::string_view>& candidates,
                    bool top = true) const {
    for (int c : ten.consumers) {
      const std::string& m = g_.nodes[c].module;
      if (m.empty() && !top) continue;
      for (std::string_view f : candidates) {
        if (f.size() <= m.size() || f.compare(0, m.size(), m) != 0 || (!m.empty() && f[m.size()] != '.')) continue;
        if (below || f.substr(m.size()) == ".weight") return true;
      }
    }
    return false;
  }

  // Whether a reader's FX call takes a folded parameter.
  bool takes_folded(const Tensor& ten) const {
    for (int c : ten.consumers) {
      for (std::string_view p : reads_.of(c)) {
        if (folded_set_.count(p)) return true;
      }
    }
    return false;
  }

  // Whether a reader's FX call takes a buffer or constant with no tensor of its name:
  // the initializer is that buffer under the exporter's name (CTRL's pos_encoding, a
  // 512 x 256 table gathered by position, as val_127), whatever module reads it.
  bool takes_buffer(const Tensor& ten) const {
    for (int c : ten.consumers) {
      for (std::string_view b : reads_.buffers_of(c)) {
        if (g_.find_tensor(b) < 0) return true;
      }
    }
    return false;
  }

  // A layout call's value that a folded parameter no FX call takes, of the reader's own
  // module, explains whatever its name (ScaledStdConv2d's `(gain * scale).view(-1)`, as
  // `view_1`, the scale of its weight's standardization): one initializer each.
  bool claims_untaken(const Tensor& ten) {
    for (int c : ten.consumers) {
      const std::string& m = g_.nodes[c].module;
      if (m.empty()) continue;
      for (std::string_view f : untaken_) {
        if (f.size() <= m.size() + 1 || f.compare(0, m.size(), m) != 0 || f[m.size()] != '.') continue;
        if (f.find('.', m.size() + 1) != std::string_view::npos || !claimed_.insert(f).second) continue;
        return true;
      }
    }
    return false;
  }

  Graph& g_;
  const ParameterReads& reads_;
  std::vector<bool> listed_;
  std::vector<std::string_view> folded_;   // listed weights with no initializer of their name
  std::vector<std::string_view> untaken_;  // those no FX call takes (only calls the exporter computed read them)
  std::unordered_set<std::string_view> folded_set_, claimed_;
};

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
  ExportedWeights rules(g, parameters, reads);
  for (std::string_view name : buffers) {
    const int id = g.find_tensor(name);
    if (id >= 0 && !rules.listed(id) && g.tensors[id].kind == TensorKind::Parameter) g.tensors[id].kind = TensorKind::Buffer;
  }
  if (!reads.name_by_node.empty()) rules.literal_weights();
  const FoldedNotes notes(reads.folded_from, parameters, buffers);
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    Tensor& ten = g.tensors[t];
    if (folded_scalar_parameter(ten, notes, static_cast<int>(t))) ten.kind = TensorKind::Parameter;
    if (ten.kind != TensorKind::Parameter || rules.listed(static_cast<int>(t)) || !ten.shape) continue;
    const bool weight = rules.weight(ten, notes.source(static_cast<int>(t)));
    if (!weight) ten.kind = TensorKind::Buffer;
    if (weight && (names_index_call(ten.name) || notes.table(static_cast<int>(t)))) {
      g.derived_parameters.push_back(static_cast<int>(t));
    }
  }
  warn_derived_parameters(g);
}

}  // namespace memest
