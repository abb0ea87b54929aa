// Reports. Every figure comes from the Analysis and Estimate; nothing is recomputed here.
#include "cli/report.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "cli/json_writer.h"
#include "cli/options.h"
#include "cli/units.h"
#include "estimator/spellings.h"
#include "estimator/allocator.h"
#include "estimator/finetune.h"
#include "estimator/parallel.h"

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

PeakOwners peak_owners(const Analysis& a, const std::vector<int>& live, const std::vector<int64_t>& granted) {
  PeakOwners o;
  o.by_node.assign(a.graph.nodes.size(), 0);
  for (int b : live) {
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

// node_label(a, node), appended to *out.
void append_node_label(const Analysis& a, int node, std::string* out) {
  if (node < 0 || node >= static_cast<int>(a.graph.nodes.size())) return;
  const Node& n = a.graph.nodes[node];
  const std::string where = n.module.empty() ? n.name.str() : n.module.str();
  if (where.empty()) {
    *out += n.op;
    return;
  }
  *out += where;
  *out += " (";
  *out += n.op;
  *out += ')';
}

// A module path's parent: "layer1.0.conv1" -> "layer1.0"; "" for a top-level one.
std::string parent_path(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

}  // namespace

std::string node_label(const Analysis& a, int node) {
  std::string out;
  append_node_label(a, node, &out);
  return out;
}

std::string config_line(const Analysis& a, int64_t batch) {
  std::ostringstream out;
  out << a.graph.file << " | batch " << batch << (fixed_batch(a) ? " (fixed by the file)" : "") << " | " << optim_name(a.train.optim)
      << (a.train.momentum != 0 ? " momentum " + std::to_string(a.train.momentum).substr(0, 4) : "") << " | amp "
      << amp_name(a.train.amp) << " | loss " << loss_name(a.train.loss)
      << (a.train.checkpoint != Checkpoint::None ? std::string(" | checkpoint ") + checkpoint_name(a.train.checkpoint) : "")
      << (a.train.grad_accum > 1 ? " | grad-accum " + std::to_string(a.train.grad_accum) : "");
  for (const auto& p : a.train.train) out << " | train " << p;
  for (const auto& p : a.train.freeze) out << " | freeze " << p;
  if (a.train.parallel != Parallel::None) {
    out << " | " << parallel_name(a.train.parallel) << " rank of " << a.train.world_size
        << (a.train.bucket_view ? " (bucket view)" : "");
  }
  out << " | " << a.train.target->name;
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

// Whether `op` is one of the ", "-separated entries of `list`, whole: "Conv" is not in
// "ConvTranspose". The same answer as finding ", op, " in ", list, ", without building either.
bool lists_op(std::string_view list, std::string_view op) {
  for (size_t i = list.find(op); i != std::string_view::npos; i = list.find(op, i + 1)) {
    const size_t end = i + op.size();
    if ((i == 0 || (i >= 2 && list.substr(i - 2, 2) == ", ")) &&
        (end == list.size() || list.substr(end, 2) == ", ")) {
      return true;
    }
    if (i == list.size()) break;
  }
  return false;
}

// Saved bytes go to the node that produced them, each block once, though several
// nodes may keep it (a ReLU's output, kept by the ReLU and the next Conv); weights
// and inputs that autograd keeps are held anyway and are not counted. Only these
// blocks' sizes are evaluated, not the whole program's.
std::vector<int64_t> saved_by_producer(const Analysis& a, const Estimate& e) {
  std::vector<int64_t> saved_by(a.graph.nodes.size(), 0);
  std::vector<char> seen(a.program.blocks.size(), 0);
  for (const auto& blocks : a.program.saved_by_node) {
    for (int b : blocks) {
      const Block& blk = a.program.blocks[b];
      if (seen[b] || blk.node < 0 || blk.category == Category::Parameters || blk.category == Category::Buffers ||
          blk.category == Category::Inputs) {
        continue;
      }
      seen[b] = 1;
      saved_by[blk.node] += block_size(a.program, static_cast<size_t>(b), e.bindings, a.train.target->alloc_round);
    }
  }
  return saved_by;
}

// Shape arithmetic, or nothing at all: a dead node, a Constant, or one whose output
// was folded to a value.
bool folded(const Graph& g, const Node& n) {
  return n.dead || n.op == "Constant" || (n.outputs.size() == 1 && n.outputs[0] >= 0 && g.tensors[n.outputs[0]].value);
}

// Parameter elements, each parameter counted at its first user: tied weights count once.
class ParameterCount {
 public:
  explicit ParameterCount(const Analysis& a)
      : g_(a.graph), uncounted_(g_.tensors.size(), 0), trains_(trainable_parameters(g_, a.train.train, a.train.freeze)) {
    for (size_t t = 0; t < g_.tensors.size(); ++t) uncounted_[t] = g_.tensors[t].kind == TensorKind::Parameter;
    for (int t : g_.gradless_parameters) uncounted_[static_cast<size_t>(t)] = 1;
  }

  // The elements of n's parameters not yet counted into *params, and of those the
  // ones that train into *trainable.
  void count(const Node& n, int64_t* params, int64_t* trainable) {
    for (int in : n.inputs) {
      if (in < 0 || !uncounted_[in]) continue;
      uncounted_[in] = 0;
      const int64_t numel = product(*g_.tensors[in].shape).as_const().value_or(0);
      *params += numel;
      if (trains_[in]) *trainable += numel;
    }
  }

 private:
  const Graph& g_;
  std::vector<char> uncounted_;  // parameters not yet counted
  std::vector<bool> trains_;
};

// What one node adds to its module's row and every row above it.
struct NodeFigures {
  int64_t parameters = 0;
  int64_t trainable = 0;
  int64_t saved_bytes = 0;
  int64_t peak_bytes = 0;
  int shape_node = -1;  // the node, when it has an output shape
};

// The module tree of layer_rows, folded up as nodes are added: a parent includes its children.
class LayerTree {
 public:
  // The row of module `path`, made on first use. Ancestors are created before
  // descendants, so siblings keep the order of first use.
  int row(const std::string& path) {
    auto it = index_.find(path);
    if (it != index_.end()) return it->second;
    const std::string up = path == "(top)" ? "" : parent_path(path);
    const int parent = up.empty() ? -1 : row(up);
    const int id = static_cast<int>(tree_.size());
    index_.emplace(path, id);
    tree_.push_back({});
    tree_[id].row.module = path;
    tree_[id].row.name = up.empty() ? path : path.substr(up.size() + 1);
    tree_[id].parent = parent;
    (parent < 0 ? roots_ : tree_[parent].children).push_back(id);
    return id;
  }

  // Row id's own op types, each once.
  void add_op(int id, std::string_view op) {
    LayerRow& own = tree_[id].row;
    if (!lists_op(own.ops, op)) {
      if (!own.ops.empty()) own.ops += ", ";
      own.ops += op;
    }
  }

  // Every figure goes to the module and all above it.
  void add(int id, const NodeFigures& f) {
    for (int t = id; t >= 0; t = tree_[t].parent) {
      LayerRow& r = tree_[t].row;
      r.parameters += f.parameters;
      r.trainable += f.trainable;
      r.saved_bytes += f.saved_bytes;
      r.peak_bytes += f.peak_bytes;
      if (f.shape_node >= 0) tree_[t].shape_node = f.shape_node;
    }
  }

  // The rows in pre-order, moved out of the tree.
  std::vector<LayerRow> rows(const Graph& g, const Estimate& e) {
    std::vector<LayerRow> out;
    out.reserve(tree_.size());
    emit(roots_, 1, g, e, out);
    return out;
  }

 private:
  struct TreeNode {
    LayerRow row;
    int parent = -1;
    int shape_node = -1;  // the last node in the subtree with an output shape
    std::vector<int> children;
  };

  // ids' rows at tree level `level`, each followed by its subtree's.
  void emit(const std::vector<int>& ids, int level, const Graph& g, const Estimate& e, std::vector<LayerRow>& rows) {
    for (size_t i = 0; i < ids.size(); ++i) {
      TreeNode& t = tree_[ids[i]];
      LayerRow r = std::move(t.row);
      r.depth = level;
      r.last = i + 1 == ids.size();
      r.share = e.peak.peak_bytes > 0 ? static_cast<double>(r.peak_bytes) / static_cast<double>(e.peak.peak_bytes) : 0;
      // Evaluated for the rows only, not for every node on the way.
      if (t.shape_node >= 0) {
        r.output_shape = eval_shape(*g.tensors[g.nodes[t.shape_node].outputs[0]].shape, e.bindings);
      }
      rows.push_back(std::move(r));
      emit(t.children, level + 1, g, e, rows);
    }
  }

  std::vector<TreeNode> tree_;
  std::vector<int> roots_;
  std::unordered_map<std::string, int> index_;
};

// layer_rows with what is alive at the peak already split by owner (a replay of the
// allocator for a 100k-node graph takes a noticeable part of a second).
std::vector<LayerRow> layer_rows(const Analysis& a, const Estimate& e, int depth, const PeakOwners& owners) {
  const Graph& g = a.graph;
  const std::vector<int64_t>& at_peak = owners.by_node;
  const std::vector<int64_t> saved_by = saved_by_producer(a, e);
  LayerTree tree;
  ParameterCount parameters(a);
  // Nodes of one module mostly come one after another: the path is cut to `depth`
  // levels and looked up only when it changes.
  const std::string* last_module = nullptr;
  int id = -1;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (at_peak[k] == 0 && saved_by[k] == 0 && folded(g, n)) continue;  // shape arithmetic that holds nothing
    if (last_module == nullptr || n.module != *last_module) {
      last_module = &n.module.str();
      id = tree.row(truncate_module(n.module, depth));
    }
    tree.add_op(id, n.op);
    const bool shaped = !n.outputs.empty() && n.outputs[0] >= 0 && g.tensors[n.outputs[0]].shape;
    NodeFigures f{.saved_bytes = saved_by[k], .peak_bytes = at_peak[k], .shape_node = shaped ? static_cast<int>(k) : -1};
    parameters.count(n, &f.parameters, &f.trainable);
    tree.add(id, f);
  }
  return tree.rows(g, e);
}

// One line of live_at_peak: the blocks alive at the peak that one label's nodes
// allocated, in one category.
struct LiveGroup {
  std::string_view label;  // node_label's; "" for setup and the optimizer
  Category category;
  int64_t count = 0;
  int64_t bytes = 0;
};

// The groups in the order the report lists them: by bytes, largest first. Nodes that share
// a label ("layer1.0 (Add)" twice) share a group. Ties keep the order of a std::sort over
// the groups sorted by (label, category key), as the report has always listed them.
// The labels are written one after another into *arena (a million-node graph has
// hundreds of thousands of them: one allocation, and compared in one block of memory).
std::vector<LiveGroup> live_groups(const Analysis& a, const std::vector<int>& live, const std::vector<int64_t>& granted,
                                   std::string* arena) {
  // By node and category first, through a short list of groups per node: no label built
  // per block, no sort of the blocks. Slot 0 holds blocks of no node.
  const size_t nodes = a.graph.nodes.size();
  struct Acc {
    Category category;
    int next;  // the slot's next group, or -1
    int64_t count, bytes;
    size_t label_at, label_size;
  };
  std::vector<Acc> acc;
  std::vector<int> first(nodes + 1, -1);
  for (int b : live) {
    const Block& blk = a.program.blocks[b];
    const size_t slot = blk.node >= 0 && static_cast<size_t>(blk.node) < nodes ? static_cast<size_t>(blk.node) + 1 : 0;
    int i = first[slot];
    while (i >= 0 && acc[i].category != blk.category) i = acc[i].next;
    if (i < 0) {
      size_t at = arena->size(), size = 0;
      if (first[slot] >= 0) {
        at = acc[first[slot]].label_at;
        size = acc[first[slot]].label_size;
      } else {
        append_node_label(a, slot == 0 ? -1 : static_cast<int>(slot) - 1, arena);
        size = arena->size() - at;
      }
      i = static_cast<int>(acc.size());
      acc.push_back({blk.category, first[slot], 0, 0, at, size});
      first[slot] = i;
    }
    acc[i].count += 1;
    acc[i].bytes += granted[b];
  }
  std::vector<LiveGroup> groups;
  groups.reserve(acc.size());
  for (const Acc& g : acc) {
    groups.push_back({std::string_view(*arena).substr(g.label_at, g.label_size), g.category, g.count, g.bytes});
  }
  // Then by (label, category key), merging the groups of nodes that share a label.
  std::sort(groups.begin(), groups.end(), [](const LiveGroup& x, const LiveGroup& y) {
    const int c = x.label.compare(y.label);
    return c != 0 ? c < 0 : std::strcmp(category_key(x.category), category_key(y.category)) < 0;
  });
  size_t n = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    if (n > 0 && groups[n - 1].category == groups[i].category && groups[n - 1].label == groups[i].label) {
      groups[n - 1].count += groups[i].count;
      groups[n - 1].bytes += groups[i].bytes;
    } else {
      groups[n++] = groups[i];
    }
  }
  groups.resize(n);
  std::sort(groups.begin(), groups.end(), [](const LiveGroup& x, const LiveGroup& y) { return x.bytes > y.bytes; });
  return groups;
}

}  // namespace

