// The pool behind Atom: one copy of each distinct string, for the whole process, so
// that Atoms from different graphs (a test's two graphs, a copied Graph) compare by
// pointer. Never freed: it holds op and module names, a few MB at a million nodes.
// Not locked: graphs are built and changed on one thread (cli/progress.cc's thread
// only prints).
#include "estimator/atom.h"

#include <unordered_set>

namespace memest {
namespace {

struct Hash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};

// Node-based, so an element's address survives rehashing.
std::unordered_set<std::string, Hash, std::equal_to<>>& pool() {
  static auto* p = new std::unordered_set<std::string, Hash, std::equal_to<>>();
  return *p;
}

}  // namespace

const std::string& Atom::empty_string() {
  static const std::string* e = new std::string();
  return *e;
}

Atom::Atom(std::string_view s) {
  if (s.empty()) {
    s_ = &empty_string();
    return;
  }
  auto& p = pool();
  auto it = p.find(s);
  if (it == p.end()) it = p.emplace(s).first;
  s_ = &*it;
}

}  // namespace memest
