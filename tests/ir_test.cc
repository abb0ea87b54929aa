// The graph's name index (estimator/ir.h): names find their tensors, and a dropped index
// (analyze() drops it so the replay can reuse its memory) is rebuilt by the next lookup.
#include <doctest/doctest.h>

#include <string>

#include "estimator/ir.h"

using namespace memest;

TEST_CASE("graph: names find their tensors; a new tensor's name is made unique") {
  Graph g;
  const int x = g.tensor_id("x"), w = g.tensor_id("fc.weight");
  CHECK(x == 0);
  CHECK(w == 1);
  CHECK(g.tensor_id("x") == x);
  CHECK(g.find_tensor("fc.weight") == w);
  CHECK(g.find_tensor("fc.bias") == -1);
  const int y = g.new_tensor("x");
  CHECK(g.tensors[y].name == "x#1");
}

TEST_CASE("graph: after drop_index every lookup answers as before") {
  Graph g;
  for (int i = 0; i < 100; ++i) g.tensor_id("t" + std::to_string(i));
  g.drop_index();
  CHECK(g.find_tensor("t0") == 0);
  CHECK(g.find_tensor("t99") == 99);
  CHECK(g.find_tensor("t100") == -1);
  g.drop_index();
  CHECK(g.tensor_id("t42") == 42);  // found, not added again
  CHECK(g.tensors.size() == 100);
  g.drop_index();
  CHECK(g.tensors[g.new_tensor("t7")].name == "t7#1");
  g.drop_index();
  std::string fresh = "fresh";
  CHECK(g.adopt_tensor(std::move(fresh)) == 101);
  CHECK(g.find_tensor("fresh") == 101);
  CHECK(g.find_tensor("t7#1") == 100);
  // reserve() after a drop keeps every name.
  g.drop_index();
  g.reserve(1000, 10);
  CHECK(g.find_tensor("t63") == 63);
  // An empty graph's dropped index finds nothing and grows on the first name.
  Graph e;
  e.drop_index();
  CHECK(e.find_tensor("a") == -1);
  CHECK(e.tensor_id("a") == 0);
  CHECK(e.find_tensor("a") == 0);
}
