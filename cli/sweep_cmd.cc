// `memest sweep` and `memest check`: the largest batch that fits, and will this fit.
// Both reuse one analysis: each candidate batch only evaluates the program.
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/advise.h"
#include "cli/commands.h"
#include "cli/fit.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "cli/units.h"
#include "estimator/parallel.h"

namespace memest {
namespace {

struct SweepOptions {
  CommonOptions common;
  BudgetOptions budget;
  std::string sweep_dim;
  int64_t max = kDefaultMaxBatch;
};

// What advise would change first when not even batch 1 fits: the best-ranked what-if
// under which some batch fits, or else the one with the smallest peak.
struct Rescue {
  std::string text;    ///< one line for the report
  nlohmann::json json;
};

Rescue rescue(const SweepOptions& o, int64_t budget) {
  Analysis now;
  std::vector<Outcome> rows;
  {
    Progress progress("sweep");
    rows = rank_what_ifs(o.common, 1, budget, progress, &now);
  }
  const Outcome* best = nullptr;
  for (size_t i = 1; i < rows.size() && !best; ++i) {
    if (rows[i].error.empty() && rows[i].max_micro_batch > 0) best = &rows[i];
  }
  Rescue r;
  if (best) {
    r.text = "memest advise's first answer: " + best->what.name + " fits batch " +
             std::to_string(best->max_micro_batch) + " (batch 1: peak " + format_bytes(best->peak) + ")";
    r.json = {{"key", best->what.key}, {"name", best->what.name}, {"max_batch", best->max_micro_batch}};
    return r;
  }
  const Outcome& least = rows.size() > 1 && rows[1].error.empty() ? rows[1] : rows[0];
  r.text = "no what-if of memest advise fits batch 1 either (the smallest, " + least.what.name + ", reserves " +
           format_bytes(least.reserved) + "): a larger GPU or budget is needed";
  r.json = {{"key", least.what.key}, {"name", least.what.name}, {"max_batch", 0}, {"reserved_bytes", least.reserved}};
  return r;
}

void print_sweep(const SweepOptions& o, const Analysis& a, const FitSearch& found, const FitAnswer& best,
                 const Rescue* help) {
  const bool by_dim = !o.sweep_dim.empty();
  const std::string what = by_dim ? o.sweep_dim : "batch";
  const int64_t budget = o.budget.bytes();
  // The answer is the value up to which every one fits; a larger one that fits (an
  // island above a failure) is shown beside it, not offered: one batch more or less
  // there is the difference between running and running out of memory.
  const int64_t lo = found.contiguous;
  const std::string note = profile_note(o.budget, *a.train.target);
  if (o.common.json) {
    nlohmann::json j;
    j["model"] = a.graph.file;
    j[by_dim ? "max_value" : "max_batch"] = lo;
    // Every value up to the answer fits; the largest that fits may lie above a failure.
    j[by_dim ? "contiguous_max_value" : "contiguous_max_batch"] = found.contiguous;
    j[by_dim ? "island_max_value" : "island_max_batch"] = found.largest;
    if (by_dim) {
      j["dim"] = o.sweep_dim;
      j["batch"] = o.common.batch;
    }
    j["budget_bytes"] = budget;
    j["capacity_bytes"] = o.budget.capacity();
    j["margin"] = o.budget.margin_fraction();
    j["profile"] = a.train.target->name;
    if (!o.budget.gpu.empty()) j["gpu"] = o.budget.gpu;
    if (!note.empty()) j["profile_note"] = note;
    j["peak_bytes"] = lo > 0 ? best.peak_bytes : 0;
    j["reserved_bytes"] = lo > 0 ? best.reserved_bytes : 0;
    j["parallel"] = parallel_name(a.train.parallel);
    j["world_size"] = a.train.world_size;
    if (a.accounting.unread_count > 0) j["unread_parameter_tensors"] = a.accounting.unread_count;
    if (help) j["advice"] = help->json;
    std::cout << j.dump(2) << "\n";
    return;
  }
  // How the budget came about, and which profile, under the answer.
  const std::string how = o.budget.describe();
  const std::string unread = unread_note(a);
  const std::string notes = (how == format_bytes(budget) ? "" : "  budget: " + how + "\n") +
                            (note.empty() ? "" : "  profile: " + note + "\n") +
                            (unread.empty() ? "" : "  " + unread + "\n");
  if (lo == 0) {
    std::cout << "Not even " << what << " 1 fits in " << format_bytes(budget) << "\n" << notes;
    if (help) std::cout << "  " << help->text << "\n";
    return;
  }
  std::cout << "Largest " << what << " that fits in " << format_bytes(budget) << ": " << lo << "\n"
            << "  peak allocated " << format_bytes(best.peak_bytes) << ", reserved "
            << format_bytes(best.reserved_bytes) << "\n"
            << notes;
  if (found.largest > lo) {
    std::cout << "  " << lo + 1 << " does not fit, though " << found.largest
              << " does: near the cap, where the allocator's large blocks land changes with the size;\n"
              << "  a " << what << " above " << lo << " is a gamble (check the one you pick with `memest check`)\n";
  }
}

// The probes that fitted only at the cap, by value: their capped replays' reserved bytes,
// and the uncapped peak where the probe replayed for it. The answer is often among them
// (the walk for the first failure ends just above it) and then costs at most the
// uncapped replay, often none.
class CappedFits {
 public:
  void add(int64_t v, BudgetProbe&& p) { probes_[v] = std::move(p); }
  const BudgetProbe* find(int64_t v) const {
    const auto at = probes_.find(v);
    return at == probes_.end() ? nullptr : &at->second;
  }

