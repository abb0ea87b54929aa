// The pool behind ExprRef: one copy of each distinct expression for the whole process,
// as shape_ref.cc's shapes. Never freed: a million-node program has a few thousand.
// Not locked: programs are built on one thread. The builder interns every block it
// makes (6.9M at a million nodes), so the set is an open-addressing one (intern_table.h).
#include "estimator/expr_ref.h"

#include "estimator/intern_table.h"

namespace memest {
namespace {

struct ExprHash {
  size_t operator()(const Expr& e) const { return e.hash(); }
};

InternTable<Expr, ExprHash>& pool() {
  static auto* p = new InternTable<Expr, ExprHash>();
  return *p;
}

}  // namespace

const Expr* ExprRef::intern(const Expr& e) { return pool().intern(e); }

const Expr* ExprRef::zero() {
  static const Expr* z = intern(Expr());
  return z;
}

}  // namespace memest
