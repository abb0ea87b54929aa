// Python frames (frames.h). A call of module S is a run of consecutive nodes whose
// module paths start with S (Constants, which read nothing, aside); the run ends at
// its last node. One forward pass over the nodes, with the stack of runs open at each
// node, answers every "where does the run of S around node c end" that the tensors ask.
// Path components are interned as ints: paths are compared component by component.
#include "estimator/frames.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace memest {
namespace {

using Path = std::vector<int>;  // component ids

// Component ids, and which components are numbers.
class Components {
 public:
  int id(std::string_view c) {
    auto [it, fresh] = ids_.try_emplace(c, static_cast<int>(numeric_.size()));
    if (fresh) {
      numeric_.push_back(!c.empty() && std::all_of(c.begin(), c.end(), [](char ch) { return ch >= '0' && ch <= '9'; }));
    }
    return it->second;
  }
  bool numeric(int id) const { return numeric_[static_cast<size_t>(id)]; }

 private:
  std::unordered_map<std::string_view, int> ids_;
  std::vector<bool> numeric_;
};

// Component paths, and the containers called as a whole (Graph::called_containers).
struct Modules {
  Components comps;
  std::vector<Path> containers;

  Path split(std::string_view s) {
    Path p;
    p.reserve(static_cast<size_t>(std::count(s.begin(), s.end(), '.')) + 1);
    while (!s.empty()) {
      const size_t dot = s.find('.');
      p.push_back(comps.id(s.substr(0, dot)));
      s = dot == std::string_view::npos ? std::string_view() : s.substr(dot + 1);
    }
    return p;
  }
  // Is the prefix of p of length i a module that was called? A ModuleList is not
  // called, nor is a Sequential reached only through its elements ("blocks" in
  // "blocks.0", `for blk in self.blocks`): a prefix followed by a number is taken as a
  // container, unless the file shows it called as a whole (`x = self.blocks(x)`).
  bool called(const Path& p, size_t i) const {
    if (i == p.size() || !comps.numeric(p[i])) return true;
    return std::any_of(containers.begin(), containers.end(),
                       [&](const Path& c) { return c.size() == i && std::equal(c.begin(), c.end(), p.begin()); });
  }
  // The first called prefix of p longer than `from`, or 0 when none.
  size_t first_call_below(const Path& p, size_t from) const {
    for (size_t i = from + 1; i <= p.size(); ++i) {
      if (called(p, i)) return i;
    }
    return 0;
  }
};

size_t common_depth(const Path& a, const Path& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

struct Query {
  int node;
  size_t depth;
  int tensor;
  // 0: held until the run at `depth` around `node` ends. Otherwise the caller's depth:
  // held until the caller's first own node after that run (where a local is rebound).
  size_t caller = 0;
};

// Only a hold past the last use matters.
std::vector<int> drop_short_holds(const Graph& g, std::vector<int> release) {
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    if (release[t] < 0) continue;
    int last_use = -1;
    for (int c : g.tensors[t].consumers) last_use = std::max(last_use, c);
    if (release[t] <= last_use) release[t] = -1;
  }
  return release;
}

// statement_holds' view of the Python stacks: per frame level, the nodes run in
// invocations of functions, and an invocation in runs of statements.
struct StatementRun {
  int statement;
  int invocation;
  int end;      // its last node
  int rebound;  // the end of the run that rebinds its names (-2: not yet known)
  int begin;    // its first node
  int8_t hidden = -1;  // a collapsed function call (hidden_call; -1: not yet known)
};
struct Invocation {
  int end;
  std::vector<int> runs;
};
struct StatementRuns {
  std::vector<StatementRun> runs;
  std::vector<Invocation> invocations;
  // Per node with a stack, per level: its invocation and run (flat; `first` indexes it).
  std::vector<int> first, inv, run;
  int levels(size_t k) const { return first[k + 1] - first[k]; }
};

// Node k's stack `s`, level by level, after node prev_node's stack `prev`: the levels
// where k continues prev's statement stay in prev's runs; below them each level opens a run.
void place_node(StatementRuns& sr, size_t k, const std::vector<PyFrame>& s, const std::vector<PyFrame>* prev,
                int prev_node) {
  const size_t same = prev ? shared_frames(s, *prev) : 0;  // levels where k continues prev's statement
  sr.first[k + 1] = sr.first[k] + static_cast<int>(s.size());
  for (size_t d = 0; d < s.size(); ++d) {
    int i, r;
    if (d < same) {
      i = sr.inv[static_cast<size_t>(sr.first[prev_node]) + d];
      r = sr.run[static_cast<size_t>(sr.first[prev_node]) + d];
    } else {
      // A new statement of the same function when only the statement changed here.
      const bool continues = d == same && prev && d < prev->size() && s[d].instance == (*prev)[d].instance;
      if (continues) {
        i = sr.inv[static_cast<size_t>(sr.first[prev_node]) + d];
      } else {
        i = static_cast<int>(sr.invocations.size());
        sr.invocations.push_back({});
      }
      r = static_cast<int>(sr.runs.size());
      sr.runs.push_back({s[d].statement, i, 0, -2, static_cast<int>(k)});
      sr.invocations[static_cast<size_t>(i)].runs.push_back(r);
    }
    sr.invocations[static_cast<size_t>(i)].end = static_cast<int>(k);
    sr.runs[static_cast<size_t>(r)].end = static_cast<int>(k);
    sr.inv.push_back(i);
    sr.run.push_back(r);
  }
}

// Every node's place in the invocations and statement runs; dead nodes, nodes without
// a stack, the loss and Constants (which read nothing) have none.
StatementRuns statement_runs(const Graph& g) {
  StatementRuns sr;
  sr.first.assign(g.nodes.size() + 1, 0);
  const std::vector<PyFrame>* prev = nullptr;
  int prev_node = -1;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    sr.first[k + 1] = sr.first[k];
    if (n.dead || n.py_stack < 0 || n.module == "loss" || n.op == "Constant") continue;
    const std::vector<PyFrame>& s = g.python.stacks[static_cast<size_t>(n.py_stack)];
    place_node(sr, k, s, prev, prev_node);
    prev = &s;
    prev_node = static_cast<int>(k);
  }
  return sr;
}

