// A JSON document written to a stream as it is produced, with no DOM in between.
#pragma once

#include <concepts>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace memest {

/// Writes one JSON document laid out as nlohmann's `std::setw(2) << j` lays it out,
/// byte for byte: members and elements one a line, indented two spaces a level, `{}`
/// and `[]` for empty containers; strings with `"` `\` and control characters escaped
/// (`\n`, `\u001f`), valid UTF-8 passed through; doubles in digits that read back as
/// the same double (nlohmann's), `1.0` for an integral one, exponents below 1e-4 and from
/// 1e15 (`1e-05`, `1e+15`), `null` for NaN and infinities. Members go out in the order
/// written: nlohmann sorts them by key, so a caller that must match it writes keys in
/// ascending byte order.
/// A string that is not valid UTF-8 throws Error (nlohmann throws too).
class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& out);
  ~JsonWriter();  ///< flushes
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  void begin_object();
  void end_object();
  void begin_array();
  void end_array();
  /// The next member's name, inside an object; its value follows.
  void key(std::string_view k);

  void value(std::string_view s);
  void value(const char* s) { value(std::string_view(s)); }
  void value(const std::string& s) { value(std::string_view(s)); }
  void value(bool b);
  void value(double d);
  template <std::integral T>
  void value(T v) {
    if constexpr (std::is_signed_v<T>) {
      integer(static_cast<int64_t>(v));
    } else {
      unsigned_integer(static_cast<uint64_t>(v));
    }
  }
  void null();

  /// key(k) then value(v).
  template <class T>
  void field(std::string_view k, const T& v) {
    key(k);
    value(v);
  }

  /// Hands what is buffered to the stream.
  void flush();

 private:
  void element();  // the separator and indent before a member or an element
  void integer(int64_t v);
  void unsigned_integer(uint64_t v);
  void string(std::string_view s);
  void maybe_flush() {
    if (buf_.size() >= kFlushAt) flush();
  }

  static constexpr size_t kFlushAt = 1 << 16;
  std::ostream& out_;
  std::string buf_;
  std::vector<size_t> counts_;  // members or elements so far in each open container
  bool after_key_ = false;
};

}  // namespace memest
