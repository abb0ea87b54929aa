// The analysis pipeline: dims -> shapes -> fusion -> loss -> program.
#include "estimator/analysis.h"

#include <chrono>
#include <set>

#include "estimator/allocator.h"
#include "estimator/error.h"
#include "estimator/branch_copies.h"
#include "estimator/explicit_pads.h"
#include "estimator/sequence_split.h"
#include "estimator/norm_casts.h"
#include "estimator/finetune.h"
#include "estimator/fuse.h"
#include "estimator/gradient_reach.h"
#include "estimator/loss.h"
#include "estimator/ops/registry.h"
#include "estimator/shapes.h"
#include "estimator/upcast_matmuls.h"

namespace memest {
namespace {

void replace_symbol(Graph& g, SymbolId s, const Expr& with) {
  for (auto& t : g.tensors) {
    if (t.shape) {
      Shape dims = *t.shape;  // interned shapes are immutable: change a copy
      for (auto& d : dims) d = d.replace(s, with);
      t.shape = dims;
    }
    if (t.declared) {
      for (auto& d : *t.declared) d = d.replace(s, with);
    }
  }
}

// The batch is the leading dim of every input whose first dim is symbolic.
std::set<SymbolId> batch_symbols(const Graph& g) {
  std::set<SymbolId> out;
  for (int in : g.inputs) {
    const Tensor& t = g.tensors[in];
    if (t.shape && !t.shape->empty()) {
      if (auto s = (*t.shape)[0].as_symbol()) out.insert(*s);
    }
  }
  return out;
}

// A trainable weight is one the outputs depend on differentiably. An initializer the
// file leaves among the weights (the legacy exporter writes registered buffers as
// initializers like parameters) that reaches no output through an input that has a
// gradient (a causal mask read by Slice, Equal and Where's condition) is a buffer:
// PyTorch gives it no gradient and no optimizer state, and torch's parameter count
// does not hold it. An op without a table entry is taken as differentiable. Where the
// file lists its parameters (a dynamo export), a listed weight no gradient reaches
// (read only under torch.no_grad()) stays torch's parameter in the count:
// Graph::gradless_parameters.
void demote_untrained_parameters(Graph& g) {
  bool outputs = false;
  for (const Tensor& t : g.tensors) outputs |= t.graph_output;
  if (!outputs) return;  // a graph that names no output: nothing to tell weights from buffers by
  const std::vector<bool> needed =
      gradient_reach(g, [](const Node& n, size_t i) { return !n.info || n.info->grad_of(i) != 'N'; });
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    Tensor& ten = g.tensors[t];
    if (ten.kind != TensorKind::Parameter || needed[t] || ten.consumers.empty()) continue;
    ten.kind = TensorKind::Buffer;
    if (g.lists_parameters) g.gradless_parameters.push_back(static_cast<int>(t));
  }
}

// With --attention fused, a graph whose softmax(QK^T) memest could not match as one
// scaled_dot_product_attention (torch 1.13's nn.MultiheadAttention, written out as
// bmm/softmax/bmm) is estimated as written, TxT matrix kept, so --attention eager
// changes nothing: say so rather than let the flag look ignored.
static void warn_attention_as_written(Graph& g, bool fused) {
  if (!fused) return;
  int softmax = 0, attention = 0;
  for (const Node& n : g.nodes) {
    if (n.dead) continue;
    softmax += n.op == "Softmax";
    attention += n.op == "Attention" || n.op == "AttentionMath";
  }
  if (softmax > 0 && attention == 0) {
    g.warn("no attention here matches scaled_dot_product_attention: its softmax(QK^T) is estimated as written "
           "(the TxT matrix kept, as --attention eager), so --attention changes nothing for this graph");
  }
}


// Charges the time since the last lap to one stage, when timing is asked for.
class Laps {
 public:
  explicit Laps(StageTimes* t) : t_(t), last_(std::chrono::steady_clock::now()) {}
  void lap(double StageTimes::*stage) {
    if (!t_) return;
    const auto now = std::chrono::steady_clock::now();
    t_->*stage += std::chrono::duration<double, std::milli>(now - last_).count();
    last_ = now;
  }

