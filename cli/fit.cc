// Budget options and the fitting search.
#include "cli/fit.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "cli/gpus.h"
#include "estimator/target.h"
#include "cli/units.h"
#include "estimator/allocator.h"
#include "estimator/error.h"

namespace memest {

int64_t BudgetOptions::capacity() const {
  if (!budget.empty() && !gpu.empty()) throw Error("give --budget or --gpu, not both");
  if (!budget.empty()) return parse_size(budget);
  if (!gpu.empty()) return gpu_budget(find_gpu(gpu));
  throw Error("give a budget: --budget SIZE (e.g. 24GiB) or --gpu NAME (e.g. a100-80gb)");
}

double BudgetOptions::margin_fraction() const {
  const std::string bad = "--margin takes the share of the budget to leave free, e.g. 5%, not '" + margin + "'";
  std::string num = margin;
  if (!num.empty() && num.back() == '%') num.pop_back();
  if (num.empty() || num.find_first_not_of("0123456789.") != std::string::npos || num.find('.') != num.rfind('.') ||
      num == ".") {
    throw Error(bad);
  }
  const double pct = std::stod(num);
  if (pct >= 100) throw Error(bad + " (below 100%)");
  return pct / 100;
}

int64_t BudgetOptions::bytes() const {
  const int64_t cap = capacity();
  const double keep = 1 - margin_fraction();
  return static_cast<int64_t>(static_cast<double>(cap) * keep);
}

std::string BudgetOptions::describe() const {
  std::string out;
  if (!gpu.empty()) {
    const GpuPreset& g = find_gpu(gpu);
    out = std::string(g.name) + ": " + thousands(g.total_mib) + " MiB less the CUDA context (" +
          format_bytes(cuda_context_reserve()) + ") = ";
  }
  out += format_bytes(capacity());
  if (margin_fraction() > 0) {
    out += ", less a " + margin + (margin.back() == '%' ? "" : "%") + " margin = " + format_bytes(bytes());
  }
  return out;
}

void add_budget_options(CLI::App& app, BudgetOptions& b) {
  std::string names;
  for (const auto& g : all_gpus()) names += (names.empty() ? "" : ", ") + std::string(g.name);
  app.add_option("--budget", b.budget,
                 "memory PyTorch may take (reserved), with a unit: 24GiB, 24GB (10^9), 512MiB (24B: bytes)");
  app.add_option("--gpu", b.gpu,
                 "a card whose memory, less the CUDA context, is the budget: " + names +
                     ". Library constants stay the measured profile's (--target): only the capacity changes");
  app.add_option("--margin", b.margin, "share of the budget to leave free, e.g. 5%")->capture_default_str();
}

std::string profiled_gpu(const Target& t) { return t.name.substr(0, t.name.find('-')); }

std::string profile_note(const BudgetOptions& b, const Target& t) {
  if (b.gpu.empty()) return "";
  if (b.gpu == profiled_gpu(t)) return t.name + ", measured on this GPU";
  // The profile's constants (cuBLAS and cuDNN workspaces, allocator rounding) were
  // measured on one card and torch; no other is profiled yet, so they are carried over.
  const std::string& d = t.description;
  return t.name + " (measured: " + d.substr(0, d.find(" + ")) + "); " + b.gpu +
         " is not profiled: its library constants are assumed the same, only the capacity changes";
}

std::string unread_note(const Analysis& a) {
  const int64_t n = a.accounting.unread_count;
  if (n == 0) return "";
  return std::to_string(n) + (n == 1 ? " parameter" : " parameters") + " of modules the exported forward never ran " +
         (n == 1 ? "is" : "are") + " not counted (the file holds them in no form): "
         "take their bytes off the budget (`memest MODEL` names the modules)";
}

bool fits(const Analysis& a, int64_t batch, int64_t budget, std::optional<int64_t> free_value, Estimate* out) {
  if (!out) return fits_budget(a, batch, budget, free_value);  // a search probe: one replay, same answer
  Bindings b = bind_dims(a, batch, free_value);
  AllocatorResult r = replay_allocator(a.program, b, a.train.target->alloc_round, budget);
  const bool oom = r.out_of_memory;
  const int64_t capped_reserved = r.peak_reserved;
  // Until the cap makes it release its cache, the capped replay is the uncapped one.
  Estimate e = oom || r.released_cache ? estimate(a, batch, free_value) : estimate(a, batch, std::move(b), std::move(r));
  const bool ok = !oom && e.peak.peak_bytes <= budget;
  // What is reported is what the job would reserve under this budget: the capped
  // allocator gives cached segments back rather than grow past the cap. When it does
  // not fit, the uncapped figure says how much it would need.
  if (ok) e.reserved_bytes = capped_reserved;
  *out = e;
  return ok;
}

FitAnswer fit_answer(const Analysis& a, int64_t batch, int64_t budget, std::optional<int64_t> free_value) {
  const Bindings b = bind_dims(a, batch, free_value);
  try {
    const std::vector<int64_t> size = block_sizes(a.program, b, a.train.target->alloc_round);
    const AllocatorResult capped = replay_allocator(a.program, size, budget, /*locate=*/false);
    // As in fits(): until the cap makes it release its cache, the capped replay is the uncapped one.
    if (!capped.out_of_memory && !capped.released_cache) {
      return {capped.peak.peak_bytes, capped.peak_reserved};
    }
    const AllocatorResult uncapped = replay_allocator(a.program, size, std::nullopt, /*locate=*/false);
    const bool ok = !capped.out_of_memory && uncapped.peak.peak_bytes <= budget;
    return {uncapped.peak.peak_bytes, ok ? capped.peak_reserved : uncapped.peak_reserved};
  } catch (const Error& err) {
    throw err.in_file(a.graph.file);
  }
}

FitAnswer fit_answer(const Analysis& a, int64_t batch, std::optional<int64_t> free_value, const BudgetProbe& probe) {
  // As fits() does for a capped replay that released its cache and did not fail: the
  // uncapped peak, within the budget since the probe fitted, and the capped reserved bytes.
  if (probe.uncapped_peak) return {*probe.uncapped_peak, probe.capped_reserved};
  const Bindings b = bind_dims(a, batch, free_value);
  try {
    return {replay_allocator(a.program, b, a.train.target->alloc_round, std::nullopt, /*locate=*/false).peak.peak_bytes,
            probe.capped_reserved};
  } catch (const Error& err) {
    throw err.in_file(a.graph.file);
  }
}

int64_t largest_fitting(const std::function<bool(int64_t)>& fits_at, int64_t max) {
  int64_t lo = 0, hi = 1;
  while (hi <= max && fits_at(hi)) {
    lo = hi;
    hi *= 2;
  }
  if (hi > max) hi = max + 1;
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (fits_at(mid) ? lo : hi) = mid;
  }
  return lo;
}

