// The arena behind Name: characters appended to large chunks, each name after its
// length and before a NUL. Process-wide and never freed, like atom.cc's pool: a name
// is written once when a tensor or node is made and stays while any graph may use it
// (graphs are copied and moved between passes). A million-node graph writes about
// 2.4M names, some 90 MB; renaming writes a new copy and leaves the old one.
// Not locked: graphs are built and changed on one thread.
#include "estimator/name.h"

#include <algorithm>
#include <memory>
#include <vector>

namespace memest {
namespace {

class Arena {
 public:
  char* take(size_t n) {
    if (n > left_) {
      const size_t size = std::max(kChunk, n);
      chunks_.push_back(std::unique_ptr<char[]>(new char[size]));  // not zeroed: every byte is written
      next_ = chunks_.back().get();
      left_ = size;
    }
    char* p = next_;
    next_ += n;
    left_ -= n;
    return p;
  }

 private:
  static constexpr size_t kChunk = size_t{1} << 20;
  std::vector<std::unique_ptr<char[]>> chunks_;
  char* next_ = nullptr;
  size_t left_ = 0;
};

Arena& arena() {
  static auto* a = new Arena();
  return *a;
}

}  // namespace

Name::Name(std::string_view s) {
  if (s.empty()) {
    p_ = kEmpty + sizeof(uint32_t);
    return;
  }
  const auto n = static_cast<uint32_t>(s.size());
  char* p = arena().take(sizeof(n) + s.size() + 1);
  std::memcpy(p, &n, sizeof(n));
  std::memcpy(p + sizeof(n), s.data(), s.size());
  p[sizeof(n) + s.size()] = '\0';
  p_ = p + sizeof(n);
}

}  // namespace memest