std::vector<LayerRow> layer_rows(const Analysis& a, const Estimate& e, int depth) {
  std::vector<int64_t> replayed;
  return layer_rows(a, e, depth, peak_owners(a, live_blocks(a.program, e.peak.event), granted_of(a, e, &replayed)));
}

namespace {

void json_accounting(JsonWriter& w, const Analysis& a, const Estimate& e) {
  w.key("accounting");
  w.begin_object();
  w.field("buffer_bytes", a.accounting.buffer_bytes);
  w.field("input_bytes", a.accounting.input_bytes.eval(e.bindings));
  w.field("parameter_bytes", a.accounting.parameter_bytes);
  w.field("parameter_count", a.accounting.parameter_count);
  w.field("trainable_parameter_count", a.accounting.trainable_count);
  w.field("trainable_parameters", a.accounting.trainable_bytes);
  w.field("gradless_parameter_count", a.accounting.gradless_count);
  w.field("gradless_parameters", a.accounting.gradless_bytes);
  w.field("derived_parameter_count", a.accounting.derived_count);
  w.field("derived_parameters", a.accounting.derived_bytes);
  w.field("unread_parameter_tensors", a.accounting.unread_count);
  w.end_object();
}

// The bytes at the peak by category, keys sorted.
void json_components(JsonWriter& w, const Estimate& e) {
  w.key("components");
  w.begin_object();
  std::array<size_t, kCategoryCount> by_key;
  for (size_t c = 0; c < kCategoryCount; ++c) by_key[c] = c;
  std::sort(by_key.begin(), by_key.end(), [](size_t x, size_t y) {
    return std::strcmp(category_key(static_cast<Category>(x)), category_key(static_cast<Category>(y))) < 0;
  });
  for (size_t c : by_key) w.field(category_key(static_cast<Category>(c)), e.peak.components[c]);
  w.end_object();
}

void json_config(JsonWriter& w, const Analysis& a) {
  w.key("config");
  w.begin_object();
  w.field("amp", amp_name(a.train.amp));
  w.field("attention", attention_name(a.train.attention));
  w.field("checkpoint", checkpoint_name(a.train.checkpoint));
  w.field("grad_accum", a.train.grad_accum);
  w.field("loss", loss_name(a.train.loss));
  w.field("momentum", a.train.momentum);
  w.field("optim", optim_name(a.train.optim));
  w.field("target", a.train.target->name);
  w.end_object();
  w.key("dims");
  w.begin_object();
  for (const auto& [k, v] : a.dims) w.field(k, v);
  w.end_object();
}

void json_layers(JsonWriter& w, const Analysis& a, const Estimate& e, int depth, const std::vector<int>& live,
                 const std::vector<int64_t>& granted) {
  w.key("layers");
  w.begin_array();
  for (const auto& r : layer_rows(a, e, depth, peak_owners(a, live, granted))) {
    w.begin_object();
    w.field("depth", r.depth);
    w.field("module", r.module);
    w.field("ops", r.ops);
    w.field("output_shape", r.output_shape);
    w.field("parameters", r.parameters);
    w.field("peak_bytes", r.peak_bytes);
    w.field("saved_bytes", r.saved_bytes);
    w.field("share", r.share);
    w.field("trainable_parameters", r.trainable);
    w.end_object();
  }
  w.end_array();
}

// What is alive at the peak, by the node that allocated it: the answer to "why".
// Sizes as the allocator handed them out, so the groups sum to peak_bytes.
void json_live(JsonWriter& w, const Analysis& a, const std::vector<int>& live, const std::vector<int64_t>& granted) {
  std::string labels;
  w.key("live_at_peak");
  w.begin_array();
  for (const LiveGroup& l : live_groups(a, live, granted, &labels)) {
    w.begin_object();
    w.field("allocated_by", l.label.empty() ? std::string_view("(setup/optimizer)") : l.label);
    w.field("bytes", l.bytes);
    w.field("category", category_key(l.category));
    w.field("count", l.count);
    w.end_object();
  }
  w.end_array();
}

void json_phases(JsonWriter& w, const Estimate& e) {
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
}

template <typename List>
void json_strings(JsonWriter& w, const char* key, const List& list) {
  w.key(key);
  w.begin_array();
  for (const auto& v : list) w.value(v);
  w.end_array();
}

}  // namespace

