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
  // 1000 batches between the contiguous answer and the bound: 48 samples 21 apart from
  // 2000 down, the first hit 1895, then 1896-1915 from the top down: 1900.
  Rule r{1000, {}, 2001};
  for (int64_t b = 1890; b <= 1900; ++b) r.islands.insert(b);
  const FitSearch f = run(r);
  CHECK(f.largest == 1900);
  CHECK(r.calls < 2 * 11 + kMaxScan + 21);
}

TEST_CASE("nothing fits: 0") {
  const FitSearch f = run(Rule{0, {}, 1});
  CHECK(f.contiguous == 0);
  CHECK(f.largest == 0);
}
