// Reports. Every figure comes from the Analysis and Estimate; nothing is recomputed here.
#include "cli/report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "cli/units.h"

namespace memest {
namespace {

std::string truncate_module(const std::string& m, int depth) {
  if (m.empty()) return "(top)";
  if (depth <= 0) return m;
  size_t pos = 0;
  for (int d = 0; d < depth; ++d) {
    pos = m.find('.', pos);
    if (pos == std::string::npos) return m;
    if (d + 1 < depth) ++pos;
  }
  return m.substr(0, pos);
}

std::string eval_shape(const Shape& s, const Bindings& b) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    out += i ? ", " : "";
    try {
      out += std::to_string(s[i].eval(b));
    } catch (...) {
      out += s[i].str();
    }
  }
  return out + "]";
}

const char* amp_name(Amp a) { return a == Amp::FP16 ? "fp16" : a == Amp::BF16 ? "bf16" : "none"; }
const char* optim_name(Optim o) { return o == Optim::Adam ? "adam" : o == Optim::AdamW ? "adamw" : "sgd"; }
const char* loss_name(Loss l) { return l == Loss::MSE ? "mse" : l == Loss::Sum ? "sum" : "ce"; }

std::string node_label(const Analysis& a, int node) {
  if (node < 0 || node >= static_cast<int>(a.graph.nodes.size())) return "";
  const Node& n = a.graph.nodes[node];
  std::string where = n.module.empty() ? n.name : n.module;
  return where.empty() ? n.op : where + " (" + n.op + ")";
}

}  // namespace

std::vector<LayerRow> layer_rows(const Analysis& a, const Estimate& e, int depth) {
  const Graph& g = a.graph;
  const std::vector<int64_t> sizes = block_sizes(a.program, e.bindings, a.train.target->alloc_round);
  std::vector<LayerRow> rows;
  std::map<std::string, size_t> index;
  auto row_for = [&](const std::string& key) -> LayerRow& {
    auto it = index.find(key);
    if (it != index.end()) return rows[it->second];
    index[key] = rows.size();
    rows.push_back({});
    rows.back().module = key;
    rows.back().depth = key == "(top)" ? 0 : static_cast<int>(std::count(key.begin(), key.end(), '.')) + 1;
    return rows.back();
  };
  std::set<int> counted;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (n.dead) continue;
    if (n.op == "Constant" || (n.outputs.size() == 1 && n.outputs[0] >= 0 && g.tensors[n.outputs[0]].value)) continue;
    LayerRow& r = row_for(truncate_module(n.module, depth));
    if (r.ops.find(n.op) == std::string::npos) r.ops += (r.ops.empty() ? "" : ", ") + n.op;
    if (!n.outputs.empty() && n.outputs[0] >= 0 && g.tensors[n.outputs[0]].shape) {
      r.output_shape = eval_shape(*g.tensors[n.outputs[0]].shape, e.bindings);
    }
    for (int b : a.program.saved_by_node[k]) r.saved_bytes += sizes[b];
    for (int in : n.inputs) {
      if (in < 0 || g.tensors[in].kind != TensorKind::Parameter || !counted.insert(in).second) continue;
      r.parameters += product(*g.tensors[in].shape).as_const().value_or(0);
    }
  }
  return rows;
}

nlohmann::json estimate_json(const Analysis& a, const Estimate& e, int depth) {
  using nlohmann::json;
  json j;
  j["model"] = a.graph.file;
  j["batch"] = e.batch;
  j["peak_bytes"] = e.peak.peak_bytes;
  j["reserved_bytes"] = e.reserved_bytes;
  j["requested_peak_bytes"] = e.requested_peak;
  j["phase"] = phase_name(e.peak.phase);
  j["iteration"] = e.peak.iter + 1;
  j["node"] = node_label(a, e.peak.node);
  json comp = json::object();
  for (size_t c = 0; c < kCategoryCount; ++c) comp[category_key(static_cast<Category>(c))] = e.peak.components[c];
  j["components"] = comp;
  j["accounting"] = {{"parameter_count", a.accounting.parameter_count},
                     {"parameter_bytes", a.accounting.parameter_bytes},
                     {"buffer_bytes", a.accounting.buffer_bytes},
                     {"input_bytes", a.accounting.input_bytes.eval(e.bindings)}};
  j["config"] = {{"optim", optim_name(a.train.optim)}, {"momentum", a.train.momentum},
                 {"amp", amp_name(a.train.amp)},        {"loss", loss_name(a.train.loss)},
                 {"attention", a.train.attention == Attention::Fused ? "fused" : "eager"},
                 {"target", a.train.target->name}};
  json dims = json::object();
  for (const auto& [k, v] : a.dims) dims[k] = v;
  j["dims"] = dims;
  json phases = json::array();
  for (const auto& p : e.peak.phases) {
    phases.push_back({{"iteration", p.iter + 1}, {"phase", phase_name(p.phase)}, {"peak_bytes", p.peak}, {"end_bytes", p.end}});
  }
  j["phases"] = phases;
  json layers = json::array();
  for (const auto& r : layer_rows(a, e, depth)) {
    layers.push_back({{"module", r.module}, {"ops", r.ops}, {"output_shape", r.output_shape},
                      {"parameters", r.parameters}, {"saved_bytes", r.saved_bytes}});
  }
  j["layers"] = layers;
  // What is alive at the peak, by the node that allocated it: the answer to "why".
  {
    const std::vector<int64_t> sizes = block_sizes(a.program, e.bindings, a.train.target->alloc_round);
    std::map<std::pair<std::string, std::string>, std::pair<int64_t, int64_t>> groups;
    for (int b : live_blocks(a.program, e.peak.event)) {
      const Block& blk = a.program.blocks[b];
      auto& g = groups[{node_label(a, blk.node), category_key(blk.category)}];
      g.first += 1;
      g.second += sizes[b];
    }
    std::vector<json> live;
    for (const auto& [key, v] : groups) {
      live.push_back({{"allocated_by", key.first.empty() ? "(setup/optimizer)" : key.first},
                      {"category", key.second}, {"count", v.first}, {"bytes", v.second}});
    }
    std::sort(live.begin(), live.end(), [](const json& x, const json& y) { return x["bytes"] > y["bytes"]; });
    j["live_at_peak"] = live;
  }
  j["warnings"] = a.graph.warnings;
  j["unsupported_ops"] = a.unsupported;
  j["inference_export"] = a.inference_export;
  return j;
}

