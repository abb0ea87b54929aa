// The analysis pipeline: dims -> shapes -> fusion -> loss -> program.
#include "estimator/analysis.h"

#include <chrono>
#include <set>

#include "estimator/allocator.h"
#include "estimator/error.h"
#include "estimator/finetune.h"
#include "estimator/fuse.h"
#include "estimator/loss.h"
#include "estimator/ops/registry.h"
#include "estimator/shapes.h"

namespace memest {
namespace {

void replace_symbol(Graph& g, SymbolId s, const Expr& with) {
  for (auto& t : g.tensors) {
    for (auto* shape : {&t.shape, &t.declared}) {
      if (!*shape) continue;
      for (auto& d : **shape) d = d.replace(s, with);
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
  return a;
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

bool looks_inference_exported(const Graph& g) {
  for (const auto& n : g.nodes) {
    if (n.dead || n.op != "BatchNormalization") continue;
    const bool training = n.attr_int("training_mode", 0) != 0 || (g.opset < 14 && n.outputs.size() > 1);
    if (!training) return true;
  }
  return false;
}

}  // namespace

Analysis analyze(Graph g, const AnalysisOptions& opts) {
  Laps laps(opts.times);
  Analysis a;
  a.train = opts.train;
  if (!a.train.target) a.train.target = &find_target("");
  a.batch = intern_symbol("batch");
  a.dims = opts.dims;

  const auto bsyms = batch_symbols(g);
  if (bsyms.empty()) {
    g.warn("no graph input has a symbolic first dimension, so the batch is fixed by the file; --batch is ignored");
  }
  for (SymbolId s : bsyms) {
    if (s != a.batch) replace_symbol(g, s, Expr::symbol(a.batch));
  }
  for (const auto& [name, value] : opts.dims) {
    SymbolId s = intern_symbol(name);
    bool found = false;
    for (int in : g.inputs) {
      for (const auto& d : g.tensors[in].shape.value_or(Shape{})) {
        for (SymbolId x : d.symbols()) found |= x == s;
      }
    }
    if (!found) throw Error(g.file, "", "--dim " + name + ": no input has a dimension named '" + name + "'");
    if (value <= 0) throw Error(g.file, "", "--dim " + name + " must be a positive integer");
    replace_symbol(g, s, Expr(value));
  }
  const SymbolId free = opts.free_dim.empty() ? a.batch : intern_symbol(opts.free_dim);
  for (int in : g.inputs) {
    const Tensor& t = g.tensors[in];
    for (const auto& d : t.shape.value_or(Shape{})) {
      for (SymbolId s : d.symbols()) {
        if (s != a.batch && s != free) {
          throw Error(g.file, "", "dimension '" + symbol_name(s) + "' of input '" + t.name +
                                      "' needs a value: pass --dim " + symbol_name(s) + "=N");
        }
      }
    }
  }

  laps.lap(&StageTimes::bind);
  verify_and_sort(g);
  laps.lap(&StageTimes::sort);
  infer_shapes(g);
  a.inference_export = looks_inference_exported(g);
  if (a.inference_export) {
    g.warn("the graph looks exported for inference (BatchNormalization in inference mode); training keeps more: "
           "call model.train() before torch.onnx.export (with dynamo=False, also pass "
           "training=TrainingMode.TRAINING, do_constant_folding=False)");
  }
  std::set<std::string> unsupported;
  for (const auto& n : g.nodes) {
    if (!n.dead && !n.info) unsupported.insert((n.domain.empty() ? "" : n.domain + "::") + n.op);
  }
  a.unsupported.assign(unsupported.begin(), unsupported.end());
  laps.lap(&StageTimes::shapes);
  FuseOptions fo;
  fo.attention = a.train.attention == Attention::Fused;
  a.fused = fuse_patterns(g, fo);
  laps.lap(&StageTimes::fuse);
  append_loss(g, a.train.loss);
  a.accounting = account(g, a.train);
  laps.lap(&StageTimes::loss);
  a.program = build_program(g, a.train);
  if (a.train.checkpoint != Checkpoint::None && checkpoint_segments(g, a.train.checkpoint).empty()) {
    g.warnings.push_back(
        "--checkpoint: no repeated blocks (indexed modules holding layers, like layer1.0 or blocks.3); "
        "nothing is checkpointed");
  }
  laps.lap(&StageTimes::program);
  a.graph = std::move(g);
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

bool fits_budget(const Analysis& a, int64_t batch, int64_t budget, std::optional<int64_t> free_value) {
  const Bindings b = bind_dims(a, batch, free_value);
  try {
    if (committed_peak(a.program, b, a.train.target->alloc_round) > budget) return false;
    const AllocatorResult capped = replay_allocator(a.program, b, a.train.target->alloc_round, budget, /*locate=*/false);
    if (capped.out_of_memory) return false;
    // Until the cap makes it empty its cache, the capped allocator does what the
    // uncapped one does, so its peak is the one estimate() reports.
    if (!capped.released_cache) return capped.peak.peak_bytes <= budget;
  } catch (const Error& err) {
    throw err.in_file(a.graph.file);
  }
  return estimate(a, batch, free_value).peak.peak_bytes <= budget;
}

bool may_fit_budget(const Analysis& a, int64_t batch, int64_t budget, std::optional<int64_t> free_value) {
  try {
    return committed_peak(a.program, bind_dims(a, batch, free_value), a.train.target->alloc_round) <= budget;
  } catch (const Error& err) {
    throw err.in_file(a.graph.file);
  }
}

}  // namespace memest
