// Module paths from parameter names where the legacy exporter's scopes lost them.
#include "frontends/scope_repair.h"

#include <map>
#include <set>
#include <string>
#include <string_view>

namespace memest {
namespace {

// "ln1_2" -> ("ln1", 2); "ff.0_1" -> ("ff.0", 1); without a numeric suffix, (m, 0).
std::pair<std::string, int> split_repeat(const std::string& m) {
  const size_t us = m.rfind('_');
  const size_t dot = m.rfind('.');
  if (us == std::string::npos || us + 1 >= m.size() || (dot != std::string::npos && dot > us)) return {m, 0};
  for (size_t i = us + 1; i < m.size(); ++i) {
    if (m[i] < '0' || m[i] > '9' || m.size() - us > 6) return {m, 0};
  }
  return {m.substr(0, us), std::stoi(m.substr(us + 1))};
}

bool ends_with_path(const std::string& path, const std::string& tail) {
  return path.size() > tail.size() && path.compare(path.size() - tail.size(), tail.size(), tail) == 0 &&
         path[path.size() - tail.size() - 1] == '.';
}

std::string parent_of(const std::string& m) {
  const size_t dot = m.rfind('.');
  return dot == std::string::npos ? "" : m.substr(0, dot);
}

}  // namespace

int recover_module_paths(Graph& g) {
  // Per scope, the paths its parameters name; a scope is repaired only when they agree.
  std::map<std::string, std::set<std::string>> votes;
  for (const Node& n : g.nodes) {
    if (n.dead || n.module.empty()) continue;
    for (int in : n.inputs) {
      if (in < 0) continue;
      const Tensor& t = g.tensors[in];
      if (t.kind != TensorKind::Parameter && t.kind != TensorKind::Buffer) continue;
      const std::string p = module_from_param_name(t.name);
      if (p.empty() || p == n.module) continue;
      const std::string base = split_repeat(n.module).first;
      // Either the whole scope or the scope less its repeat suffix ends the path.
      if (ends_with_path(p, n.module) || (base != n.module && (p == base || ends_with_path(p, base)))) {
        votes[n.module].insert(p);
      } else {
        votes[n.module].insert("");  // a tied weight or a parameter read from elsewhere: no say
      }
    }
  }
  std::map<std::string, std::string> rename;
  // Prefix added per (repeat index, parent scope): "ff.0_1" -> "blocks.1.ff.0" gives
  // (1, "ff") -> "blocks.1.".
  std::map<std::pair<int, std::string>, std::set<std::string>> prefixes;
  for (const auto& [scope, paths] : votes) {
    if (paths.size() != 1 || paths.begin()->empty()) continue;
    const std::string& p = *paths.begin();
    rename[scope] = p;
    const auto [base, index] = split_repeat(scope);
    const std::string& tail = ends_with_path(p, scope) ? scope : base;
    const std::string parent = parent_of(tail);
    if (!parent.empty()) prefixes[{index, parent}].insert(p.substr(0, p.size() - tail.size()));
  }
  if (rename.empty()) return 0;
  for (const Node& n : g.nodes) {
    if (n.dead || n.module.empty() || rename.count(n.module) || votes.count(n.module)) continue;
    const auto [base, index] = split_repeat(n.module);
    const std::string parent = parent_of(base);
    auto it = prefixes.find({index, parent});
    if (parent.empty() || it == prefixes.end() || it->second.size() != 1) continue;
    rename[n.module] = *it->second.begin() + base;
  }
  for (Node& n : g.nodes) {
    if (auto it = rename.find(n.module); it != rename.end()) n.module = it->second;
  }
  return static_cast<int>(rename.size());
}

}  // namespace memest
