// Caching allocator model. Constants and policies follow CUDACachingAllocator.cpp:
// requests round to 512 B; up to 1 MiB they come from 2 MiB segments (small pool),
// up to 10 MiB from 20 MiB segments, larger ones from segments rounded to 2 MiB;
// best-fit reuse of cached blocks; a block is split when the rest is at least
// 512 B (small pool) or more than 1 MiB (large pool); freed blocks merge with free
// neighbours; on cudaMalloc failure cached segments are released and it retries.
#include "estimator/allocator.h"

#include <set>
#include <vector>

namespace memest {
namespace {

constexpr int64_t kSmallSize = 1 << 20;       // largest request served by the small pool
constexpr int64_t kSmallBuffer = 2 << 20;     // small-pool segment
constexpr int64_t kLargeBuffer = 20 << 20;    // segment for requests under kMinLargeAlloc
constexpr int64_t kMinLargeAlloc = 10 << 20;
constexpr int64_t kRoundLarge = 2 << 20;

struct Blk {
  int64_t size;
  int seg;
  int prev = -1, next = -1;
  bool free = false;
  bool small;
};

class Model {
 public:
  explicit Model(std::optional<int64_t> limit) : limit_(limit) {}

  // Returns the block id, or -1 when out of memory.
  int malloc(int64_t size) {
    const bool small = size <= kSmallSize;
    auto& pool = small ? small_ : large_;
    auto it = pool.lower_bound({size, -1});
    int b;
    if (it != pool.end()) {
      b = it->second;
      pool.erase(it);
    } else {
      int64_t seg = small ? kSmallBuffer : size < kMinLargeAlloc ? kLargeBuffer : ceil_to(size, kRoundLarge);
      if (limit_ && reserved_ + seg > *limit_) {
        release_cached();
        if (reserved_ + seg > *limit_) return -1;
      }
      reserved_ += seg;
      peak_reserved_ = std::max(peak_reserved_, reserved_);
      b = static_cast<int>(blocks_.size());
      blocks_.push_back({seg, nsegs_++, -1, -1, false, small});
      seg_size_.push_back(seg);
    }
    Blk& blk = blocks_[b];
    blk.free = false;
    const int64_t rest = blk.size - size;
    if ((small && rest >= 512) || (!small && rest > kSmallSize)) {
      int r = static_cast<int>(blocks_.size());
      blocks_.push_back({rest, blk.seg, b, blk.next, true, small});
      Blk& me = blocks_[b];  // re-fetch: push_back may reallocate
      if (me.next >= 0) blocks_[me.next].prev = r;
      me.next = r;
      me.size = size;
      (small ? small_ : large_).insert({rest, r});
    }
    allocated_ += blocks_[b].size;
    peak_allocated_ = std::max(peak_allocated_, allocated_);
    return b;
  }

  void free(int b) {
    allocated_ -= blocks_[b].size;
    auto& pool = blocks_[b].small ? small_ : large_;
    blocks_[b].free = true;
    // Merge with free neighbours in the same segment.
    for (int side = 0; side < 2; ++side) {
      int nb = side == 0 ? blocks_[b].prev : blocks_[b].next;
      if (nb < 0 || !blocks_[nb].free) continue;
      pool.erase({blocks_[nb].size, nb});
      if (side == 0) {
        // Absorb b into its predecessor.
        blocks_[nb].size += blocks_[b].size;
        blocks_[nb].next = blocks_[b].next;
        if (blocks_[b].next >= 0) blocks_[blocks_[b].next].prev = nb;
        blocks_[b].size = 0;
        b = nb;
      } else {
        blocks_[b].size += blocks_[nb].size;
        blocks_[b].next = blocks_[nb].next;
        if (blocks_[nb].next >= 0) blocks_[blocks_[nb].next].prev = b;
        blocks_[nb].size = 0;
      }
    }
    pool.insert({blocks_[b].size, b});
  }

  int64_t peak_reserved() const { return peak_reserved_; }
  int64_t peak_allocated() const { return peak_allocated_; }

 private:
  static int64_t ceil_to(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

  // empty_cache on failure: whole free segments go back to the driver.
  void release_cached() {
    for (auto* pool : {&small_, &large_}) {
      for (auto it = pool->begin(); it != pool->end();) {
        const Blk& blk = blocks_[it->second];
        if (blk.prev < 0 && blk.next < 0 && blk.size == seg_size_[blk.seg]) {
          reserved_ -= blk.size;
          it = pool->erase(it);
        } else {
          ++it;
        }
      }
    }
  }

  std::optional<int64_t> limit_;
  std::vector<Blk> blocks_;
  std::vector<int64_t> seg_size_;
  std::set<std::pair<int64_t, int>> small_, large_;
  int nsegs_ = 0;
  int64_t reserved_ = 0, peak_reserved_ = 0, allocated_ = 0, peak_allocated_ = 0;
};

}  // namespace

AllocatorResult replay_allocator(const Program& p, const Bindings& b, int64_t round, std::optional<int64_t> limit) {
  const std::vector<int64_t> size = block_sizes(p, b, round);
  Model m(limit);
  std::vector<int> where(p.blocks.size(), -1);
  AllocatorResult r;
  for (const Event& ev : p.events) {
    if (ev.kind == Event::Alloc) {
      if (size[ev.block] == 0) continue;
      int blk = m.malloc(size[ev.block]);
      if (blk < 0) {
        r.out_of_memory = true;
        r.failed_request = size[ev.block];
        break;
      }
      where[ev.block] = blk;
    } else if (where[ev.block] >= 0) {
      m.free(where[ev.block]);
      where[ev.block] = -1;
    }
  }
  r.peak_reserved = m.peak_reserved();
  r.peak_allocated = m.peak_allocated();
  return r;
}

}  // namespace memest