namespace {

// The first value in (lo, hi] that does not fit (hi + 1 when all do), the values
// ascending: every stride-th over a range wider than kMaxScan, then one by one up to
// the first of those that failed.
int64_t first_failure(const std::function<bool(int64_t)>& fits_at, int64_t lo, int64_t hi) {
  const int64_t stride = std::max<int64_t>(1, (hi - lo + kMaxScan - 1) / kMaxScan);
  for (int64_t v = lo + stride; v <= hi + stride - 1; v += stride) {
    const int64_t at = std::min(v, hi);
    if (fits_at(at)) continue;
    for (int64_t w = at - stride + 1; w < at; ++w) {
      if (w > lo && !fits_at(w)) return w;
    }
    return at;
  }
  return hi + 1;
}

}  // namespace

FitSearch search_fitting(const std::function<Fit(int64_t)>& probe, int64_t max, std::optional<int64_t> calm_below) {
  // The scan comes back to values the bisection has tried (each is a replay of the
  // allocator).
  std::map<int64_t, Fit> tried;
  // Below a value that fits calmly, every value is taken to (as the calm bisection below
  // takes it): entered as such when the search asks, so that what it has seen is what
  // it would have seen without the guess. The guess itself is entered only when asked.
  std::optional<Fit> guessed;
  if (calm_below && *calm_below >= 1 && *calm_below <= max) guessed = probe(*calm_below);
  const int64_t known_calm = guessed == Fit::Calm ? *calm_below : 0;
  auto status = [&](int64_t v) {
    const auto [at, fresh] = tried.try_emplace(v, Fit::No);
    if (fresh) at->second = v < known_calm ? Fit::Calm : v == calm_below && guessed ? *guessed : probe(v);
    return at->second;
  };
  auto fits_at = [&](int64_t v) { return status(v) != Fit::No; };
  FitSearch r;
  r.largest = largest_fitting(fits_at, max);
  if (r.largest == 0) return r;
  // The bisection assumes fitting is monotone; near the cap it is not, and it may end
  // on an island above a batch that fails (blind22's sh_gpt_bigcode_lm: the replay
  // fits 1365, not 1366-1386, and 1387-1408 again; the GPU ran 1365, not 1366). Every
  // value up to the largest calm one fits; from there the values up to the bisection's
  // answer are tried in order for the first that does not.
  int64_t calm = 0, restless = r.largest + 1;
  for (const auto& [v, f] : tried) {
    if (f == Fit::Calm && v <= r.largest) calm = std::max(calm, v);
  }
  for (const auto& [v, f] : tried) {
    if (v > calm && f != Fit::Calm) restless = std::min(restless, v);
  }
  while (restless - calm > 1) {
    const int64_t mid = calm + (restless - calm) / 2;
    (status(mid) == Fit::Calm ? calm : restless) = mid;
  }
  r.contiguous = first_failure(fits_at, calm, r.largest) - 1;
  return r;
}

