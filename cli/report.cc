// Reports. Every figure comes from the Analysis and Estimate; nothing is recomputed here.
#include "cli/report.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "cli/json_writer.h"
#include "cli/units.h"
#include "estimator/allocator.h"

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
const char* checkpoint_name(Checkpoint c) { return c == Checkpoint::Blocks ? "blocks" : c == Checkpoint::Sqrt ? "sqrt" : "none"; }

// Columns are padded by what a terminal shows: the tree glyphs are three bytes
// each in UTF-8 but one column wide.
size_t columns(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string fit_to(const std::string& s, size_t width, bool right = false) {
  std::string out = s;
  if (columns(out) > width) {
    size_t keep = 0, seen = 0;
    while (keep < out.size() && (seen < width - 1 || (static_cast<unsigned char>(out[keep]) & 0xC0) == 0x80)) {
      seen += (static_cast<unsigned char>(out[keep]) & 0xC0) != 0x80;
      ++keep;
    }
    out = out.substr(0, keep) + "~";
  }
  const std::string pad(width - columns(out), ' ');
  return right ? pad + out : out + pad;
}

std::string percent(double share, int64_t bytes) {
  if (bytes == 0) return "--";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", 100 * share);
  return buf;
}

// Bytes alive at the peak, split into what each node allocated and what is held
// outside the layers. Parameters, buffers, inputs and optimizer state belong to the
// model and optimizer; a library workspace is a per-handle cache that whichever op
// first needs it allocates, so it is no layer's either.
struct PeakOwners {
  std::vector<int64_t> by_node;
  std::array<int64_t, kCategoryCount> outside{};
};

PeakOwners peak_owners(const Analysis& a, const Estimate& e, const std::vector<int64_t>& granted) {
  PeakOwners o;
  o.by_node.assign(a.graph.nodes.size(), 0);
  for (int b : live_blocks(a.program, e.peak.event)) {
    const Block& blk = a.program.blocks[b];
    const int64_t bytes = static_cast<size_t>(b) < granted.size() ? granted[b] : 0;
    const bool layer_owned = blk.category == Category::Activations || blk.category == Category::Temporaries ||
                             blk.category == Category::AutocastCache || blk.category == Category::Gradients;
    if (layer_owned && blk.node >= 0) {
      o.by_node[blk.node] += bytes;
    } else {
      o.outside[static_cast<size_t>(blk.category)] += bytes;
    }
  }
  return o;
}

// A module path's parent: "layer1.0.conv1" -> "layer1.0"; "" for a top-level one.
std::string parent_path(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

}  // namespace

std::string node_label(const Analysis& a, int node) {
  if (node < 0 || node >= static_cast<int>(a.graph.nodes.size())) return "";
  const Node& n = a.graph.nodes[node];
  std::string where = n.module.empty() ? n.name : n.module;
  return where.empty() ? n.op : where + " (" + n.op + ")";
}

std::string config_line(const Analysis& a, int64_t batch) {
  std::ostringstream out;
  out << a.graph.file << " | batch " << batch << " | " << optim_name(a.train.optim)
      << (a.train.momentum != 0 ? " momentum " + std::to_string(a.train.momentum).substr(0, 4) : "") << " | amp "
      << amp_name(a.train.amp) << " | loss " << loss_name(a.train.loss)
      << (a.train.checkpoint != Checkpoint::None ? std::string(" | checkpoint ") + checkpoint_name(a.train.checkpoint) : "")
      << " | " << a.train.target->name;
  return out.str();
}

std::vector<int64_t> allocated_sizes(const Analysis& a, const Estimate& e) {
  if (e.granted.size() == a.program.blocks.size()) return e.granted;
  return replay_allocator(a.program, e.bindings, a.train.target->alloc_round).granted;
}

namespace {

// The estimate's block sizes, replayed only when it came without them; not copied
// (a million-node program's are 55 MB).
const std::vector<int64_t>& granted_of(const Analysis& a, const Estimate& e, std::vector<int64_t>* replayed) {
  if (e.granted.size() == a.program.blocks.size()) return e.granted;
  *replayed = allocated_sizes(a, e);
  return *replayed;
}

// layer_rows with the allocator's block sizes already replayed (a replay of a
// 100k-node graph takes a noticeable part of a second).
std::vector<LayerRow> layer_rows(const Analysis& a, const Estimate& e, int depth, const std::vector<int64_t>& granted) {
  const Graph& g = a.graph;
  const std::vector<int64_t> sizes = block_sizes(a.program, e.bindings, a.train.target->alloc_round);
  const std::vector<int64_t> at_peak = peak_owners(a, e, granted).by_node;
  // Saved bytes go to the node that produced them, each block once, though several
  // nodes may keep it (a ReLU's output, kept by the ReLU and the next Conv); weights
  // and inputs that autograd keeps are held anyway and are not counted.
  std::vector<int64_t> saved_by(g.nodes.size(), 0);
  {
    std::vector<char> seen(a.program.blocks.size(), 0);
    for (const auto& blocks : a.program.saved_by_node) {
      for (int b : blocks) {
        const Block& blk = a.program.blocks[b];
        if (seen[b] || blk.node < 0 || blk.category == Category::Parameters || blk.category == Category::Buffers ||
            blk.category == Category::Inputs) {
          continue;
        }
        seen[b] = 1;
        saved_by[blk.node] += sizes[b];
      }
    }
  }

  struct TreeNode {
    LayerRow row;
    int parent = -1;
    std::vector<int> children;
  };
  std::vector<TreeNode> tree;
  std::vector<int> roots;
  std::map<std::string, int> index;
  // Ancestors are created before descendants, so siblings keep the order of first use.
  auto tree_node = [&](const std::string& path, auto& self) -> int {
    auto it = index.find(path);
    if (it != index.end()) return it->second;
    const std::string up = path == "(top)" ? "" : parent_path(path);
    const int parent = up.empty() ? -1 : self(up, self);
    const int id = static_cast<int>(tree.size());
    index[path] = id;
    tree.push_back({});
    tree[id].row.module = path;
    tree[id].row.name = up.empty() ? path : path.substr(up.size() + 1);
    tree[id].parent = parent;
    (parent < 0 ? roots : tree[parent].children).push_back(id);
    return id;
  };

  std::set<int> counted;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    const bool folded =
        n.dead || n.op == "Constant" || (n.outputs.size() == 1 && n.outputs[0] >= 0 && g.tensors[n.outputs[0]].value);
    if (folded && at_peak[k] == 0 && saved_by[k] == 0) continue;  // shape arithmetic that holds nothing
    const int id = tree_node(truncate_module(n.module, depth), tree_node);
    LayerRow& own = tree[id].row;
    // Whole names: "Conv" is not in "ConvTranspose".
    if ((", " + own.ops + ", ").find(", " + n.op + ", ") == std::string::npos) {
      own.ops += (own.ops.empty() ? "" : ", ") + n.op;
    }
    int64_t params = 0;
    const int64_t saved = saved_by[k];
    for (int in : n.inputs) {
      if (in < 0 || g.tensors[in].kind != TensorKind::Parameter || !counted.insert(in).second) continue;
      params += product(*g.tensors[in].shape).as_const().value_or(0);
    }
    std::string shape;
    if (!n.outputs.empty() && n.outputs[0] >= 0 && g.tensors[n.outputs[0]].shape) {
      shape = eval_shape(*g.tensors[n.outputs[0]].shape, e.bindings);
    }
    // A parent includes its children: every figure goes to the module and all above it.
    for (int t = id; t >= 0; t = tree[t].parent) {
      LayerRow& r = tree[t].row;
      r.parameters += params;
      r.saved_bytes += saved;
      r.peak_bytes += at_peak[k];
      if (!shape.empty()) r.output_shape = shape;
    }
  }

  std::vector<LayerRow> rows;
  rows.reserve(tree.size());
  auto emit = [&](const std::vector<int>& ids, int level, auto& self) -> void {
    for (size_t i = 0; i < ids.size(); ++i) {
      LayerRow r = tree[ids[i]].row;
      r.depth = level;
      r.last = i + 1 == ids.size();
      r.share = e.peak.peak_bytes > 0 ? static_cast<double>(r.peak_bytes) / static_cast<double>(e.peak.peak_bytes) : 0;
      rows.push_back(std::move(r));
      self(tree[ids[i]].children, level + 1, self);
    }
  };
  emit(roots, 1, emit);
  return rows;
}

}  // namespace

