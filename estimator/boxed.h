// An optional value kept out of line: one pointer where std::optional keeps the whole
// value. For the IR's rarely set fields (a tensor's declared shape and known
// contents), which a million-tensor graph would otherwise carry empty in every tensor.
#pragma once

#include <memory>
#include <optional>
#include <utility>

namespace memest {

/// std::optional's interface (as the IR uses it) over a heap-held T: 8 bytes empty.
template <class T>
class BoxedOptional {
 public:
  BoxedOptional() = default;
  BoxedOptional(std::nullopt_t) {}  // NOLINT: implicit, as std::optional's
  BoxedOptional(const T& v) : p_(std::make_unique<T>(v)) {}  // NOLINT
  BoxedOptional(T&& v) : p_(std::make_unique<T>(std::move(v))) {}  // NOLINT
  BoxedOptional(const std::optional<T>& o) : p_(o ? std::make_unique<T>(*o) : nullptr) {}  // NOLINT
  BoxedOptional(std::optional<T>&& o) : p_(o ? std::make_unique<T>(std::move(*o)) : nullptr) {}  // NOLINT
  BoxedOptional(const BoxedOptional& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  BoxedOptional(BoxedOptional&&) noexcept = default;
  BoxedOptional& operator=(const BoxedOptional& o) {
    if (this != &o) *this = BoxedOptional(o);
    return *this;
  }
  BoxedOptional& operator=(BoxedOptional&&) noexcept = default;
  ~BoxedOptional() = default;

  bool has_value() const { return p_ != nullptr; }
  explicit operator bool() const { return has_value(); }
  T& operator*() { return *p_; }
  const T& operator*() const { return *p_; }
  T* operator->() { return p_.get(); }
  const T* operator->() const { return p_.get(); }
  void reset() { p_.reset(); }

 private:
  std::unique_ptr<T> p_;
};

}  // namespace memest
