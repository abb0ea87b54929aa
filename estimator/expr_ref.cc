// The pool behind ExprRef: one copy of each distinct expression for the whole process,
// as shape_ref.cc's shapes. Never freed: a million-node program has a few thousand.
// Not locked: programs are built on one thread.
//
// The builder interns every block it makes (6.9M at a million nodes), so the lookup is
// an open-addressing table of (hash, pointer) that stays in cache, not a node-based set:
// the copies live in a deque, whose elements keep their addresses as it grows.
#include "estimator/expr_ref.h"

#include <deque>
#include <vector>

namespace memest {
namespace {

class Pool {
 public:
  const Expr* intern(const Expr& e) {
    if (2 * (count_ + 1) > slots_.size()) grow();
    const size_t h = e.hash();
    for (size_t i = slot(h);; i = (i + 1) & (slots_.size() - 1)) {
      Slot& s = slots_[i];
      if (!s.expr) {
        exprs_.push_back(e);
        ++count_;
        s = {h, &exprs_.back()};
        return s.expr;
      }
      if (s.hash == h && *s.expr == e) return s.expr;
    }
  }

 private:
  // The hash beside the pointer: a probe reads the copy only when the hashes agree.
  struct Slot {
    size_t hash = 0;
    const Expr* expr = nullptr;
  };

  // The hash's high bits (Fibonacci hashing): a byte count's low bits are mostly zero.
  size_t slot(size_t h) const { return (h * 0x9E3779B97F4A7C15ull) >> shift_; }
  void grow() {
    const size_t n = slots_.empty() ? 1024 : 2 * slots_.size();
    slots_.assign(n, Slot{});
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(n));
    for (const Expr& e : exprs_) {
      const size_t h = e.hash();
      size_t i = slot(h);
      while (slots_[i].expr) i = (i + 1) & (n - 1);
      slots_[i] = {h, &e};
    }
  }

  std::deque<Expr> exprs_;
  size_t count_ = 0;         // exprs_.size(), which a deque works out
  std::vector<Slot> slots_;  // a power of two, at most half full
  unsigned shift_ = 64;
};

Pool& pool() {
  static auto* p = new Pool();
  return *p;
}

}  // namespace

const Expr* ExprRef::intern(const Expr& e) { return pool().intern(e); }

const Expr* ExprRef::zero() {
  static const Expr* z = intern(Expr());
  return z;
}

}  // namespace memest
