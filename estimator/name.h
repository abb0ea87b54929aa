// Names of tensors and nodes, kept in an arena. Unlike op types and module paths
// (atom.h) they are nearly all distinct, so interning saves nothing; what costs is
// the std::string: 32 bytes per tensor and per node, plus a heap block for any name
// over 15 characters (most of them: "/blocks.7/attn/q/MatMul_output_0"). A Name is one
// pointer to the characters, stored once with their length in front.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

namespace memest {

/// An immutable string in an arena: 8 bytes. Reads like a const std::string (converts to
/// std::string_view, and to a std::string copy, and forwards the members callers use).
class Name {
 public:
  Name() : p_(kEmpty + sizeof(uint32_t)) {}
  Name(std::string_view s);  // NOLINT: implicit, so `node.name = "x"` reads as before
  Name(const std::string& s) : Name(std::string_view(s)) {}  // NOLINT
  Name(const char* s) : Name(std::string_view(s)) {}  // NOLINT

  std::string_view view() const { return {p_, size()}; }
  std::string str() const { return std::string(view()); }
  operator std::string_view() const { return view(); }  // NOLINT
  operator std::string() const { return str(); }  // NOLINT

  size_t size() const {
    uint32_t n;
    std::memcpy(&n, p_ - sizeof(n), sizeof(n));
    return n;
  }
  bool empty() const { return size() == 0; }
  const char* c_str() const { return p_; }  // the arena ends each name with a NUL
  const char* data() const { return p_; }
  const char* begin() const { return p_; }
  const char* end() const { return p_ + size(); }
  char operator[](size_t i) const { return p_[i]; }
  char back() const { return p_[size() - 1]; }
  size_t find(std::string_view s, size_t pos = 0) const { return view().find(s, pos); }
  size_t find(char c, size_t pos = 0) const { return view().find(c, pos); }
  size_t rfind(std::string_view s, size_t pos = std::string::npos) const { return view().rfind(s, pos); }
  size_t rfind(char c, size_t pos = std::string::npos) const { return view().rfind(c, pos); }
  bool starts_with(std::string_view s) const { return view().starts_with(s); }
  bool ends_with(std::string_view s) const { return view().ends_with(s); }
  std::string substr(size_t pos = 0, size_t n = std::string::npos) const { return std::string(view().substr(pos, n)); }
  int compare(std::string_view s) const { return view().compare(s); }
  void clear() { *this = Name(); }

  friend bool operator==(const Name& a, const Name& b) { return a.view() == b.view(); }
  friend bool operator==(const Name& a, std::string_view b) { return a.view() == b; }
  friend bool operator==(const Name& a, const std::string& b) { return a.view() == b; }
  friend bool operator==(const Name& a, const char* b) { return a.view() == b; }
  friend std::strong_ordering operator<=>(const Name& a, const Name& b) { return a.view() <=> b.view(); }
  friend std::string operator+(const Name& a, std::string_view b) { return a.str() + std::string(b); }
  friend std::string operator+(const Name& a, const char* b) { return a.str() + b; }
  friend std::string operator+(const Name& a, const std::string& b) { return a.str() + b; }
  friend std::string operator+(const Name& a, char b) { return a.str() + b; }
  friend std::string operator+(const std::string& a, const Name& b) { return a + std::string(b.view()); }
  friend std::string operator+(const char* a, const Name& b) { return a + b.str(); }
  friend std::string operator+(std::string&& a, const Name& b) { return std::move(a.append(b.view())); }

 private:
  static constexpr char kEmpty[sizeof(uint32_t) + 1] = {};
  const char* p_;  ///< the characters; their length is the 4 bytes before them
};

}  // namespace memest

template <>
struct std::hash<memest::Name> {
  size_t operator()(const memest::Name& n) const { return std::hash<std::string_view>()(n); }
};
