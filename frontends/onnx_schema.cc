// The onnx.proto schema check. Fields are looked up in a table by message and
// number; what a field may be is what protobuf 3.21's generated parser accepts.
#include "frontends/onnx_schema.h"

#include <array>
#include <utility>

#include "frontends/protowire.h"

namespace memest::onnx_schema {
namespace {

using namespace memest::wire;

enum Msg : uint8_t {
  Model, Graph, Node, Attribute, ValueInfo, TrainingInfo, Entry, TensorAnnotation, Tensor, Segment,
  SparseTensor, TensorShape, Dimension, Type, TypeTensor, TypeSequence, TypeMap, TypeOptional,
  TypeSparseTensor, TypeOpaque, OpsetId, Function, kMsgCount
};

// What a known field is. A field whose wire type does not match is an unknown field.
// The check only tells length-delimited kinds apart, but the table says all of it.
enum Kind : uint8_t {
  kUnknown,
  kVarintField,   // int32, int64, enum (an invalid enum value goes to unknown fields: still valid)
  kFixed32Field,  // float
  kBytesField,    // string, bytes
  kMessageField,
  kRepeatedVarint,   // repeated int32/int64/uint64: varints, or packed in one length-delimited run
  kRepeatedFixed32,  // repeated float
  kRepeatedFixed64,  // repeated double
};

struct Spec {
  Kind kind = kUnknown;
  Msg msg = Model;  // kMessageField's type
};

constexpr uint32_t kFieldLimit = 26;  // onnx 1.12 numbers its fields below this
using Table = std::array<std::array<Spec, kFieldLimit>, kMsgCount>;

// Sets a Table's specs. Every step is constexpr: kSchema is built by the compiler.
struct Fields {
  Table& t;
  constexpr void field(Msg m, uint32_t number, Kind k) const { t[m][number] = Spec{k, Model}; }
  constexpr void message(Msg m, uint32_t number, Msg type) const { t[m][number] = Spec{kMessageField, type}; }
  constexpr void strings(Msg m, std::initializer_list<uint32_t> numbers) const {
    for (uint32_t n : numbers) field(m, n, kBytesField);
  }
};

// ModelProto.
constexpr void model_fields(Fields f) {
  f.field(Model, 1, kVarintField);  // ir_version
  f.message(Model, 8, OpsetId);     // opset_import
  f.strings(Model, {2, 3, 4, 6});   // producer_name, producer_version, domain, doc_string
  f.field(Model, 5, kVarintField);  // model_version
  f.message(Model, 7, Graph);
  f.message(Model, 14, Entry);  // metadata_props
  f.message(Model, 20, TrainingInfo);
  f.message(Model, 25, Function);
}

// GraphProto and its nodes.
constexpr void graph_fields(Fields f) {
  // GraphProto
  f.message(Graph, 1, Node);
  f.strings(Graph, {2, 10});  // name, doc_string
  f.message(Graph, 5, Tensor);  // initializer
  f.message(Graph, 15, SparseTensor);
  f.message(Graph, 11, ValueInfo);  // input
  f.message(Graph, 12, ValueInfo);  // output
  f.message(Graph, 13, ValueInfo);  // value_info
  f.message(Graph, 14, TensorAnnotation);
  // NodeProto: input, output, name, op_type, doc_string, domain; attribute
  f.strings(Node, {1, 2, 3, 4, 6, 7});
  f.message(Node, 5, Attribute);
}

// AttributeProto: its name and type, and a field for each kind of value, one or repeated.
constexpr void attribute_fields(Fields f) {
  f.strings(Attribute, {1, 21, 13, 4, 9});  // name, ref_attr_name, doc_string, s, strings
  f.field(Attribute, 20, kVarintField);     // type
  f.field(Attribute, 2, kFixed32Field);     // f
  f.field(Attribute, 3, kVarintField);      // i
  f.message(Attribute, 5, Tensor);
  f.message(Attribute, 6, Graph);
  f.message(Attribute, 22, SparseTensor);
  f.message(Attribute, 14, Type);
  f.field(Attribute, 7, kRepeatedFixed32);  // floats
  f.field(Attribute, 8, kRepeatedVarint);   // ints
  f.message(Attribute, 10, Tensor);
  f.message(Attribute, 11, Graph);
  f.message(Attribute, 23, SparseTensor);
  f.message(Attribute, 15, Type);
}

// What describes a graph's values and its training, and key-value entries.
constexpr void metadata_fields(Fields f) {
  // ValueInfoProto
  f.strings(ValueInfo, {1, 3});
  f.message(ValueInfo, 2, Type);
  // TrainingInfoProto
  f.message(TrainingInfo, 1, Graph);
  f.message(TrainingInfo, 2, Graph);
  f.message(TrainingInfo, 3, Entry);
  f.message(TrainingInfo, 4, Entry);
  // StringStringEntryProto, TensorAnnotation
  f.strings(Entry, {1, 2});
  f.strings(TensorAnnotation, {1});
  f.message(TensorAnnotation, 2, Entry);
}

// TensorProto, its segments, and SparseTensorProto.
constexpr void tensor_fields(Fields f) {
  // TensorProto
  f.field(Tensor, 1, kRepeatedVarint);  // dims
  f.field(Tensor, 2, kVarintField);     // data_type
  f.message(Tensor, 3, Segment);
  f.field(Tensor, 4, kRepeatedFixed32);  // float_data
  f.field(Tensor, 5, kRepeatedVarint);   // int32_data
  f.strings(Tensor, {6, 8, 12, 9});      // string_data, name, doc_string, raw_data
  f.field(Tensor, 7, kRepeatedVarint);   // int64_data
  f.message(Tensor, 13, Entry);          // external_data
  f.field(Tensor, 14, kVarintField);     // data_location
  f.field(Tensor, 10, kRepeatedFixed64);  // double_data
  f.field(Tensor, 11, kRepeatedVarint);   // uint64_data
  f.field(Segment, 1, kVarintField);
  f.field(Segment, 2, kVarintField);
  // SparseTensorProto
  f.message(SparseTensor, 1, Tensor);
  f.message(SparseTensor, 2, Tensor);
  f.field(SparseTensor, 3, kRepeatedVarint);
}

// TypeProto, its kinds, and the shapes a tensor type carries.
constexpr void type_fields(Fields f) {
  // TensorShapeProto and its Dimension (dim_value, dim_param, denotation)
  f.message(TensorShape, 1, Dimension);
  f.field(Dimension, 1, kVarintField);
  f.strings(Dimension, {2, 3});
  // TypeProto and its kinds
  f.message(Type, 1, TypeTensor);
  f.message(Type, 4, TypeSequence);
  f.message(Type, 5, TypeMap);
  f.message(Type, 9, TypeOptional);
  f.message(Type, 8, TypeSparseTensor);
  f.message(Type, 7, TypeOpaque);
  f.strings(Type, {6});
  f.field(TypeTensor, 1, kVarintField);
  f.message(TypeTensor, 2, TensorShape);
  f.message(TypeSequence, 1, Type);
  f.field(TypeMap, 1, kVarintField);
  f.message(TypeMap, 2, Type);
  f.message(TypeOptional, 1, Type);
  f.field(TypeSparseTensor, 1, kVarintField);
  f.message(TypeSparseTensor, 2, TensorShape);
  f.strings(TypeOpaque, {1, 2});
}

// OperatorSetIdProto and FunctionProto.
constexpr void function_fields(Fields f) {
  // OperatorSetIdProto
  f.strings(OpsetId, {1});
  f.field(OpsetId, 2, kVarintField);
  // FunctionProto: name, input, output, attribute, doc_string, domain; node; opset_import
  f.strings(Function, {1, 4, 5, 6, 8, 10});
  f.message(Function, 7, Node);
  f.message(Function, 9, OpsetId);
}

constexpr Table make_schema() {
  Table t{};
  const Fields f{t};
  model_fields(f);
  graph_fields(f);
  attribute_fields(f);
  metadata_fields(f);
  tensor_fields(f);
  type_fields(f);
  function_fields(f);
  return t;
}

constexpr Table kSchema = make_schema();

const char* skip_fixed(const char* p, const char* end, size_t n) {
  return static_cast<size_t>(end - p) >= n ? p + n : nullptr;
}

// A packed run of varints must end exactly with its last varint's last byte.
bool packed_varints_ok(std::string_view run) {
  int continued = 0;
  for (char c : run) {
    if (static_cast<uint8_t>(c) < 0x80) {
      continued = 0;
    } else if (++continued == 10) {
      return false;
    }
  }
  return continued == 0;
}

class Checker {
 public:
  explicit Checker(int depth) : depth_(depth) {}