 private:
  StageTimes* t_;
  std::chrono::steady_clock::time_point last_;
};

// An inference (eval-mode) export differs from a training one where modules behave
// differently: BatchNorm runs on running statistics, and the legacy exporter folds it
// into the convolution before it (do_constant_folding, its default), leaving a bias on
// every convolution; Dropout is gone. The folded weights and biases are constants the
// exporter computed, so they lose the parameters' names ("layer1.0.conv1.weight") for
// ones it makes up ("onnx::Conv_193"; a bare number before torch 1.12). torch 1.13's
// default export of torchvision's resnet18 and efficientnet_b0 (eval mode, folded)
// shows exactly this; VGG or SqueezeNet, whose biases are real, keep their names.
constexpr int kFoldedMinConvs = 8;

bool exporter_named(const std::string& name) {
  return name.rfind("onnx::", 0) == 0 || (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos);
}

std::string inference_evidence(const Graph& g) {
  int convs = 0, biased = 0, folded = 0, norms = 0, dropouts = 0;
  for (const auto& n : g.nodes) {
    if (n.dead) continue;
    if (n.op == "BatchNormalization") {
      const bool training = n.attr_int("training_mode", 0) != 0 || (g.opset < 14 && n.outputs.size() > 1);
      if (!training) return "BatchNormalization in inference mode";
      ++norms;
    } else if (n.op == "Dropout") {
      ++dropouts;
    } else if (n.op == "Conv") {
      ++convs;
      if (!n.has_input(2)) continue;
      ++biased;
      folded += exporter_named(g.tensors[n.inputs[2]].name);
    }
  }
  if (convs >= kFoldedMinConvs && biased == convs && 2 * folded >= convs && norms == 0 && dropouts == 0) {
    return "no BatchNorm or Dropout, and its " + std::to_string(convs) +
           " convolutions carry biases the exporter computed, as folding BatchNorm leaves";
  }
  return "";
}

// How to export for training, in the terms of the file's own exporter.
std::string training_export_advice(const Graph& g) {
  const std::string& f = g.file;
  if (f.size() >= 3 && f.compare(f.size() - 3, 3, ".pt") == 0) {
    return "call model.train() before torch.jit.trace or torch.jit.script (the mode is recorded in the file)";
  }
  return "re-export from model.train() with torch.onnx.export(..., training=torch.onnx.TrainingMode.TRAINING, "
         "do_constant_folding=False) (the legacy exporter's defaults export eval mode even after model.train(); on "
         "torch >= 2.9 add dynamo=False, or use dynamo=True)";
}



// ---------------------------------------------------------------- the passes

// What the passes share: the graph being analysed, the analysis being filled, the options.
struct PassState {
  Graph& g;
  Analysis& a;
  const AnalysisOptions& opts;
  std::vector<int> fell_back;  ///< tensors whose shapes the shape pass assumed
};

// The batch is one symbol; --dim values replace theirs; every other input dimension must
// be the free one (sweep --dim) or is an error naming --dim.
void bind_dims_pass(PassState& s) {
  Graph& g = s.g;
  Analysis& a = s.a;
  const auto bsyms = batch_symbols(g);
  if (bsyms.empty()) {
    g.warn("no graph input has a symbolic first dimension, so the batch is fixed by the file; --batch is ignored");
  }
  for (SymbolId sym : bsyms) {
    if (sym != a.batch) replace_symbol(g, sym, Expr::symbol(a.batch));
  }
  for (const auto& [name, value] : s.opts.dims) {
    SymbolId sym = intern_symbol(name);
    bool found = false;
    for (int in : g.inputs) {
      for (const auto& d : g.tensors[in].shape.value_or(Shape{})) {
        for (SymbolId x : d.symbols()) found |= x == sym;
      }
    }
    if (!found) throw Error(g.file, "", "--dim " + name + ": no input has a dimension named '" + name + "'");
    if (value <= 0) throw Error(g.file, "", "--dim " + name + " must be a positive integer");
    replace_symbol(g, sym, Expr(value));
  }
  const SymbolId free = s.opts.free_dim.empty() ? a.batch : intern_symbol(s.opts.free_dim);
  for (int in : g.inputs) {
    const Tensor& t = g.tensors[in];
    for (const auto& d : t.shape.value_or(Shape{})) {
      for (SymbolId sym : d.symbols()) {
        if (sym != a.batch && sym != free) {
          throw Error(g.file, "", "dimension '" + symbol_name(sym) + "' of input '" + t.name +
                                      "' needs a value: pass --dim " + symbol_name(sym) + "=N");
        }
      }
    }
  }
  // A shape the file declares inside the graph in symbols no input has (an exporter's
  // own names for data-dependent sizes) could never be evaluated: not a fallback.
  std::set<SymbolId> known = {a.batch, free};
  for (int in : g.inputs) {
    for (const auto& d : g.tensors[in].shape.value_or(Shape{})) {
      for (SymbolId sym : d.symbols()) known.insert(sym);
    }
  }
  for (auto& t : g.tensors) {
    if (!t.declared || t.kind == TensorKind::Input) continue;
    bool foreign = false;
    for (const auto& d : *t.declared) {
      for (SymbolId sym : d.symbols()) foreign |= !known.count(sym);
    }
    if (foreign) t.declared.reset();
  }
}

// The op each sibling branch ran on one input, which the exporter merged into one
// (estimator/branch_copies.h).
void branch_copies_pass(PassState& s) { restore_branch_copies(s.g); }

// PyTorch's convolutions pad symmetrically: an asymmetric ONNX pad was an explicit Pad
// the model ran (estimator/explicit_pads.h).
void explicit_pads_pass(PassState& s) { split_asymmetric_pads(s.g); }

// The legacy exporter's tensor_split loops, back into Slices (estimator/sequence_split.h).
void sequence_split_pass(PassState& s) { split_sequence_loops(s.g); }

// The casts a float32 export dropped: transformers' RMSNorm, the legacy `x.float() ... .to(x_dtype)`,
// a parameter's `.to(x_dtype)` there, timm's EvoNorm (estimator/norm_casts.h).
void norm_casts_pass(PassState& s) {
  restore_norm_casts(s.g);
  restore_cast_backs(s.g);
  restore_squares(s.g);
  restore_parameter_casts(s.g);
  restore_module_casts(s.g);
}

void sort_pass(PassState& s) { verify_and_sort(s.g); }

// Products of operands the code cast to float32 ran with autocast off
// (estimator/upcast_matmuls.h).
void upcast_matmuls_pass(PassState& s) { mark_upcast_matmuls(s.g); }

// Shapes and dtypes; then the weights no gradient reaches become buffers, and what the
// estimate rests on (fallback shapes, ops without a table entry, an inference export).
void shapes_pass(PassState& s) {
  Graph& g = s.g;
  Analysis& a = s.a;
  s.fell_back = infer_shapes(g);
  demote_untrained_parameters(g);
  for (int t : s.fell_back) {
    const Tensor& ten = g.tensors[t];
    if (ten.shape && (!ten.consumers.empty() || ten.graph_output)) a.fallback_bytes += ten.bytes();
  }
  a.inference_evidence = inference_evidence(g);
  a.inference_export = !a.inference_evidence.empty();
  if (a.inference_export) {
    g.warn("the graph looks exported for inference (" + a.inference_evidence +
           "); training keeps more, so this estimate is low: " + training_export_advice(g));
  }
  std::set<std::string> unsupported;
  for (const auto& n : g.nodes) {
    if (!n.dead && !n.info) unsupported.insert((n.domain.empty() ? "" : n.domain + "::") + n.op);
  }
  a.unsupported.assign(unsupported.begin(), unsupported.end());
}

void fuse_pass(PassState& s) {
  FuseOptions fo;
  // A target whose GPU has no fused kernels runs SDPA's math backend: the matrix is kept.
  fo.attention = s.a.train.attention == Attention::Fused && s.a.train.target->fused_attention;
  s.a.fused = fuse_patterns(s.g, fo);
  warn_attention_as_written(s.g, fo.attention);
}

void loss_pass(PassState& s) {
  append_loss(s.g, s.a.train.loss);
  s.a.accounting = account(s.g, s.a.train);
}

void program_pass(PassState& s) {
  s.a.program = build_program(s.g, s.a.train);
  if (s.a.train.checkpoint != Checkpoint::None && checkpoint_segments(s.g, s.a.train.checkpoint).empty()) {
    s.g.warnings.push_back(
        "--checkpoint: no repeated blocks (indexed modules holding layers, like layer1.0 or blocks.3); "
        "nothing is checkpointed");
  }
}

struct Pass {
  const char* name;
  void (*run)(PassState&);
  double StageTimes::*stage;  ///< where bench/ reads its time
};

// The analysis, in order. A pass reads what the ones above it wrote.
const Pass kPasses[] = {
    {"bind-dims", bind_dims_pass, &StageTimes::bind},  // batch and --dim symbols
    {"branch-copies", branch_copies_pass, &StageTimes::sort},  // ops the exporter merged across branches
    {"explicit-pads", explicit_pads_pass, &StageTimes::sort},  // the Pad an asymmetric conv pad was
    {"sequence-split", sequence_split_pass, &StageTimes::sort},  // tensor_split's Loop as Slices
    {"norm-casts", norm_casts_pass, &StageTimes::sort},        // norm casts a float32 export dropped
    {"sort", sort_pass, &StageTimes::sort},            // topological order, well-formedness
    {"shapes", shapes_pass, &StageTimes::shapes},      // dtypes and symbolic shapes, op tables
    {"upcast-matmuls", upcast_matmuls_pass, &StageTimes::shapes},  // float32 products of .float() operands
    {"fuse", fuse_pass, &StageTimes::fuse},            // kernels PyTorch runs as one
    {"loss", loss_pass, &StageTimes::loss},            // the protocol's loss; exact byte accounting
    {"program", program_pass, &StageTimes::program},   // the training step as allocations
};

}  // namespace

