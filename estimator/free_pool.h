// The caching allocator model's free blocks (estimator/allocator.cc), ordered as
// PyTorch's BlockPool orders them: by size, then by address.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace memest {

/// Where a block lies, as one number that orders as (segment address, offset) do: the
/// segment's address (signed: the model places segments at -n) in the high word.
using BlockAddress = unsigned __int128;

inline BlockAddress block_address(int64_t segment, int64_t offset) {
  const uint64_t high = static_cast<uint64_t>(segment) ^ (uint64_t{1} << 63);  // signed order, unsigned words
  return static_cast<BlockAddress>(high) << 64 | static_cast<uint64_t>(offset);
}

/// Free blocks of one pool. A replay does a best-fit lookup, an erase and an insert per
/// event, over pools of thousands of blocks but only a few distinct sizes at a time (a
/// model allocates the same shapes over and over; the generated 10k-node program's pools
/// hold 4 to 16): a sorted array of sizes (buckets), and per size its entries (address,
/// id), the lowest apart and the rest a min-heap. A block is a member of the pool under size s while it is free and of
/// size s (`Blocks` is the allocator's store: blocks[id].free, blocks[id].size()); an
/// erase leaves its heap entry to be skipped when it surfaces, the block then changing
/// size or state (a sorted array per size made each insert and erase shift the entries
/// after it, quadratic on a million-node graph, whose pools hold hundreds of thousands
/// of blocks of one size). The caller's blocks do not overlap, and an id keeps its
/// address: two entries of one address are then copies of one id, or one of them is
/// not a member.
///
/// A bucket that empties stays, to be refilled or to take a new size next to it: two
/// thirds of the inserts on the generated graphs are of a size that has just emptied
/// (the rest of a segment split again and again), and making and dropping those
/// buckets shifted the array twice per event (a fifth of the pool's instructions).
template <typename Blocks>
class FreePool {
 public:
  explicit FreePool(const Blocks& blocks) : blocks_(blocks) {}
  /// A copy of `other` over `blocks`, a copy of the blocks `other` reads: a replay's
  /// state, taken where two replays part.
  FreePool(const FreePool& other, const Blocks& blocks)
      : buckets_(other.buckets_), heaps_(other.heaps_), spare_(other.spare_), empty_(other.empty_), blocks_(blocks) {
    std::copy(std::begin(other.hints_), std::end(other.hints_), std::begin(hints_));
  }

  struct Key {
    int64_t size;
    int id;
    BlockAddress addr;  ///< orders blocks of one size (lowest first)
  };

  /// Removes the best fit for `size` and returns its id: the smallest size >= it, and of
  /// those the lowest address. -1 when there is none. The caller marks the block
  /// allocated.
  int take_best_fit(int64_t size) {
    size_t i = bucket_for(size);
    while (i < buckets_.size() && buckets_[i].count == 0) ++i;
    if (i == buckets_.size()) return -1;
    Bucket& bk = buckets_[i];
    const int id = heaps_[bk.slot].take_lowest([&](int k) { return is_member(k, bk.size); }).id;
    if (--bk.count == 0) emptied(bk);
    drop_empty_if_many();
    return id;
  }

  /// Adds a free block that is not in the pool (a block just freed, or a split's rest).
  void insert(const Key& k) {
    Bucket& bk = buckets_[bucket_of(k.size)];
    heaps_[bk.slot].push(Entry{static_cast<uint64_t>(k.addr >> 64), static_cast<uint64_t>(k.addr), k.id});
    if (bk.count++ == 0) --empty_;
  }

  /// Erases block `id` of `size` bytes when present; the caller then changes the block's
  /// size (a merge).
  void erase(int64_t size, int id) {
    if (!is_member(id, size)) return;
    Bucket& bk = buckets_[bucket_for(size)];
    if (--bk.count == 0) emptied(bk);
    drop_empty_if_many();
  }