  // The fields of a message of type `m` in [p, end). Returns the end, or nullptr
  // when protobuf fails. `lists`, for the model's graph only, collects its lists.
  // Only a length-delimited field's meaning depends on the schema: a varint or a
  // fixed field is skipped alike whether the schema knows it or not, and no field
  // of onnx.proto is a group.
  const char* message(Msg m, const char* p, const char* end, onnx_views::GraphView* lists = nullptr) {
    const auto& specs = kSchema[m];
    while (p < end) {
      uint32_t tag;
      p = read_tag(p, end, &tag);
      if (!p) return nullptr;
      const uint32_t number = tag >> 3;
      if (number == 0) return nullptr;  // a zero tag included: protobuf fails there, at the top level too
      switch (tag & 7) {
        case kVarint: p = skip_varint(p, end); break;
        case kFixed64: p = skip_fixed(p, end, 8); break;
        case kFixed32: p = skip_fixed(p, end, 4); break;
        case kLen: {
          std::string_view payload;
          p = read_len(p, end, &payload);
          if (!p) return nullptr;
          const Spec spec = number < kFieldLimit ? specs[number] : Spec{};
          if (spec.kind == kBytesField) {  // most fields: names
            if (m == Node && number == 2) ++node_outputs;
          } else if (spec.kind != kUnknown && !len_field(m, number, spec, payload, lists)) {
            return nullptr;
          }
          break;
        }
        case kStartGroup: p = group(tag, p, end); break;
        default: return nullptr;  // a group's end with no group open; wire types 6 and 7
      }
      if (!p) return nullptr;
    }
    return p;
  }

