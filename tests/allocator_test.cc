// The caching allocator model (estimator/allocator.cc) on hand-made programs: what each
// block is granted, freed or still held at the end, and the one request it refuses.
#include <doctest/doctest.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "estimator/allocator.h"
#include "estimator/simulate.h"

using namespace memest;

namespace {

constexpr int64_t kKiB = 1024, kMiB = 1024 * kKiB;

// A program of `n` blocks and the events given as (block, alloc?) pairs, all in forward.
Program program_of(int n, const std::vector<std::pair<int, bool>>& events) {
  Program p;
  for (int b = 0; b < n; ++b) p.blocks.push_back(Block{ExprRef(Expr(0)), -1, Category::Activations});
  for (const auto& [b, alloc] : events) {
    p.events.push_back(Event{alloc ? Event::Alloc : Event::Free, Phase::Forward, 0, b});
  }
  return p;
}

}  // namespace

TEST_CASE("allocator: each block is granted what the allocator hands out, freed or held at the end") {
  // Block 0: 11 MiB, over the 10 MiB below which requests share 20 MiB segments, gets a
  // segment rounded to 2 MiB, 12 MiB; the 1 MiB left is not more than 1 MiB, so the block
  // is not split and is granted all 12 MiB (held to the end).
  // Block 1: 600 KiB comes from a 2 MiB small-pool segment, split (the rest is >= 512 B):
  // granted 600 KiB, then freed.
  // Block 2: 3 MiB from a 20 MiB segment, split (17 MiB left): granted 3 MiB, freed.
  // Block 3: a request of 0 bytes is never allocated: granted 0.
  const Program p = program_of(4, {{0, true}, {1, true}, {2, true}, {3, true}, {1, false}, {2, false}});
  const std::vector<int64_t> size = {11 * kMiB, 600 * kKiB, 3 * kMiB, 0};
  const AllocatorResult r = replay_allocator(p, size);
  REQUIRE(r.granted.size() == 4);
  CHECK(r.granted[0] == 12 * kMiB);
  CHECK(r.granted[1] == 600 * kKiB);
  CHECK(r.granted[2] == 3 * kMiB);
  CHECK(r.granted[3] == 0);
  CHECK(r.peak.peak_bytes == 12 * kMiB + 600 * kKiB + 3 * kMiB);
  CHECK(r.peak_reserved == 12 * kMiB + 2 * kMiB + 20 * kMiB);
}

TEST_CASE("allocator: a block reused whole is granted the whole cached block") {
  // 3 MiB then freed: its 20 MiB segment is one free 20 MiB block again. 19.5 MiB next
  // fits it and leaves 0.5 MiB, not more than 1 MiB: not split, granted all 20 MiB.
  const Program p = program_of(2, {{0, true}, {0, false}, {1, true}});
  const std::vector<int64_t> size = {3 * kMiB, 19 * kMiB + 512 * kKiB};
  const AllocatorResult r = replay_allocator(p, size);
  CHECK(r.granted[0] == 3 * kMiB);
  CHECK(r.granted[1] == 20 * kMiB);
  CHECK(r.peak_reserved == 20 * kMiB);
  CHECK(r.peak.peak_bytes == 20 * kMiB);
}

TEST_CASE("allocator: a request too large for the compact block layout replays all the same") {
  // 200 TiB (a batch no GPU holds, which `memest check` must still call too large): the
  // replay takes the wide layout and grants the whole rounded segment.
  const Program p = program_of(2, {{0, true}, {1, true}, {1, false}});
  const std::vector<int64_t> size = {int64_t{200} << 40, 3 * kMiB};
  const AllocatorResult r = replay_allocator(p, size);
  CHECK(r.granted[0] == int64_t{200} << 40);
  CHECK(r.granted[1] == 3 * kMiB);
  CHECK(r.peak_reserved == (int64_t{200} << 40) + 20 * kMiB);
  // Just under the compact layout's limit: the same answer from the 24-byte blocks.
  const std::vector<int64_t> under = {(int64_t{64} << 40) - 2 * kMiB, 3 * kMiB};
  const AllocatorResult u = replay_allocator(p, under);
  CHECK(u.granted[0] == under[0]);
  CHECK(u.peak_reserved == under[0] + 20 * kMiB);
}

TEST_CASE("allocator: most_allocated bounds the uncapped peak by what a block not split may add") {
  // The program of the test above: 3 MiB, freed, then 19.5 MiB, granted the whole 20 MiB
  // block. The bound counts each large request with 1 MiB more (the most a block keeps
  // unsplit): max(3 + 1, 19.5 + 1) = 20.5 MiB, at or over the replay's 20 MiB.
  const Program p = program_of(2, {{0, true}, {0, false}, {1, true}});
  const std::vector<int64_t> size = {3 * kMiB, 19 * kMiB + 512 * kKiB};
  CHECK(most_allocated(p, size) == 20 * kMiB + 512 * kKiB);
  CHECK(most_allocated(p, size) >= replay_allocator(p, size).peak.peak_bytes);
  // The first test's program: 11 MiB (granted 12), 600 KiB, 3 MiB and 0 bytes alive at
  // once. Small requests add under 512 bytes (511), large ones 1 MiB, nothing for none:
  // 12 MiB + 600 KiB + 511 + 4 MiB.
  const Program q = program_of(4, {{0, true}, {1, true}, {2, true}, {3, true}, {1, false}, {2, false}});
  const std::vector<int64_t> qsize = {11 * kMiB, 600 * kKiB, 3 * kMiB, 0};
  CHECK(most_allocated(q, qsize) == 12 * kMiB + 600 * kKiB + 511 + 4 * kMiB);
  CHECK(most_allocated(q, qsize) >= replay_allocator(q, qsize).peak.peak_bytes);
}

