// Budget options and the fitting search.
#include "cli/fit.h"

#include "cli/gpus.h"
#include "cli/units.h"
#include "estimator/allocator.h"
#include "estimator/error.h"

namespace memest {

int64_t BudgetOptions::bytes() const {
  if (!budget.empty() && !gpu.empty()) throw Error("give --budget or --gpu, not both");
  if (!budget.empty()) return parse_size(budget);
  if (!gpu.empty()) return gpu_budget(find_gpu(gpu));
  throw Error("give a budget: --budget SIZE (e.g. 24GiB) or --gpu NAME (e.g. a100-80gb)");
}

void add_budget_options(CLI::App& app, BudgetOptions& b) {
  std::string names;
  for (const auto& g : all_gpus()) names += (names.empty() ? "" : ", ") + std::string(g.name);
  app.add_option("--budget", b.budget, "memory PyTorch may take (reserved), e.g. 24GiB, 24GB, 512MiB");
  app.add_option("--gpu", b.gpu, "a card whose memory, less the CUDA context, is the budget: " + names);
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

}  // namespace memest
