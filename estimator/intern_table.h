// The set behind the process-wide pools of interned values (atom.cc's strings,
// expr_ref.cc's expressions): one copy of each distinct value, found by open addressing.
// A million-node graph interns 400k module paths and 6.9M block sizes; a node-based
// std::unordered_set allocated a node per value and walked every node on each rehash,
// with a cache miss apiece (interning was 4.7% of the 1M-node estimate's samples).
#pragma once

#include <cstddef>
#include <deque>
#include <vector>

namespace memest {

/// Interns values of T, hashed by Hash (which takes T and the lookup key alike). A
/// value's copy keeps its address for the life of the table. Not locked.
template <typename T, typename Hash>
class InternTable {
 public:
  /// The table's copy of `key` (a T, or what T compares equal to and is made from).
  template <typename Key>
  const T* intern(const Key& key) {
    if (2 * (count_ + 1) > slots_.size()) grow();
    const size_t h = Hash()(key);
    for (size_t i = slot(h);; i = (i + 1) & (slots_.size() - 1)) {
      Slot& s = slots_[i];
      if (!s.value) {
        values_.emplace_back(key);
        ++count_;
        s = {h, &values_.back()};
        return s.value;
      }
      if (s.hash == h && *s.value == key) return s.value;
    }
  }

 private:
  // The hash beside the pointer: a probe reads the copy only when the hashes agree, and
  // growing moves the slots alone.
  struct Slot {
    size_t hash = 0;
    const T* value = nullptr;
  };

  // The hash's high bits (Fibonacci hashing): a byte count's low bits are mostly zero.
  size_t slot(size_t h) const { return (h * 0x9E3779B97F4A7C15ull) >> shift_; }
  void grow() {
    const size_t n = slots_.empty() ? 1024 : 2 * slots_.size();
    std::vector<Slot> old(n);
    old.swap(slots_);
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(n));
    for (const Slot& s : old) {
      if (!s.value) continue;
      size_t i = slot(s.hash);
      while (slots_[i].value) i = (i + 1) & (n - 1);
      slots_[i] = s;
    }
  }

  std::deque<T> values_;     // a deque's elements stay where they are as it grows
  size_t count_ = 0;         // values_.size(), which a deque works out
  std::vector<Slot> slots_;  // a power of two, at most half full
  unsigned shift_ = 64;
};

}  // namespace memest