TEST_CASE("allocator: a probe's uncapped peak, from where the capped replay first released the cache") {
  // 3 MiB takes a 20 MiB segment and is freed; 30 MiB needs a segment of its own. Under a
  // 48 MiB cap, 20 + 30 is too much: the cached 20 MiB goes back, the cap's first release.
  // Then 11 MiB: the uncapped allocator splits it from the cached 20 MiB block (9 MiB
  // left, more than 1 MiB), granted 11 MiB, 41 MiB in all; the capped one has no cache
  // left and takes a 12 MiB segment, not split (1 MiB left), 42 MiB in all, 42 reserved.
  const Program p = program_of(3, {{0, true}, {0, false}, {1, true}, {2, true}});
  const std::vector<int64_t> size = {3 * kMiB, 30 * kMiB, 11 * kMiB};
  REQUIRE(replay_allocator(p, size).peak.peak_bytes == 41 * kMiB);
  const int64_t kAdded = 20 * kMiB + 30 * kMiB + 12 * kMiB;  // a segment for each request
  CHECK(request_bounds(p, size).most_added == kAdded);
  int asked = 0;
  std::optional<int64_t> uncapped;
  const std::function<bool()> yes = [&] { return ++asked > 0; };
  const AllocatorResult capped = probe_allocator(p, size, 48 * kMiB, kAdded, yes, uncapped);
  CHECK(capped.released_cache);
  CHECK_FALSE(capped.out_of_memory);
  CHECK(capped.peak.peak_bytes == 42 * kMiB);
  CHECK(capped.peak_reserved == 42 * kMiB);
  CHECK(asked == 1);
  REQUIRE(uncapped);
  CHECK(*uncapped == 41 * kMiB);
  // Not wanted (most_allocated() settles it): asked, not replayed.
  std::optional<int64_t> none;
  const std::function<bool()> no = [&] { return ++asked < 0; };
  CHECK(probe_allocator(p, size, 48 * kMiB, kAdded, no, none).peak.peak_bytes == 42 * kMiB);
  CHECK(asked == 2);
  CHECK_FALSE(none);
  // A cap that never releases (60 MiB): nothing asked. One the first request fails
  // (19 MiB), after releasing a cache that holds nothing: asked, no uncapped replay.
  CHECK_FALSE(probe_allocator(p, size, 60 * kMiB, kAdded, yes, none).released_cache);
  CHECK(asked == 2);
  CHECK(probe_allocator(p, size, 19 * kMiB, kAdded, yes, none).out_of_memory);
  CHECK(asked == 3);
  CHECK_FALSE(none);
  // A probe's replay reports no `granted`.
  CHECK(probe_allocator(p, size, 48 * kMiB, kAdded, no, none).granted.empty());
}

TEST_CASE("allocator: request_bounds is committed_peak, most_added and most_allocated in one pass") {
  // The first test's program: 11 MiB, 600 KiB, 3 MiB and 0 bytes, the middle two freed.
  // Requests' peak 11 MiB + 600 KiB + 3 MiB; a segment each: 12 MiB (11 rounded to 2 MiB),
  // 2 MiB (small pool), 20 MiB (under 10 MiB), none for 0 bytes; most_allocated as above.
  Program q = program_of(4, {{0, true}, {1, true}, {2, true}, {3, true}, {1, false}, {2, false}});
  const std::vector<int64_t> qsize = {11 * kMiB, 600 * kKiB, 3 * kMiB, 0};
  RequestBounds r = request_bounds(q, qsize);
  CHECK(r.committed_peak == 11 * kMiB + 600 * kKiB + 3 * kMiB);
  CHECK(r.committed_peak == committed_peak(q, qsize));
  CHECK(r.most_added == 12 * kMiB + 2 * kMiB + 20 * kMiB);
  CHECK(r.most_allocated == most_allocated(q, qsize));
  // A workspace the cap may refuse (cuDNN's next algorithm then) is no committed request,
  // but it may take a segment and be handed out: 3 MiB leaves the requests' peak.
  q.blocks[2].may_fail = true;
  r = request_bounds(q, qsize);
  CHECK(r.committed_peak == 11 * kMiB + 600 * kKiB);
  CHECK(r.committed_peak == committed_peak(q, qsize));
  CHECK(r.most_added == 12 * kMiB + 2 * kMiB + 20 * kMiB);
  CHECK(r.most_allocated == 12 * kMiB + 600 * kKiB + 511 + 4 * kMiB);
  // 2^62 and 2^62 - 1 MiB: the requests' peak 2^63 - 1 MiB still fits an int64_t, their
  // segments (2^62 each, rounded to 2 MiB) and most_allocated's 1 MiB more apiece do not:
  // no bounds (most_added() and most_allocated() would throw), the peak as ever.
  const Program big = program_of(2, {{0, true}, {1, true}});
  const std::vector<int64_t> huge = {int64_t{1} << 62, (int64_t{1} << 62) - kMiB};
  r = request_bounds(big, huge);
  CHECK(r.committed_peak == INT64_MAX - kMiB + 1);
  CHECK_FALSE(r.most_added);
  CHECK_FALSE(r.most_allocated);
  CHECK_THROWS(most_allocated(big, huge));
}
