// The pipeline from a loaded graph to an evaluable training-step program:
// bind dims, infer shapes, fuse patterns, append the loss, build the program.
// Built once; estimate() then answers for any batch in microseconds.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "estimator/ir.h"
#include "estimator/simulate.h"

namespace memest {

/// Wall time of each stage of analyze(), in milliseconds (for bench/).
struct StageTimes {
  double bind = 0, sort = 0, shapes = 0, fuse = 0, loss = 0, program = 0;
};

struct AnalysisOptions {
  std::map<std::string, int64_t> dims;  ///< --dim NAME=VALUE
  std::string free_dim;                 ///< a symbol left free besides batch (sweep --dim seq)
  TrainConfig train;
  StageTimes* times = nullptr;          ///< filled when set
};

/// Exact (unrounded) bytes of the batch-independent parts, as PyTorch counts them.
struct Accounting {
  int64_t parameter_count = 0;
  int64_t parameter_bytes = 0;
  int64_t trainable_count = 0;  ///< parameters that train (--train / --freeze; all by default)
  int64_t trainable_bytes = 0;
  int64_t buffer_bytes = 0;
  /// Parameters no gradient reaches (Graph::gradless_parameters), in parameter_count and
  /// parameter_bytes but neither trainable nor buffers: no gradient, no optimizer state.
  int64_t gradless_count = 0;
  int64_t gradless_bytes = 0;
  /// Parameters that are tables the exporter computed from a parameter by indexing it
  /// (Graph::derived_parameters), in parameter_count and parameter_bytes: by these the
  /// count may be over torch's, by how much the file does not say.
  int64_t derived_count = 0;
  int64_t derived_bytes = 0;
  /// Parameters in the model the file holds in no form (Graph::unread_parameters): in no
  /// count, so parameter_bytes is under torch's by their unknown size.
  int64_t unread_count = 0;
  Expr input_bytes;  ///< x and y, symbolic in the batch
};

struct Analysis {
  Graph graph;
  Program program;
  TrainConfig train;
  SymbolId batch = 0;
  std::map<std::string, int64_t> dims;
  Accounting accounting;
  int fused = 0;
  std::vector<std::string> unsupported;  ///< op types with no table entry
  /// Bytes of the tensors whose shapes the shape pass assumed (an unsupported op, a rule
  /// that could not decide): how much of the estimate rests on a fallback.
  Expr fallback_bytes;
  bool inference_export = false;         ///< the graph looks exported in eval mode: a hint to the user
  std::string inference_evidence;        ///< what says so ("BatchNormalization in inference mode"), or ""
};

/// Runs the pipeline. Throws Error for a graph memest cannot estimate.
Analysis analyze(Graph g, const AnalysisOptions& opts);

/// The accounting of a graph whose tensor kinds are settled (analyze() calls it).
Accounting account(const Graph& g, const TrainConfig& cfg);

/// The numbers for one batch size (and the free dim's value, if any).
struct Estimate {
  int64_t batch = 0;
  PeakResult peak;
  int64_t reserved_bytes = 0;
  int64_t requested_peak = 0;  ///< peak of the requests alone (512-byte rounded), before block reuse
  Bindings bindings;
  /// Bytes the (uncapped) caching allocator handed out for each block of the program:
  /// what reports and timelines count, so they need no second replay.
  std::vector<int64_t> granted;
};

Estimate estimate(const Analysis& a, int64_t batch, std::optional<int64_t> free_value = std::nullopt);

/// The most an unpredictable backward workspace (Program::workspace_excess) may add to
/// the peak at these bindings, and the node whose call it is (-1 and 0 bytes: none).
struct WorkspaceExcess {
  int64_t bytes = 0;
  int node = -1;
};
WorkspaceExcess workspace_excess(const Analysis& a, const Bindings& b);

struct AllocatorResult;
/// estimate() from a replay already made under `b` (bind_dims's): an uncapped one, or
/// a capped one that never released its cache, which until then is the same replay.
Estimate estimate(const Analysis& a, int64_t batch, Bindings b, AllocatorResult&& replay);

/// The dims estimate() evaluates under: the batch, the --dim values, the free dim.
/// Throws Error for a batch below 1.
Bindings bind_dims(const Analysis& a, int64_t batch, std::optional<int64_t> free_value = std::nullopt);

/// Whether a training step fits `budget` bytes: the caching allocator, capped at the
/// budget, never fails, and estimate()'s peak is within it. The same answer as
/// estimating and then replaying under the cap, for one replay in most cases
/// (a batch search calls this a dozen times).
bool fits_budget(const Analysis& a, int64_t batch, int64_t budget, std::optional<int64_t> free_value = std::nullopt);

/// What fits_budget() found out on the way to its answer.
struct BudgetProbe {
  bool fits = false;
  /// The capped replay made the allocator empty its cache and did not fail: the batch
  /// fits only at the cap (Fit::Capped), its reserved bytes are capped_reserved.
  bool released = false;
  int64_t capped_reserved = 0;  ///< the capped replay's max_memory_reserved (0: none ran to the end)
  /// The uncapped replay's peak allocated (estimate()'s peak_bytes), when the answer
  /// needed it (a released cache, and most_allocated() over the budget): the peak a
  /// sweep reports, when this batch is its answer.
  std::optional<int64_t> uncapped_peak;
};
/// What the probes of one search hand on: the blocks alive at the requests' peak of the
/// last batch that peak refused (committed_peak_blocks()). Their bytes at another batch
/// are at most its requests' peak, so when they are over the budget it is refused as
/// sizing the whole program would refuse it.
struct ProbeMemo {
  std::vector<int> peak_blocks;
};
BudgetProbe probe_budget(const Analysis& a, int64_t batch, int64_t budget,
                         std::optional<int64_t> free_value = std::nullopt, ProbeMemo* memo = nullptr);

}  // namespace memest