std::vector<LayerRow> layer_rows(const Analysis& a, const Estimate& e, int depth) {
  return layer_rows(a, e, depth, allocated_sizes(a, e));
}

void write_estimate_json(std::ostream& out, const Analysis& a, const Estimate& e, int depth, double time_ms) {
  // Keys in ascending byte order in every object, as nlohmann (a std::map) printed them.
  JsonWriter w(out);
  w.begin_object();
  w.key("accounting");
  w.begin_object();
  w.field("buffer_bytes", a.accounting.buffer_bytes);
  w.field("input_bytes", a.accounting.input_bytes.eval(e.bindings));
  w.field("parameter_bytes", a.accounting.parameter_bytes);
  w.field("parameter_count", a.accounting.parameter_count);
  w.end_object();
  w.field("batch", e.batch);
  w.key("components");
  w.begin_object();
  std::array<size_t, kCategoryCount> by_key;
  for (size_t c = 0; c < kCategoryCount; ++c) by_key[c] = c;
  std::sort(by_key.begin(), by_key.end(), [](size_t x, size_t y) {
    return std::strcmp(category_key(static_cast<Category>(x)), category_key(static_cast<Category>(y))) < 0;
  });
  for (size_t c : by_key) w.field(category_key(static_cast<Category>(c)), e.peak.components[c]);
  w.end_object();
  w.key("config");
  w.begin_object();
  w.field("amp", amp_name(a.train.amp));
  w.field("attention", a.train.attention == Attention::Fused ? "fused" : "eager");
  w.field("checkpoint", checkpoint_name(a.train.checkpoint));
  w.field("loss", loss_name(a.train.loss));
  w.field("momentum", a.train.momentum);
  w.field("optim", optim_name(a.train.optim));
  w.field("target", a.train.target->name);
  w.end_object();
  w.key("dims");
  w.begin_object();
  for (const auto& [k, v] : a.dims) w.field(k, v);
  w.end_object();
  w.field("event", e.peak.event);  // index into the simulated events: the timeline's x at the peak
  w.field("inference_export", a.inference_export);
  w.field("iteration", e.peak.iter + 1);
  std::vector<int64_t> replayed;
  const std::vector<int64_t>& granted = granted_of(a, e, &replayed);
  w.key("layers");
  w.begin_array();
  for (const auto& r : layer_rows(a, e, depth, granted)) {
    w.begin_object();
    w.field("depth", r.depth);
    w.field("module", r.module);
    w.field("ops", r.ops);
    w.field("output_shape", r.output_shape);
    w.field("parameters", r.parameters);
    w.field("peak_bytes", r.peak_bytes);
    w.field("saved_bytes", r.saved_bytes);
    w.field("share", r.share);
    w.end_object();
  }
  w.end_array();
  // What is alive at the peak, by the node that allocated it: the answer to "why".
  // Sizes as the allocator handed them out, so the groups sum to peak_bytes.
  {
    std::map<std::pair<std::string, std::string>, std::pair<int64_t, int64_t>> groups;
    for (int b : live_blocks(a.program, e.peak.event)) {
      const Block& blk = a.program.blocks[b];
      auto& g = groups[{node_label(a, blk.node), category_key(blk.category)}];
      g.first += 1;
      g.second += granted[b];
    }
    struct Live {
      const std::string* label;
      const std::string* category;
      int64_t count, bytes;
    };
    std::vector<Live> live;
    for (const auto& [key, v] : groups) live.push_back({&key.first, &key.second, v.first, v.second});
    std::sort(live.begin(), live.end(), [](const Live& x, const Live& y) { return x.bytes > y.bytes; });
    w.key("live_at_peak");
    w.begin_array();
    for (const Live& l : live) {
      w.begin_object();
      w.field("allocated_by", l.label->empty() ? std::string_view("(setup/optimizer)") : std::string_view(*l.label));
      w.field("bytes", l.bytes);
      w.field("category", *l.category);
      w.field("count", l.count);
      w.end_object();
    }
    w.end_array();
  }
  w.field("model", a.graph.file);
  w.field("node", node_label(a, e.peak.node));
  w.field("peak_bytes", e.peak.peak_bytes);
  w.field("phase", phase_name(e.peak.phase));
  w.key("phases");
  w.begin_array();
  for (const auto& p : e.peak.phases) {
    w.begin_object();
    w.field("end_bytes", p.end);
    w.field("iteration", p.iter + 1);
    w.field("peak_bytes", p.peak);
    w.field("phase", phase_name(p.phase));
    w.end_object();
  }
  w.end_array();
  w.field("requested_peak_bytes", e.requested_peak);
  w.field("reserved_bytes", e.reserved_bytes);
  w.field("time_ms", time_ms);
  w.key("unsupported_ops");
  w.begin_array();
  for (const auto& op : a.unsupported) w.value(op);
  w.end_array();
  w.key("warnings");
  w.begin_array();
  for (const auto& warning : a.graph.warnings) w.value(warning);
  w.end_array();
  w.end_object();
}

