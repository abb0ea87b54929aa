// A short list of tensor or node ids held inline: a node's inputs and outputs, a
// tensor's consumers. Nearly every such list has four ids or fewer, yet a std::vector
// put each on the heap: three blocks per node of a million-node graph (about 100 MB
// and 3.4M allocations). Same 24 bytes as a std::vector; the heap only past 4 ids.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <vector>

namespace memest {

/// std::vector<int>'s interface (as the IR uses it), with up to 4 ids inline.
class IdList {
 public:
  using value_type = int;
  using iterator = int*;
  using const_iterator = const int*;

  IdList() = default;
  IdList(std::initializer_list<int> ids) { assign(ids.begin(), ids.end()); }
  IdList(const std::vector<int>& ids) { assign(ids.data(), ids.data() + ids.size()); }  // NOLINT
  IdList(size_t n, int v) { resize(n, v); }
  IdList(const int* first, const int* last) { assign(first, last); }
  IdList(const IdList& o) { assign(o.begin(), o.end()); }
  IdList(IdList&& o) noexcept { take(o); }
  IdList& operator=(const IdList& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  IdList& operator=(IdList&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  IdList& operator=(std::initializer_list<int> ids) {
    assign(ids.begin(), ids.end());
    return *this;
  }
  IdList& operator=(const std::vector<int>& ids) {
    assign(ids.data(), ids.data() + ids.size());
    return *this;
  }
  ~IdList() { release(); }

  /// A copy as a std::vector, for code that keeps one.
  std::vector<int> vec() const { return std::vector<int>(begin(), end()); }
  operator std::vector<int>() const { return vec(); }  // NOLINT

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int* data() { return heap() ? heap_ : in_; }
  const int* data() const { return heap() ? heap_ : in_; }
  int* begin() { return data(); }
  int* end() { return data() + size_; }
  const int* begin() const { return data(); }
  const int* end() const { return data() + size_; }
  int& operator[](size_t i) { return data()[i]; }
  int operator[](size_t i) const { return data()[i]; }
  int& front() { return data()[0]; }
  int front() const { return data()[0]; }
  int& back() { return data()[size_ - 1]; }
  int back() const { return data()[size_ - 1]; }

  void reserve(size_t n) {
    if (n > cap_) grow(n);
  }
  void push_back(int v) {
    if (size_ == cap_) grow(size_t{cap_} * 2);
    data()[size_++] = v;
  }
  void emplace_back(int v) { push_back(v); }
  void pop_back() { --size_; }
  void clear() { size_ = 0; }
  void resize(size_t n, int v = 0) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data()[i] = v;
    size_ = static_cast<uint32_t>(n);
  }
  int* insert(const int* pos, int v) {
    const size_t at = static_cast<size_t>(pos - data());
    push_back(v);
    std::rotate(begin() + at, end() - 1, end());
    return begin() + at;
  }
  template <class It>
  int* insert(const int* pos, It first, It last) {
    const size_t at = static_cast<size_t>(pos - data()), old = size_;
    for (; first != last; ++first) push_back(*first);
    std::rotate(begin() + at, begin() + old, end());
    return begin() + at;
  }
  int* erase(const int* pos) { return erase(pos, pos + 1); }
  int* erase(const int* first, const int* last) {
    int* f = begin() + (first - data());
    int* l = begin() + (last - data());
    std::copy(l, end(), f);
    size_ -= static_cast<uint32_t>(l - f);
    return f;
  }

  friend bool operator==(const IdList& a, const IdList& b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); }
  friend bool operator==(const IdList& a, const std::vector<int>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  static constexpr uint32_t kInline = 4;
  bool heap() const { return cap_ > kInline; }
  void assign(const int* first, const int* last) {
    const size_t n = static_cast<size_t>(last - first);
    clear();
    reserve(n);
    std::copy(first, last, data());
    size_ = static_cast<uint32_t>(n);
  }
  void grow(size_t n) {
    int* p = new int[n];
    std::copy(begin(), end(), p);
    release();
    heap_ = p;
    cap_ = static_cast<uint32_t>(n);
  }
  void release() {
    if (heap()) delete[] heap_;
    cap_ = kInline;
  }
  void take(IdList& o) {
    size_ = o.size_;
    cap_ = o.cap_;
    if (o.heap()) {
      heap_ = o.heap_;
    } else {
      std::memcpy(in_, o.in_, sizeof(in_));
    }
    o.size_ = 0;
    o.cap_ = kInline;
  }

  uint32_t size_ = 0;
  uint32_t cap_ = kInline;
  union {
    int in_[kInline] = {};
    int* heap_;
  };
};

}  // namespace memest
