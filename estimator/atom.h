// Interned strings for the IR's repeated names: op types, domains, module paths.
// A million-node graph names a few dozen ops and a few hundred thousand modules, yet
// kept a std::string of each per node (32 bytes, plus a heap block for a module path
// over 15 characters). An Atom is one pointer to the one copy, and compares by it.
#pragma once

#include <compare>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace memest {

/// An interned string: 8 bytes, equal Atoms share one copy. Reads like a const
/// std::string (converts to one, and forwards the members the IR's users call).
class Atom {
 public:
  Atom() : s_(&empty_string()) {}
  Atom(std::string_view s);  // NOLINT: implicit, so `node.op = "Relu"` reads as before
  Atom(const std::string& s) : Atom(std::string_view(s)) {}  // NOLINT
  Atom(const char* s) : Atom(std::string_view(s)) {}  // NOLINT

  const std::string& str() const { return *s_; }
  operator const std::string&() const { return *s_; }  // NOLINT
  operator std::string_view() const { return *s_; }  // NOLINT

  bool empty() const { return s_->empty(); }
  size_t size() const { return s_->size(); }
  const char* c_str() const { return s_->c_str(); }
  const char* data() const { return s_->data(); }
  auto begin() const { return s_->begin(); }
  auto end() const { return s_->end(); }
  char operator[](size_t i) const { return (*s_)[i]; }
  char back() const { return s_->back(); }
  size_t find(std::string_view s, size_t pos = 0) const { return s_->find(s, pos); }
  size_t find(char c, size_t pos = 0) const { return s_->find(c, pos); }
  size_t rfind(std::string_view s, size_t pos = std::string::npos) const { return s_->rfind(s, pos); }
  size_t rfind(char c, size_t pos = std::string::npos) const { return s_->rfind(c, pos); }
  bool starts_with(std::string_view s) const { return s_->starts_with(s); }
  bool ends_with(std::string_view s) const { return s_->ends_with(s); }
  std::string substr(size_t pos = 0, size_t n = std::string::npos) const { return s_->substr(pos, n); }
  int compare(std::string_view s) const { return s_->compare(s); }
  void clear() { *this = Atom(); }

  friend bool operator==(Atom a, Atom b) { return a.s_ == b.s_; }
  friend bool operator==(Atom a, std::string_view b) { return *a.s_ == b; }
  friend bool operator==(Atom a, const std::string& b) { return *a.s_ == b; }
  friend bool operator==(Atom a, const char* b) { return *a.s_ == b; }
  friend std::strong_ordering operator<=>(Atom a, Atom b) { return *a.s_ <=> *b.s_; }
  friend std::string operator+(Atom a, std::string_view b) { return *a.s_ + std::string(b); }
  friend std::string operator+(Atom a, const char* b) { return *a.s_ + b; }
  friend std::string operator+(Atom a, const std::string& b) { return *a.s_ + b; }
  friend std::string operator+(Atom a, char b) { return *a.s_ + b; }
  friend std::string operator+(const std::string& a, Atom b) { return a + *b.s_; }
  friend std::string operator+(const char* a, Atom b) { return a + *b.s_; }
  friend std::string operator+(std::string&& a, Atom b) { return std::move(a) + *b.s_; }

 private:
  static const std::string& empty_string();
  const std::string* s_;
};

}  // namespace memest

template <>
struct std::hash<memest::Atom> {
  size_t operator()(memest::Atom a) const { return std::hash<std::string_view>()(a); }
};
