// JSON written as it is produced. The layout copies nlohmann's pretty printer so that
// reports written here read exactly as those built as a nlohmann::json and dumped.
#include "cli/json_writer.h"

#include <charconv>
#include <cmath>

#include <nlohmann/detail/conversions/to_chars.hpp>

#include "estimator/error.h"

namespace memest {
namespace {

// nlohmann's message for the byte where UTF-8 decoding fails.
std::string hex_byte(unsigned char c) {
  constexpr const char* kHex = "0123456789ABCDEF";
  return std::string("0x") + kHex[c >> 4] + kHex[c & 15];
}

// The length of the well-formed UTF-8 sequence that starts at s[i] (Unicode's table 3-7:
// no overlong forms, no surrogates, nothing above U+10FFFF), or 0. `*bad` is then the
// index of the first byte that cannot continue it, or s.size() when the string ends first.
size_t utf8_sequence(std::string_view s, size_t i, size_t* bad) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range; later ones are 80..BF
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    *bad = i;
    return 0;
  }
  for (size_t k = 1; k < len; ++k) {
    if (i + k >= s.size()) {
      *bad = s.size();
      return 0;
    }
    const auto d = static_cast<unsigned char>(s[i + k]);
    if (d < (k == 1 ? lo : 0x80) || d > (k == 1 ? hi : 0xBF)) {
      *bad = i + k;
      return 0;
    }
  }
  return len;
}

}  // namespace

JsonWriter::JsonWriter(std::ostream& out) : out_(out) { buf_.reserve(kFlushAt + 4096); }

JsonWriter::~JsonWriter() { flush(); }

void JsonWriter::flush() {
  if (!buf_.empty()) out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
  buf_.clear();
}

void JsonWriter::element() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (counts_.empty()) return;
  buf_ += counts_.back()++ ? ",\n" : "\n";
  buf_.append(2 * counts_.size(), ' ');
}

void JsonWriter::begin_object() {
  element();
  buf_ += '{';
  counts_.push_back(0);
}

void JsonWriter::begin_array() {
  element();
  buf_ += '[';
  counts_.push_back(0);
}

void JsonWriter::end_object() {
  const bool empty = counts_.back() == 0;
  counts_.pop_back();
  if (!empty) {
    buf_ += '\n';
    buf_.append(2 * counts_.size(), ' ');
  }
  buf_ += '}';
  maybe_flush();
}

void JsonWriter::end_array() {
  const bool empty = counts_.back() == 0;
  counts_.pop_back();
  if (!empty) {
    buf_ += '\n';
    buf_.append(2 * counts_.size(), ' ');
  }
  buf_ += ']';
  maybe_flush();
}

void JsonWriter::key(std::string_view k) {
  element();
  string(k);
  buf_ += ": ";
  after_key_ = true;
}

void JsonWriter::value(std::string_view s) {
  element();
  string(s);
  maybe_flush();
}

void JsonWriter::value(bool b) {
  element();
  buf_ += b ? "true" : "false";
}

void JsonWriter::null() {
  element();
  buf_ += "null";
}

void JsonWriter::integer(int64_t v) {
  element();
  char tmp[24];
  buf_.append(tmp, std::to_chars(tmp, tmp + sizeof(tmp), v).ptr);
}

void JsonWriter::unsigned_integer(uint64_t v) {
  element();
  char tmp[24];
  buf_.append(tmp, std::to_chars(tmp, tmp + sizeof(tmp), v).ptr);
}

void JsonWriter::value(double d) {
  element();
  if (!std::isfinite(d)) {
    buf_ += "null";
    return;
  }
  // nlohmann's own Grisu2 digits: they round-trip but are not always the shortest or the
  // closest (std::to_chars's), so std::to_chars would change the last digit of about one
  // share in 2,500 (the same double when read back); these keep the reports byte-identical.
  char out[40];
  buf_.append(out, nlohmann::detail::to_chars(out, out + sizeof(out), d));
}

// Escapes as nlohmann does (without ensure_ascii): the two-character escapes where JSON
// has one, \u00xx for other control characters, every other byte as it is.
void JsonWriter::string(std::string_view s) {
  buf_ += '"';
  const size_t start = buf_.size();
  size_t run = 0;  // s[run..i) is still to copy
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      size_t bad = 0;
      const size_t len = utf8_sequence(s, i, &bad);
      if (len == 0) {
        buf_.resize(start);  // like nlohmann, leave the string's opening quote only
        if (bad == s.size()) {
          throw Error("incomplete UTF-8 string; last byte: " + hex_byte(static_cast<unsigned char>(s.back())));
        }
        throw Error("invalid UTF-8 byte at index " + std::to_string(bad) + ": " +
                    hex_byte(static_cast<unsigned char>(s[bad])));
      }
      i += len - 1;
      continue;
    }
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    buf_.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': buf_ += "\\\""; break;
      case '\\': buf_ += "\\\\"; break;
      case '\b': buf_ += "\\b"; break;
      case '\t': buf_ += "\\t"; break;
      case '\n': buf_ += "\\n"; break;
      case '\f': buf_ += "\\f"; break;
      case '\r': buf_ += "\\r"; break;
      default: {
        constexpr const char* kHex = "0123456789abcdef";
        const char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        buf_.append(esc, sizeof(esc));
      }
    }
  }
  buf_.append(s.data() + run, s.size() - run);
  buf_ += '"';
}

}  // namespace memest
