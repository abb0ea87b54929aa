// `memest sweep` and `memest check`: the largest batch that fits, and will this fit.
// Both reuse one analysis: each candidate batch only evaluates the program.
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/fit.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "cli/units.h"

namespace memest {

std::function<int()> setup_sweep(CLI::App& app) {
  struct Opts {
    CommonOptions common;
    BudgetOptions budget;
    std::string sweep_dim;
    int64_t max = kDefaultMaxBatch;
  };
  auto o = std::make_shared<Opts>();
  add_common_options(app, o->common);
  add_budget_options(app, o->budget);
  app.add_option("--sweep", o->sweep_dim, "sweep this symbolic dim instead of the batch (e.g. seq), at --batch");
  app.add_option("--max", o->max, "largest value tried")->capture_default_str();
  return [o]() {
    const int64_t budget = o->budget.bytes();
    const bool by_dim = !o->sweep_dim.empty();
    const std::string what = by_dim ? o->sweep_dim : "batch";
    const Analysis* analysis = nullptr;
    int64_t lo = 0;
    FitSearch found;
    Estimate best;
    {
      Progress progress("sweep");  // erased before the answer prints
      progress.update("analysing " + o->common.model);
      analysis = &load_and_analyze(o->common, o->sweep_dim);
      const Analysis& a = *analysis;
      auto try_value = [&](int64_t v, Estimate* e) {
        return by_dim ? fits(a, o->common.batch, budget, v, e) : fits(a, v, budget, std::nullopt, e);
      };
      int tried = 0;
      found = search_fitting(
          [&](int64_t v) {
            progress.update("trying " + what + " " + std::to_string(v) + " (" + std::to_string(++tried) + " tried)");
            return try_value(v, nullptr);
          },
          [&](int64_t v) {
            return by_dim ? may_fit_budget(a, o->common.batch, budget, v) : may_fit_budget(a, v, budget);
          },
          o->max);
      lo = found.largest;
      if (lo > 0) try_value(lo, &best);
    }
    const Analysis& a = *analysis;
    if (o->common.json) {
      nlohmann::json j;
      j["model"] = a.graph.file;
      j[by_dim ? "max_value" : "max_batch"] = lo;
      // Every value up to this one fits; between it and the largest, not all do.
      j[by_dim ? "contiguous_max_value" : "contiguous_max_batch"] = found.contiguous;
      if (by_dim) {
        j["dim"] = o->sweep_dim;
        j["batch"] = o->common.batch;
      }
      j["budget_bytes"] = budget;
      j["peak_bytes"] = lo > 0 ? best.peak.peak_bytes : 0;
      j["reserved_bytes"] = lo > 0 ? best.reserved_bytes : 0;
      std::cout << j.dump(2) << "\n";
    } else {
      if (lo == 0) {
        std::cout << "Not even " << what << " 1 fits in " << format_bytes(budget) << "\n";
      } else {
        std::cout << "Largest " << what << " that fits in " << format_bytes(budget) << ": " << lo << "\n"
                  << "  peak allocated " << format_bytes(best.peak.peak_bytes) << ", reserved "
                  << format_bytes(best.reserved_bytes) << "\n";
        if (found.contiguous < lo) {
          std::cout << "  every " << what << " up to " << found.contiguous << " fits; " << found.contiguous + 1
                    << " does not: near the cap, where the allocator's large blocks land changes with the size,\n"
                    << "  so not every " << what << " between fits (check the one you pick with `memest check`)\n";
        }
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
    const Analysis& a = load_and_analyze(o->common);
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