// Where the binding made by run r lets go: the end of the first later run of its
// invocation that assigns all of r's names, else the invocation's end. A tensor read
// by a later statement is not the one an unpacking gives `_` (the name Python code
// writes for a value it drops: transformers' `hidden_states, _ = self.self_attn(...)`
// holds the attention's output in `hidden_states` alone, and the residual add that
// rebinds it lets that go; requiring `_` too held it to the decoder layer's end).
// Remembered per run: many tensors ask about the same one.
int rebound(StatementRuns& sr, const PySource& py, int underscore, int r) {
  StatementRun& x = sr.runs[static_cast<size_t>(r)];
  if (x.rebound != -2) return x.rebound;
  std::vector<int> names = py.statements[static_cast<size_t>(x.statement)].targets;
  if (names.size() > 1) std::erase(names, underscore);
  const Invocation& in = sr.invocations[static_cast<size_t>(x.invocation)];
  x.rebound = in.end;
  const auto at = std::find(in.runs.begin(), in.runs.end(), r);
  for (auto it = at + 1; it != in.runs.end(); ++it) {
    const std::vector<int>& t = py.statements[static_cast<size_t>(sr.runs[static_cast<size_t>(*it)].statement)].targets;
    const bool all = std::all_of(names.begin(), names.end(), [&](int nm) { return std::find(t.begin(), t.end(), nm) != t.end(); });
    if (all) {
      x.rebound = sr.runs[static_cast<size_t>(*it)].end;
      break;
    }
  }
  return x.rebound;
}

// How many outer levels nodes a and b run in the same invocation.
int shared_invocations(const StatementRuns& sr, size_t a, size_t b) {
  const int an = sr.levels(a), bn = sr.levels(b);
  int d = 0;
  while (d < an && d < bn && sr.inv[static_cast<size_t>(sr.first[a] + d)] == sr.inv[static_cast<size_t>(sr.first[b] + d)]) ++d;
  return d;
}