  uint64_t node_outputs = 0;
  onnx_views::GraphView graph;

 private:
  static const char* skip_varint(const char* p, const char* end) {
    uint64_t v;
    return read_varint(p, end, &v);
  }

  // A length-delimited field the schema knows as more than bytes: a message is
  // checked in turn, a packed run must hold whole elements. False where protobuf fails.
  bool len_field(Msg m, uint32_t number, Spec spec, std::string_view payload, onnx_views::GraphView* lists) {
    switch (spec.kind) {
      case kMessageField: {
        if (lists) note(*lists, number, payload);
        if (--depth_ < 0) return false;
        const char* end = payload.data() + payload.size();
        const bool ok = message(spec.msg, payload.data(), end, m == Model && number == 7 ? &graph : nullptr) == end;
        ++depth_;
        return ok;
      }
      case kRepeatedVarint: return packed_varints_ok(payload);
      case kRepeatedFixed32: return payload.size() % 4 == 0;
      case kRepeatedFixed64: return payload.size() % 8 == 0;
      default: return true;  // unknown, or a known scalar with the wrong wire type: kept unparsed
    }
  }

  static void note(onnx_views::GraphView& g, uint32_t number, std::string_view payload) {
    switch (number) {
      case 1: ++g.nodes; break;
      case 5: g.initializers.push_back(payload); break;
      case 15: g.sparse_initializers.push_back(payload); break;
      case 11: g.inputs.push_back(payload); break;
      case 12: g.outputs.push_back(payload); break;
      case 13: g.value_infos.push_back(payload); break;
      default: break;
    }
  }

  // An unknown group (onnx.proto has no groups): its fields, all unknown, up to an
  // end tag that must match its start tag. It counts toward the nesting limit.
  const char* group(uint32_t start_tag, const char* p, const char* end) {
    if (--depth_ < 0) return nullptr;
    while (p < end) {
      uint32_t tag;
      p = read_tag(p, end, &tag);
      if (!p || (tag >> 3) == 0) return nullptr;
      std::string_view payload;
      switch (tag & 7) {
        case kVarint: p = skip_varint(p, end); break;
        case kFixed64: p = skip_fixed(p, end, 8); break;
        case kFixed32: p = skip_fixed(p, end, 4); break;
        case kLen: p = read_len(p, end, &payload); break;
        case kStartGroup: p = group(tag, p, end); break;
        case kEndGroup:
          ++depth_;
          return tag == start_tag + 1 ? p : nullptr;
        default: return nullptr;
      }
      if (!p) return nullptr;
    }
    return nullptr;  // no end tag before the enclosing message ends
  }

  int depth_;
};

}  // namespace

std::optional<ModelCheck> check_model(std::string_view bytes) {
  Checker c(64);
  const char* end = bytes.data() + bytes.size();
  if (c.message(Model, bytes.data(), end) != end) return std::nullopt;
  return ModelCheck{c.node_outputs, std::move(c.graph)};
}

bool check_entry(std::string_view bytes) {
  Checker c(100);
  const char* end = bytes.data() + bytes.size();
  return c.message(Entry, bytes.data(), end) == end;
}

}  // namespace memest::onnx_schema
