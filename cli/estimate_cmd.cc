// `memest MODEL ...`: one estimate, as a table or JSON.
#include <chrono>
#include <iostream>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/report.h"
#include "cli/timeline.h"
#include "estimator/error.h"

namespace memest {

std::function<int()> setup_estimate(CLI::App& app) {
  struct Opts {
    CommonOptions common;
    int depth = 3;
    std::string timeline;
  };
  auto o = std::make_shared<Opts>();
  add_common_options(app, o->common);
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
  return [o]() {
    const auto t0 = std::chrono::steady_clock::now();
    const Analysis& a = load_and_analyze(o->common);
    Estimate e = estimate(a, o->common.batch);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
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
      std::cout << estimate_text(a, e, o->depth);
    }
    if (!o->timeline.empty()) write_timeline(o->timeline, a, e);
    return 0;
  };
}

}  // namespace memest