  /// Erases every key for which pred(key) is true; pred makes such a block a non-member
  /// (a size of 0). pred sees each key once, in no particular order (the model's only
  /// sums what it erases).
  template <typename Pred>
  void erase_if(Pred pred) {
    for (Bucket& bk : buckets_) {
      if (bk.count == 0) continue;
      Heap& hp = heaps_[bk.slot];
      if (hp.lowest.id >= 0) hp.push_lowest_into_rest();
      std::vector<Entry>& heap = hp.rest;
      // Filtered in place and heapified again: a cap releasing the cache over and over
      // sorted every free block each time (5% of a 10k-node sweep). A key the heap holds
      // twice (an erased id inserted again) is seen once: the first copy erases it, and
      // a kept key's second copy is as harmless as any stale entry.
      size_t kept = 0;
      for (size_t j = 0; j < heap.size(); ++j) {
        const Entry e = heap[j];
        if (!is_member(e.id, bk.size)) continue;
        if (pred(Key{bk.size, e.id, e.addr()})) {
          --bk.count;
        } else {
          heap[kept++] = e;
        }
      }
      heap.resize(kept);
      std::make_heap(heap.begin(), heap.end(), Later());
      if (bk.count == 0) emptied(bk);
    }
    drop_empty_if_many();
  }

  /// Buckets held, emptied ones included (for tests: they are reused or dropped).
  size_t buckets() const { return buckets_.size(); }

