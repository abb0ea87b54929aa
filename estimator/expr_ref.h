// Program block sizes held once. A million-node graph's program has 6.9M blocks but a
// few thousand distinct sizes (the same activations, layer after layer), and each block
// kept an Expr of its own: 24 of its 32 bytes. An ExprRef points at the one interned
// copy, so a block is 16 bytes.
#pragma once

#include "estimator/expr.h"

namespace memest {

/// An interned, immutable Expr: 8 bytes. Reads like a const Expr (dereference it, or
/// call the members the program's users call).
class ExprRef {
 public:
  ExprRef() : p_(zero()) {}
  ExprRef(const Expr& e) : p_(intern(e)) {}  // NOLINT: implicit, so `block.bytes = n * 4` reads as before

  const Expr& operator*() const { return *p_; }
  const Expr* operator->() const { return p_; }
  int64_t eval(const Bindings& b) const { return p_->eval(b); }
  std::string str() const { return p_->str(); }

  friend bool operator==(ExprRef a, ExprRef b) { return a.p_ == b.p_; }

 private:
  /// The pool's copy of `e` (estimator/expr_ref.cc), added when new.
  static const Expr* intern(const Expr& e);
  /// The pool's 0, looked up once: most SizeBounds leave one of their sizes unset.
  static const Expr* zero();
  const Expr* p_;
};

}  // namespace memest
