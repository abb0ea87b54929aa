// Id lists held inline (estimator/id_list.h): the std::vector operations the IR uses,
// across the move from inline storage to the heap past four ids.
#include <doctest/doctest.h>

#include <vector>

#include "estimator/id_list.h"

using namespace memest;

TEST_CASE("id list: grows past the inline four and keeps its ids") {
  IdList l;
  CHECK(l.empty());
  for (int i = 0; i < 10; ++i) l.push_back(i);
  REQUIRE(l.size() == 10);
  for (int i = 0; i < 10; ++i) CHECK(l[static_cast<size_t>(i)] == i);
  CHECK(l.front() == 0);
  CHECK(l.back() == 9);
  l.pop_back();
  CHECK(l.size() == 9);
  l.clear();
  CHECK(l.empty());
}

TEST_CASE("id list: copies, moves, insert, erase and resize, inline and on the heap") {
  for (int n : {3, 7}) {
    CAPTURE(n);
    IdList a;
    for (int i = 0; i < n; ++i) a.push_back(i);
    IdList b = a;
    CHECK(b == a);
    IdList c = std::move(b);
    CHECK(c == a);
    CHECK(b.empty());
    c.insert(c.begin() + 1, 100);
    CHECK(c[1] == 100);
    CHECK(c.size() == static_cast<size_t>(n + 1));
    c.erase(c.begin() + 1);
    CHECK(c == a);
    const std::vector<int> more{7, 8};
    c.insert(c.end(), more.begin(), more.end());
    CHECK(c.back() == 8);
    c.resize(2);
    CHECK(c == IdList{0, 1});
    c.resize(4, -1);
    CHECK(c == std::vector<int>{0, 1, -1, -1});
    a = c;
    CHECK(a.vec() == std::vector<int>{0, 1, -1, -1});
    a = {5};
    CHECK(a.size() == 1);
    CHECK(a[0] == 5);
  }
}
