// onnx.proto (onnx 1.12, the ONNX-ML variant Debian's libonnx was built from) as a
// table, and the check that bytes parse under it exactly as libprotobuf 3.21 parses
// them. The reader checks a file whole before it lowers anything, so a file protobuf
// rejects is rejected with the same message whatever else is wrong with it, and the
// lowering can walk the bytes without re-checking every field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "frontends/onnx_views.h"

namespace memest::onnx_schema {

/// What the check saw on its way: the one pass over the whole file also notes
/// where the model's graph keeps its lists, and sizes the IR.
struct ModelCheck {
  uint64_t node_outputs = 0;  ///< NodeProto.output entries in the whole file (subgraphs and functions too)
  onnx_views::GraphView graph;  ///< ModelProto.graph's lists, every occurrence of the graph merged
};

/// Checks `bytes` as ModelProto::ParseFromCodedStream with a recursion limit of 64
/// does: fields of a known number and wire type are parsed by the schema (messages
/// recursively, repeated numbers packed or not), any other field is skipped as an
/// unknown one (groups included), and a singular message seen twice merges.
/// nullopt where protobuf would fail: a truncated field, a varint over 10 bytes, a
/// length past its message's end, wire type 6 or 7, field number 0, a zero tag, an
/// unmatched group end, nesting over 64 deep.
std::optional<ModelCheck> check_model(std::string_view bytes);

/// Checks `bytes` as StringStringEntryProto::ParseFromString does (recursion limit 100).
bool check_entry(std::string_view bytes);

}  // namespace memest::onnx_schema
