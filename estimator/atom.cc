// The pool behind Atom: one copy of each distinct string, for the whole process, so
// that Atoms from different graphs (a test's two graphs, a copied Graph) compare by
// pointer. Never freed: it holds op and module names, a few MB at a million nodes.
// Not locked: graphs are built and changed on one thread (cli/progress.cc's thread
// only prints).
#include "estimator/atom.h"

#include "estimator/intern_table.h"

namespace memest {
namespace {

struct Hash {
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};

// Open addressing (intern_table.h): a million-node graph interns 400k module paths, and
// a node-based set spent 4.7% of its estimate's samples allocating and rehashing.
InternTable<std::string, Hash>& pool() {
  static auto* p = new InternTable<std::string, Hash>();
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
  s_ = pool().intern(s);
}

}  // namespace memest
