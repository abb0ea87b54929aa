// The streaming JSON writer: nlohmann's pretty-printed layout, escaping and numbers,
// checked against text written out by hand.
#include "cli/json_writer.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "estimator/error.h"

namespace memest {
namespace {

// The document a callback writes.
template <class F>
std::string written(F write) {
  std::ostringstream out;
  {
    JsonWriter w(out);
    write(w);
  }
  return out.str();
}

std::string string_value(const std::string& s) {
  return written([&](JsonWriter& w) { w.value(s); });
}

std::string double_value(double d) {
  return written([&](JsonWriter& w) { w.value(d); });
}

TEST_CASE("json writer: nested objects and arrays, two spaces a level") {
  const std::string text = written([](JsonWriter& w) {
    w.begin_object();
    w.key("a");
    w.begin_object();
    w.field("n", 1);
    w.key("list");
    w.begin_array();
    w.value(1);
    w.begin_array();
    w.value("x");
    w.value(true);
    w.end_array();
    w.begin_object();
    w.field("k", false);
    w.end_object();
    w.null();
    w.end_array();
    w.end_object();
    w.field("b", "s");
    w.end_object();
  });
  CHECK(text ==
        "{\n"
        "  \"a\": {\n"
        "    \"n\": 1,\n"
        "    \"list\": [\n"
        "      1,\n"
        "      [\n"
        "        \"x\",\n"
        "        true\n"
        "      ],\n"
        "      {\n"
        "        \"k\": false\n"
        "      },\n"
        "      null\n"
        "    ]\n"
        "  },\n"
        "  \"b\": \"s\"\n"
        "}");
}

TEST_CASE("json writer: empty containers stay on one line") {
  CHECK(written([](JsonWriter& w) {
          w.begin_object();
          w.end_object();
        }) == "{}");
  CHECK(written([](JsonWriter& w) {
          w.begin_array();
          w.end_array();
        }) == "[]");
  const std::string text = written([](JsonWriter& w) {
    w.begin_object();
    w.key("dims");
    w.begin_object();
    w.end_object();
    w.key("warnings");
    w.begin_array();
    w.end_array();
    w.key("rows");
    w.begin_array();
    w.begin_array();
    w.end_array();
    w.begin_object();
    w.end_object();
    w.end_array();
    w.end_object();
  });
  CHECK(text ==
        "{\n"
        "  \"dims\": {},\n"
        "  \"warnings\": [],\n"
        "  \"rows\": [\n"
        "    [],\n"
        "    {}\n"
        "  ]\n"
        "}");
}

TEST_CASE("json writer: integers") {
  CHECK(written([](JsonWriter& w) { w.value(0); }) == "0");
  CHECK(written([](JsonWriter& w) { w.value(int64_t{-42}); }) == "-42");
  CHECK(written([](JsonWriter& w) { w.value(std::numeric_limits<int64_t>::min()); }) == "-9223372036854775808");
  CHECK(written([](JsonWriter& w) { w.value(std::numeric_limits<uint64_t>::max()); }) == "18446744073709551615");
  CHECK(written([](JsonWriter& w) { w.value(size_t{55326}); }) == "55326");
}

TEST_CASE("json writer: strings escaped as nlohmann escapes them") {
  CHECK(string_value("") == "\"\"");
  CHECK(string_value("layer1.0 (Conv)") == "\"layer1.0 (Conv)\"");
  CHECK(string_value("a\"b") == "\"a\\\"b\"");
  CHECK(string_value("a\\b") == "\"a\\\\b\"");
  CHECK(string_value("/") == "\"/\"");  // not escaped
  CHECK(string_value("\b\f\n\r\t") == "\"\\b\\f\\n\\r\\t\"");
  CHECK(string_value(std::string("\x00\x01\x1f", 3)) == "\"\\u0000\\u0001\\u001f\"");
  CHECK(string_value("\x7f") == "\"\x7f\"");  // DEL is not a control character to JSON
  // Valid UTF-8 passes through: two, three and four bytes.
  CHECK(string_value("fc\xc3\xa9.\xe4\xb8\xad.\xf0\x9f\x98\x80") == "\"fc\xc3\xa9.\xe4\xb8\xad.\xf0\x9f\x98\x80\"");
  // Keys are escaped the same way.
  CHECK(written([](JsonWriter& w) {
          w.begin_object();
          w.field("k\"\n", 1);
          w.end_object();
        }) == "{\n  \"k\\\"\\n\": 1\n}");
}

TEST_CASE("json writer: invalid UTF-8 throws, naming the byte as nlohmann does") {
  CHECK_THROWS_WITH_AS(string_value("A\xff"), "invalid UTF-8 byte at index 1: 0xFF", Error);
  CHECK_THROWS_WITH_AS(string_value("A\xc3" "B"), "invalid UTF-8 byte at index 2: 0x42", Error);
  CHECK_THROWS_WITH_AS(string_value("\xc0\x80"), "invalid UTF-8 byte at index 0: 0xC0", Error);  // overlong
  CHECK_THROWS_WITH_AS(string_value("\xed\xa0\x80"), "invalid UTF-8 byte at index 1: 0xA0", Error);  // surrogate
  CHECK_THROWS_WITH_AS(string_value("\xf4\x90\x80\x80"), "invalid UTF-8 byte at index 1: 0x90", Error);  // > U+10FFFF
  CHECK_THROWS_WITH_AS(string_value("ab\xe4\xb8"), "incomplete UTF-8 string; last byte: 0xB8", Error);
  // What came before the bad string is kept, the string itself is not.
  std::ostringstream out;
  {
    JsonWriter w(out);
    w.begin_array();
    w.value("ok");
    CHECK_THROWS_AS(w.value("bad\xff"), Error);
  }
  CHECK(out.str() == "[\n  \"ok\",\n  \"");
}

TEST_CASE("json writer: doubles") {
  CHECK(double_value(0.0) == "0.0");
  CHECK(double_value(-0.0) == "-0.0");
  CHECK(double_value(1.0) == "1.0");  // an integral double is not printed as an integer
  CHECK(double_value(-3.0) == "-3.0");
  CHECK(double_value(0.5) == "0.5");
  CHECK(double_value(0.1) == "0.1");
  CHECK(double_value(0.9285272864089252) == "0.9285272864089252");
  CHECK(double_value(0.00022536899117183278) == "0.00022536899117183278");
  CHECK(double_value(123.456) == "123.456");
  // Fixed-point from 1e-4 up to below 1e15; exponents outside, two digits at least.
  CHECK(double_value(1e-4) == "0.0001");
  CHECK(double_value(1e-5) == "1e-05");
  CHECK(double_value(7.628870698270535e-06) == "7.628870698270535e-06");
  CHECK(double_value(1e14) == "100000000000000.0");
  CHECK(double_value(1e15) == "1e+15");
  CHECK(double_value(1.5e300) == "1.5e+300");
  CHECK(double_value(5e-324) == "5e-324");
  // Digits that read back as the same double, nlohmann's (Grisu2) where they are not
  // the shortest: std::to_chars would print 1e+23.
  CHECK(double_value(1e23) == "9.999999999999999e+22");
  CHECK(std::stod(double_value(1e23)) == 1e23);
  CHECK(double_value(std::nan("")) == "null");
  CHECK(double_value(std::numeric_limits<double>::infinity()) == "null");
}

TEST_CASE("json writer: a long document comes out whole") {
  // More than the writer buffers before handing it to the stream.
  const std::string text = written([](JsonWriter& w) {
    w.begin_array();
    for (int i = 0; i < 20000; ++i) w.value("0123456789");
    w.end_array();
  });
  // "[", the first element's "\n" and 14 characters, each other's ",\n" and 14, "\n]".
  CHECK(text.size() == 1 + 15 + 19999 * 16 + 2);
  CHECK(text.substr(0, 18) == "[\n  \"0123456789\",\n");
  CHECK(text.substr(text.size() - 16) == "  \"0123456789\"\n]");
}

}  // namespace
}  // namespace memest