void write_estimate_json(std::ostream& out, const Analysis& a, const Estimate& e, int depth, double time_ms) {
  // Keys in ascending byte order in every object, as nlohmann (a std::map) printed them.
  JsonWriter w(out);
  w.begin_object();
  json_accounting(w, a, e);
  w.field("batch", e.batch);
  json_components(w, e);
  json_config(w, a);
  w.field("event", e.peak.event);  // index into the simulated events: the timeline's x at the peak
  // Bytes of tensors shaped by a fallback (an op memest does not know, a rule that could
  // not decide): 0 when every shape was derived.
  w.field("fallback_bytes", a.fallback_bytes.substitute(e.bindings).as_const().value_or(-1));
  // What a backward workspace that shapes do not decide (3-D weight gradients) may add
  // to the peak by its probed envelope, and where: 0 and "" when none.
  const WorkspaceExcess excess = workspace_excess(a, e.bindings);
  w.field("workspace_excess_bytes", excess.bytes);
  w.field("workspace_excess_node", excess.node >= 0 ? node_label(a, excess.node) : std::string());
  w.field("inference_evidence", a.inference_evidence);
  w.field("inference_export", a.inference_export);
  w.field("iteration", e.peak.iter + 1);
  std::vector<int64_t> replayed;
  const std::vector<int64_t>& granted = granted_of(a, e, &replayed);
  const std::vector<int> live = live_blocks(a.program, e.peak.event);
  json_layers(w, a, e, depth, live, granted);
  json_live(w, a, live, granted);
  w.field("model", a.graph.file);
  w.field("node", node_label(a, e.peak.node));
  json_strings(w, "notes", a.program.notes);  // what the step model assumed (data parallelism's buckets and NCCL)
  w.field("parallel", parallel_name(a.train.parallel));
  w.field("peak_bytes", e.peak.peak_bytes);
  w.field("phase", phase_name(e.peak.phase));
  json_phases(w, e);
  w.field("requested_peak_bytes", e.requested_peak);
  w.field("reserved_bytes", e.reserved_bytes);
  w.field("time_ms", time_ms);
  json_strings(w, "unsupported_ops", a.unsupported);
  json_strings(w, "warnings", a.graph.warnings);
  w.field("world_size", a.train.world_size);
  w.end_object();
}