Accounting account(const Graph& g, const TrainConfig& cfg) {
  Accounting a;
  const std::vector<bool> trains = trainable_parameters(g, cfg.train, cfg.freeze);
  for (size_t k = 0; k < g.tensors.size(); ++k) {
    const Tensor& t = g.tensors[k];
    if (t.consumers.empty() || !t.shape) continue;
    if (t.kind == TensorKind::Parameter) {
      auto n = product(*t.shape).as_const().value_or(0);
      a.parameter_count = checked_add(a.parameter_count, n);
      a.parameter_bytes = checked_add(a.parameter_bytes, checked_mul(n, dtype_size(t.dtype)));
      if (trains[k]) {
        a.trainable_count = checked_add(a.trainable_count, n);
        a.trainable_bytes = checked_add(a.trainable_bytes, checked_mul(n, dtype_size(t.dtype)));
      }
    } else if (t.kind == TensorKind::Buffer) {
      a.buffer_bytes = checked_add(a.buffer_bytes, t.bytes().as_const().value_or(0));
    } else if (t.kind == TensorKind::Input) {
      a.input_bytes = a.input_bytes + t.bytes();
    }
  }
  // Counted as the buffers they are in memory above; torch counts them as parameters.
  for (int k : g.gradless_parameters) {
    const Tensor& t = g.tensors[static_cast<size_t>(k)];
    if (t.consumers.empty() || !t.shape || t.kind != TensorKind::Buffer) continue;
    const int64_t n = product(*t.shape).as_const().value_or(0);
    const int64_t bytes = checked_mul(n, dtype_size(t.dtype));
    a.parameter_count = checked_add(a.parameter_count, n);
    a.parameter_bytes = checked_add(a.parameter_bytes, bytes);
    a.gradless_count = checked_add(a.gradless_count, n);
    a.gradless_bytes = checked_add(a.gradless_bytes, bytes);
    a.buffer_bytes -= bytes;
  }
  a.unread_count = static_cast<int64_t>(g.unread_parameters);
  for (int k : g.derived_parameters) {
    const Tensor& t = g.tensors[static_cast<size_t>(k)];
    if (t.consumers.empty() || !t.shape || t.kind != TensorKind::Parameter) continue;
    const int64_t n = product(*t.shape).as_const().value_or(0);
    a.derived_count = checked_add(a.derived_count, n);
    a.derived_bytes = checked_add(a.derived_bytes, checked_mul(n, dtype_size(t.dtype)));
  }
  return a;
}

