// The ONNX side of the TorchScript helper: a builder that appends nodes,
// constants and initializers to a shape-only ModelProto, then prunes what the
// lowering emitted but nothing reads.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace memest::ts {

/// ONNX TensorProto.DataType codes memest-torchscript emits.
enum OnnxType : int {
  kFloat = 1, kUint8 = 2, kInt8 = 3, kInt16 = 5, kInt32 = 6, kInt64 = 7, kBool = 9,
  kFloat16 = 10, kDouble = 11, kComplex64 = 14, kComplex128 = 15, kBFloat16 = 16,
};

using Attrs = std::vector<onnx::AttributeProto>;
onnx::AttributeProto attr_i(const std::string& name, int64_t v);
onnx::AttributeProto attr_f(const std::string& name, double v);
onnx::AttributeProto attr_s(const std::string& name, const std::string& v);
onnx::AttributeProto attr_ints(const std::string& name, const std::vector<int64_t>& v);

/// Appends to one ModelProto. Names are unique; node names carry the module
/// path ("/layer1.0.conv1/Conv_12"), which memest reads back as the layer.
class OnnxBuilder {
 public:
  OnnxBuilder();

  /// A graph input of `type` with dims; a negative dim is the symbolic "batch".
  void add_input(const std::string& name, int type, const std::vector<int64_t>& dims);
  /// A weight or buffer: dims and dtype only, its bytes marked external and absent.
  void add_initializer(const std::string& name, int type, const std::vector<int64_t>& dims);
  void add_output(const std::string& name);
  void set_metadata(const std::string& key, const std::string& value);

  /// Appends a node; returns its output names. `module` is the module path.
  std::vector<std::string> node(const std::string& op, const std::vector<std::string>& inputs, const Attrs& attrs,
                                int num_outputs, const std::string& module, const std::string& domain = "");
  /// A Constant node of `type` and `dims` holding `values` (ints stored exactly).
  std::string constant(int type, const std::vector<int64_t>& dims, const std::vector<double>& values,
                       const std::string& module);
  /// A Constant holding int64 values (0-d when `scalar`, else 1-D).
  std::string const_ints(const std::vector<int64_t>& v, bool scalar, const std::string& module);
  /// A Constant with dims and type but no contents (a large traced constant).
  std::string const_opaque(int type, const std::vector<int64_t>& dims, const std::string& module);
  /// Adds an attribute to the node that produced `output`.
  void mark(const std::string& output, const onnx::AttributeProto& a);

  /// Drops nodes none of whose outputs reach a graph output; returns the model.
  onnx::ModelProto finish();
  /// The model so far with `output` as its only output, pruned: what memest's
  /// shape pass needs to compute that value.
  onnx::ModelProto snapshot(const std::string& output) const;

 private:
  std::string unique(const std::string& base);
  std::string node_name(const std::string& op, const std::string& module);
  static void prune(onnx::GraphProto& g);

  onnx::ModelProto model_;
  onnx::GraphProto* graph_;
  std::unordered_map<std::string, int> used_;     // name -> times used, for unique names
  std::unordered_map<std::string, int> producer_; // output name -> node index
};

}  // namespace memest::ts