namespace {

// The answer first: the peak, the reserved memory, and what the peak holds.
void write_summary(std::ostream& out, const Analysis& a, const Estimate& e) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), "Peak allocated (max_memory_allocated):  %s (%s bytes)\n",
                format_bytes(e.peak.peak_bytes).c_str(), thousands(e.peak.peak_bytes).c_str());
  out << buf;
  std::snprintf(buf, sizeof(buf), "Peak reserved  (max_memory_reserved):   %s (caching allocator model)\n\n",
                format_bytes(e.reserved_bytes).c_str());
  out << buf;
  out << "At the peak (" << phase_name(e.peak.phase) << ", iteration " << e.peak.iter + 1;
  std::string where = node_label(a, e.peak.node);
  out << (where.empty() ? "" : ", " + where) << "), as allocated:\n";
  for (size_t c = 0; c < kCategoryCount; ++c) {
    if (e.peak.components[c] == 0) continue;
    std::snprintf(buf, sizeof(buf), "  %-18s %12s", category_title(static_cast<Category>(c)),
                  format_bytes(e.peak.components[c]).c_str());
    out << buf;
    // The caching allocator rounds each tensor up (512 B at least), so the
    // parameters' blocks are more than their exact size, printed below.
    const int64_t gradless = a.accounting.gradless_bytes;
    if (static_cast<Category>(c) == Category::Parameters &&
        e.peak.components[c] != a.accounting.parameter_bytes - gradless) {
      out << "  (allocator-rounded)";
    }
    if (static_cast<Category>(c) == Category::Buffers && gradless > 0) {
      out << "  (" << format_bytes(gradless) << " of them parameters no gradient reaches)";
    }
    out << "\n";
  }
  const Accounting& acc = a.accounting;
  const bool finetuning = acc.trainable_count + acc.gradless_count != acc.parameter_count;
  out << "\nParameters: " << thousands(acc.parameter_count) << " (" << format_bytes(acc.parameter_bytes)
      << (acc.derived_count ? ", " + format_bytes(acc.derived_bytes) +
                                  " of it in tables the exporter computed from parameters with buffers or indices: torch's count is smaller)"
                            : std::string(" exact)"))
      << (finetuning ? ", of which " + thousands(acc.trainable_count) + " (" + format_bytes(acc.trainable_bytes) +
                           ") train"
                     : std::string())
      << (acc.gradless_count ? ", of which " + thousands(acc.gradless_count) + " (" +
                                   format_bytes(acc.gradless_bytes) + ") no gradient reaches (read under no_grad)"
                             : std::string())
      << ", buffers " << format_bytes(a.accounting.buffer_bytes)
      << ", inputs and targets " << format_bytes(a.accounting.input_bytes.eval(e.bindings)) << "\n\n";
}