 private:
  // The address in two words, not one __int128, which would pad an entry to 32 bytes.
  struct Entry {
    uint64_t high, low;
    int id;
    BlockAddress addr() const { return static_cast<BlockAddress>(high) << 64 | low; }
  };
  // The heap's order, lowest address on top; of two entries of one address, which
  // surfaces first changes nothing. A function object, not a function: std::push_heap
  // then inlines it.
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const { return a.addr() > b.addr(); }
  };
  // Entries of one size: the lowest apart from the rest, a min-heap. Half the blocks
  // freed into a size of hundreds of entries lie lowest of it (the newest segments lie
  // lowest) and are often the next taken: kept apart, such a block is not sifted to the
  // heap's top and back down again. On the 10k-node sweep 80% of the entries pushed and
  // 88% of those taken are the lowest one (-8% of the sweep's instructions; the 2, 4 or
  // 8 lowest kept sorted apart did no better).
  struct Heap {
    Entry lowest{0, 0, -1};  ///< below every entry of `rest`; id -1: none
    std::vector<Entry> rest;
    void push(Entry e) {
      if (lowest.id < 0) {
        if (rest.empty() || e.addr() < rest.front().addr()) {
          lowest = e;
          return;
        }
      } else if (e.addr() < lowest.addr()) {
        std::swap(lowest, e);
      }
      rest.push_back(e);
      std::push_heap(rest.begin(), rest.end(), Later());
    }
    void push_lowest_into_rest() {
      rest.push_back(lowest);
      std::push_heap(rest.begin(), rest.end(), Later());
      lowest.id = -1;
    }
    // Removes and returns the lowest entry that is a member; there is one.
    template <typename Member>
    Entry take_lowest(Member member) {
      if (lowest.id >= 0) {
        const Entry e = lowest;
        lowest.id = -1;
        if (member(e.id)) return e;
      }
      while (!member(rest.front().id)) pop(rest);
      const Entry e = rest.front();
      pop(rest);
      return e;
    }
    void clear() {
      lowest.id = -1;
      rest.clear();
    }
  };
  struct Bucket {
    int64_t size;
    int slot;   ///< heaps_[slot]: its entries; may hold ids erased since
    int count;  ///< members of this size; 0: emptied, kept for reuse
  };
  struct Hint {
    int64_t size = 0;
    size_t at = 0;  ///< buckets_[at] was size's lower bound
  };
  static constexpr int kHintBits = 6;

  bool is_member(int id, int64_t size) const {
    const auto& b = blocks_[static_cast<size_t>(id)];
    return b.free && b.size() == size;
  }
  static void pop(std::vector<Entry>& heap) {
    std::pop_heap(heap.begin(), heap.end(), Later());
    heap.pop_back();
  }
  // The first bucket of a size >= size (buckets_.size() when none), emptied or not.
  // Where the last search for this size ended is tried first, and kept when the
  // buckets either side of it still bound the size: the few request sizes of a replay
  // and the rests split off and merged again come back while the array stays put (it
  // moves only when a size finds no emptied bucket to take), and the binary search was
  // a quarter of the pool's instructions.
  size_t bucket_for(int64_t size) {
    Hint& h = hint(size);
    if (h.size == size && (holds(h.at, size) || bounds(h.at, size))) return h.at;
    const auto at = std::lower_bound(buckets_.begin(), buckets_.end(), size,
                                     [](const Bucket& b, int64_t s) { return b.size < s; });
    h = {size, static_cast<size_t>(at - buckets_.begin())};
    return h.at;
  }
  Hint& hint(int64_t size) { return hints_[static_cast<uint64_t>(size) * 0x9e3779b97f4a7c15 >> (64 - kHintBits)]; }
  // Whether buckets_[at] is size's own (sizes are distinct: then it is its lower bound).
  bool holds(size_t at, int64_t size) const { return at < buckets_.size() && buckets_[at].size == size; }
  // Whether `at` is where size's lower bound is.
  bool bounds(size_t at, int64_t size) const {
    const size_t n = buckets_.size();
    return at <= n && (at == n || buckets_[at].size >= size) && (at == 0 || buckets_[at - 1].size < size);
  }
  // The bucket of `size`, made when there is none: an emptied bucket where the new
  // size belongs in the order takes it, else a new one is inserted.
  size_t bucket_of(int64_t size) {
    const size_t i = bucket_for(size);
    if (i < buckets_.size() && (buckets_[i].size == size || buckets_[i].count == 0)) {
      buckets_[i].size = size;
      return i;
    }
    if (i > 0 && buckets_[i - 1].count == 0) {
      buckets_[i - 1].size = size;
      hint(size).at = i - 1;
      return i - 1;
    }
    return new_bucket(i, size);
  }
  // Out of line: rare (400 of the 190,000 lookups of a 10k-node replay), and inlined it
  // made every insert save more registers.
  [[gnu::noinline]] size_t new_bucket(size_t i, int64_t size) {
    buckets_.insert(buckets_.begin() + static_cast<std::ptrdiff_t>(i), Bucket{size, new_heap(), 0});
    ++empty_;
    return i;
  }
  void emptied(Bucket& bk) {
    heaps_[bk.slot].clear();
    ++empty_;
  }
  // Once emptied buckets outnumber the others, they are dropped all at once: a best fit
  // then passes over few of them (allowing 2, 4, 8 or 16 more cost 0.1-1% of a sweep).
  void drop_empty_if_many() {
    if (empty_ > buckets_.size() - empty_) drop_empty();
  }
  [[gnu::noinline]] void drop_empty() {
    size_t kept = 0;
    for (const Bucket& bk : buckets_) {
      if (bk.count == 0) {
        spare_.push_back(bk.slot);
      } else {
        buckets_[kept++] = bk;
      }
    }
    buckets_.resize(kept);
    empty_ = 0;
  }
  // An empty heap's slot: one a dropped bucket left, or a new one.
  int new_heap() {
    if (spare_.empty()) {
      heaps_.emplace_back();
      return static_cast<int>(heaps_.size()) - 1;
    }
    const int slot = spare_.back();
    spare_.pop_back();
    return slot;
  }

  std::vector<Bucket> buckets_;  // one per distinct size present or emptied, ascending
  std::vector<Heap> heaps_;      // by slot
  Hint hints_[1 << kHintBits];   // by a hash of the size
  std::vector<int> spare_;       // slots of dropped buckets, reused for new sizes
  size_t empty_ = 0;             // buckets of count 0
  const Blocks& blocks_;         // the allocator's
};

}  // namespace memest
