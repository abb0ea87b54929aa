// Tensor shapes held once. A million-node graph has 1.4M tensors but a few dozen
// distinct shapes ([batch, seq, 768] over and over), yet each tensor kept a vector of
// its own: 32 bytes inline and a heap block of 24 bytes a dim. A ShapeRef points at
// the one interned copy, so equal shapes are equal pointers.
#pragma once

#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

#include "estimator/expr.h"

namespace memest {

using Shape = std::vector<Expr>;

/// std::optional<Shape>'s interface (as the IR uses it) over an interned, immutable
/// shape: 8 bytes. Changing a dim means assigning a new shape.
class ShapeRef {
 public:
  ShapeRef() = default;
  ShapeRef(std::nullopt_t) {}  // NOLINT: implicit, as std::optional's
  ShapeRef(const Shape& s) : p_(intern(s)) {}  // NOLINT
  ShapeRef(std::initializer_list<Expr> dims) : p_(intern(Shape(dims))) {}
  ShapeRef(const std::optional<Shape>& o) : p_(o ? intern(*o) : nullptr) {}  // NOLINT

  bool has_value() const { return p_ != nullptr; }
  explicit operator bool() const { return has_value(); }
  const Shape& operator*() const { return *p_; }
  const Shape* operator->() const { return p_; }
  const Shape& value() const { return *p_; }
  Shape value_or(Shape dflt) const { return p_ ? *p_ : std::move(dflt); }
  void reset() { p_ = nullptr; }
  /// A copy to change and assign back.
  operator std::optional<Shape>() const { return p_ ? std::optional<Shape>(*p_) : std::nullopt; }  // NOLINT

  friend bool operator==(ShapeRef a, ShapeRef b) { return a.p_ == b.p_; }
  friend bool operator==(ShapeRef a, std::nullopt_t) { return !a.p_; }
  friend bool operator==(ShapeRef a, const Shape& b) { return a.p_ && *a.p_ == b; }
  friend bool operator==(ShapeRef a, const std::optional<Shape>& b) {
    return b ? a == *b : !a.p_;
  }

 private:
  /// The pool's copy of `s` (estimator/shape_ref.cc), added when new.
  static const Shape* intern(const Shape& s);
  const Shape* p_ = nullptr;
};

}  // namespace memest