// Module path `m` relative to `frame` ("" when `m` is not below it).
std::string_view below(std::string_view frame, std::string_view m) {
  if (frame.empty()) return m;
  if (m.size() <= frame.size() || !m.starts_with(frame) || m[frame.size()] != '.') return {};
  return m.substr(frame.size() + 1);
}

// The first component of module path `m` below `frame` ("" when `m` is not below it).
std::string_view child_name(std::string_view frame, std::string_view m) {
  const std::string_view rest = below(frame, m);
  return rest.substr(0, rest.find('.'));
}

// Whether `code` is one call of a method and nothing else (`x_feat = self.forward_features(x)`,
// `return self.forward_head(x)`): its name, or "" when it is not.
std::string_view bare_method_call(std::string_view code) {
  if (code.starts_with("return ")) code.remove_prefix(7);
  const size_t paren = code.find('(');
  if (const size_t eq = code.find(" = "); eq != std::string_view::npos && eq < paren) code.remove_prefix(eq + 3);
  if (!code.starts_with("self.") || paren == std::string_view::npos || code.back() != ')') return {};
  const size_t open = code.find('(');
  int depth = 0;
  for (size_t i = open; i < code.size(); ++i) {
    depth += code[i] == '(' ? 1 : code[i] == ')' ? -1 : 0;
    if (depth == 0 && i + 1 != code.size()) return {};  // more after the call
  }
  const std::string_view name = code.substr(5, open - 5);
  const bool ident = !name.empty() && std::all_of(name.begin(), name.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
  });
  return ident ? name : std::string_view();
}

// A run that is a method's whole body collapsed into its caller's statement. The dynamo
// exporter keeps only the frames named `forward` (torch.export's non-strict tracing,
// proxy_tensor.py), so timm's `x_feat = self.forward_features(x)` shows all the method's
// nodes in the caller's one statement: its own ops (depth `level` + 1, no deeper frame)
// and its children's calls (deeper). Such a run's statement is one call of a method of
// the module (no child of that name ran; nested in an expression, as Swin's
// `x + self.drop_path1(self._attn(self.norm1(x)))`, the method returns before the
// statement ends), and own ops run between two child calls (CoaT: patch_embed2, then
// insert_cls's cat, then serial_blocks2.0).
bool hidden_call(const Graph& g, StatementRuns& sr, int r, size_t level) {
  StatementRun& x = sr.runs[static_cast<size_t>(r)];
  if (x.hidden >= 0) return x.hidden == 1;
  int child = -1;  // the last child call's invocation
  bool own_after_child = false, between = false;
  const std::string* frame = nullptr;  // the own ops' module
  std::vector<int> child_nodes;
  for (int k = x.begin; k <= x.end; ++k) {
    const size_t uk = static_cast<size_t>(k);
    if (static_cast<size_t>(sr.levels(uk)) <= level || sr.run[static_cast<size_t>(sr.first[uk]) + level] != r) continue;
    if (static_cast<size_t>(sr.levels(uk)) == level + 1) {
      own_after_child = child >= 0;
      if (!frame) frame = &g.nodes[uk].module.str();
      continue;
    }
    const int inv = sr.inv[static_cast<size_t>(sr.first[uk]) + level + 1];
    between = between || (own_after_child && inv != child);
    if (inv != child) child_nodes.push_back(k);
    child = inv;
  }
  x.hidden = 0;
  if (!between || !frame) return false;
  std::vector<std::string_view> children;
  for (int k : child_nodes) children.push_back(child_name(*frame, g.nodes[static_cast<size_t>(k)].module.str()));
  const std::string_view method = bare_method_call(g.python.statements[static_cast<size_t>(x.statement)].code);
  x.hidden = !method.empty() && std::find(children.begin(), children.end(), method) == children.end() ? 1 : 0;
  return x.hidden == 1;
}