std::string estimate_text(const Analysis& a, const Estimate& e, int depth) {
  std::ostringstream out;
  std::vector<int64_t> replayed;
  const std::vector<int64_t>& granted = granted_of(a, e, &replayed);
  const auto rows = layer_rows(a, e, depth, granted);
  // Tree prefixes: "│  " under a parent with siblings still to come, "   " under a last child.
  std::vector<std::string> labels;
  std::vector<bool> open;  // open[d]: the ancestor at depth d+1 has siblings below
  for (const auto& r : rows) {
    open.resize(static_cast<size_t>(r.depth));
    std::string prefix;
    for (int d = 0; d + 1 < r.depth; ++d) prefix += open[static_cast<size_t>(d)] ? "│  " : "   ";
    prefix += r.last ? "└─ " : "├─ ";
    open[static_cast<size_t>(r.depth - 1)] = !r.last;
    labels.push_back(prefix + r.name);
  }
  const std::string title = "Layer (depth " + (depth > 0 ? std::to_string(depth) : std::string("all")) + ")";
  size_t wname = title.size(), wops = 8, wshape = 12;
  for (size_t i = 0; i < rows.size(); ++i) {
    wname = std::max(wname, std::min<size_t>(columns(labels[i]), 48));
    wops = std::max(wops, std::min<size_t>(rows[i].ops.size(), 28));
    wshape = std::max(wshape, std::min<size_t>(rows[i].output_shape.size(), 24));
  }
  constexpr size_t wparams = 14, wsaved = 11, wshare = 7;
  const size_t width = wname + wops + wshape + wparams + wsaved + wshare + 10;
  auto line = [&](const std::string& name, const std::string& ops, const std::string& shape, const std::string& params,
                  const std::string& saved, const std::string& share) {
    std::string s = fit_to(name, wname) + "  " + fit_to(ops, wops) + "  " + fit_to(shape, wshape) + "  " +
                    fit_to(params, wparams, true) + "  " + fit_to(saved, wsaved, true) + "  " +
                    fit_to(share, wshare, true);
    while (!s.empty() && s.back() == ' ') s.pop_back();
    out << s << "\n";
  };

  out << config_line(a, e.batch) << "\n\n";
  line(title, "Ops", "Output shape", "Params", "Saved", "Share");
  out << std::string(width, '=') << "\n";
  out << a.graph.file.substr(a.graph.file.find_last_of('/') + 1) << "\n";
  int64_t total_params = 0, total_saved = 0, total_peak = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const LayerRow& r = rows[i];
    line(labels[i], r.ops.empty() ? "--" : r.ops, r.output_shape.empty() ? "--" : r.output_shape,
         r.parameters ? thousands(r.parameters) : "--", r.saved_bytes ? format_bytes(r.saved_bytes) : "--",
         percent(r.share, r.peak_bytes));
    if (r.depth == 1) {
      total_params += r.parameters;
      total_saved += r.saved_bytes;
      total_peak += r.peak_bytes;
    }
  }
  out << std::string(width, '=') << "\n";
  const double total_share = e.peak.peak_bytes > 0 ? static_cast<double>(total_peak) / e.peak.peak_bytes : 0;
  line("Total", "", "", thousands(total_params), format_bytes(total_saved), percent(total_share, total_peak));
  out << std::string(width, '=') << "\n";
  out << "Params: parameter elements. Saved: activations the layer produced that autograd keeps for backward\n"
      << "(one iteration, each tensor once).\n"
      << "Share: part of the " << format_bytes(e.peak.peak_bytes)
      << " peak in blocks the layer allocated, forward or backward.\n"
      << "The rest (" << percent(1 - total_share, e.peak.peak_bytes - total_peak) << ") is held outside the layers:";
  const PeakOwners owners = peak_owners(a, e, granted);
  for (size_t c = 0, n = 0; c < kCategoryCount; ++c) {
    if (owners.outside[c] == 0) continue;
    out << (n++ ? ", " : "\n  ") << category_title(static_cast<Category>(c)) << " " << format_bytes(owners.outside[c]);
  }
  out << ".\n\n";

  char buf[512];
  out << "Parameters: " << thousands(a.accounting.parameter_count) << " ("
      << format_bytes(a.accounting.parameter_bytes) << "), buffers " << format_bytes(a.accounting.buffer_bytes)
      << ", inputs and targets " << format_bytes(a.accounting.input_bytes.eval(e.bindings)) << "\n\n";
  out << "At the peak (" << phase_name(e.peak.phase) << ", iteration " << e.peak.iter + 1;
  std::string where = node_label(a, e.peak.node);
  out << (where.empty() ? "" : ", " + where) << "):\n";
  for (size_t c = 0; c < kCategoryCount; ++c) {
    if (e.peak.components[c] == 0) continue;
    std::snprintf(buf, sizeof(buf), "  %-18s %12s\n", category_title(static_cast<Category>(c)),
                  format_bytes(e.peak.components[c]).c_str());
    out << buf;
  }
  std::snprintf(buf, sizeof(buf), "\nPeak allocated (max_memory_allocated):  %s (%s bytes)\n",
                format_bytes(e.peak.peak_bytes).c_str(), thousands(e.peak.peak_bytes).c_str());
  out << buf;
  std::snprintf(buf, sizeof(buf), "Peak reserved  (max_memory_reserved):   %s (caching allocator model)\n",
                format_bytes(e.reserved_bytes).c_str());
  out << buf;
  return out.str();
}

}  // namespace memest
