// The per-branch copies of a merged op (see branch_copies.h).
#include "estimator/branch_copies.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memest {
namespace {

// Whether module path `path` is `root` or lies inside it.
bool within(std::string_view path, std::string_view root) {
  if (root.empty()) return true;
  return path.starts_with(root) && (path.size() == root.size() || path[root.size()] == '.');
}

// The module of the sibling branch that holds `path` beside `owner`: the child of their
// deepest common module that `path` lies in.
std::string branch_of(std::string_view path, std::string_view owner) {
  size_t common = 0;  // length of the common module prefix, at a dot
  for (size_t k = 0; k <= std::min(path.size(), owner.size()); ++k) {
    const bool end_p = k == path.size() || path[k] == '.', end_o = k == owner.size() || owner[k] == '.';
    if (end_p && end_o) common = k;
    if (k == path.size() || k == owner.size() || path[k] != owner[k]) break;
  }
  const size_t start = common == 0 ? 0 : common + 1;
  const size_t end = path.find('.', start);
  return std::string(path.substr(0, end));
}

// Whether module paths a and b may name one module: equal, or one a dotted tail of the
// other ("model.decoder" and "model.model.decoder": a legacy scope beside a path the
// parameters' names gave, frontends/scope_repair.h).
bool may_alias(std::string_view a, std::string_view b) {
  if (a.size() < b.size()) std::swap(a, b);
  return a == b || (a.ends_with(b) && a[a.size() - b.size() - 1] == '.');
}

// Whether `branch` may be `owner` or one of the modules that hold it, spelled otherwise.
bool aliases_owner(std::string_view branch, std::string_view owner) {
  for (std::string_view m = owner; !m.empty();) {
    if (may_alias(branch, m)) return true;
    const size_t dot = m.rfind('.');
    m = dot == std::string_view::npos ? std::string_view() : m.substr(0, dot);
  }
  return false;
}

// The module of the node that makes tensor t, or nullopt for a graph input, parameter or
// constant.
std::optional<std::string_view> maker_module(const Graph& g, int t) {
  const int p = g.tensors[static_cast<size_t>(t)].producer;
  if (p < 0) return std::nullopt;
  return std::string_view(g.nodes[static_cast<size_t>(p)].module.str());
}

// The copies node `n` needs, by the module B each copy belongs to: the readers each
// would take over (see branch_copies.h).
std::map<std::string, std::vector<int>> copies_needed(const Graph& g, const Node& n) {
  std::map<std::string, std::vector<int>> out;
  if (n.dead || !n.domain.empty() || n.outputs.size() != 1 || n.outputs[0] < 0 || n.op == "Constant") return out;
  const std::string_view m = n.module.str();
  const size_t dot = m.rfind('.');
  if (dot == std::string_view::npos) return out;
  const std::string_view owner = m.substr(0, dot);
  bool reads_outside = false;
  for (int in : n.inputs) {
    if (in < 0) continue;
    const auto maker = maker_module(g, in);
    if (maker && within(*maker, owner)) return out;  // not the first op of its module
    reads_outside |= maker.has_value() || g.tensors[static_cast<size_t>(in)].kind == TensorKind::Input;
  }
  if (!reads_outside) return out;
  const int y = n.outputs[0];
  bool used_inside = false;
  std::vector<int> outer;
  for (int c : g.tensors[static_cast<size_t>(y)].consumers) {
    const std::string_view mc = g.nodes[static_cast<size_t>(c)].module.str();
    if (!within(mc, owner)) {
      outer.push_back(c);
    } else {
      used_inside |= mc != m;
    }
  }
  if (!used_inside || outer.empty()) return out;
  for (int c : outer) {
    std::string b = branch_of(g.nodes[static_cast<size_t>(c)].module.str(), owner);
    if (!aliases_owner(b, owner)) out[std::move(b)].push_back(c);
  }
  return out;
}

}  // namespace

int restore_branch_copies(Graph& g) {
  std::vector<std::pair<size_t, std::map<std::string, std::vector<int>>>> found;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    auto copies = copies_needed(g, g.nodes[i]);
    if (!copies.empty()) found.emplace_back(i, std::move(copies));
  }
  if (found.empty()) return 0;
  size_t copies = 0;
  for (const auto& f : found) copies += f.second.size();
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size() + copies);  // `n` below stays put while its copies go in
  std::vector<size_t> index_of(g.nodes.size());  // g.nodes' index -> nodes'
  struct Rewire {
    int reader, from, to;  // g.nodes' reader; the merged tensor; the copy's
  };
  std::vector<Rewire> rewires;
  auto next = found.begin();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    index_of[i] = nodes.size();
    nodes.push_back(std::move(g.nodes[i]));
    if (next == found.end() || next->first != i) continue;
    const Node& n = nodes.back();
    const std::string& m = n.module.str();
    for (const auto& [branch, readers] : next->second) {
      Node copy = n;
      copy.module = branch + m.substr(m.rfind('.'));
      copy.name = (n.name.empty() ? n.op.str() : n.name.str()) + "@" + branch;
      const int from = n.outputs[0];
      const int to = g.new_tensor(g.tensors[static_cast<size_t>(from)].name.str() + "@" + branch);
      copy.outputs = {to};
      for (int c : readers) rewires.push_back({c, from, to});
      nodes.push_back(std::move(copy));
    }
    ++next;
  }
  for (const Rewire& w : rewires) {
    for (int& in : nodes[index_of[static_cast<size_t>(w.reader)]].inputs) {
      if (in == w.from) in = w.to;
    }
  }
  const int made = static_cast<int>(nodes.size() - g.nodes.size());
  g.nodes = std::move(nodes);
  g.relink();
  return made;
}

}  // namespace memest
