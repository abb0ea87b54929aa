// Will a batch fit a memory budget, and the largest that does: shared by sweep,
// check and advise.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "estimator/analysis.h"
#include "estimator/target.h"

namespace memest {

/// Largest value a search tries unless told otherwise (sweep --max).
constexpr int64_t kDefaultMaxBatch = int64_t{1} << 24;

/// --budget SIZE or --gpu NAME, and --margin PCT.
struct BudgetOptions {
  std::string budget;
  std::string gpu;
  std::string margin = "0%";
  bool given() const { return !budget.empty() || !gpu.empty(); }
  /// What PyTorch may take in bytes (the --budget, or the card less the CUDA context);
  /// throws Error when both or neither are given.
  int64_t capacity() const;
  /// --margin as a fraction in [0, 1); throws Error for anything but a percentage.
  double margin_fraction() const;
  /// The capacity less the margin: what a batch must fit in.
  int64_t bytes() const;
  /// "t4: 15,360 MiB less the CUDA context (767.0 MiB) = 14.25 GiB, less a 5% margin = 13.54 GiB";
  /// "24.00 GiB" for a plain --budget.
  std::string describe() const;
};

void add_budget_options(CLI::App& app, BudgetOptions& b);

/// Which measured profile the library constants come from, and, when --gpu names
/// another card than the profiled one, what is assumed. Empty without --gpu.
std::string profile_note(const BudgetOptions& b, const Target& t);

/// What a fit answer leaves out that the file cannot size: parameters of modules the
/// exported forward never ran (Accounting::unread_count), which torch keeps on the GPU.
/// Empty when there are none.
std::string unread_note(const Analysis& a);
/// The GPU preset name a profile was measured on ("h200" for "h200-torch2.11").
std::string profiled_gpu(const Target& t);

/// True when replaying the caching allocator under a cap of `budget` never fails.
/// `free_value` binds the swept dim (sweep --sweep); `out`, when set, gets the estimate.
bool fits(const Analysis& a, int64_t batch, int64_t budget, std::optional<int64_t> free_value, Estimate* out);

/// What a sweep reports of the batch it answers: the peak allocated (estimate()'s) and
/// the bytes reserved under the budget.
struct FitAnswer {
  int64_t peak_bytes = 0;
  int64_t reserved_bytes = 0;
};
/// fits()'s figures for `batch` under `budget` (peak_bytes, and reserved_bytes under the
/// cap where it fits, else uncapped), from replays that only count (no estimate located).
FitAnswer fit_answer(const Analysis& a, int64_t batch, int64_t budget, std::optional<int64_t> free_value);
/// fits()'s figures for the batch of a probe whose capped replay released the cache and
/// fitted (BudgetProbe::released and fits): the reserved bytes the probe's, the peak its
/// uncapped replay's (BudgetProbe::uncapped_peak), or replayed now when it had none.
FitAnswer fit_answer(const Analysis& a, int64_t batch, std::optional<int64_t> free_value, const BudgetProbe& probe);

/// The largest v in [1, max] with fits_at(v), or 0 when not even 1 fits: doubling,
/// then bisection, about 2*log2(answer) calls. Assumes fitting is monotone in v.
int64_t largest_fitting(const std::function<bool(int64_t)>& fits_at, int64_t max = kDefaultMaxBatch);

/// Near the cap, fitting is not monotone in the batch: where the caching allocator's
/// large blocks land changes with every size, on the GPU as in the replay (gpt2_hf
/// fp16 under 24 GiB runs at 128 and 136 but not at 129 to 135).
struct FitSearch {
  int64_t largest = 0;     ///< the bisection's answer: fits, perhaps above a value that does not
  int64_t contiguous = 0;  ///< every value up to this one fits: the answer to bet on
};
/// How a value fits: not at all; only because the cap made the allocator empty its
/// cache (where the answer changes from one value to the next); or calmly, the replay
/// never reaching the cap (monotone: every smaller value fits calmly too).
enum class Fit { No, Capped, Calm };
Fit fit_of(const BudgetProbe& p);
/// largest_fitting() of `probe` for `largest`, then `contiguous`: from the largest calm
/// value up to that answer, the values in order until the first that fails (over a
/// range wider than kMaxScan every stride-th, then one by one below the first that
/// failed: a gap narrower than the stride may go unseen). The islands above the
/// first failure measured on the GPU were 1 to 21 batches wide (gpt2_hf fp16 under
/// 24 GiB: 127 and 129-135 fail, 126, 128 and 136 run). `probe` is asked once per value.
///
/// `calm_below`, when set, is probed first; when it fits calmly, the values under it
/// are taken to fit calmly without a probe (calm_guess() places it where the requests
/// take half the budget: far under the cap, where the doubling spends most of its
/// replays). Neither it nor those values join what the search has seen otherwise, so
/// the search takes the path it takes without it, and answers the same.
FitSearch search_fitting(const std::function<Fit(int64_t)>& probe, int64_t max = kDefaultMaxBatch,
                         std::optional<int64_t> calm_below = std::nullopt);
/// The same with a yes/no probe, every fitting value taken as calm: `contiguous` is
/// then the bisection's answer.
FitSearch search_fitting(const std::function<bool(int64_t)>& probe, int64_t max = kDefaultMaxBatch);
constexpr int64_t kMaxScan = 48;

/// A value under which everything fits calmly, from a lower bound of each value's peak
/// (`peak_of`, the requests' peak: committed_peak(), no replay), increasing and convex
/// in the value as a sum of block sizes that grow with it is: where that bound takes
/// kGuessShare of `budget` (within a sixty-fourth, from below), by secants from 1 and 2.
/// For the allocator to reach the cap there it would have to reserve twice what is
/// requested. None when the bound does not grow or 2 is already over.
std::optional<int64_t> calm_guess(const std::function<int64_t(int64_t)>& peak_of, int64_t budget,
                                  int64_t max = kDefaultMaxBatch);
/// calm_guess() for a search of `a` over the batch, or with `batch` over the free dim
/// (sweep --sweep), from the requests' peak. A value the bound cannot be evaluated at
/// (an overflow far above any card) leaves the search without a guess; its own probe
/// then says what is wrong.
std::optional<int64_t> search_guess(const Analysis& a, int64_t budget, std::optional<int64_t> batch,
                                    int64_t max = kDefaultMaxBatch);
constexpr double kGuessShare = 0.5;

}  // namespace memest
