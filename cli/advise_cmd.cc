// `memest advise`: what to change when a step does not fit. Each what-if re-runs
// the analysis under a changed training configuration (gradient accumulation: K
// micro-batches of batch / K, gradients kept across them; LoRA: adapters added to the
// graph first), and the what-ifs are ranked by their predicted peak.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <tuple>

#include "cli/advise.h"
#include "cli/commands.h"
#include "cli/fit.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "cli/units.h"
#include "estimator/error.h"
#include "estimator/finetune.h"
#include "estimator/lora.h"

namespace memest {
namespace {

// Fine-tuning what-ifs (protocol.md "Fine-tuning"), offered while every parameter
// trains: the head alone, the first half of the model frozen, and LoRA where the graph
// has Linear layers peft would wrap by default.
void fine_tuning_what_ifs(const Graph& raw, const Graph& g, const TrainConfig& now, std::vector<WhatIf>& out) {
  if (!now.train.empty() || !now.freeze.empty()) return;
  // Parameter-owning modules in the order they run.
  std::vector<std::string> modules;
  std::vector<int> first_node;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (n.dead) continue;
    for (int in : n.inputs) {
      if (in < 0 || g.tensors[in].kind != TensorKind::Parameter) continue;
      const std::string m = module_from_param_name(parameter_name(g, in));
      if (m.empty() || m.find("lora_") != std::string::npos) continue;
      if (std::find(modules.begin(), modules.end(), m) == modules.end()) {
        modules.push_back(m);
        first_node.push_back(static_cast<int>(k));
      }
    }
  }
  if (modules.size() >= 2) {
    TrainConfig t = now;
    t.train = {modules.back()};
    out.push_back({"train the head only (--train " + modules.back() + ")", "train_head", t, 1});
  }
  const std::vector<Segment> blocks = checkpoint_segments(g, Checkpoint::Blocks);
  if (blocks.size() >= 2) {
    TrainConfig t = now;
    const int middle = blocks[blocks.size() / 2].first;
    for (size_t i = 0; i < modules.size(); ++i) {
      if (first_node[i] < middle) t.freeze.push_back(modules[i]);
    }
    if (!t.freeze.empty()) {
      out.push_back({"freeze the first half (up to " + blocks[blocks.size() / 2 - 1].module + ")", "freeze_half", t, 1});
    }
  }
  for (const std::string& m : modules) {
    if (m.find("lora_") != std::string::npos) return;  // adapters already: --train '*lora_*' is the proposal
  }
  const int wrapped = lora_sites(raw, LoraSpec{});
  if (wrapped > 0) {
    TrainConfig t = now;
    t.train = {kLoraTrainPattern};
    out.push_back({"LoRA r=8 on " + std::to_string(wrapped) + " attention projections (--lora 8)", "lora_8", t, 1, 8});
  }
}

// The what-ifs that apply to a graph (`raw` as read, `g` analysed) and its configuration.
std::vector<WhatIf> what_ifs(const Graph& raw, const Graph& g, const TrainConfig& now, int64_t batch,
                             bool batch_is_free) {
  std::vector<WhatIf> out;
  auto add = [&](std::string name, std::string key, auto change) {
    TrainConfig t = now;
    if (change(t)) out.push_back({std::move(name), std::move(key), t, 1});
  };
  if (now.amp == Amp::None) {
    add("AMP fp16 (autocast)", "amp_fp16", [](TrainConfig& t) {
      t.amp = Amp::FP16;
      return true;
    });
    add("AMP bf16 (autocast)", "amp_bf16", [](TrainConfig& t) {
      t.amp = Amp::BF16;
      return true;
    });
  }
  for (auto [mode, name, key] : {std::tuple{Checkpoint::Blocks, "checkpoint each block", "checkpoint_blocks"},
                                 std::tuple{Checkpoint::Sqrt, "checkpoint sqrt(n) segments", "checkpoint_sqrt"}}) {
    // A graph without repeated blocks has nothing to checkpoint.
    add(name, key, [&g, mode = mode](TrainConfig& t) {
      if (t.checkpoint == mode || checkpoint_segments(g, mode).empty()) return false;
      t.checkpoint = mode;
      return true;
    });
  }
  if (now.optim == Optim::Adam || now.optim == Optim::AdamW) {
    if (now.foreach) {
      add("fused Adam (fused=True)", "fused_adam", [](TrainConfig& t) {
        t.foreach = false;
        return true;
      });
    }
    add("SGD momentum 0.9 instead of Adam", "sgd", [](TrainConfig& t) {
      t.optim = Optim::SGD;
      t.momentum = 0.9;
      return true;
    });
  }
  fine_tuning_what_ifs(raw, g, now, out);
  // Accumulation: K micro-batches of batch / K per step, the gradients kept across them.
  for (int64_t k : {2, 4, 8}) {
    if (!batch_is_free || batch % k != 0) continue;
    TrainConfig t = now;
    t.grad_accum = static_cast<int>(now.grad_accum * k);
    out.push_back({"gradient accumulation " + std::to_string(k) + " x " + std::to_string(batch / k),
                   "accumulate_" + std::to_string(k), t, k});
  }
  return out;
}

// Whole MiB, toward zero: a few KiB more is "0", not "-0".
std::string saving_mib(int64_t saved) { return thousands(saved / (1 << 20)); }

std::string saving_percent(int64_t saved, int64_t of) {
  const double pct = of > 0 ? 100.0 * static_cast<double>(saved) / static_cast<double>(of) : 0;
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", std::fabs(pct) < 0.05 ? 0.0 : pct);
  return buf;
}

std::string largest(const Outcome& o) {
  if (o.max_micro_batch < 0) return "--";
  if (o.what.steps == 1 || o.max_micro_batch == 0) return thousands(o.max_micro_batch);
  return std::to_string(o.what.steps) + " x " + thousands(o.max_micro_batch) + " = " +
         thousands(o.what.steps * o.max_micro_batch);
}

// Estimates one what-if on analysis `a` at `batch` / its steps, and with `search`
// its largest batch by the same search as sweep.
void estimate_outcome(Outcome& out, const Analysis& a, int64_t batch, std::optional<int64_t> budget, bool search,
                      Progress& progress, const std::string& step) {
  out.micro_batch = batch / out.what.steps;
  const Estimate e = estimate(a, out.micro_batch);
  out.peak = e.peak.peak_bytes;
  out.reserved = e.reserved_bytes;
  if (!budget || !search) return;
  ProbeMemo memo;
  out.max_micro_batch = search_fitting(
                            [&](int64_t b) {
                              progress.update(step + ": trying batch " + std::to_string(b));
                              return fit_of(probe_budget(a, b, *budget, std::nullopt, &memo));
                            },
                            kDefaultMaxBatch, search_guess(a, *budget, std::nullopt))
                            .contiguous;
}

void print_json(const Analysis& now, int64_t batch, std::optional<int64_t> budget, const std::vector<Outcome>& rows) {
  const int64_t base_peak = rows[0].peak;
  nlohmann::json j;
  j["model"] = now.graph.file;
  j["batch"] = batch;
  if (budget) j["budget_bytes"] = *budget;
  j["what_ifs"] = nlohmann::json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    const Outcome& r = rows[i];
    nlohmann::json w = {{"rank", i}, {"key", r.what.key}, {"name", r.what.name}};
    if (!r.error.empty()) {
      w["error"] = r.error;
    } else {
      w["batch"] = r.micro_batch;
      w["accumulation_steps"] = r.what.steps;
      w["peak_bytes"] = r.peak;
      w["reserved_bytes"] = r.reserved;
      w["saving_bytes"] = base_peak - r.peak;
      w["saving_fraction"] = base_peak > 0 ? static_cast<double>(base_peak - r.peak) / base_peak : 0.0;
      if (r.max_micro_batch >= 0) {
        w["max_batch"] = r.max_micro_batch * r.what.steps;
        w["max_micro_batch"] = r.max_micro_batch;
      }
    }
    j["what_ifs"].push_back(w);
  }
  std::cout << j.dump(2) << "\n";
}