// Whether a collapsed body called the child module at `path` (below `frame`) as
// an element of a list it loops over (`for blk in self.serial_blocks1: x1 = blk(x1)`:
// the first component below `frame` followed by a number, a container not called as a
// whole), rather than by name (`self.patch_embed2(x)`).
bool list_element(const Graph& g, std::string_view frame, std::string_view path) {
  const std::string_view child = below(frame, path);
  const size_t dot = child.find('.');
  if (dot == std::string_view::npos) return false;
  const std::string_view next = child.substr(dot + 1, child.find('.', dot + 1) - dot - 1);
  if (next.empty() || !std::all_of(next.begin(), next.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) return false;
  const std::string container =
      frame.empty() ? std::string(child.substr(0, dot)) : std::string(frame) + "." + std::string(child.substr(0, dot));
  return std::find(g.called_containers.begin(), g.called_containers.end(), container) == g.called_containers.end();
}

// Whether own node c of collapsed run r (at `level`) hands what it computes, through
// more own nodes (64 at most), to a child called by name: CoaT's remove_cls(x1) ...
// .contiguous() into patch_embed2. Into a list element instead, the flow is a loop's,
// whose name the next step rebinds (VOLO's `x = x + self.pos_embed` between blocks,
// XCiT's cls-token cat before cls_attn_blocks, Twins' next stage).
bool feeds_named_child(const Graph& g, const StatementRuns& sr, int r, size_t level, size_t c) {
  const std::string& frame = g.nodes[c].module.str();
  std::vector<size_t> todo = {c}, seen = {c};
  for (size_t i = 0; i < todo.size() && i < 64; ++i) {
    for (int out : g.nodes[todo[i]].outputs) {
      if (out < 0) continue;
      for (int u : g.tensors[out].consumers) {
        const size_t uu = static_cast<size_t>(u);
        const size_t levels = static_cast<size_t>(sr.levels(uu));
        if (levels <= level || sr.run[static_cast<size_t>(sr.first[uu]) + level] != r) continue;
        if (levels > level + 1) {
          if (!list_element(g, frame, g.nodes[uu].module.str())) return true;
        } else if (std::find(seen.begin(), seen.end(), uu) == seen.end()) {
          seen.push_back(uu);
          todo.push_back(uu);
        }
      }
    }
  }
  return false;
}

// In a collapsed body (hidden_call), the locals the function keeps to its return, which
// the caller's statement ends: its own result passed to a named child (CoaT's x1_nocls,
// patch_embed2's input), and the result of a loop over a list of blocks that its own
// code reads on the way to a named child (x1, read by remove_cls). A value passed to a
// list element is the name the loop rebinds, and so is a loop's result that own code
// passes on to a list (feeds_named_child): neither is held. seqtrace session40
// st_coat_lite_small: the GPU holds x1..x3 and x1_nocls..x3_nocls until forward_features
// returns (46 MB at b16 bf16, 750 MB at b261 fp16).
int collapsed_hold(const Graph& g, StatementRuns& sr, int r, size_t level, size_t p, size_t c) {
  const bool own_p = static_cast<size_t>(sr.levels(p)) == level + 1;
  const bool own_c = static_cast<size_t>(sr.levels(c)) == level + 1;
  if (own_p == own_c || !hidden_call(g, sr, r, level)) return -1;
  const bool held = own_p ? !list_element(g, g.nodes[p].module.str(), g.nodes[c].module.str())
                          : list_element(g, g.nodes[c].module.str(), g.nodes[p].module.str()) &&
                                feeds_named_child(g, sr, r, level, c);
  return held ? sr.runs[static_cast<size_t>(r)].end : -1;
}

// The last node a local holds producer p's output to when consumer c reads it, or -1
// when no local does (another invocation, or the same statement).
int local_hold(const Graph& g, StatementRuns& sr, const PySource& py, int underscore, size_t p, size_t c) {
  const int d = shared_invocations(sr, p, c);  // levels in the same invocation
  if (d == 0) return -1;
  const int rp = sr.run[static_cast<size_t>(sr.first[p] + d - 1)];
  const int rc = sr.run[static_cast<size_t>(sr.first[c] + d - 1)];
  if (rp == rc) return collapsed_hold(g, sr, rp, static_cast<size_t>(d - 1), p, c);  // within one statement
  const PyStatement& made = py.statements[static_cast<size_t>(sr.runs[static_cast<size_t>(rp)].statement)];
  if (made.binds) return rebound(sr, py, underscore, rp);
  if (made.continuation && py.statements[static_cast<size_t>(sr.runs[static_cast<size_t>(rc)].statement)].line > made.line) {
    // An element of a tuple written over several lines, read by a statement below it:
    // the tuple was assigned (an argument list's call runs on its first line, above).
    // The names are not known, so nothing rebinds them: held until the function returns.
    return sr.invocations[static_cast<size_t>(sr.runs[static_cast<size_t>(rp)].invocation)].end;
  }
  return -1;
}

// Locals, from the Python stacks (graphs from the dynamo exporter). Per frame level, the
// nodes run in invocations of functions, and an invocation in runs of statements. A
// tensor made in one statement and read in a later one of the same invocation was bound
// to the names that statement assigns; the binding holds it until a later statement of
// the invocation assigns those names again, or the function returns.
void statement_holds(const Graph& g, std::vector<int>& release) {
  StatementRuns sr = statement_runs(g);
  if (sr.runs.empty()) return;
  const int underscore = g.python.name_id("_");
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const Tensor& ten = g.tensors[t];
    if (ten.kind != TensorKind::Activation || ten.producer < 0) continue;
    const size_t p = static_cast<size_t>(ten.producer);
    if (sr.levels(p) == 0) continue;
    for (int c : ten.consumers) {
      const int hold = local_hold(g, sr, g.python, underscore, p, static_cast<size_t>(c));
      if (hold >= 0) release[t] = std::max(release[t], hold);
    }
  }
}

