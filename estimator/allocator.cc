// Caching allocator model. Constants and policies follow CUDACachingAllocator.cpp:
// requests round to 512 B; up to 1 MiB they come from 2 MiB segments (small pool),
// up to 10 MiB from 20 MiB segments, larger ones from segments rounded to 2 MiB;
// best-fit reuse of cached blocks; a block is split when the rest is at least
// 512 B (small pool) or more than 1 MiB (large pool); freed blocks merge with free
// neighbours; on cudaMalloc failure cached segments are released and it retries.
#include "estimator/allocator.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

#include "estimator/free_pool.h"

namespace memest {
namespace {

constexpr int64_t kSmallSize = 1 << 20;       // largest request served by the small pool
constexpr int64_t kSmallBuffer = 2 << 20;     // small-pool segment
constexpr int64_t kLargeBuffer = 20 << 20;    // segment for requests under kMinLargeAlloc
constexpr int64_t kMinLargeAlloc = 10 << 20;
constexpr int64_t kRoundLarge = 2 << 20;

int64_t ceil_to(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// The segment cudaMalloc'd for a request of `size` bytes that no cached block serves.
int64_t segment_for(int64_t size) {
  return size <= kSmallSize ? kSmallBuffer : size < kMinLargeAlloc ? kLargeBuffer : ceil_to(size, kRoundLarge);
}

constexpr int kPaused = -2;  // Model::malloc: paused before the cap releases the cache

// One block of a segment; merged-away and released blocks keep their id with size 0.
// Trivial, so that a chunk of them (BlockStore) is not written until used. Two layouts:
// a replay whose requests are all under 64 TiB (every real one) keeps size and offset in
// 47-bit fields, 24 bytes a block (a million-node replay holds 6M of them at its peak);
// a larger request (a batch no GPU could hold, which `check` still has to answer) takes
// the 32-byte layout.
struct CompactBlk {
  static constexpr int64_t kLimit = int64_t{1} << 46;  ///< requests under this fit its fields
  // The size in one field of the first word: it is read at every lookup of the free
  // pools (split across two words, decoding it was 2.5% of a sweep's instructions).
  uint64_t size_ : 47, offset_hi : 15, free : 1, small : 1;
  uint32_t offset_lo;
  int seg;
  int prev, next;  ///< neighbours in the segment (-1: none)

  int64_t size() const { return static_cast<int64_t>(size_); }
  int64_t offset() const { return static_cast<int64_t>(offset_hi) << 32 | offset_lo; }  ///< from the segment's start
  void set_size(int64_t v) { size_ = static_cast<uint64_t>(v); }
  void set_offset(int64_t v) {
    offset_lo = static_cast<uint32_t>(v);
    offset_hi = static_cast<uint64_t>(v >> 32) & 0x7fff;
  }
};
static_assert(sizeof(CompactBlk) == 24, "a million-node replay holds 6M blocks");

struct WideBlk {
  int64_t size_;
  int seg;
  int prev, next;
  bool free, small;
  int64_t offset_;

  int64_t size() const { return size_; }
  int64_t offset() const { return offset_; }
  void set_size(int64_t v) { size_ = v; }
  void set_offset(int64_t v) { offset_ = v; }
};

template <typename Blk>
Blk make_blk(int64_t size, int seg, int prev, int next, bool free, bool small, int64_t offset) {
  Blk b;
  b.seg = seg;
  b.prev = prev;
  b.next = next;
  b.free = free;
  b.small = small;
  b.set_size(size);
  b.set_offset(offset);
  return b;
}

// The model's blocks, in chunks of 2 MiB rather than one array. A million-node replay
// makes 6M blocks (190 MB); one array of them fitted none of the holes the program
// builder's arrays left when they were freed (the heap is never trimmed, cli/heap.cc),
// so it was faulted in fresh at the estimate's peak. A chunk's elements stay where they
// are as the store grows.
template <typename Blk>
class BlockStore {
 public:
  BlockStore() = default;
  BlockStore(const BlockStore& o) : size_(o.size_) {
    for (size_t c = 0; c < o.chunks_.size(); ++c) {
      chunks_.emplace_back(new Blk[kChunk]);
      const size_t n = std::min(kChunk, o.size_ - c * kChunk);
      std::copy(o.chunks_[c].get(), o.chunks_[c].get() + n, chunks_.back().get());
    }
  }
  BlockStore& operator=(const BlockStore&) = delete;
  Blk& operator[](size_t i) { return chunks_[i >> kShift][i & kMask]; }
  const Blk& operator[](size_t i) const { return chunks_[i >> kShift][i & kMask]; }
  size_t size() const { return size_; }
  void push_back(const Blk& b) {
    if ((size_ & kMask) == 0) chunks_.emplace_back(new Blk[kChunk]);
    chunks_.back()[size_ & kMask] = b;
    ++size_;
  }

 private:
  static constexpr size_t kShift = 16, kChunk = size_t{1} << kShift, kMask = kChunk - 1;
  std::vector<std::unique_ptr<Blk[]>> chunks_;
  size_t size_ = 0;
};

template <typename Blk>
class Model {
  using Pool = FreePool<BlockStore<Blk>>;

 public:
  explicit Model(std::optional<int64_t> limit, SegmentOrder order = SegmentOrder::NewestFirst)
      : limit_(limit), newest_first_(order == SegmentOrder::NewestFirst), small_(blocks_), large_(blocks_) {}
  // The state at one event, for two replays to go on from (a capped and an uncapped one
  // are the same until the cap first makes the allocator release its cache).
  Model(const Model& o)
      : limit_(o.limit_), newest_first_(o.newest_first_), released_(o.released_), pause_(o.pause_),
        blocks_(o.blocks_), seg_size_(o.seg_size_), seg_address_(o.seg_address_), small_(o.small_, blocks_),
        large_(o.large_, blocks_), nsegs_(o.nsegs_), reserved_(o.reserved_), peak_reserved_(o.peak_reserved_),
        allocated_(o.allocated_), peak_allocated_(o.peak_allocated_) {}
  Model& operator=(const Model&) = delete;

  /// While on, a malloc that would make the cap release the cache returns kPaused instead,
  /// the model as it was before the call.
  void pause_at_release(bool on) { pause_ = on; }
  void lift_limit() { limit_.reset(); }

  // Returns the block id, or -1 when out of memory (kPaused: see pause_at_release).
  int malloc(int64_t size, int64_t segment_address = -1) {
    const bool small = size <= kSmallSize;
    auto& pool = small ? small_ : large_;
    int b = pool.take_best_fit(size);
    if (b < 0) b = new_segment(size, small, segment_address);
    if (b < 0) return b;
    Blk& blk = blocks_[b];
    blk.free = false;
    const int64_t rest = blk.size() - size;
    if ((small && rest >= 512) || (!small && rest > kSmallSize)) {
      const int r = static_cast<int>(blocks_.size());
      const int64_t at = blk.offset() + size;
      blocks_.push_back(make_blk<Blk>(rest, blk.seg, b, blk.next, true, small, at));
      if (blk.next >= 0) blocks_[blk.next].prev = r;
      blk.next = r;
      blk.set_size(size);
      pool.insert({rest, r, block_address(seg_address_[static_cast<size_t>(blk.seg)], at)});
    }
    allocated_ += blk.size();
    peak_allocated_ = std::max(peak_allocated_, allocated_);
    return b;
  }

  void free(int b) {
    Blk* blk = &blocks_[b];  // a BlockStore's elements stay put
    allocated_ -= blk->size();
    auto& pool = blk->small ? small_ : large_;
    blk->free = true;
    // Merge with free neighbours in the same segment.
    for (int side = 0; side < 2; ++side) {
      const int nb = side == 0 ? blk->prev : blk->next;
      if (nb < 0 || !blocks_[nb].free) continue;
      Blk& n = blocks_[nb];
      pool.erase(n.size(), nb);
      if (side == 0) {
        // Absorb b into its predecessor.
        n.set_size(n.size() + blk->size());
        n.next = blk->next;
        if (blk->next >= 0) blocks_[blk->next].prev = nb;
        blk->set_size(0);
        b = nb;
        blk = &n;
      } else {
        blk->set_size(blk->size() + n.size());
        blk->next = n.next;
        if (n.next >= 0) blocks_[n.next].prev = b;
        n.set_size(0);
      }
    }
    pool.insert(key(b));
  }

  int64_t block_size(int b) const { return blocks_[b].size(); }
  int64_t reserved() const { return reserved_; }
  int64_t peak_reserved() const { return peak_reserved_; }
  bool released_cache() const { return released_; }
  int64_t peak_allocated() const { return peak_allocated_; }

 private:
  // A block's address, as far as its order among free blocks goes (SegmentOrder).
  // Replaying the uncapped GPU traces with newest segments first reproduces every
  // traced reserved peak but 4 (off by 12 to 64 MiB), against 7 (up to 690 MiB off)
  // with oldest first; the traces' own addresses reproduce all of them.
  BlockAddress address(int b) const {
    return block_address(seg_address_[static_cast<size_t>(blocks_[b].seg)], blocks_[b].offset());
  }
  typename Pool::Key key(int b) const { return {blocks_[b].size(), b, address(b)}; }

  // A segment for a request no cached block serves; its block's id, or -1 when the cap
  // refuses it even after the cache is released. Out of line: a quarter of the requests
  // come here, and inlined it made every malloc save more registers.
  [[gnu::noinline]] int new_segment(int64_t size, bool small, int64_t segment_address) {
    const int64_t seg = segment_for(size);
    if (limit_ && reserved_ + seg > *limit_) {
      if (pause_) return kPaused;
      release_cached();
      if (reserved_ + seg > *limit_) return -1;
    }
    reserved_ += seg;
    peak_reserved_ = std::max(peak_reserved_, reserved_);
    const int b = static_cast<int>(blocks_.size());
    const int64_t n = nsegs_++;
    seg_address_.push_back(segment_address >= 0 ? segment_address : newest_first_ ? -n : n);
    blocks_.push_back(make_blk<Blk>(seg, static_cast<int>(n), -1, -1, false, small, 0));
    seg_size_.push_back(seg);
    return b;
  }

  // empty_cache on failure: whole free segments go back to the driver.
  void release_cached() {
    released_ = true;
    for (auto* pool : {&small_, &large_}) {
      pool->erase_if([&](const typename Pool::Key& k) {
        Blk& blk = blocks_[k.id];
        if (blk.prev < 0 && blk.next < 0 && blk.size() == seg_size_[blk.seg]) {
          reserved_ -= blk.size();
          blk.set_size(0);  // the segment is gone
          return true;
        }
        return false;
      });
    }
  }

  std::optional<int64_t> limit_;
  bool newest_first_;
  bool released_ = false;
  bool pause_ = false;
  BlockStore<Blk> blocks_;
  std::vector<int64_t> seg_size_;
  std::vector<int64_t> seg_address_;
  Pool small_, large_;  // after blocks_, which they read
  int nsegs_ = 0;
  int64_t reserved_ = 0, peak_reserved_ = 0, allocated_ = 0, peak_allocated_ = 0;
};

}  // namespace

AllocatorResult replay_allocator(const Program& p, const Bindings& b, int64_t round, std::optional<int64_t> limit,
                                 bool locate) {
  return replay_allocator(p, block_sizes(p, b, round), limit, locate);
}

namespace {

// The most a program's requests can add to the reserved bytes: a new segment each.
int64_t most_added(const Program& p, const std::vector<int64_t>& size) {
  int64_t total = 0;
  for (const Event& ev : p.events) {
    if (ev.kind == Event::Alloc && size[ev.block] > 0) total = checked_add(total, segment_for(size[ev.block]));
  }
  return total;
}

// What a replay carries from one event to the next.
template <typename Blk>
struct ReplayState {
  static constexpr size_t kRunning = ~size_t{0};
  ReplayState(const Program& p, std::optional<int64_t> limit) : m(limit), slot(p.blocks.size(), 0) {}
  Model<Blk> m;
  // One word per block: while the block is allocated, -1 - its id in the model; once
  // freed, the bytes the allocator handed out for it (AllocatorResult::granted); 0 before.
  // A live block's bytes are its model block's (a block is split or merged only while
  // free), so the two never have to be kept side by side (a million-node program has 7M
  // blocks).
  std::vector<int64_t> slot;
  int64_t total = 0, top = 0;  // allocated bytes, for a replay that does not locate its peak
  int64_t requested = 0;
  AllocatorResult r;
  size_t paused_at = kRunning;  // the event whose request the model paused at (Model::pause_at_release)
};

// The uncapped replay a probe may ask for (probe_allocator's second form).
struct UncappedFork {
  const std::function<bool()>& wanted;
  std::optional<int64_t>& peak;
};

// Replays the events from `from` on, until the end, a failure, a pause, or (given
// `to_come`, most_added()'s, and a limit: the most the requests not yet replayed can
// add) the first event from which the cap can no longer be reached
// (AllocatorResult::fits_for_certain).
template <typename Blk>
void run(const Program& p, const std::vector<int64_t>& size, ReplayState<Blk>& s, size_t from, PeakTracker* peak,
         std::optional<int64_t>& to_come, std::optional<int64_t> limit) {
  Model<Blk>& m = s.m;
  std::vector<int64_t>& slot = s.slot;
  AllocatorResult& r = s.r;
  auto live = [&](int blk) { return slot[blk] < 0; };
  auto model_id = [&](int blk) { return static_cast<int>(-1 - slot[blk]); };
  int64_t total = s.total, top = s.top, requested = s.requested;
  for (size_t e = from; e < p.events.size(); ++e) {
    // Only before any release: after one, the answer rests on the uncapped replay.
    if (to_come && !m.released_cache() && m.reserved() + *to_come <= *limit) {
      r.fits_for_certain = true;
      break;
    }
    if (peak) peak->at(e);
    const Event& ev = p.events[e];
    const Block& blk = p.blocks[ev.block];
    const int64_t bytes = size[ev.block];
    if (ev.kind == Event::Alloc) {
      // The requests' peak only where an estimate reports it (a replay that locates).
      const int64_t now = peak ? checked_add(requested, bytes) : 0;
      const int b = bytes == 0 ? -1 : m.malloc(bytes);
      if (b == kPaused) {  // nothing of this event done yet
        s.paused_at = e;
        break;
      }
      requested = now;
      if (to_come && bytes > 0) *to_come -= segment_for(bytes);
      r.requested_peak = std::max(r.requested_peak, requested);
      if (bytes == 0) continue;
      if (b < 0 && blk.may_fail) continue;  // cuDNN's next algorithm; the cap already emptied the cache
      if (b < 0) {
        r.out_of_memory = true;
        r.failed_request = bytes;
        break;
      }
      slot[ev.block] = -1 - static_cast<int64_t>(b);
      const int64_t got = m.block_size(b);
      if (peak) {
        peak->alloc(e, got);
      } else {
        total = checked_add(total, got);
        top = std::max(top, total);
      }
    } else {
      if (peak) requested -= bytes;
      if (!live(ev.block)) continue;
      const int b = model_id(ev.block);
      const int64_t got = m.block_size(b);
      m.free(b);
      slot[ev.block] = got;
      if (peak) {
        peak->free(e, got);
      } else {
        total -= got;
      }
    }
  }
  s.total = total;
  s.top = top;
  s.requested = requested;
}

// The uncapped replay of `fork` from `parted`, the capped one's state where the two
// parted (paused before its first release, at event `at`).
template <typename Blk>
void finish_uncapped(const Program& p, const std::vector<int64_t>& size, ReplayState<Blk>& parted, size_t at,
                     const UncappedFork& fork) {
  parted.m.pause_at_release(false);
  parted.m.lift_limit();
  parted.paused_at = ReplayState<Blk>::kRunning;
  std::optional<int64_t> unbounded;
  run(p, size, parted, at, nullptr, unbounded, std::nullopt);
  fork.peak = parted.top;
}

// A replay's result from its state; `granted` only when asked (a probe never is).
template <typename Blk>
AllocatorResult result_of(ReplayState<Blk>& s, PeakTracker* peak, bool granted) {
  AllocatorResult r = std::move(s.r);
  if (peak) {
    r.peak = peak->finish();
  } else {
    r.peak.peak_bytes = s.top;
  }
  r.peak_reserved = s.m.peak_reserved();
  r.released_cache = s.m.released_cache();
  r.peak_allocated = s.m.peak_allocated();
  if (!granted) return r;
  std::vector<int64_t>& slot = s.slot;
  for (size_t blk = 0; blk < slot.size(); ++blk) {
    if (slot[blk] < 0) slot[blk] = s.m.block_size(static_cast<int>(-1 - slot[blk]));
  }
  r.granted = std::move(slot);
  return r;
}

// The replay (see run()); with `fork`, the uncapped one too where the cap releases the
// cache and the fork wants it then.
template <typename Blk>
AllocatorResult replay(const Program& p, const std::vector<int64_t>& size, std::optional<int64_t> limit, bool locate,
                       std::optional<int64_t> to_come, const UncappedFork* fork) {
  auto s = std::make_unique<ReplayState<Blk>>(p, limit);
  PeakTracker peak(p);
  PeakTracker* tracker = locate ? &peak : nullptr;
  if (fork) s->m.pause_at_release(true);
  run(p, size, *s, 0, tracker, to_come, limit);
  if (s->paused_at == ReplayState<Blk>::kRunning) return result_of(*s, tracker, !fork);
  // The capped and the uncapped replay part here: the state copied, the capped one
  // goes on (and releases), then the uncapped one from the copy, the capped one's
  // memory given back first (a million-node replay holds hundreds of MB).
  const size_t at = s->paused_at;
  std::unique_ptr<ReplayState<Blk>> parted;
  if (fork->wanted()) parted = std::make_unique<ReplayState<Blk>>(*s);
  s->m.pause_at_release(false);
  s->paused_at = ReplayState<Blk>::kRunning;
  std::optional<int64_t> none;  // the early stop holds only before a release, which comes now
  run(p, size, *s, at, tracker, none, limit);
  AllocatorResult r = result_of(*s, tracker, false);
  s.reset();
  if (parted && !r.out_of_memory) finish_uncapped(p, size, *parted, at, *fork);
  return r;
}

// The compact block layout when every request fits its fields, else the wide one.
AllocatorResult replay_any(const Program& p, const std::vector<int64_t>& size, std::optional<int64_t> limit,
                           bool locate, std::optional<int64_t> to_come, const UncappedFork* fork = nullptr) {
  const bool compact = std::all_of(size.begin(), size.end(), [](int64_t s) { return s < CompactBlk::kLimit; });
  return compact ? replay<CompactBlk>(p, size, limit, locate, to_come, fork)
                 : replay<WideBlk>(p, size, limit, locate, to_come, fork);
}

template <typename Blk>
AllocatorResult replay_requests_with(const std::vector<RawRequest>& requests, std::optional<int64_t> limit,
                                     SegmentOrder order) {
  Model<Blk> m(limit, order);
  AllocatorResult r;
  int max_id = -1;
  for (const RawRequest& q : requests) max_id = std::max(max_id, q.id);
  std::vector<int> where(static_cast<size_t>(max_id + 1), -1);
  r.granted.assign(where.size(), 0);
  int64_t total = 0;
  for (size_t e = 0; e < requests.size(); ++e) {
    const RawRequest& q = requests[e];
    const size_t id = static_cast<size_t>(q.id);
    if (q.alloc) {
      const int b = m.malloc(q.size, q.segment_address);
      if (b < 0 && q.may_fail) continue;
      if (q.may_fail) {  // refused on the GPU but not here: the model and the trace disagree
        m.free(b);
        r.released_cache = true;
        continue;
      }
      if (b < 0) {
        r.out_of_memory = true;
        r.failed_request = q.size;
        break;
      }
      where[id] = b;
      r.granted[id] = m.block_size(b);
      total += r.granted[id];
      if (total > r.peak.peak_bytes) {
        r.peak.peak_bytes = total;
        r.peak.event = e;
      }
    } else if (where[id] >= 0) {
      m.free(where[id]);
      where[id] = -1;
      total -= r.granted[id];
    }
  }
  r.peak_reserved = m.peak_reserved();
  r.released_cache = m.released_cache();
  r.peak_allocated = m.peak_allocated();
  return r;
}

}  // namespace

AllocatorResult replay_allocator(const Program& p, const std::vector<int64_t>& size, std::optional<int64_t> limit,
                                 bool locate) {
  return replay_any(p, size, limit, locate, std::nullopt);
}

int64_t most_allocated(const Program& p, const std::vector<int64_t>& size) {
  // A request takes the best-fitting free block of its pool, or a new segment, and keeps
  // what the split leaves only when that rest is too small to split off (Model::malloc):
  // under 512 bytes in the small pool, at most kSmallSize in the large one.
  auto most = [](int64_t s) { return s == 0 ? 0 : s <= kSmallSize ? s + 511 : checked_add(s, kSmallSize); };
  int64_t total = 0, peak = 0;
  for (const Event& ev : p.events) {
    const int64_t got = most(size[ev.block]);
    if (ev.kind == Event::Alloc) {
      total = checked_add(total, got);
      peak = std::max(peak, total);
    } else {
      total -= got;
    }
  }
  return peak;
}

AllocatorResult probe_allocator(const Program& p, const std::vector<int64_t>& size, int64_t limit) {
  return replay_any(p, size, limit, /*locate=*/false, most_added(p, size));
}

AllocatorResult probe_allocator(const Program& p, const std::vector<int64_t>& size, int64_t limit,
                                int64_t most_added, const std::function<bool()>& uncapped_wanted,
                                std::optional<int64_t>& uncapped_peak) {
  const UncappedFork fork{uncapped_wanted, uncapped_peak};
  return replay_any(p, size, limit, /*locate=*/false, most_added, &fork);
}

RequestBounds request_bounds(const Program& p, const std::vector<int64_t>& size) {
  // committed_peak(), most_added() and most_allocated() in one loop: each was a pass over
  // the events of every probe, reading the same sizes. The two bounds overflow only past
  // any real program; they are then left out, and their users throw as they would have.
  int64_t committed = 0, committed_top = 0, added = 0, held = 0, held_top = 0;
  bool added_over = false, held_over = false;
  for (const Event& ev : p.events) {
    const int64_t s = size[ev.block];
    int64_t most = s;  // most_allocated()'s share of the request
    if (s > 0) held_over |= __builtin_add_overflow(s, s <= kSmallSize ? 511 : kSmallSize, &most);
    const bool counted = !p.blocks[ev.block].may_fail;  // committed_peak() leaves these out
    if (ev.kind == Event::Alloc) {
      if (s > 0) added_over |= __builtin_add_overflow(added, segment_for(s), &added);
      held_over |= __builtin_add_overflow(held, most, &held);
      held_top = std::max(held_top, held);
      if (counted) {
        committed = checked_add(committed, s);
        committed_top = std::max(committed_top, committed);
      }
    } else {
      held -= most;
      if (counted) committed -= s;
    }
  }
  RequestBounds r;
  r.committed_peak = committed_top;
  if (!added_over) r.most_added = added;
  if (!held_over) r.most_allocated = held_top;
  return r;
}

AllocatorResult replay_requests(const std::vector<RawRequest>& requests, std::optional<int64_t> limit,
                                SegmentOrder order) {
  const bool compact = std::all_of(requests.begin(), requests.end(),
                                   [](const RawRequest& q) { return q.size < CompactBlk::kLimit; });
  return compact ? replay_requests_with<CompactBlk>(requests, limit, order)
                 : replay_requests_with<WideBlk>(requests, limit, order);
}

}  // namespace memest
