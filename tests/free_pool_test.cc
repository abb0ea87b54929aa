// The allocator model's free pool (estimator/free_pool.h): best fit by size then
// address, blocks that leave the pool while their entries stay, emptied buckets reused,
// and the release of whole segments.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "estimator/free_pool.h"

using namespace memest;

namespace {

// What the pool reads of the allocator's blocks.
struct TestBlock {
  bool free = false;
  int64_t bytes = 0;
  int64_t size() const { return bytes; }
};

// Blocks and their pool, as Model keeps them: a block is freed (and inserted), taken
// (and marked allocated), or merged away (erased, then its size changes).
struct Pool {
  std::vector<TestBlock> blocks;
  std::vector<BlockAddress> where;
  FreePool<std::vector<TestBlock>> pool{blocks};

  Pool() { blocks.reserve(64); }  // the pool holds a reference: no reallocation
  int add(int64_t bytes, int64_t segment, int64_t offset) {
    blocks.push_back({false, bytes});
    where.push_back(block_address(segment, offset));
    return static_cast<int>(blocks.size()) - 1;
  }
  void free(int id) {
    blocks[static_cast<size_t>(id)].free = true;
    pool.insert({blocks[static_cast<size_t>(id)].bytes, id, where[static_cast<size_t>(id)]});
  }
  int take(int64_t bytes) {
    const int id = pool.take_best_fit(bytes);
    if (id >= 0) blocks[static_cast<size_t>(id)].free = false;
    return id;
  }
};

}  // namespace

TEST_CASE("free pool: addresses order by segment (signed), then offset") {
  CHECK(block_address(-2, 1 << 20) < block_address(-1, 0));
  CHECK(block_address(-1, int64_t{1} << 45) < block_address(0, 0));
  CHECK(block_address(0, 512) < block_address(0, 1024));
  CHECK(block_address(7, 0) < block_address(int64_t{1} << 40, 0));  // a GPU's address above the model's
}

TEST_CASE("free pool: the smallest size that fits, and of it the lowest address") {
  Pool p;
  const int a = p.add(1024, 0, 0);      // too small for 1500
  const int b = p.add(2048, -1, 0);     // fits, segment -1
  const int c = p.add(2048, -2, 4096);  // fits, segment -2: lower
  const int d = p.add(4096, -3, 0);     // fits, but larger
  for (int id : {a, b, c, d}) p.free(id);
  CHECK(p.take(1500) == c);
  CHECK(p.take(1500) == b);
  CHECK(p.take(1500) == d);
  CHECK(p.take(1500) == -1);  // only 1024 is left
  CHECK(p.take(1024) == a);
  CHECK(p.take(1) == -1);
}

TEST_CASE("free pool: of one size, taken lowest address first whatever the order freed") {
  // Freed highest first (each the new lowest, kept apart from the heap), then lowest
  // first, then mixed: always taken in address order.
  for (const std::vector<int64_t>& offsets : {std::vector<int64_t>{5, 4, 3, 2, 1, 0},
                                              std::vector<int64_t>{0, 1, 2, 3, 4, 5},
                                              std::vector<int64_t>{3, 0, 5, 1, 4, 2}}) {
    Pool p;
    std::vector<int> id_at(6);
    for (int64_t off : offsets) id_at[static_cast<size_t>(off)] = p.add(512, 0, off * 512);
    for (int64_t off : offsets) p.free(id_at[static_cast<size_t>(off)]);
    for (int off = 0; off < 6; ++off) CHECK(p.take(512) == id_at[static_cast<size_t>(off)]);
    CHECK(p.take(512) == -1);
  }
}

TEST_CASE("free pool: an erased block is passed over, and found again once freed at its size") {
  Pool p;
  const int low = p.add(2048, -2, 0);
  const int high = p.add(2048, -1, 0);
  p.free(low);
  p.free(high);
  // `low` merges with a neighbour: erased, then it grows to 4096 and is freed as such.
  p.pool.erase(2048, low);
  p.blocks[static_cast<size_t>(low)].bytes = 4096;
  p.free(low);
  CHECK(p.take(2048) == high);  // its stale 2048 entry is not taken
  CHECK(p.take(2048) == low);   // now as 4096, the smallest that fits
  CHECK(p.take(512) == -1);
  // Back to 2048 (split again) and freed: its old entry and the new one are the same
  // block, taken once.
  p.blocks[static_cast<size_t>(low)].bytes = 2048;
  p.free(low);
  CHECK(p.take(2048) == low);
  CHECK(p.take(2048) == -1);
}

TEST_CASE("free pool: an emptied bucket takes the next size beside it instead of a new one") {
  // The rest of a segment split again and again: 20 MiB less 1, 2, 3... KiB, each freed
  // and taken in turn. The bucket of the size just taken serves the next rest.
  Pool p;
  const int64_t seg = 20 << 20;
  const int big = p.add(64 << 20, -1, 0);  // a larger size that stays
  p.free(big);
  for (int k = 1; k <= 40; ++k) {
    const int rest = p.add(seg - k * 1024, 0, k * 1024);
    p.free(rest);
    CHECK(p.take(seg - k * 1024) == rest);
  }
  CHECK(p.pool.buckets() <= 3);
  CHECK(p.take(1) == big);
}

TEST_CASE("free pool: erase_if removes the blocks its predicate returns, the rest stay in order") {
  Pool p;
  std::vector<int> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(p.add(i % 2 ? 4096 : 2048, -i, 0));
  for (int id : ids) p.free(id);
  // Whole segments go back: the ones of 4096 bytes (ids 1, 3, 5).
  int seen = 0;
  p.pool.erase_if([&](const FreePool<std::vector<TestBlock>>::Key& k) {
    ++seen;
    if (k.size != 4096) return false;
    p.blocks[static_cast<size_t>(k.id)].bytes = 0;
    return true;
  });
  CHECK(seen == 6);
  CHECK(p.take(3000) == -1);
  CHECK(p.take(2048) == ids[4]);  // segment -4, the lowest of 0, -2, -4
  CHECK(p.take(2048) == ids[2]);
  CHECK(p.take(2048) == ids[0]);
  CHECK(p.take(1) == -1);
}