Analysis analyze(Graph g, const AnalysisOptions& opts) {
  Laps laps(opts.times);
  Analysis a;
  a.train = opts.train;
  if (!a.train.target) a.train.target = &find_target("");
  a.batch = intern_symbol("batch");
  a.dims = opts.dims;
  PassState state{g, a, opts, {}};
  for (const Pass& p : kPasses) {
    p.run(state);
    laps.lap(p.stage);
  }
  a.graph = std::move(g);
  a.graph.drop_index();  // no pass looks a name up from here on; the replay reuses its memory
  return a;
}

Bindings bind_dims(const Analysis& a, int64_t batch, std::optional<int64_t> free_value) {
  if (batch <= 0) throw Error(a.graph.file, "", "--batch must be a positive integer, got " + std::to_string(batch));
  Bindings b;
  b.set(a.batch, batch);
  for (const auto& [name, v] : a.dims) b.set(name, v);
  if (free_value) {
    // The free dim's symbol is whatever analyze() left; bind every unbound symbol seen in inputs.
    for (int in : a.graph.inputs) {
      for (const auto& d : a.graph.tensors[in].shape.value_or(Shape{})) {
        for (SymbolId s : d.symbols()) {
          if (s != a.batch) b.set(s, *free_value);
        }
      }
    }
  }
  return b;
}

