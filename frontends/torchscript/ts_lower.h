// The TorchScript helper's graph walk: loads forward() with libtorch and lowers
// it node by node to ONNX through the op table (ts_ops.h), inlining method and
// function calls as it meets them and folding constants and control flow on the
// way (ts_consts.h). Nothing is executed except scalar arithmetic on constants.
#pragma once

#include <torch/script.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "ts_onnx.h"

namespace memest::ts {

/// The helper's one error type; main() prints what() as the last stderr line.
class LowerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One `--input-shape`: per-sample dims (the batch is prepended) and dtype.
struct InputSpec {
  std::vector<int64_t> dims;
  at::ScalarType dtype = at::kFloat;
};

/// Parses "3x224x224:float32", "512:int64", "-:float32"; throws LowerError.
InputSpec parse_spec(const std::string& text);

/// What the lowering knows about one TorchScript value.
struct Val {
  enum class Kind : uint8_t {
    Unknown,  ///< nothing (strings of error messages, unsupported results)
    Const,    ///< a value known now: None, numbers, lists, small tensors
    Tensor,   ///< an ONNX tensor
    Scalar,   ///< an int/float/bool known only at run time, held in a 0-d ONNX tensor
    List,     ///< a list whose items are not all constants
    Tuple,    ///< likewise, a tuple
    Module,   ///< a submodule, for attribute lookups
  };
  Kind kind = Kind::Unknown;
  c10::IValue value;        ///< Const
  std::string name;         ///< Tensor, Scalar: the ONNX tensor
  int rank = -1;            ///< Tensor: rank when known
  std::vector<int64_t> dims;  ///< Tensor: dims when known, -1 for the batch (inputs, weights)
  at::ScalarType dtype = at::ScalarType::Undefined;  ///< Tensor, Scalar
  bool state = false;       ///< Tensor: a parameter or buffer of the module
  std::vector<Val> items;   ///< List, Tuple
  c10::intrusive_ptr<c10::ivalue::Object> object;  ///< Module
  std::string path;         ///< Module: its path, "layer1.0.conv1"

  static Val constant(c10::IValue v);
  static Val tensor(std::string name, int rank, at::ScalarType dtype);
  static Val scalar(std::string name, at::ScalarType dtype);
  bool is_const() const { return kind == Kind::Const; }
  bool is_none() const { return kind == Kind::Const && value.isNone(); }
  bool is_tensor() const { return kind == Kind::Tensor; }
};

/// ONNX element type of a torch dtype; throws LowerError for types ONNX lacks.
int onnx_type(at::ScalarType t);
/// "float32", "int64", ... as --input-shape spells dtypes.
std::string dtype_name(at::ScalarType t);

class Lowerer {
 public:
  Lowerer(torch::jit::Module module, std::string file);

  /// Lowers forward() for these inputs.
  onnx::ModelProto run(const std::vector<InputSpec>& specs);

  OnnxBuilder& onnx() { return onnx_; }
  /// Module path of the node being lowered ("" at the top level).
  const std::string& module() const { return module_; }
  Val& value(const torch::jit::Value* v);
  void bind(const torch::jit::Value* v, Val val) { env_[v] = std::move(val); }
  /// The ONNX tensor for a value: constants become Constant nodes, typed like `like`.
  std::string materialize(const Val& v, at::ScalarType like, const torch::jit::Node* at);
  /// Control flow, for the prim::If and prim::Loop entries.
  void lower_if(torch::jit::Node* n);
  void lower_loop(torch::jit::Node* n);
  /// Calls, for the prim::CallMethod and prim::CallFunction entries: the callee's
  /// graph lowered in place with its inputs bound to `args`. A method runs in its
  /// module's path ("encoder.layers.0"), which names the ONNX nodes it emits.
  std::vector<Val> call(const torch::jit::Function& fn, const std::vector<Val>& args, const std::string* module,
                        const torch::jit::Node* at);
  /// A submodule's attribute: a submodule, a weight, or a constant.
  Val attribute(const Val& module, const std::string& name, const torch::jit::Node* at);
  [[noreturn]] void fail(const torch::jit::Node* n, const std::string& what) const;
  /// The value of a run-time int/bool (an ONNX Scalar) as memest's shape pass
  /// computes it over the graph so far: known when it does not depend on the
  /// batch (scripted code branching on a feature map's size). nullopt otherwise.
  std::optional<int64_t> evaluate(const Val& v);
  /// The --input-shape text of graph input `name` ("" when it is not one).
  std::string input_spec(const std::string& name) const;

 private:
  void lower_block(torch::jit::Block* b);
  void lower_node(torch::jit::Node* n);
  void lower_call(torch::jit::Node* n);
  void add_state();

  torch::jit::Module root_;
  std::string file_;
  OnnxBuilder onnx_;
  std::unordered_map<const torch::jit::Value*, Val> env_;
  std::unordered_map<const c10::TensorImpl*, Val> state_;  // weights by identity: tied weights are one
  std::unordered_map<std::string, std::string> input_specs_;  // graph input -> its per-sample dims
  std::string module_;
  int depth_ = 0;
};

/// "file.py:12" where a node came from, or "" when the file keeps no source.
std::string where(const torch::jit::Node* n);

/// Loads `path` and lowers its forward(). Throws LowerError.
onnx::ModelProto lower_torchscript(const std::string& path, const std::vector<InputSpec>& specs);

}  // namespace memest::ts