// The per-layer tree, its footer and what it leaves out.
void write_layer_table(std::ostream& out, const Analysis& a, const Estimate& e, int depth, const PeakOwners& owners) {
  const auto rows = layer_rows(a, e, depth, owners);
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

  line(title, "Ops", "Output shape", "Params", "Saved", "Share");
  out << std::string(width, '=') << "\n";
  out << a.graph.file.substr(a.graph.file.find_last_of('/') + 1) << "\n";
  int64_t total_params = 0, total_saved = 0, total_peak = 0;
  const bool finetuning =
      a.accounting.trainable_count + a.accounting.gradless_count != a.accounting.parameter_count;
  // Fine-tuning: a frozen row's count ends in "F", a partly frozen one's in "f".
  auto params_cell = [&](const LayerRow& r) {
    if (!r.parameters) return std::string("--");
    if (!finetuning) return thousands(r.parameters);
    return thousands(r.parameters) + (r.trainable == r.parameters ? " " : r.trainable == 0 ? "F" : "f");
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    const LayerRow& r = rows[i];
    line(labels[i], r.ops.empty() ? "--" : r.ops, r.output_shape.empty() ? "--" : r.output_shape, params_cell(r),
         r.saved_bytes ? format_bytes(r.saved_bytes) : "--", percent(r.share, r.peak_bytes));
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
  if (finetuning) out << "F: frozen (no gradient, no optimizer state), f: partly frozen.\n";
  out << "Params: parameter elements. Saved: activations the layer produced that autograd keeps for backward\n"
      << "(one iteration, each tensor once).\n"
      << "Share: part of the " << format_bytes(e.peak.peak_bytes)
      << " peak in blocks the layer allocated, forward or backward.\n"
      << "The rest (" << percent(1 - total_share, e.peak.peak_bytes - total_peak) << ") is held outside the layers:";
  for (size_t c = 0, n = 0; c < kCategoryCount; ++c) {
    if (owners.outside[c] == 0) continue;
    out << (n++ ? ", " : "\n  ") << category_title(static_cast<Category>(c)) << " " << format_bytes(owners.outside[c]);
  }
  out << ".\n";
  if (depth > 0) out << "Modules are grouped " << depth << " levels deep: --depth N for more, --depth 0 for all.\n";
}

}  // namespace

std::string estimate_text(const Analysis& a, const Estimate& e, int depth, const std::string& verdict) {
  std::ostringstream out;
  std::vector<int64_t> replayed;
  const PeakOwners owners = peak_owners(a, live_blocks(a.program, e.peak.event), granted_of(a, e, &replayed));
  out << config_line(a, e.batch) << "\n\n";
  if (!verdict.empty()) out << verdict << "\n\n";
  write_summary(out, a, e);
  write_layer_table(out, a, e, depth, owners);
  for (const auto& note : a.program.notes) out << "Assumed: " << note << "\n";
  return out.str();
}

}  // namespace memest