// Each node's module path, split once per distinct module (-1: outside every frame,
// the loss and dead nodes).
struct ModulePaths {
  Modules mods;
  std::vector<Path> paths;
  std::vector<int> path_of;
};

ModulePaths module_paths(const Graph& g) {
  ModulePaths m;
  for (const std::string& c : g.called_containers) m.mods.containers.push_back(m.mods.split(c));
  // Keyed by the module's one interned copy (atom.h), not its text: hashing 282k paths
  // of a million-node graph was a third of this function.
  std::unordered_map<const std::string*, int> ids;
  m.path_of.assign(g.nodes.size(), -1);
  int prev = -1;  // consecutive nodes mostly share their module: compare before hashing
  for (int k = 0; k < static_cast<int>(g.nodes.size()); ++k) {
    const Node& n = g.nodes[k];
    if (n.dead || n.module == "loss") continue;
    if (prev >= 0 && g.nodes[prev].module == n.module) {
      m.path_of[k] = m.path_of[prev];
      prev = k;
      continue;
    }
    prev = k;
    auto [it, fresh] = ids.try_emplace(&n.module.str(), static_cast<int>(m.paths.size()));
    if (fresh) {
      // Sized once: a million-node graph has 282k modules, and growing each path
      // component by component was most of this function's time.
      m.paths.push_back(m.mods.split(n.module));
    }
    m.path_of[k] = it->second;
  }
  return m;
}

