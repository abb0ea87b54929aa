// Wire-format primitives on hand-built bytes: varints, tags and lengths at their
// limits, and the field iterator over every wire type.
#include "frontends/protowire.h"

#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "estimator/error.h"
#include "tests/wire_builder.h"

namespace memest::wire {
namespace {

using testing::bytes;
using testing::varint;

// read_varint over all of `s`: the value, or nullopt when it fails or stops short.
std::optional<uint64_t> varint_of(const std::string& s) {
  uint64_t v = 0;
  const char* p = read_varint(s.data(), s.data() + s.size(), &v);
  if (p != s.data() + s.size()) return std::nullopt;
  return v;
}

TEST_CASE("protowire: varints") {
  CHECK(varint_of(bytes({0x00})) == 0u);
  CHECK(varint_of(bytes({0x7f})) == 127u);
  CHECK(varint_of(bytes({0xac, 0x02})) == 300u);
  CHECK(varint_of(varint(uint64_t{1} << 63)) == uint64_t{1} << 63);
  CHECK(varint_of(varint(~uint64_t{0})) == ~uint64_t{0});  // 10 bytes, as -1 is written
  // Padded to 10 bytes (non-canonical) still reads; an 11th byte does not.
  CHECK(varint_of(bytes({0x85, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00})) == 5u);
  CHECK(!varint_of(bytes({0x85, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00})));
  // Bits past the 64th are dropped, as protobuf drops them.
  CHECK(varint_of(bytes({0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f})) == uint64_t{1} << 63);
  // Truncated: the last byte still has its continuation bit.
  CHECK(!varint_of(bytes({0x80})));
  CHECK(!varint_of(bytes({0xff, 0xff})));
  CHECK(!varint_of(""));
}

TEST_CASE("protowire: tags and lengths") {
  uint32_t tag = 0;
  std::string s = bytes({0x88, 0x80, 0x80, 0x80, 0x10});  // field 1, varint; the bits past 32 dropped
  CHECK(read_tag(s.data(), s.data() + s.size(), &tag) == s.data() + 5);
  CHECK(tag == 8);
  s = bytes({0x88, 0x80, 0x80, 0x80, 0x80, 0x00});  // 6 bytes
  CHECK(read_tag(s.data(), s.data() + s.size(), &tag) == nullptr);

  std::string_view payload;
  s = bytes({0x03}) + "abc";
  CHECK(read_len(s.data(), s.data() + s.size(), &payload) == s.data() + s.size());
  CHECK(payload == "abc");
  s = bytes({0x04}) + "abc";  // a length past the end
  CHECK(read_len(s.data(), s.data() + s.size(), &payload) == nullptr);
  s = bytes({0x83, 0x80, 0x80, 0x80, 0x00}) + "abc";  // 5 bytes, padded
  CHECK(read_len(s.data(), s.data() + s.size(), &payload) == s.data() + s.size());
  s = bytes({0x83, 0x80, 0x80, 0x80, 0x80, 0x00}) + "abc";  // 6 bytes
  CHECK(read_len(s.data(), s.data() + s.size(), &payload) == nullptr);
  s = bytes({0xff, 0xff, 0xff, 0xff, 0x0f}) + "abc";  // 4 GiB: negative as an int32
  CHECK(read_len(s.data(), s.data() + s.size(), &payload) == nullptr);
  s = bytes({0xf0, 0xff, 0xff, 0xff, 0x07}) + "abc";  // INT_MAX - 15: over protobuf's limit
  CHECK(read_len(s.data(), s.data() + s.size(), &payload) == nullptr);
}

TEST_CASE("protowire: fields of every wire type, unknown ones skipped") {
  using namespace testing;
  const std::string msg = vfield(1, 150) + fixed64(2, 0x0102030405060708) + lfield(3, "hi") +
                          group(4, vfield(1, 7) + group(5, lfield(2, "x"))) + fixed32(6, 0x01020304) + vfield(7, 9);
  std::vector<uint32_t> numbers;
  Field f;
  for (Fields fields(msg); fields.next(f);) {
    numbers.push_back(f.number);
    if (f.number == 1) CHECK(f.value == 150);
    if (f.number == 2) CHECK(f.value == 0x0102030405060708u);
    if (f.number == 3) CHECK(f.data == "hi");
    if (f.number == 6) CHECK(f.value == 0x01020304u);
    if (f.number == 7) CHECK(f.value == 9);
  }
  CHECK(numbers == std::vector<uint32_t>{1, 2, 3, 6, 7});  // the group (4) is skipped whole

  // Malformed bytes (which the schema check rejects first) throw rather than misread.
  for (const std::string& bad : {tag(1, 0) + bytes({0x80}), tag(1, 6), lfield(1, "abc").substr(0, 3),
                                 group(4, "").substr(0, 1), tag(1, 1) + "1234567"}) {
    Fields fields(bad);
    CHECK_THROWS_AS(fields.next(f), Error);
  }
}

TEST_CASE("protowire: repeated varints, packed and not") {
  using namespace testing;
  const std::string dims = vfield(1, 3) + lfield(1, varint(4) + varint(~uint64_t{0}) + varint(300)) + vfield(1, 5) +
                           lfield(1, "");
  std::vector<int64_t> got;
  size_t count = 0;
  Field f;
  for (Fields fields(dims); fields.next(f);) {
    count += count_varints(f);
    each_varint(f, [&](int64_t v) { got.push_back(v); });
  }
  CHECK(got == std::vector<int64_t>{3, 4, -1, 300, 5});
  CHECK(count == 5);

  const std::string floats = fixed32(7, 0x3f800000) + lfield(7, bytes({0, 0, 0, 0x40, 0, 0, 0x40, 0x40}));
  std::vector<float> fs;
  for (Fields fields(floats); fields.next(f);) each_fixed<float>(f, [&](float x) { fs.push_back(x); });
  CHECK(fs == std::vector<float>{1, 2, 3});
}

}  // namespace
}  // namespace memest::wire
