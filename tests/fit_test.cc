// The largest batch that fits: the search over a fit rule that is not monotone near
// the cap (cli/fit.h).
#include <doctest/doctest.h>

#include <set>

#include "cli/fit.h"
#include "simulate_test_util.h"

using namespace memest;
using memest::testing::analyze_text;
using memest::testing::kMlp;

namespace {

// Fits calmly (the replay never reaches the cap) up to `calm`; above it, at the cap,
// the values in `at_cap`.
struct CapRule {
  int64_t calm;
  std::set<int64_t> at_cap;
  mutable std::set<int64_t> asked;
  Fit fit(int64_t b) const {
    CHECK(asked.insert(b).second);  // each value asked once
    if (b <= calm) return Fit::Calm;
    return at_cap.count(b) ? Fit::Capped : Fit::No;
  }
};

FitSearch run(const CapRule& r) {
  return search_fitting([&](int64_t b) { return r.fit(b); }, 1 << 20);
}

}  // namespace

TEST_CASE("monotone fitting: the search is the bisection's answer") {
  const CapRule r{126, {}};
  const FitSearch f = run(r);
  CHECK(f.contiguous == 126);
  CHECK(f.largest == 126);
  // 1, 2, 4, ..., 128 (8 values), then bisection between 64 and 128 (6): 14, no scan.
  CHECK(r.asked.size() == 14);
}

TEST_CASE("a yes/no probe: every fitting value is calm, the bisection's answer stands") {
  // gpt2_hf fp16 under 24 GiB, as the GPU ran it: 126, 128 and 136, not 127 or 129-135.
  const std::set<int64_t> ran = {128, 136};
  const FitSearch f = search_fitting([&](int64_t b) { return b <= 126 || ran.count(b) > 0; });
  CHECK(f.contiguous == f.largest);
}

TEST_CASE("the bisection's answer above a failure is not the answer: blind22's sh_gpt_bigcode_lm") {
  // memest's replay of its step under 24 GiB (memest check, batch by batch): calm up
  // to 1300 here, fits at the cap to 1365, not 1366-1386, again 1387-1408, not
  // 1409-1429, and so on in bands of about 21 (1515-1540 taken to fit, nothing above).
  // Doubling to 1024 and 2048 and bisecting lands on 1540.
  CapRule r{1300, {}};
  for (int64_t b = 1301; b <= 1540; ++b) {
    if (b <= 1365 || (b >= 1387 && b <= 1408) || (b >= 1430 && b <= 1450) || (b >= 1472 && b <= 1493) || b >= 1515) {
      r.at_cap.insert(b);
    }
  }
  const FitSearch f = run(r);
  CHECK(f.largest == 1540);
  CHECK(f.contiguous == 1365);
}

TEST_CASE("the first failure of a wide range: every stride-th value, then one by one below the first that failed") {
  // Calm to 4999, at the cap to 9000 but for a gap of 90 batches, wider than the
  // stride of ceil(4001 / kMaxScan) = 84: wherever it lies, a stride-th value falls in
  // it, and the one-by-one walk below that value finds its first batch.
  for (int64_t gap : {5000, 5001, 5083, 8000, 8916}) {
    CapRule r{4999, {}};
    for (int64_t b = 5000; b <= 9000; ++b) {
      if (b < gap || b >= gap + 90) r.at_cap.insert(b);
    }
    const FitSearch f = run(r);
    CHECK(f.contiguous == gap - 1);
    // The bisection (about 2 x 14), the calm bisection (about 12), the scan (at most
    // kMaxScan + 84).
    CHECK(r.asked.size() < 2 * 14 + 14 + kMaxScan + 84);
  }
}

TEST_CASE("a gap narrower than the stride of a wide range may go unseen (fit.h says so)") {
  CapRule r{4999, {}};
  for (int64_t b = 5000; b <= 9000; ++b) {
    if (b != 5050) r.at_cap.insert(b);
  }
  CHECK(run(r).contiguous == 9000);
  // Within kMaxScan values of the calm answer every value is tried.
  CapRule near{4999, {}};
  for (int64_t b = 5000; b <= 5040; ++b) {
    if (b != 5020) near.at_cap.insert(b);
  }
  CHECK(run(near).contiguous == 5019);
}

TEST_CASE("nothing fits: 0") {
  const FitSearch f = run(CapRule{0, {}});
  CHECK(f.contiguous == 0);
  CHECK(f.largest == 0);
}


TEST_CASE("a guess that fits calmly answers for every smaller value; the search's path and answer unchanged") {
  // The gpt_bigcode case above, with a guess at 700.
  CapRule plain{1300, {}}, r{1300, {}};
  for (int64_t b = 1301; b <= 1540; ++b) {
    if (b <= 1365 || (b >= 1387 && b <= 1408) || b >= 1515) plain.at_cap.insert(b), r.at_cap.insert(b);
  }
  const FitSearch without = run(plain);
  const FitSearch f = search_fitting([&](int64_t b) { return r.fit(b); }, 1 << 20, 700);
  CHECK(f.contiguous == without.contiguous);
  CHECK(f.largest == without.largest);
  // The doubling's 1 to 512 are not asked; everything else is, and 700 besides.
  std::set<int64_t> expected = plain.asked;
  for (int64_t b = 1; b <= 512; b *= 2) CHECK(expected.erase(b) == 1);
  expected.insert(700);
  CHECK(r.asked == expected);
}

