// The largest batch that fits: the search over a fit rule that is not monotone near
// the cap (cli/fit.h).
#include <doctest/doctest.h>

#include <set>

#include "cli/fit.h"

using namespace memest;

namespace {

// Fits: every batch up to `upto`, and the batches in `islands` above it; nothing
// from `bound` on can fit (may_fit).
struct Rule {
  int64_t upto;
  std::set<int64_t> islands;
  int64_t bound;
  mutable int calls = 0;
  bool fits(int64_t b) const {
    ++calls;
    return b <= upto || islands.count(b) > 0;
  }
  bool may_fit(int64_t b) const { return b < bound; }
};

FitSearch run(const Rule& r) {
  return search_fitting([&](int64_t b) { return r.fits(b); }, [&](int64_t b) { return r.may_fit(b); });
}

}  // namespace

TEST_CASE("monotone fitting: the search is the bisection's answer") {
  const Rule r{126, {}, 140};
  const FitSearch f = run(r);
  CHECK(f.contiguous == 126);
  CHECK(f.largest == 126);
}

TEST_CASE("an island above the first failure is found: gpt2_hf fp16 under 24 GiB fits 126, not 127-135, 136") {
  const Rule r{126, {136}, 150};
  const FitSearch f = run(r);
  CHECK(f.contiguous == 126);
  CHECK(f.largest == 136);
  // The bound search stops the scan: the batches from 150 on are never tried.
  CHECK(largest_fitting([&](int64_t b) { return r.fits(b); }) == 126);
}

TEST_CASE("the highest of several islands wins") {
  const FitSearch f = run(Rule{137, {142, 147, 149}, 160});
  CHECK(f.contiguous == 137);
  CHECK(f.largest == 149);
}

TEST_CASE("a wide range is sampled every stride-th batch, then refined above the first hit") {
  // Contiguous to 1000: the window reaches 1100, 100 batches, tried 3 apart from 1100
  // down (at most 48 tries): the first hit is 1064, then 1066 and 1065 above it: 1065.
  Rule r{1000, {}, 2001};
  for (int64_t b = 1060; b <= 1065; ++b) r.islands.insert(b);
  const FitSearch f = run(r);
  CHECK(f.largest == 1065);
  CHECK(r.calls < 2 * 11 + kMaxScan + 3);
}

TEST_CASE("the search looks no further than a tenth above the contiguous answer") {
  // gpt2_hf and gpt_mini's islands were within 9%: 1,200 is beyond 1000's window.
  const FitSearch f = run(Rule{1000, {1200}, 2001});
  CHECK(f.largest == 1000);
  // The bound cuts the window: nothing from 1005 on can fit, so 1004 is the top.
  Rule bounded{1000, {1004}, 1005};
  CHECK(run(bounded).largest == 1004);
}

TEST_CASE("nothing fits: 0") {
  const FitSearch f = run(Rule{0, {}, 1});
  CHECK(f.contiguous == 0);
  CHECK(f.largest == 0);
}
