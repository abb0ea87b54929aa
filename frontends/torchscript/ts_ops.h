// The aten -> ONNX op table of the TorchScript helper. Each TorchScript op is one
// entry in one family's table (ts_ops_nn.cc, ts_ops_tensor.cc, ts_ops_shape.cc,
// ts_consts.cc); the driver looks it up by name. An in-place variant (relu_) is
// its out-of-place entry plus an `inplace=1` attribute; ops without an entry go
// to ONNX as-is in domain org.pytorch.aten.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ts_lower.h"

namespace memest::ts {

struct OpEntry;

/// One TorchScript call being lowered: its arguments (by position, or by name
/// through the schema) and the ONNX nodes it becomes, in the call's module.
class Call {
 public:
  Call(Lowerer& l, torch::jit::Node* n, const OpEntry& e, bool inplace);

  torch::jit::Node* node() const { return n_; }
  const OpEntry& entry() const { return e_; }
  Lowerer& lowerer() const { return l_; }
  bool inplace() const { return inplace_; }

  // ---- Arguments ----------------------------------------------------------------
  size_t size() const { return in_.size(); }
  const Val& in(size_t i) const;
  /// Position of a named schema argument, or -1 (no schema, or no such argument).
  int arg(const char* name) const;
  /// Absent (past the end) or None.
  bool none(size_t i) const;
  std::optional<int64_t> int_(size_t i) const;
  std::optional<double> num(size_t i) const;
  std::optional<bool> flag(size_t i) const;
  /// A constant int list; a single int is repeated `repeat` times (kernel_size=3).
  std::optional<std::vector<int64_t>> ints(size_t i, size_t repeat = 1) const;
  std::optional<std::string> str(size_t i) const;
  int rank(size_t i) const;
  at::ScalarType dtype(size_t i) const;

  // ---- ONNX operands --------------------------------------------------------------
  /// Argument i as an ONNX tensor; constants take the dtype of argument `like`.
  std::string tensor(size_t i, int like = -1);
  /// Argument i as an ONNX tensor of dtype t: constants are made so, others cast.
  std::string operand(size_t i, at::ScalarType t);
  /// torch's result dtype for these arguments (0-d tensors and numbers weigh less).
  at::ScalarType promoted(std::initializer_list<size_t> args) const;
  /// An int[] argument (constant or built from sizes) as a 1-D int64 tensor.
  std::string shape(size_t i) { return shape_of(in(i)); }
  std::string shape_of(const Val& v);
  std::string ints_const(const std::vector<int64_t>& v);
  std::string scalar_const(double v, at::ScalarType t);
  std::vector<std::string> emit(const std::string& op, const std::vector<std::string>& inputs, const Attrs& attrs,
                                int num_outputs, const std::string& domain = "");
  std::string emit1(const std::string& op, const std::vector<std::string>& inputs, const Attrs& attrs = {},
                    const std::string& domain = "");

  // ---- Results --------------------------------------------------------------------
  size_t num_outputs() const { return out_.size(); }
  /// Output k, pre-filled from its TorchScript type (a tensor gets the largest
  /// input rank and the first input's dtype, to be overridden).
  Val& out(size_t k) { return out_.at(k); }
  /// Sets output k to ONNX tensor `name`, keeping the pre-filled rank and dtype.
  Val& set(size_t k, const std::string& name);
  /// How many items a prim::ListUnpack takes from output k (0: not unpacked).
  size_t unpack_count(size_t k) const;
  std::vector<Val>& outputs() { return out_; }

  [[noreturn]] void fail(const std::string& what) const;

 private:
  Lowerer& l_;
  torch::jit::Node* n_;
  const OpEntry& e_;
  bool inplace_;
  std::vector<Val> in_;
  std::vector<Val> out_;
};

/// Lowers one call; false leaves it to the generic org.pytorch.aten emission.
using LowerFn = bool (*)(Call&);

struct OpEntry {
  const char* name;      ///< "aten::relu"
  LowerFn lower;
  const char* onnx;      ///< the ONNX op for table-driven handlers ("Relu"), or ""
  const char* note;      ///< what is kept or lost, for `memest-torchscript --ops`
};

struct OpTable {
  const OpEntry* begin;
  size_t size;
};

OpTable nn_ops();      // conv, pool, norm, dropout, activations, rnn, embedding, attention
OpTable tensor_ops();  // elementwise, matmul, reductions, casts, creation
OpTable shape_ops();   // views, layout, indexing, concatenation
OpTable const_ops();   // constants, containers, scalars, control flow

/// The entry for an op name ("aten::relu"), or nullptr.
const OpEntry* find_op(const std::string& name);
/// Every entry, sorted by name.
std::vector<const OpEntry*> all_ops();

/// Handlers shared across families.
bool lower_unary(Call& c);     ///< entry.onnx(x)
bool lower_binary(Call& c);    ///< entry.onnx(a, b), scalars typed like the tensor
bool lower_identity(Call& c);  ///< the output is input 0 (views ONNX does not need)
/// The generic emission: the op as-is in domain org.pytorch.aten, its tensor
/// inputs in order (memest warns and shapes its output like input 0).
bool lower_aten(Call& c);

}  // namespace memest::ts