TEST_CASE("a guess that does not fit calmly costs its probe and nothing else") {
  CapRule plain{126, {130}}, r{126, {130}};
  const FitSearch without = run(plain);
  const FitSearch f = search_fitting([&](int64_t b) { return r.fit(b); }, 1 << 20, 130);
  CHECK(f.contiguous == without.contiguous);
  CHECK(f.contiguous == 126);
  CHECK(f.largest == without.largest);
  std::set<int64_t> expected = plain.asked;
  expected.insert(130);
  CHECK(r.asked == expected);
}

TEST_CASE("the calm guess of an affine bound: where it takes half the budget") {
  // 1,000 bytes that do not grow and 100 a sample; a budget of 200,100: half is 100,050
  // bytes, reached between 990 (100,000) and 991; the secant from 1 and 2 lands on 990.
  std::set<int64_t> asked;
  const std::optional<int64_t> g = calm_guess(
      [&](int64_t v) {
        asked.insert(v);
        return 1000 + 100 * v;
      },
      200100);
  CHECK(g == 990);
  CHECK(asked == std::set<int64_t>{1, 2, 990});
}

TEST_CASE("the calm guess of a convex bound comes within a sixty-fourth from below") {
  // A square in the value (attention over a swept sequence): half of 2*10^6 bytes is
  // 10^6, reached at sqrt(999,000) = 999.5; the guess is under it and close, where
  // regula falsi alone, from a secant root of 333,000, would creep up from 2.
  int probes = 0;
  const std::optional<int64_t> g = calm_guess(
      [&](int64_t v) {
        ++probes;
        return 1000 + v * v;
      },
      2000000);
  REQUIRE(g);
  CHECK(*g <= 999);
  CHECK(*g >= 999 - 999 / 64 - 1);
  CHECK(probes <= 2 + 8);
}

TEST_CASE("no calm guess when the bound does not grow, when 2 is already over, or when only 1 may be tried") {
  CHECK(!calm_guess([](int64_t) { return int64_t{5000}; }, 100000));
  CHECK(!calm_guess([](int64_t v) { return 30000 * v; }, 100000));
  CHECK(!calm_guess([](int64_t v) { return 1000 + v; }, 100000, 1));
}

TEST_CASE("a calm guess of a bound that barely grows stops at the largest value tried") {
  // 1 GB of parameters and one byte more from 2 on: the secant from 1 and 2 reaches half
  // of a 1 TB budget past any int64_t; the guess is --max, which the bound is under.
  const std::optional<int64_t> g =
      calm_guess([](int64_t v) { return int64_t{1000000000} + (v > 1 ? 1 : 0); }, int64_t{1000000000000});
  CHECK(g == kDefaultMaxBatch);
}

TEST_CASE("fit_answer: fits()'s peak and reserved bytes, from replays that only count") {
  TrainConfig cfg;
  cfg.optim = Optim::Adam;
  const Analysis a = analyze_text(kMlp, cfg);
  for (int64_t batch : {1, 64, 4096, 65536}) {
    const Estimate e = estimate(a, batch);
    for (int64_t budget : {e.peak.peak_bytes - 1, e.peak.peak_bytes, e.reserved_bytes - 1, e.reserved_bytes,
                           e.reserved_bytes / 2, e.reserved_bytes * 2}) {
      Estimate full;
      fits(a, batch, budget, std::nullopt, &full);
      const FitAnswer got = fit_answer(a, batch, budget, std::nullopt);
      CHECK_MESSAGE(got.peak_bytes == full.peak.peak_bytes, "batch ", batch, " budget ", budget);
      CHECK_MESSAGE(got.reserved_bytes == full.reserved_bytes, "batch ", batch, " budget ", budget);
    }
  }
}

TEST_CASE("fit_answer of a probe that fitted at the cap: its uncapped peak and its capped reserved bytes") {
  TrainConfig cfg;
  cfg.optim = Optim::Adam;
  const Analysis a = analyze_text(kMlp, cfg);
  BudgetProbe p;
  p.fits = p.released = true;
  p.capped_reserved = 40 << 20;
  p.uncapped_peak = 30 << 20;
  const FitAnswer kept = fit_answer(a, 64, std::nullopt, p);
  CHECK(kept.peak_bytes == 30 << 20);
  CHECK(kept.reserved_bytes == 40 << 20);
  // Without the probe's peak, the uncapped replay's: estimate()'s peak.
  p.uncapped_peak.reset();
  const FitAnswer made = fit_answer(a, 64, std::nullopt, p);
  CHECK(made.peak_bytes == estimate(a, 64).peak.peak_bytes);
  CHECK(made.reserved_bytes == 40 << 20);
}

TEST_CASE("unread note: the parameters a fit answer leaves out are said, and nothing when there are none") {
  Analysis a = analyze_text(kMlp, TrainConfig{});
  CHECK(unread_note(a).empty());
  a.accounting.unread_count = 1;
  CHECK(unread_note(a).find("1 parameter of modules the exported forward never ran is not counted") == 0);
  a.accounting.unread_count = 150;
  const std::string note = unread_note(a);
  CHECK(note.find("150 parameters of modules") == 0);
  CHECK(note.find("take their bytes off the budget") != std::string::npos);
}