Estimate estimate(const Analysis& a, int64_t batch, std::optional<int64_t> free_value) {
  Bindings b = bind_dims(a, batch, free_value);
  try {
    // max_memory_allocated counts the blocks the caching allocator hands out, and a
    // reused cached block that is not split is counted whole: replay the allocator.
    AllocatorResult r = replay_allocator(a.program, b, a.train.target->alloc_round);
    return estimate(a, batch, std::move(b), std::move(r));
  } catch (const Error& err) {
    throw err.in_file(a.graph.file);
  }
}

Estimate estimate(const Analysis& /*a*/, int64_t batch, Bindings b, AllocatorResult&& replay) {
  Estimate e;
  e.batch = batch;
  e.bindings = std::move(b);
  e.peak = std::move(replay.peak);
  e.reserved_bytes = replay.peak_reserved;
  e.granted = std::move(replay.granted);
  e.requested_peak = replay.requested_peak;
  return e;
}

BudgetProbe probe_budget(const Analysis& a, int64_t batch, int64_t budget, std::optional<int64_t> free_value,
                         ProbeMemo* memo) {
  const Bindings b = bind_dims(a, batch, free_value);
  const int64_t round = a.train.target->alloc_round;
  BudgetProbe out;
  try {
    // A batch over the budget by the blocks an earlier one peaked with: a few of the
    // program's blocks sized, not all (a search halves its way down from far over).
    if (memo && !memo->peak_blocks.empty() && blocks_bytes(a.program, memo->peak_blocks, b, round) > budget) {
      return out;
    }
    const std::vector<int64_t> size = block_sizes(a.program, b, round);
    const RequestBounds bounds = request_bounds(a.program, size);
    if (bounds.committed_peak > budget) {
      if (memo) memo->peak_blocks = committed_peak_blocks(a.program, size);
      return out;
    }
    if (!bounds.most_added) throw_overflow();
    // The uncapped peak, when the capped replay released the cache and most_allocated()
    // does not settle it, from where the two replays part.
    std::optional<int64_t> uncapped_peak;
    auto uncapped_wanted = [&] { return !bounds.most_allocated || *bounds.most_allocated > budget; };
    const AllocatorResult capped =
        probe_allocator(a.program, size, budget, *bounds.most_added, uncapped_wanted, uncapped_peak);
    if (capped.fits_for_certain) {
      out.fits = true;  // the peak allocated is within the reserved bytes, within the budget
      return out;
    }
    if (capped.out_of_memory) return out;
    out.capped_reserved = capped.peak_reserved;
    // Until the cap makes it empty its cache, the capped allocator does what the
    // uncapped one does, so its peak is the one estimate() reports.
    if (!capped.released_cache) {
      out.fits = capped.peak.peak_bytes <= budget;
      return out;
    }
    out.released = true;
    if (!bounds.most_allocated) throw_overflow();  // where most_allocated() would throw
    // Without it, the estimate's peak (the uncapped replay's) is within most_allocated()'s
    // bound, itself within the budget: near the cap of a sweep, a replay saved for every
    // batch the search tries.
    out.uncapped_peak = uncapped_peak;
    out.fits = !uncapped_peak || *uncapped_peak <= budget;
  } catch (const Error& err) {
    throw err.in_file(a.graph.file);
  }
  return out;
}

bool fits_budget(const Analysis& a, int64_t batch, int64_t budget, std::optional<int64_t> free_value) {
  return probe_budget(a, batch, budget, free_value).fits;
}

WorkspaceExcess workspace_excess(const Analysis& a, const Bindings& b) {
  WorkspaceExcess out;
  for (const auto& [node, bytes] : a.program.workspace_excess) {
    const int64_t v = bytes.substitute(b).as_const().value_or(0);
    if (v > out.bytes) out = {v, node};
  }
  return out;
}

}  // namespace memest
