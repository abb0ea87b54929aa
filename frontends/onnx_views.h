// The ONNX messages the reader lowers, decoded from a checked file's bytes into
// views: names and payloads stay string_views into the file, nothing is copied,
// and fields the reader does not use are skipped. Each view keeps protobuf's
// semantics for what it reads: the last occurrence of a singular field wins, a
// singular message seen twice merges (Parts), a field with another wire type than
// the schema's is an unknown one, and an oneof's last member wins.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/protowire.h"

namespace memest::onnx_views {

/// One singular message field's occurrences: protobuf merges them, which on the
/// wire is parsing their payloads one after another. Nearly always one.
class Parts {
 public:
  void add(std::string_view s) {
    if (n_ < kInline) {
      inline_[n_] = s;
    } else {
      more_.push_back(s);
    }
    ++n_;
  }
  bool empty() const { return n_ == 0; }
  void clear() {
    n_ = 0;
    more_.clear();
  }
  /// Calls f(Field) for each field of the merged message, in order.
  template <typename F>
  void each_field(F&& f) const {
    wire::Field field;
    for (size_t i = 0; i < n_; ++i) {
      for (wire::Fields fields(i < kInline ? inline_[i] : more_[i - kInline]); fields.next(field);) f(field);
    }
  }

 private:
  static constexpr size_t kInline = 2;
  std::array<std::string_view, kInline> inline_;
  size_t n_ = 0;
  std::vector<std::string_view> more_;
};

/// ModelProto: what read_model checks and the lowering starts from.
struct ModelView {
  int64_t ir_version = 0;
  bool has_graph = false;
  Parts graph;
  std::string_view producer_name, producer_version;
  std::vector<std::string_view> opset_imports, metadata_props, functions;
};
ModelView read_model(std::string_view bytes);

/// GraphProto's lists (each entry one message's bytes), but for the nodes: a
/// million-node graph is lowered node by node as each_node() walks it. The schema
/// check fills this for the model's graph on its way through the file.
struct GraphView {
  size_t nodes = 0;  ///< how many
  std::vector<std::string_view> initializers, sparse_initializers, inputs, outputs, value_infos;
};
/// Calls f(bytes) for each NodeProto of the graph, in order.
template <typename F>
void each_node(const Parts& graph, F&& f) {
  graph.each_field([&](const wire::Field& field) {
    if (field.number == 1 && field.type == wire::kLen) f(field.data);
  });
}

/// OperatorSetIdProto and StringStringEntryProto.
struct OpsetView {
  std::string_view domain;
  int64_t version = 0;
};
OpsetView read_opset(std::string_view bytes);
struct EntryView {
  std::string_view key, value;
};
EntryView read_entry(std::string_view bytes);

/// TensorProto without its contents; `parts` lets read_ints/read_floats get them.
struct TensorView {
  Parts parts;
  std::string_view name;
  int32_t data_type = 0;
  bool external = false;  ///< data_location is EXTERNAL
  bool has_raw = false;
  std::string_view raw;
};
/// Fills `t` from t.parts, and `dims` (cleared first).
void read_tensor(TensorView& t, std::vector<int64_t>& dims);
/// Integer contents of a small tensor stored inline; nullopt for float, large or external data.
std::optional<std::vector<int64_t>> read_ints(const TensorView& t, int64_t numel);
/// Float contents of a tiny tensor (Resize scales, scalar constants).
std::optional<std::vector<double>> read_floats(const TensorView& t, int64_t numel);

/// ValueInfoProto: a name and, when it is a tensor type, its element type and dims.
struct ValueInfoView {
  std::string_view name;
  Parts type;
  /// metadata_props' "pkg.onnxscript.optimizer.folded_from" (onnx >= 1.16): for an
  /// initializer the exporter's optimizer made, the values it folded into it, as a Python
  /// list ("['rope.freqs', 'select', 'val_7']"); empty when absent.
  std::string_view folded_from;
};
ValueInfoView read_value_info(std::string_view bytes);
/// TypeProto.Tensor of a type: has_tensor is false for other kinds or no type.
struct TensorTypeView {
  bool has_tensor = false;
  int32_t elem_type = 0;
  Parts shape;  ///< TensorShapeProto; empty when the tensor type has none
};
void read_tensor_type(const Parts& type, TensorTypeView& out);
/// TensorShapeProto.Dimension: its oneof, the last member set winning.
struct DimView {
  enum Which : uint8_t { None, Value, Param } which = None;
  int64_t value = 0;
  std::string_view param;
};
DimView read_dim(std::string_view bytes);

/// An attribute as a node holds it: its bytes, and the name it goes by when a
/// function's attribute reference replaced it with the call site's.
struct AttrRef {
  std::string_view bytes;
  std::string_view name;
  bool renamed = false;
};

/// NodeProto. `metadata` are field 9's entries (metadata_props, onnx >= 1.16),
/// unknown to onnx 1.12's schema and so unchecked until read.
struct NodeView {
  std::string_view name, op_type, domain;
  std::vector<std::string_view> inputs, outputs, metadata;
  std::vector<AttrRef> attrs;
  std::vector<uint32_t> hashes;  ///< Graph::name_hash of inputs then outputs, when the reader has filled them
};
void read_node(std::string_view bytes, NodeView& out);

/// AttributeProto's scalar fields; lists and the tensor are read on demand.
struct AttrView {
  std::string_view name, ref_attr_name, s;
  int type = 0;  ///< AttributeType; only valid values (0 to 14) are taken, as protobuf does
  bool has_i = false, has_f = false, has_s = false;
  int64_t i = 0;
  float f = 0;
  Parts t;
  std::string_view bytes;
};
void read_attr(const AttrRef& ref, AttrView& out);
/// The attribute's ints (field 8), floats (7) and strings (9), packed or not.
std::vector<int64_t> attr_ints(const AttrView& a);
std::vector<double> attr_floats(const AttrView& a);
std::vector<std::string> attr_strings(const AttrView& a);

/// FunctionProto (a model-local function).
struct FunctionView {
  std::string_view name, domain;
  std::vector<std::string_view> inputs, outputs, nodes;
};
FunctionView read_function(std::string_view bytes);

}  // namespace memest::onnx_views