void print_table(std::optional<int64_t> budget, const std::vector<Outcome>& rows) {
  const int64_t base_peak = rows[0].peak;
  size_t wname = 24, wlargest = 13;
  for (const auto& r : rows) {
    wname = std::max(wname, r.what.name.size());
    wlargest = std::max(wlargest, largest(r).size());
  }
  // Without a budget there is no largest batch: the column goes.
  const int wbig = budget ? static_cast<int>(wlargest) : 0;
  char line[512];
  auto print = [&](const std::string& rank, const std::string& name, const std::string& peak, const std::string& mib,
                   const std::string& pct, const std::string& big) {
    std::snprintf(line, sizeof(line), "%-4s  %-*s  %14s  %13s  %7s  %*s", rank.c_str(), static_cast<int>(wname),
                  name.c_str(), peak.c_str(), mib.c_str(), pct.c_str(), wbig, budget ? big.c_str() : "");
    std::string s = line;
    while (!s.empty() && s.back() == ' ') s.pop_back();
    std::cout << s << "\n";
  };
  print("Rank", "What-if", "Peak allocated", "Saving (MiB)", "Saving", "Largest batch");
  std::cout << std::string(4 + wname + 14 + 13 + 7 + (budget ? wlargest + 10 : 8), '-') << "\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Outcome& r = rows[i];
    if (!r.error.empty()) {
      std::cout << std::string(6, ' ') << r.what.name << ": not estimated: " << r.error << "\n";
      continue;
    }
    print(i == 0 ? "" : std::to_string(i), r.what.name, format_bytes(r.peak), i == 0 ? "--" : saving_mib(base_peak - r.peak),
          i == 0 ? "--" : saving_percent(base_peak - r.peak, base_peak), largest(r));
  }
}

}  // namespace

