// Interned expressions (estimator/expr_ref.h): equal expressions held once, however
// many are interned (the pool's table grows past its first size).
#include <doctest/doctest.h>

#include "estimator/expr_ref.h"

using namespace memest;

TEST_CASE("expr ref: equal expressions are one copy; reads as the Expr") {
  const Expr batch = Expr::symbol("batch");
  ExprRef a = batch * 4096, b = Expr(4096) * batch;
  CHECK(a == b);
  CHECK(&*a == &*b);
  CHECK(a.str() == "4096*batch");
  Bindings bind;
  bind.set("batch", 8);
  CHECK(a.eval(bind) == 32768);
  CHECK(ExprRef() == ExprRef(Expr(0)));
  CHECK(ExprRef()->is_zero());
  const ExprRef poly = batch * batch + 3;
  CHECK(poly != a);
  CHECK(poly.str() == (batch * batch + 3).str());
}

TEST_CASE("expr ref: many distinct expressions keep their copies") {
  const Expr seq = Expr::symbol("seq");
  std::vector<ExprRef> refs;
  for (int64_t i = 1; i <= 5000; ++i) refs.emplace_back(seq * (i << 20) + i);
  for (int64_t i = 1; i <= 5000; ++i) {
    const ExprRef again = seq * (i << 20) + i;
    REQUIRE(again == refs[static_cast<size_t>(i - 1)]);
    CHECK(*again == seq * (i << 20) + i);
  }
}
