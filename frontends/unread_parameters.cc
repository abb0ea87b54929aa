// Listed parameters no op reads (unread_parameters.h).
#include "frontends/unread_parameters.h"

#include <algorithm>
#include <map>
#include <unordered_set>

namespace memest {
namespace {

// The module path a parameter belongs to ("a.b.weight" -> "a.b"; "" for the root's own).
std::string_view module_of(std::string_view param) {
  const size_t dot = param.rfind('.');
  return dot == std::string_view::npos ? std::string_view() : param.substr(0, dot);
}

// Every module some live node lies in, with its ancestors ("a.b.c" gives "a", "a.b", "a.b.c").
std::unordered_set<std::string_view> ran_modules(const Graph& g) {
  std::unordered_set<std::string_view> ran;
  for (const Node& n : g.nodes) {
    if (n.dead) continue;
    const std::string_view m = n.module;
    for (size_t dot = m.find('.'); dot != std::string_view::npos; dot = m.find('.', dot + 1)) ran.insert(m.substr(0, dot));
    if (!m.empty()) ran.insert(m);
  }
  return ran;
}

// Every dot-boundary tail of the names the file holds or the calls read ("a.b.weight"
// gives "a.b.weight", "b.weight", "weight"): a module reached by two paths (CoaT's shared
// `crpe1`, listed under its own path and held under a block's) or tied to another (T5's
// `shared` and `decoder.embed_tokens`) is held under the other name with the same tail.
std::unordered_set<std::string_view> held_tails(const Graph& g, const std::unordered_set<std::string_view>& read) {
  std::unordered_set<std::string_view> tails;
  auto add = [&](std::string_view name) {
    tails.insert(name);
    for (size_t dot = name.find('.'); dot != std::string_view::npos; dot = name.find('.', dot + 1)) {
      tails.insert(name.substr(dot + 1));
    }
  };
  for (const Tensor& t : g.tensors) {
    if (t.producer < 0) add(t.name);
  }
  for (std::string_view r : read) add(r);
  return tails;
}

}  // namespace

std::vector<UnreadParameter> unread_parameters(const Graph& g, const std::vector<std::string_view>& parameters,
                                               const ParameterReads& reads) {
  std::unordered_set<std::string_view> read;
  for (const auto& ps : reads.by_node) read.insert(ps.begin(), ps.end());
  for (const auto& [t, names] : reads.folded_from) read.insert(names.begin(), names.end());
  const std::unordered_set<std::string_view> ran = ran_modules(g);
  std::vector<UnreadParameter> unread;
  for (std::string_view p : parameters) {
    if (read.count(p) || g.find_tensor(p) >= 0) continue;
    const std::string_view module = module_of(p);
    // The root's own parameters, and those of a module that ran, may be read under
    // another name (a tied head's weight is the embedding's): only a module no op lies
    // in says its parameters are unread.
    if (module.empty() || ran.count(module)) continue;
    size_t cut = module.find('.');
    while (cut != std::string_view::npos && ran.count(module.substr(0, cut))) cut = module.find('.', cut + 1);
    unread.push_back({p, module.substr(0, cut)});
  }
  if (unread.empty()) return unread;
  // What lies below the module that never ran, held under another path, is an alias.
  const std::unordered_set<std::string_view> tails = held_tails(g, read);
  std::erase_if(unread, [&](const UnreadParameter& u) { return tails.count(u.name.substr(u.module.size() + 1)) > 0; });
  return unread;
}

std::vector<std::string> unread_modules(const std::vector<UnreadParameter>& unread) {
  std::map<std::string_view, size_t> count;
  for (const auto& u : unread) ++count[u.module];
  std::vector<std::pair<std::string_view, size_t>> by_size(count.begin(), count.end());
  std::stable_sort(by_size.begin(), by_size.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> out;
  for (const auto& [module, n] : by_size) out.push_back(std::string(module) + " (" + std::to_string(n) + ")");
  return out;
}

size_t warn_unread_parameters(Graph& g, const std::vector<std::string_view>& parameters, const ParameterReads& reads) {
  const std::vector<UnreadParameter> unread = unread_parameters(g, parameters, reads);
  g.unread_parameters = unread.size();
  if (unread.empty()) return 0;
  const std::vector<std::string> modules = unread_modules(unread);
  std::string where;
  for (size_t k = 0; k < modules.size() && k < 3; ++k) where += (k ? ", " : "") + modules[k];
  if (modules.size() > 3) where += ", ...";
  g.warn(std::to_string(unread.size()) + (unread.size() == 1 ? " parameter" : " parameters") +
         " of modules the exported forward never ran (" + where +
         "): torch keeps them on the GPU, but the file holds them in no form, so their bytes are not in this "
         "estimate (no gradient reaches them, so no optimizer state either). Add their bytes, "
         "sum(p.numel() * p.element_size()) over them, to the peak, or take them off --budget");
  return unread.size();
}

}  // namespace memest