std::vector<Outcome> rank_what_ifs(const CommonOptions& o, int64_t batch, std::optional<int64_t> budget,
                                   Progress& progress, Analysis* now) {
  const AnalysisOptions base = analysis_options(o);
  std::vector<Outcome> rows;
  progress.update("reading " + o.model);
  const Graph graph = load_graph(o);
  progress.update("analysing " + o.model);
  *now = analyze(graph, base);
  // A file that fixes the batch has no largest batch to search for.
  const bool batch_is_free = !fixed_batch(*now);
  const std::vector<WhatIf> whats = what_ifs(graph, now->graph, now->train, batch, batch_is_free);
  rows.emplace_back().what = {"current configuration", "current", now->train, 1};
  estimate_outcome(rows[0], *now, batch, budget, batch_is_free, progress, "current");
  for (size_t i = 0; i < whats.size(); ++i) {
    Outcome out;
    out.what = whats[i];
    const std::string step = "[" + std::to_string(i + 1) + "/" + std::to_string(whats.size()) + "] " + whats[i].name;
    try {
      progress.update(step + ": analysing");
      AnalysisOptions opts = base;
      opts.train = whats[i].train;
      const Analysis a = whats[i].lora_rank > 0 ? analyze(with_lora(graph, LoraSpec{whats[i].lora_rank}, nullptr), opts)
                                                : analyze(graph, opts);
      estimate_outcome(out, a, batch, budget, batch_is_free, progress, step);
    } catch (const Error& err) {
      out.error = err.message();
    }
    rows.push_back(std::move(out));
  }
  // Ranked by peak; what could not be estimated goes last.
  std::stable_sort(rows.begin() + 1, rows.end(), [](const Outcome& x, const Outcome& y) {
    if (x.error.empty() != y.error.empty()) return x.error.empty();
    return x.peak < y.peak;
  });
  return rows;
}

std::function<int()> setup_advise(CLI::App& app) {
  struct Opts {
    CommonOptions common;
    BudgetOptions budget;
  };
  auto o = std::make_shared<Opts>();
  add_common_options(app, o->common);
  add_budget_options(app, o->budget);
  return [o]() {
    const std::optional<int64_t> budget = o->budget.given() ? std::optional(o->budget.bytes()) : std::nullopt;
    Analysis now;
    std::vector<Outcome> rows;
    {
      Progress progress("advise");  // erased before the table prints
      rows = rank_what_ifs(o->common, o->common.batch, budget, progress, &now);
    }
    const int64_t batch = fixed_batch(now).value_or(o->common.batch);
    if (o->common.json) {
      print_json(now, batch, budget, rows);
      return 0;
    }
    for (const auto& w : now.graph.warnings) std::cerr << "memest: warning: " << w << "\n";
    std::cout << config_line(now, batch) << "\n";
    if (budget) std::cout << "Budget: " << o->budget.describe() << "\n";
    const std::string note = profile_note(o->budget, *now.train.target);
    if (!note.empty()) std::cout << "Profile: " << note << "\n";
    std::cout << "\n";
    print_table(budget, rows);
    std::cout << "\nEach what-if changes one thing and re-runs the simulator. Gradient accumulation runs K\n"
                 "micro-batches of batch / K per step; its largest batch is K x the largest micro-batch that fits.\n";
    if (!budget) std::cout << "Give --budget SIZE or --gpu NAME for the largest batch that fits each.\n";
    return 0;
  };
}

}  // namespace memest