// The runs each tensor's consumers ask about: arguments held until their callee returns,
// and, without Python stacks, the keeps_locals guesses (with stacks, statement_holds
// reads the locals instead).
void argument_queries(const Graph& g, const ModulePaths& m, bool stacks, std::vector<Query>& queries) {
  const Modules& mods = m.mods;
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const Tensor& ten = g.tensors[t];
    if (ten.kind != TensorKind::Activation || ten.producer < 0 || m.path_of[ten.producer] < 0) continue;
    if (g.nodes[ten.producer].op == "Constant") continue;  // shape arithmetic
    const Path& p = m.paths[m.path_of[ten.producer]];
    for (int c : ten.consumers) {
      if (m.path_of[c] < 0 || m.path_of[c] == m.path_of[ten.producer]) continue;  // same module: no call between
      const Path& cp = m.paths[m.path_of[c]];
      const size_t common = common_depth(p, cp);
      // An argument: held until the callee it went into returns.
      if (const size_t callee = mods.first_call_below(cp, common)) queries.push_back({c, callee, static_cast<int>(t)});
      // A named submodule's result, in a caller that keeps such results in locals: kept
      // until the caller returns. (Not through a list element: `x = block(x)` rebinds.)
      if (!stacks && g.nodes[c].keeps_locals && common == cp.size()) {
        const size_t child = mods.first_call_below(p, common);
        bool named = child > 0;
        for (size_t i = common; named && i < child; ++i) named = !mods.comps.numeric(p[i]);
        if (named && common > 0) queries.push_back({c, common, static_cast<int>(t)});
      }
      // `h = self.ln_2(h); ff = self.mlp(h); h = r + ff`: a named submodule's result
      // passed to a sibling is the caller's local until the caller's next statement
      // rebinds it, after the sibling returns (checked below: that statement's node is
      // the caller's own, and the caller keeps locals).
      if (!stacks && common > 0 && common < cp.size() && common < p.size()) {
        const size_t callee = mods.first_call_below(cp, common);
        const size_t child = mods.first_call_below(p, common);
        bool named = callee > 0 && child > 0;
        for (size_t i = common; named && i < child; ++i) named = !mods.comps.numeric(p[i]);
        if (named) queries.push_back({c, callee, static_cast<int>(t), common});
      }
    }
  }
}

// `att = self.drop(F.softmax(att))`: a caller's own value that only another of its own
// ops reads, whose result goes straight into a named child's call, is taken to stay
// bound until that call returns. Nested calls hold it so (the old `att` is rebound
// after the dropout returns), and so does a name never rebound (HF BERT's
// attention_scores); only `att = F.softmax(att); att = self.drop(att)` lets go sooner,
// which a graph without stacks cannot tell apart. gpt_mini fp32's largest batch from
// its TorchScript export, 103 against 119 measured, hung on that hold (GPU trace).
void own_value_queries(const Graph& g, const ModulePaths& m, std::vector<Query>& queries) {
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const Tensor& ten = g.tensors[t];
    if (ten.kind != TensorKind::Activation || ten.producer < 0 || m.path_of[ten.producer] < 0) continue;
    if (g.nodes[ten.producer].op == "Constant" || ten.consumers.empty()) continue;
    const int own = m.path_of[ten.producer];
    int reader = -1;
    bool only_own = true;
    for (int c : ten.consumers) {
      only_own &= m.path_of[c] == own;
      reader = std::max(reader, c);
    }
    const Node& r = g.nodes[static_cast<size_t>(reader)];
    if (!only_own || r.outputs.empty() || r.outputs[0] < 0) continue;
    const Path& p = m.paths[own];
    for (int c : g.tensors[r.outputs[0]].consumers) {
      if (m.path_of[c] < 0 || m.paths[m.path_of[c]].size() <= p.size()) continue;
      if (common_depth(p, m.paths[m.path_of[c]]) != p.size()) continue;
      if (const size_t callee = m.mods.first_call_below(m.paths[m.path_of[c]], p.size())) {
        queries.push_back({c, callee, static_cast<int>(t)});
      }
      break;
    }
  }
}

// `q, k, v = x.split(d, 2)`: the pieces of a split are bound to locals, and as views
// they keep x's storage until the call the split is in returns.
void split_queries(const Graph& g, const ModulePaths& m, std::vector<Query>& queries) {
  for (int k = 0; k < static_cast<int>(g.nodes.size()); ++k) {
    const Node& n = g.nodes[k];
    if (m.path_of[k] < 0 || n.op != "Split" || n.outputs.size() < 2 || n.inputs.empty() || n.inputs[0] < 0) continue;
    const size_t depth = m.paths[m.path_of[k]].size();
    const Tensor& in = g.tensors[n.inputs[0]];
    if (depth > 0 && in.kind == TensorKind::Activation && in.producer >= 0) queries.push_back({k, depth, n.inputs[0]});
  }
}