std::string estimate_text(const Analysis& a, const Estimate& e, int depth) {
  std::ostringstream out;
  const auto rows = layer_rows(a, e, depth);
  size_t wmod = 12, wops = 8, wshape = 12;
  for (const auto& r : rows) {
    wmod = std::max(wmod, std::min<size_t>(r.module.size(), 40));
    wops = std::max(wops, std::min<size_t>(r.ops.size(), 36));
    wshape = std::max(wshape, std::min<size_t>(r.output_shape.size(), 28));
  }
  char line[512];
  auto cut = [](const std::string& s, size_t w) { return s.size() <= w ? s : s.substr(0, w - 1) + "~"; };
  out << a.graph.file << " | batch " << e.batch << " | " << optim_name(a.train.optim)
      << (a.train.momentum != 0 ? " momentum " + std::to_string(a.train.momentum).substr(0, 4) : "") << " | amp "
      << amp_name(a.train.amp) << " | loss " << loss_name(a.train.loss) << " | " << a.train.target->name << "\n\n";
  std::snprintf(line, sizeof(line), "%-*s  %-*s  %-*s  %14s  %12s\n", static_cast<int>(wmod), "Layer",
                static_cast<int>(wops), "Ops", static_cast<int>(wshape), "Output shape", "Params", "Saved");
  out << line << std::string(wmod + wops + wshape + 34, '-') << "\n";
  int64_t total_params = 0, total_saved = 0;
  for (const auto& r : rows) {
    std::snprintf(line, sizeof(line), "%-*s  %-*s  %-*s  %14s  %12s\n", static_cast<int>(wmod),
                  cut(r.module, wmod).c_str(), static_cast<int>(wops), cut(r.ops, wops).c_str(),
                  static_cast<int>(wshape), cut(r.output_shape, wshape).c_str(),
                  r.parameters ? thousands(r.parameters).c_str() : "--",
                  r.saved_bytes ? format_bytes(r.saved_bytes).c_str() : "--");
    out << line;
    total_params += r.parameters;
    total_saved += r.saved_bytes;
  }
  out << std::string(wmod + wops + wshape + 34, '-') << "\n";
  std::snprintf(line, sizeof(line), "%-*s  %14s  %12s\n", static_cast<int>(wmod + wops + wshape + 4), "Total",
                thousands(total_params).c_str(), format_bytes(total_saved).c_str());
  out << line << "\n";
  out << "Parameters: " << thousands(a.accounting.parameter_count) << " ("
      << format_bytes(a.accounting.parameter_bytes) << "), buffers " << format_bytes(a.accounting.buffer_bytes)
      << ", inputs and targets " << format_bytes(a.accounting.input_bytes.eval(e.bindings)) << "\n\n";
  out << "At the peak (" << phase_name(e.peak.phase) << ", iteration " << e.peak.iter + 1;
  std::string where = node_label(a, e.peak.node);
  out << (where.empty() ? "" : ", " + where) << "):\n";
  for (size_t c = 0; c < kCategoryCount; ++c) {
    if (e.peak.components[c] == 0) continue;
    std::snprintf(line, sizeof(line), "  %-18s %12s\n", category_title(static_cast<Category>(c)),
                  format_bytes(e.peak.components[c]).c_str());
    out << line;
  }
  std::snprintf(line, sizeof(line), "\nPeak allocated (max_memory_allocated):  %s (%s bytes)\n",
                format_bytes(e.peak.peak_bytes).c_str(), thousands(e.peak.peak_bytes).c_str());
  out << line;
  std::snprintf(line, sizeof(line), "Peak reserved  (max_memory_reserved):   %s (caching allocator model)\n",
                format_bytes(e.reserved_bytes).c_str());
  out << line;
  return out.str();
}

}  // namespace memest
