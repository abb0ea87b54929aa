// Protobuf wire format: the parts too large to inline.
#include "frontends/protowire.h"

#include "estimator/error.h"

namespace memest::wire {

const char* skip_group(const char* p, const char* end, uint32_t start_tag, int depth) {
  if (depth <= 0) return nullptr;
  while (p < end) {
    uint32_t tag;
    p = read_tag(p, end, &tag);
    if (!p || tag == 0) return nullptr;
    uint64_t v;
    std::string_view s;
    switch (tag & 7) {
      case kVarint: p = read_varint(p, end, &v); break;
      case kFixed64: p = end - p >= 8 ? p + 8 : nullptr; break;
      case kLen: p = read_len(p, end, &s); break;
      case kStartGroup: p = skip_group(p, end, tag, depth - 1); break;
      case kEndGroup: return tag == start_tag + 1 ? p : nullptr;
      case kFixed32: p = end - p >= 4 ? p + 4 : nullptr; break;
      default: return nullptr;
    }
    if (!p) return nullptr;
  }
  return nullptr;  // no end tag
}

void Fields::malformed() {
  // The schema check passed these bytes, so this is a bug of memest's, not of the file.
  throw Error("internal error: the protobuf reader disagrees with its schema check");
}

}  // namespace memest::wire