namespace {

// On the chord from (x0, y0) to (x1, y1), y0 <= target, where it reaches `target`,
// rounded down, and at most `cap`: a flat chord reaches it far away (past any int64_t)
// or never.
int64_t chord_root(int64_t x0, int64_t y0, int64_t x1, int64_t y1, int64_t target, int64_t cap) {
  if (y1 <= y0) return cap;
  const double x = static_cast<double>(x0) + static_cast<double>(target - y0) / static_cast<double>(y1 - y0) *
                                                 static_cast<double>(x1 - x0);
  return x >= static_cast<double>(cap) ? cap : static_cast<int64_t>(x);
}

}  // namespace

std::optional<int64_t> calm_guess(const std::function<int64_t(int64_t)>& peak_of, int64_t budget, int64_t max) {
  if (max < 2) return std::nullopt;
  const int64_t target = static_cast<int64_t>(static_cast<double>(budget) * kGuessShare);
  int64_t prev = 1, pprev = peak_of(1), lo = 2, plo = peak_of(2);  // the two highest values under the target
  if (plo <= pprev || plo > target) return std::nullopt;
  int64_t hi = 0, phi = 0;  // the lowest value over it, once one is seen
  // A convex bound lies above the secant through two of its points beyond them, and
  // below it between them: the secant through the two highest values under the target,
  // continued, reaches it at or past the bound's crossing; the chord from lo to hi at
  // or before it. Tried in turn (the geometric mean instead of a chord that a far hi
  // leaves at lo), until lo is within a sixty-fourth of hi or is the secant's root.
  auto close = [&] { return hi > 0 && hi - lo <= lo / 64 + 1; };
  auto take = [&](int64_t c) {
    const int64_t pc = peak_of(c);
    if (pc <= target) {
      prev = lo, pprev = plo, lo = c, plo = pc;
    } else {
      hi = c, phi = pc;
    }
    return pc <= target;
  };
  for (int probes = 0; probes < 8 && !close();) {
    const int64_t over = chord_root(prev, pprev, lo, plo, target, max);
    if (over > lo && (hi == 0 || over < hi)) {
      ++probes;
      if (take(over) && (hi == 0 || lo == max)) break;  // the secant's root is under the target: near enough
      if (close()) break;
    }
    if (hi == 0) break;
    int64_t under = chord_root(lo, plo, hi, phi, target, hi);
    if (hi > 4 * lo) under = std::max(under, static_cast<int64_t>(std::sqrt(static_cast<double>(lo) * hi)));
    if (under <= lo || under >= hi) break;
    ++probes;
    take(under);
  }
  return lo;
}

std::optional<int64_t> search_guess(const Analysis& a, int64_t budget, std::optional<int64_t> batch, int64_t max) {
  auto requests_peak = [&](int64_t v) {
    const Bindings b = batch ? bind_dims(a, *batch, v) : bind_dims(a, v);
    return committed_peak(a.program, b, a.train.target->alloc_round);
  };
  try {
    return calm_guess(requests_peak, budget, max);
  } catch (const Error&) {
    return std::nullopt;
  }
}

FitSearch search_fitting(const std::function<bool(int64_t)>& probe, int64_t max) {
  return search_fitting([&](int64_t v) { return probe(v) ? Fit::Calm : Fit::No; }, max);
}

Fit fit_of(const BudgetProbe& p) { return !p.fits ? Fit::No : p.released ? Fit::Capped : Fit::Calm; }

}  // namespace memest
