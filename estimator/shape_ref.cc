// The pool behind ShapeRef: one copy of each distinct shape for the whole process, so
// that shapes from different graphs compare by pointer (as atom.cc's names do).
// Never freed: a generated million-node graph has a few dozen distinct shapes, and a
// pass that rewrites every dim (a --dim binding) adds one copy of each.
// Not locked: graphs are built and changed on one thread.
#include "estimator/shape_ref.h"

#include <unordered_set>

namespace memest {
namespace {

struct ShapeHash {
  size_t operator()(const Shape& s) const {
    size_t h = s.size();
    for (const Expr& d : s) h = h * 0x9E3779B97F4A7C15ull + d.hash();
    return h;
  }
};

// Node-based, so an element's address survives rehashing.
std::unordered_set<Shape, ShapeHash>& pool() {
  static auto* p = new std::unordered_set<Shape, ShapeHash>();
  return *p;
}

}  // namespace

const Shape* ShapeRef::intern(const Shape& s) { return &*pool().insert(s).first; }

}  // namespace memest
