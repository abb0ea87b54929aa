// `memest MODEL ...`: one estimate, as a table or JSON.
#include <chrono>
#include <iostream>

#include "cli/commands.h"
#include "cli/events.h"
#include "cli/fit.h"
#include "cli/options.h"
#include "cli/report.h"
#include "cli/timeline.h"
#include "cli/units.h"
#include "estimator/error.h"

namespace memest {
namespace {

// The default depth keeps the tree to a screen or two: top-level modules and their
// children (ResNeXt-101 at depth 3 was 375 lines before the summary).
constexpr int kDefaultDepth = 2;

// "Fits in 14.25 GiB (...): reserved 9.1 GiB, headroom 5.1 GiB", against a budget.
std::string verdict(const Analysis& a, const Estimate& e, const BudgetOptions& b, bool* ok) {
  Estimate capped;
  *ok = fits(a, e.batch, b.bytes(), std::nullopt, &capped);
  const int64_t headroom = b.bytes() - capped.reserved_bytes;
  std::string s = std::string(*ok ? "Fits" : "Does not fit") + " in " + format_bytes(b.bytes()) + ": reserved " +
                  format_bytes(capped.reserved_bytes) + ", headroom " +
                  (headroom < 0 ? "-" + format_bytes(-headroom) : format_bytes(headroom));
  if (b.describe() != format_bytes(b.bytes())) s += "\n  budget: " + b.describe();
  const std::string note = profile_note(b, *a.train.target);
  return note.empty() ? s : s + "\n  profile: " + note;
}

}  // namespace

std::function<int()> setup_estimate(CLI::App& app) {
  struct Opts {
    CommonOptions common;
    BudgetOptions budget;
    int depth = kDefaultDepth;
    std::string timeline;
    std::string events;
  };
  auto o = std::make_shared<Opts>();
  add_common_options(app, o->common);
  add_budget_options(app, o->budget);
  app.add_option("--depth", o->depth, "module levels the layer table groups by (0: every module)")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  app.add_option("--timeline", o->timeline,
                 "also draw memory over the step to FILE.svg (or FILE.html: the SVG in a page)")
      ->check([](const std::string& f) {
        try {
          timeline_format(f);
          return std::string();
        } catch (const Error& e) {
          return e.message();
        }
      });
  app.add_option("--events", o->events,
                 "also write the simulated allocation sequence to FILE, one request or free a line "
                 "(tab-separated: iteration, phase, A/F, bytes, category, node, block), to set beside a torch "
                 "memory snapshot's trace (tools/sequence_diff.py)");
  return [o]() {
    const auto t0 = std::chrono::steady_clock::now();
    const Analysis& a = load_and_analyze(o->common);
    Estimate e = estimate(a, o->common.batch);
    // A file without a symbolic batch fixes it: report the batch its shapes have.
    if (auto fixed = fixed_batch(a); fixed && *fixed > 0) e.batch = *fixed;
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    bool ok = true;
    const std::string fit = o->budget.given() ? verdict(a, e, o->budget, &ok) : "";
    if (o->common.json) {
      try {
        write_estimate_json(std::cout, a, e, o->depth, ms);
      } catch (const Error& err) {  // a name in the file that is not UTF-8
        throw err.in_file(a.graph.file);
      }
      std::cout << "\n";
    } else {
      for (const auto& w : a.graph.warnings) std::cerr << "memest: warning: " << w << "\n";
      if (const int64_t fb = a.fallback_bytes.substitute(e.bindings).as_const().value_or(0); fb > 0) {
        std::cerr << "memest: warning: " << fb << " bytes of tensors rest on assumed shapes (see above)\n";
      }
      if (const WorkspaceExcess x = workspace_excess(a, e.bindings); x.bytes > 0) {
        std::cerr << "memest: warning: cuDNN's weight-gradient workspace for 3-D convolutions is not predictable from "
                     "shapes (split-K partial sums); by an envelope over 9 in 10 probed 3-D layers the peak may be up to "
                  << format_bytes(x.bytes) << " higher, at " << node_label(a, x.node)
                  << ": leave that margin (--margin), or measure one step\n";
      }
      std::cout << estimate_text(a, e, o->depth, fit);
    }
    if (!o->timeline.empty()) write_timeline(o->timeline, a, e);
    if (!o->events.empty()) write_events(o->events, a, e);
    return 0;
  };
}

}  // namespace memest
