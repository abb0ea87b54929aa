// `memest sweep` and `memest check`: the largest batch that fits, and will this fit.
// Both reuse one analysis: each candidate batch only evaluates the program.
#include <iostream>

#include "cli/commands.h"
#include "cli/gpus.h"
#include "cli/options.h"
#include "cli/report.h"
#include "cli/units.h"
#include "estimator/allocator.h"
#include "estimator/error.h"

namespace memest {
namespace {

struct BudgetOptions {
  std::string budget;
  std::string gpu;
  int64_t bytes() const {
    if (!budget.empty() && !gpu.empty()) throw Error("give --budget or --gpu, not both");
    if (!budget.empty()) return parse_size(budget);
    if (!gpu.empty()) return gpu_budget(find_gpu(gpu));
    throw Error("give a budget: --budget SIZE (e.g. 24GiB) or --gpu NAME (e.g. a100-80gb)");
  }
};

void add_budget_options(CLI::App& app, BudgetOptions& b) {
  std::string names;
  for (const auto& g : all_gpus()) names += (names.empty() ? "" : ", ") + std::string(g.name);
  app.add_option("--budget", b.budget, "memory PyTorch may take (reserved), e.g. 24GiB, 24GB, 512MiB");
  app.add_option("--gpu", b.gpu, "a card whose memory, less the CUDA context, is the budget: " + names);
}

// Fits when replaying the caching allocator under the cap never fails.
bool fits(const Analysis& a, int64_t batch, int64_t budget, std::optional<int64_t> free_value, Estimate* out) {
  Estimate e = estimate(a, batch, free_value);
  auto r = replay_allocator(a.program, e.bindings, a.train.target->alloc_round, budget);
  if (out) *out = e;
  return !r.out_of_memory && e.peak.peak_bytes <= budget;
}

}  // namespace

std::function<int()> setup_sweep(CLI::App& app) {
  struct Opts {
    CommonOptions common;
    BudgetOptions budget;
    std::string sweep_dim;
    int64_t max = 1 << 24;
  };
  auto o = std::make_shared<Opts>();
  add_common_options(app, o->common);
  add_budget_options(app, o->budget);
  app.add_option("--sweep", o->sweep_dim, "sweep this symbolic dim instead of the batch (e.g. seq), at --batch");
  app.add_option("--max", o->max, "largest value tried")->capture_default_str();
  return [o]() {
    const int64_t budget = o->budget.bytes();
    Analysis a = load_and_analyze(o->common, o->sweep_dim);
    const bool by_dim = !o->sweep_dim.empty();
    auto try_value = [&](int64_t v, Estimate* e) {
      return by_dim ? fits(a, o->common.batch, budget, v, e) : fits(a, v, budget, std::nullopt, e);
    };
    // Doubling, then bisection: about 2*log2(answer) evaluations of the same program.
    int64_t lo = 0, hi = 1;
    while (hi <= o->max && try_value(hi, nullptr)) {
      lo = hi;
      hi *= 2;
    }
    if (hi > o->max) hi = o->max + 1;
    while (hi - lo > 1) {
      int64_t mid = lo + (hi - lo) / 2;
      (try_value(mid, nullptr) ? lo : hi) = mid;
    }
    Estimate best;
    if (lo > 0) try_value(lo, &best);
    if (o->common.json) {
      nlohmann::json j;
      j["model"] = a.graph.file;
      j[by_dim ? "max_value" : "max_batch"] = lo;
      if (by_dim) {
        j["dim"] = o->sweep_dim;
        j["batch"] = o->common.batch;
      }
      j["budget_bytes"] = budget;
      j["peak_bytes"] = lo > 0 ? best.peak.peak_bytes : 0;
      j["reserved_bytes"] = lo > 0 ? best.reserved_bytes : 0;
      std::cout << j.dump(2) << "\n";
    } else {
      std::string what = by_dim ? o->sweep_dim : "batch";
      if (lo == 0) {
        std::cout << "Not even " << what << " 1 fits in " << format_bytes(budget) << "\n";
      } else {
        std::cout << "Largest " << what << " that fits in " << format_bytes(budget) << ": " << lo << "\n"
                  << "  peak allocated " << format_bytes(best.peak.peak_bytes) << ", reserved "
                  << format_bytes(best.reserved_bytes) << "\n";
      }
    }
    return 0;
  };
}

std::function<int()> setup_check(CLI::App& app) {
  struct Opts {
    CommonOptions common;
    BudgetOptions budget;
  };
  auto o = std::make_shared<Opts>();
  add_common_options(app, o->common);
  add_budget_options(app, o->budget);
  app.get_option("--batch")->required();
  return [o]() {
    const int64_t budget = o->budget.bytes();
    Analysis a = load_and_analyze(o->common);
    Estimate e;
    const bool ok = fits(a, o->common.batch, budget, std::nullopt, &e);
    const int64_t headroom = budget - e.reserved_bytes;
    if (o->common.json) {
      nlohmann::json j = {{"model", a.graph.file},        {"batch", o->common.batch}, {"fits", ok},
                          {"peak_bytes", e.peak.peak_bytes}, {"reserved_bytes", e.reserved_bytes},
                          {"budget_bytes", budget},        {"headroom_bytes", headroom}};
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << (ok ? "fits" : "does not fit") << ": batch " << o->common.batch << ", reserved "
                << format_bytes(e.reserved_bytes) << " (allocated " << format_bytes(e.peak.peak_bytes)
                << ") of " << format_bytes(budget) << ", headroom "
                << (headroom < 0 ? "-" + format_bytes(-headroom) : format_bytes(headroom)) << "\n";
    }
    return ok ? 0 : 1;
  };
}

}  // namespace memest
