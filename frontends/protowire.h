// Protobuf wire format, read straight from the bytes: varints, tags, lengths and
// a field iterator. The limits are libprotobuf 3.21's, so that memest accepts and
// rejects exactly the inputs the message classes did.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace memest::wire {

/// The wire types (the low three bits of a tag); 6 and 7 are invalid.
enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLen = 2, kStartGroup = 3, kEndGroup = 4, kFixed32 = 5 };

// Each reader takes [p, end) and returns the position after what it read, or
// nullptr when that is malformed or runs past `end`.

/// A varint of at most 10 bytes; bits past the 64th are dropped, as protobuf drops them.
inline const char* read_varint(const char* p, const char* end, uint64_t* out) {
  if (p < end && static_cast<uint8_t>(*p) < 0x80) {
    *out = static_cast<uint8_t>(*p);
    return p + 1;
  }
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (p == end) return nullptr;
    const uint64_t b = static_cast<uint8_t>(*p++);
    v |= (b & 0x7f) << shift;
    if (b < 0x80) {
      *out = v;
      return p;
    }
  }
  return nullptr;
}

/// A tag: at most 5 bytes, kept modulo 2^32.
inline const char* read_tag(const char* p, const char* end, uint32_t* out) {
  if (p < end && static_cast<uint8_t>(*p) < 0x80) {
    *out = static_cast<uint8_t>(*p);
    return p + 1;
  }
  uint32_t v = 0;
  for (int i = 0; i < 5; ++i) {
    if (p == end) return nullptr;
    const uint32_t b = static_cast<uint8_t>(*p++);
    v |= (b & 0x7f) << (7 * i);
    if (b < 0x80) {
      *out = v;
      return p;
    }
  }
  return nullptr;
}

/// A length and the payload it announces: at most 5 bytes, under 2 GiB, and the
/// payload must fit before `end`.
inline const char* read_len(const char* p, const char* end, std::string_view* out) {
  if (p < end && static_cast<uint8_t>(*p) < 0x80) {  // a short payload: one length byte
    const size_t n = static_cast<uint8_t>(*p++);
    if (n > static_cast<size_t>(end - p)) return nullptr;
    *out = std::string_view(p, n);
    return p + n;
  }
  uint32_t n = 0;
  for (int i = 0; i < 5; ++i) {
    if (p == end) return nullptr;
    const uint32_t b = static_cast<uint8_t>(*p++);
    if (i == 4 && b >= 8) return nullptr;  // 2 GiB or more
    n |= (b & 0x7f) << (7 * i);
    if (b < 0x80) {
      // protobuf keeps lengths 16 bytes clear of INT_MAX.
      if (n > 0x7fffffffu - 16 || n > static_cast<size_t>(end - p)) return nullptr;
      *out = std::string_view(p, n);
      return p + n;
    }
  }
  return nullptr;
}

/// Skips a group whose start tag was `start_tag`, up to and including its end tag;
/// fields inside are skipped too. `depth` is the nesting still allowed.
const char* skip_group(const char* p, const char* end, uint32_t start_tag, int depth);

/// One field: its number, wire type, and value (varint or fixed) or payload.
struct Field {
  uint32_t number = 0;
  uint32_t type = 0;
  uint64_t value = 0;
  std::string_view data;
};

/// The fields of one message, in order. Meant for bytes a schema check accepted:
/// groups are skipped whole, and anything malformed throws memest::Error.
class Fields {
 public:
  explicit Fields(std::string_view msg) : p_(msg.data()), end_(msg.data() + msg.size()) {}

  /// The next field; false at the end of the message.
  bool next(Field& f) {
    while (p_ < end_) {
      uint32_t tag;
      p_ = read_tag(p_, end_, &tag);
      if (!p_) malformed();
      f.number = tag >> 3;
      f.type = tag & 7;
      switch (f.type) {
        case kVarint: p_ = read_varint(p_, end_, &f.value); break;
        case kLen:
          p_ = read_len(p_, end_, &f.data);
          // The next field is likely a cache line or more away (a node after a node):
          // start loading it while the caller works on this one.
          __builtin_prefetch(p_);
          break;
        case kFixed32: p_ = fixed(4, &f.value); break;
        case kFixed64: p_ = fixed(8, &f.value); break;
        case kStartGroup: p_ = skip_group(p_, end_, tag, kMaxDepth); if (!p_) malformed(); continue;
        default: malformed();
      }
      if (!p_) malformed();
      return true;
    }
    return false;
  }

 private:
  static constexpr int kMaxDepth = 100;
  const char* fixed(size_t n, uint64_t* out) {
    if (static_cast<size_t>(end_ - p_) < n) return nullptr;
    uint64_t v = 0;
    std::memcpy(&v, p_, n);  // little-endian hosts only, like the rest of the reader
    *out = v;
    return p_ + n;
  }
  [[noreturn]] static void malformed();

  const char* p_;
  const char* end_;
};

/// Calls add(int64) for each element in one occurrence of a repeated varint field,
/// packed (a length-delimited run) or not; other wire types are not this field.
template <typename Add>
void each_varint(const Field& f, Add&& add) {
  if (f.type == kVarint) {
    add(static_cast<int64_t>(f.value));
  } else if (f.type == kLen) {
    const char* p = f.data.data();
    const char* end = p + f.data.size();
    while (p < end) {
      uint64_t v;
      p = read_varint(p, end, &v);
      if (!p) return;
      add(static_cast<int64_t>(v));
    }
  }
}

/// How many elements one occurrence of a repeated varint field holds.
inline size_t count_varints(const Field& f) {
  if (f.type == kVarint) return 1;
  if (f.type != kLen) return 0;
  size_t n = 0;
  for (char c : f.data) n += static_cast<uint8_t>(c) < 0x80;
  return n;
}

/// Calls add(T) for each element of one occurrence of a repeated float (T = float,
/// wire type 5) or double (T = double, wire type 1) field, packed or not.
template <typename T, typename Add>
void each_fixed(const Field& f, Add&& add) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8);
  if (f.type == (sizeof(T) == 4 ? kFixed32 : kFixed64)) {
    T x;
    std::memcpy(&x, &f.value, sizeof(T));
    add(x);
  } else if (f.type == kLen) {
    for (size_t i = 0; i + sizeof(T) <= f.data.size(); i += sizeof(T)) {
      T x;
      std::memcpy(&x, f.data.data() + i, sizeof(T));
      add(x);
    }
  }
}

/// How many elements one occurrence of a repeated float or double field holds.
template <typename T>
size_t count_fixed(const Field& f) {
  if (f.type == (sizeof(T) == 4 ? kFixed32 : kFixed64)) return 1;
  return f.type == kLen ? f.data.size() / sizeof(T) : 0;
}

}  // namespace memest::wire
