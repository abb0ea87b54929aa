// The pool behind ExprRef: one copy of each distinct expression for the whole process,
// as shape_ref.cc's shapes. Never freed: a million-node program has a few thousand.
// Not locked: programs are built on one thread.
//
// The builder interns every block it makes (6.9M at a million nodes), so the lookup is
// an open-addressing table of pointers that stays in cache, not a node-based set: the
// copies live in a deque, whose elements keep their addresses as it grows.
#include "estimator/expr_ref.h"

#include <deque>
#include <vector>

namespace memest {
namespace {

class Pool {
 public:
  const Expr* intern(const Expr& e) {
    if (2 * (exprs_.size() + 1) > slots_.size()) grow();
    const size_t h = e.hash();
    for (size_t i = slot(h);; i = (i + 1) & (slots_.size() - 1)) {
      const Expr* s = slots_[i];
      if (!s) {
        exprs_.push_back(e);
        slots_[i] = &exprs_.back();
        return slots_[i];
      }
      if (*s == e) return s;
    }
  }

 private:
  // The hash's high bits (Fibonacci hashing): a byte count's low bits are mostly zero.
  size_t slot(size_t h) const { return (h * 0x9E3779B97F4A7C15ull) >> shift_; }
  void grow() {
    const size_t n = slots_.empty() ? 1024 : 2 * slots_.size();
    slots_.assign(n, nullptr);
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(n));
    for (const Expr& e : exprs_) {
      size_t i = slot(e.hash());
      while (slots_[i]) i = (i + 1) & (n - 1);
      slots_[i] = &e;
    }
  }

  std::deque<Expr> exprs_;
  std::vector<const Expr*> slots_;  // a power of two, at most half full
  unsigned shift_ = 64;
};

Pool& pool() {
  static auto* p = new Pool();
  return *p;
}

}  // namespace

const Expr* ExprRef::intern(const Expr& e) { return pool().intern(e); }

}  // namespace memest