// Where each query's run ends: one pass over the nodes with the open runs, one per depth
// of the current path (depth 0, the root, is never asked about: a callee is at least one
// level down). Sets query_run and caller_run per query, own_nodes_depth per node, and
// returns each run's last node.
std::vector<int> run_ends(const Graph& g, const ModulePaths& m, const std::vector<Query>& queries,
                          std::vector<int>& query_run, std::vector<int>& caller_run, std::vector<int>& own_nodes_depth) {
  const int nn = static_cast<int>(g.nodes.size());
  std::vector<int> run_end = {-1};  // per run: its last node
  std::vector<int> open = {0};      // run ids of the open prefixes, by depth
  const Path* current = nullptr;
  static const Path kRoot;
  query_run.assign(queries.size(), 0);
  caller_run.assign(queries.size(), -1);
  own_nodes_depth.assign(static_cast<size_t>(nn), -1);  // per node, its path's depth (-1: no frame)
  size_t q = 0;
  int last = -1;
  for (int k = 0; k < nn; ++k) {
    if (m.path_of[k] < 0 || g.nodes[k].op == "Constant") continue;  // no consumer of a tensor
    const Path& p = m.paths[m.path_of[k]];
    const size_t keep = common_depth(current ? *current : kRoot, p);
    for (size_t d = open.size() - 1; d > keep; --d) run_end[open[d]] = last;
    open.resize(keep + 1);
    for (size_t d = keep + 1; d <= p.size(); ++d) {
      open.push_back(static_cast<int>(run_end.size()));
      run_end.push_back(-1);
    }
    current = &p;
    last = k;
    own_nodes_depth[k] = static_cast<int>(p.size());
    for (; q < queries.size() && queries[q].node == k; ++q) {
      query_run[q] = open[queries[q].depth];
      if (queries[q].caller) caller_run[q] = open[queries[q].caller];
    }
  }
  for (size_t d = open.size() - 1; d > 0; --d) run_end[open[d]] = last;
  return run_end;
}

// Each query's answer into release: the end of its run, or for a rebinding query the
// caller's first own node after it (when that node is within the caller's run and the
// caller keeps locals).
void answer_queries(const Graph& g, const ModulePaths& m, std::vector<Query>& queries, std::vector<int>& release) {
  std::sort(queries.begin(), queries.end(), [](const Query& a, const Query& b) { return a.node < b.node; });
  std::vector<int> query_run, caller_run, own_nodes_depth;
  const std::vector<int> run_end = run_ends(g, m, queries, query_run, caller_run, own_nodes_depth);
  // The caller's own nodes, by depth, for the rebinding queries.
  std::unordered_map<size_t, std::vector<int>> own;
  for (const Query& x : queries) {
    if (x.caller) own.try_emplace(x.caller);
  }
  if (!own.empty()) {
    for (int k = 0; k < static_cast<int>(g.nodes.size()); ++k) {
      auto it = own_nodes_depth[k] > 0 ? own.find(static_cast<size_t>(own_nodes_depth[k])) : own.end();
      if (it != own.end()) it->second.push_back(k);
    }
  }
  for (size_t i = 0; i < queries.size(); ++i) {
    int end = run_end[query_run[i]];
    if (queries[i].caller) {
      const std::vector<int>& nodes = own[queries[i].caller];
      auto next = std::upper_bound(nodes.begin(), nodes.end(), end);
      if (next == nodes.end() || *next > run_end[caller_run[i]] || !g.nodes[*next].keeps_locals) continue;
      end = *next;
    }
    int& r = release[queries[i].tensor];
    r = std::max(r, end);
  }
}

}  // namespace

std::vector<int> frame_release_nodes(const Graph& g) {
  std::vector<int> release(g.tensors.size(), -1);
  const ModulePaths m = module_paths(g);
  const bool stacks = !g.python.empty();
  std::vector<Query> queries;
  argument_queries(g, m, stacks, queries);
  if (!stacks) own_value_queries(g, m, queries);
  split_queries(g, m, queries);
  if (stacks) statement_holds(g, release);
  if (!queries.empty()) answer_queries(g, m, queries, release);
  return drop_short_holds(g, std::move(release));
}

}  // namespace memest