 private:
  std::map<int64_t, BudgetProbe> probes_;
};

int run_sweep(const SweepOptions& o) {
  const int64_t budget = o.budget.bytes();
  const bool by_dim = !o.sweep_dim.empty();
  const std::string what = by_dim ? o.sweep_dim : "batch";
  const Analysis* analysis = nullptr;
  FitSearch found;
  FitAnswer best;
  {
    Progress progress("sweep");  // erased before the answer prints
    progress.update("analysing " + o.common.model);
    analysis = &load_and_analyze(o.common, o.sweep_dim);
    const Analysis& a = *analysis;
    if (!by_dim) require_free_batch(a, "sweep");
    int tried = 0;
    CappedFits at_cap;
    ProbeMemo memo;
    found = search_fitting(
        [&](int64_t v) {
          progress.update("trying " + what + " " + std::to_string(v) + " (" + std::to_string(++tried) + " tried)");
          BudgetProbe p = by_dim ? probe_budget(a, o.common.batch, budget, v, &memo)
                                 : probe_budget(a, v, budget, std::nullopt, &memo);
          const Fit fit = fit_of(p);
          if (fit == Fit::Capped) at_cap.add(v, std::move(p));
          return fit;
        },
        o.max, search_guess(a, budget, by_dim ? std::optional<int64_t>(o.common.batch) : std::nullopt, o.max));
    const int64_t v = found.contiguous;
    if (const BudgetProbe* p = at_cap.find(v)) {
      best = fit_answer(a, by_dim ? o.common.batch : v, by_dim ? std::optional<int64_t>(v) : std::nullopt, *p);
    } else if (v > 0) {
      best = by_dim ? fit_answer(a, o.common.batch, budget, v) : fit_answer(a, v, budget, std::nullopt);
    }
  }
  std::optional<Rescue> help;
  if (found.contiguous == 0 && !by_dim) help = rescue(o, budget);
  print_sweep(o, *analysis, found, best, help ? &*help : nullptr);
  return found.contiguous > 0 ? 0 : 1;
}

}  // namespace

std::function<int()> setup_sweep(CLI::App& app) {
  auto o = std::make_shared<SweepOptions>();
  add_common_options(app, o->common);
  add_budget_options(app, o->budget);
  app.add_option("--sweep", o->sweep_dim, "sweep this symbolic dim instead of the batch (e.g. seq), at --batch");
  app.add_option("--max", o->max, "largest value tried")->capture_default_str();
  return [o]() { return run_sweep(*o); };
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
    require_free_batch(a, "check", o->common.batch);
    Estimate e;
    const bool ok = fits(a, o->common.batch, budget, std::nullopt, &e);
    const int64_t headroom = budget - e.reserved_bytes;
    const std::string note = profile_note(o->budget, *a.train.target);
    // cuDNN's 3-D weight gradients may take more than the estimate holds; the exit code
    // stays the estimate's, the possible excess is told beside it.
    const WorkspaceExcess excess = workspace_excess(a, e.bindings);
    if (o->common.json) {
      nlohmann::json j = {{"model", a.graph.file},        {"batch", o->common.batch}, {"fits", ok},
                          {"peak_bytes", e.peak.peak_bytes}, {"reserved_bytes", e.reserved_bytes},
                          {"budget_bytes", budget},        {"headroom_bytes", headroom},
                          {"capacity_bytes", o->budget.capacity()}, {"margin", o->budget.margin_fraction()},
                          {"profile", a.train.target->name}};
      if (!o->budget.gpu.empty()) j["gpu"] = o->budget.gpu;
      if (!note.empty()) j["profile_note"] = note;
      j["parallel"] = parallel_name(a.train.parallel);
      j["world_size"] = a.train.world_size;
      j["workspace_excess_bytes"] = excess.bytes;
      if (a.accounting.unread_count > 0) j["unread_parameter_tensors"] = a.accounting.unread_count;
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << (ok ? "fits" : "does not fit") << ": batch " << o->common.batch << ", reserved "
                << format_bytes(e.reserved_bytes) << " (allocated " << format_bytes(e.peak.peak_bytes)
                << ") of " << format_bytes(budget) << ", headroom "
                << (headroom < 0 ? "-" + format_bytes(-headroom) : format_bytes(headroom)) << "\n";
      const std::string how = o->budget.describe();
      if (how != format_bytes(budget)) std::cout << "  budget: " << how << "\n";
      if (!note.empty()) std::cout << "  profile: " << note << "\n";
      if (const std::string unread = unread_note(a); !unread.empty()) std::cout << "  " << unread << "\n";
      if (excess.bytes > 0) {
        const int64_t left = headroom - excess.bytes;
        std::cout << "  3-D weight gradients may take up to " << format_bytes(excess.bytes)
                  << " more (cuDNN's split-K, not predictable from shapes; at " << node_label(a, excess.node)
                  << "): headroom then " << (left < 0 ? "-" + format_bytes(-left) : format_bytes(left)) << "\n";
      }
    }
    return ok ? 0 : 1;
  };
}

}  // namespace memest
