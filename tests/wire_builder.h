// Protobuf bytes written by hand in tests: a field is one call, a message the sum of its fields.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>

namespace memest::testing {

inline std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int x : b) s.push_back(static_cast<char>(x));
  return s;
}

inline std::string varint(uint64_t v) {
  std::string s;
  while (v >= 0x80) {
    s.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  s.push_back(static_cast<char>(v));
  return s;
}

inline std::string tag(uint32_t number, uint32_t wire_type) { return varint((uint64_t{number} << 3) | wire_type); }
inline std::string vfield(uint32_t number, uint64_t v) { return tag(number, 0) + varint(v); }
inline std::string lfield(uint32_t number, const std::string& payload) {
  return tag(number, 2) + varint(payload.size()) + payload;
}
inline std::string fixed64(uint32_t number, uint64_t v) {
  std::string s(8, '\0');
  std::memcpy(s.data(), &v, 8);
  return tag(number, 1) + s;
}
inline std::string fixed32(uint32_t number, uint32_t v) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &v, 4);
  return tag(number, 5) + s;
}
inline std::string group(uint32_t number, const std::string& fields) { return tag(number, 3) + fields + tag(number, 4); }

// ONNX messages (onnx.proto's field numbers).
/// TensorShapeProto.Dimension: a fixed size, or a symbolic one.
inline std::string dim_value(int64_t v) { return lfield(1, vfield(1, static_cast<uint64_t>(v))); }
inline std::string dim_param(const std::string& p) { return lfield(1, lfield(2, p)); }
/// TypeProto with a tensor_type of this element type and shape.
inline std::string tensor_type(int elem, const std::string& dims) { return lfield(1, vfield(1, elem) + lfield(2, dims)); }
inline std::string value_info(const std::string& name, const std::string& type) { return lfield(1, name) + lfield(2, type); }
/// StringStringEntryProto: a node's metadata_props entry.
inline std::string entry(const std::string& key, const std::string& value) { return lfield(1, key) + lfield(2, value); }

}  // namespace memest::testing
