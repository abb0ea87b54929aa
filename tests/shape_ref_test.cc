// Interned shapes (estimator/shape_ref.h): std::optional<Shape>'s reading interface,
// and equal shapes held once.
#include <doctest/doctest.h>

#include <optional>

#include "estimator/shape_ref.h"

using namespace memest;

TEST_CASE("shape ref: empty until set; equal shapes are one copy") {
  ShapeRef none;
  CHECK_FALSE(none.has_value());
  CHECK(none == std::nullopt);
  const Expr batch = Expr::symbol("batch");
  ShapeRef a = Shape{batch, 768}, b = Shape{batch, Expr(768)};
  REQUIRE(a.has_value());
  CHECK(a == b);
  CHECK(&*a == &*b);
  CHECK(a->size() == 2);
  CHECK((*a)[1].as_const() == 768);
  CHECK(a == Shape{batch, 768});
  CHECK(a != Shape{batch * 2, 768});
  ShapeRef scalar = Shape{};
  CHECK(scalar.has_value());
  CHECK(scalar->empty());
  CHECK(scalar != none);
}

TEST_CASE("shape ref: a change is a new shape; the old one is unchanged") {
  const Expr seq = Expr::symbol("seq");
  ShapeRef a = Shape{seq, 4};
  const ShapeRef before = a;
  std::optional<Shape> copy = a;
  (*copy)[0] = seq + 1;
  a = copy;
  CHECK(a != before);
  CHECK((*before)[0] == seq);
  CHECK((*a)[0] == seq + 1);
  a.reset();
  CHECK_FALSE(a);
  CHECK(a.value_or(Shape{1}) == Shape{1});
}
