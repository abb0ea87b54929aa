// The IR every frontend lowers to: tensors with dtype and symbolic shape, and
// nodes with op, attributes and the module path they came from.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "estimator/atom.h"
#include "estimator/boxed.h"
#include "estimator/expr.h"
#include "estimator/id_list.h"
#include "estimator/name.h"
#include "estimator/shape_ref.h"

namespace memest {

struct OpInfo;

/// Element types, as far as memory is concerned.
enum class DType : uint8_t {
  Undefined, F32, F16, BF16, F64, F8, I64, I32, I16, I8, U8, Bool, C64, C128, String
};

/// Bytes per element (0 for Undefined/String).
int64_t dtype_size(DType t);
/// "float32", "int64", ...
const char* dtype_name(DType t);
/// Maps ONNX TensorProto.DataType to DType (Undefined for unknown codes).
DType dtype_from_onnx(int onnx_type);
/// Parses "float32", "fp16", "int64", ...; nullopt when unknown.
std::optional<DType> dtype_from_name(const std::string& name);
bool is_floating(DType t);

/// Where a tensor's memory comes from in a training step.
enum class TensorKind : uint8_t {
  Activation,  ///< produced by a node
  Input,       ///< a graph input (x, or tokens)
  Parameter,   ///< trainable weight: gets a gradient and optimizer state
  Buffer,      ///< non-trainable state on the GPU (BatchNorm running stats)
  Constant,    ///< a literal folded into the graph (shape constants, scalars)
};
const char* kind_name(TensorKind k);

struct Tensor {
  Name name;
  DType dtype = DType::Undefined;
  TensorKind kind = TensorKind::Activation;
  bool graph_output = false;
  int producer = -1;              ///< index of the producing node, -1 for none
  int dtype_follows = -1;         ///< an input made in another tensor's run-time dtype (mse's target)
  ShapeRef shape;                 ///< none: not known (yet)
  BoxedOptional<Shape> declared;  ///< shape the file declares (value_info); a fallback only
  IdList consumers;               ///< node indices, one entry per use
  BoxedOptional<std::vector<Expr>> value;  ///< known integer contents (shape arithmetic)
  BoxedOptional<std::vector<double>> fvalue;  ///< known float contents of small constants (Resize scales)
  Atom module;                    ///< module path of a parameter ("layer1.0.conv1")

  bool shape_known() const { return shape.has_value(); }
  /// numel * element size, symbolic; requires a known shape.
  Expr bytes() const;
};

/// An attribute's rarely used parts: float and string lists, and a tensor value
/// (Constant's: dtype, dims, and the contents when small).
struct AttributeExtra {
  std::vector<double> floats;
  std::vector<std::string> strings;
  DType t_dtype = DType::Undefined;
  std::vector<int64_t> t_dims;
  std::optional<std::vector<int64_t>> t_ints;
  std::optional<std::vector<double>> t_floats;
};

/// A node attribute (ONNX attribute kinds, minus graphs which are noted only). Ints,
/// floats and strings cover nearly all of a graph's attributes; the rest lives out of
/// line (a million-node graph holds hundreds of thousands of attributes).
struct Attribute {
  enum Kind : uint8_t { Int, Float, String, Ints, Floats, Strings, Tensor, Graph } kind = Int;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<int64_t> ints;

  Attribute() = default;
  Attribute(const Attribute& o) : kind(o.kind), i(o.i), f(o.f), s(o.s), ints(o.ints) {
    if (o.extra_) extra_ = std::make_unique<AttributeExtra>(*o.extra_);
  }
  Attribute(Attribute&&) noexcept = default;
  Attribute& operator=(const Attribute& o) {
    if (this != &o) *this = Attribute(o);
    return *this;
  }
  Attribute& operator=(Attribute&&) noexcept = default;

  /// The floats, strings and tensor parts (all empty when never set).
  const AttributeExtra& extra() const { return extra_ ? *extra_ : kNoExtra; }
  /// The same, for writing (made on first use).
  AttributeExtra& extra() {
    if (!extra_) extra_ = std::make_unique<AttributeExtra>();
    return *extra_;
  }

 private:
  static const AttributeExtra kNoExtra;
  std::unique_ptr<AttributeExtra> extra_;
};

/// A node's attributes. Nodes have a handful at most, so a flat list searched in
/// order beats a tree: one allocation per node, none per key that fits a short string.
class Attrs {
 public:
  const Attribute* find(std::string_view key) const;
  size_t count(std::string_view key) const { return find(key) ? 1 : 0; }
  /// Adds `a` under `key` unless `key` is present (the first one wins, as with std::map).
  void emplace(std::string key, Attribute a);
  /// The attribute under `key`, added (empty) when absent.
  Attribute& operator[](std::string_view key);
  void reserve(size_t n) { items_.reserve(n); }
  size_t size() const { return items_.size(); }
  /// The (key, attribute) pairs in the order they were added.
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  std::vector<std::pair<std::string, Attribute>> items_;
};

/// Where a node was traced in the model's Python code (dynamo exports carry a stack
/// trace per node; frames.h reads it for the lifetimes of local variables).
struct PyStatement {
  std::string where;         ///< "file:line"
  std::vector<int> targets;  ///< the local names it assigns (PySource::names ids)
  bool binds = false;        ///< assigns to local names only (not self.x, x[i] or nothing)
  char augmented = 0;        ///< '+' for "x += y" (an in-place op on x), ... ; 0 for "x = y"
  /// A line inside a statement written over several lines (frontends/pystack.h): the
  /// statement, and what it assigns, are not known.
  bool continuation = false;
  int line = 0;              ///< the line number in `where`
  std::string code;          ///< the statement's source line, trimmed
};
struct PyFrame {
  int statement;  ///< PySource::statements id: the statement this frame is running
  int instance;   ///< which module's forward (or function called from it) runs the frame
};
/// How many outer frames two stacks share: the same statement of the same instance.
inline size_t shared_frames(const std::vector<PyFrame>& a, const std::vector<PyFrame>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n].statement == b[n].statement && a[n].instance == b[n].instance) ++n;
  return n;
}
struct PySource {
  std::vector<PyStatement> statements;
  std::vector<std::vector<PyFrame>> stacks;  ///< outermost frame first
  std::vector<std::string> names;
  bool empty() const { return stacks.empty(); }
  /// The id of a name the statements assign, or -1 when none assigns it.
  int name_id(std::string_view name) const {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name) return static_cast<int>(i);
    }
    return -1;
  }
  /// The statement `up` frames out from the innermost of stack `stack` (0: the innermost),
  /// or nullptr when there is no such frame (no trace: `stack` < 0).
  const PyStatement* statement_of(int stack, size_t up = 0) const {
    if (stack < 0 || static_cast<size_t>(stack) >= stacks.size()) return nullptr;
    const std::vector<PyFrame>& frames = stacks[static_cast<size_t>(stack)];
    if (up >= frames.size()) return nullptr;
    return &statements[static_cast<size_t>(frames[frames.size() - 1 - up].statement)];
  }
};

struct Node {
  Name name;
  Atom op;                        ///< op type, e.g. "Conv"
  Atom domain;                    ///< "" for ONNX's default domain
  IdList inputs;                  ///< tensor ids; -1 for an omitted optional input
  IdList outputs;                 ///< tensor ids; -1 for an omitted optional output
  Attrs attrs;
  Atom module;                    ///< module path, e.g. "layer1.0.conv1" ("" at top level)
  const OpInfo* info = nullptr;   ///< filled by the registry lookup
  bool dead = false;              ///< removed by a pass (kept to keep indices stable)
  bool autocast_off = false;      ///< inside a module that disables autocast (ops/modules.cc)
  bool keeps_locals = false;      ///< its module's forward keeps submodule results in locals (frames.h)
  /// its module's forward computes statistics of `x.float()` and casts them and its
  /// parameters to x's dtype (ops/modules.cc; norm_casts.h restore_module_casts)
  bool casts_to_input = false;
  /// autocast_off only because the node is in a higher-order op's body (pystack.h
  /// hop_call), which torch.export also writes for a no_grad region: the simulator keeps
  /// autocast on where no gradient reaches the body (Builder::policy_of).
  bool body_autocast_off = false;
  /// Bit i (of the first 16): input i was cast to float32 by the Python code (x.float() inside a disabled
  /// autocast block), a no-op in an fp32 export and so not in the graph (pystack.h hop_call).
  uint16_t float_inputs = 0;
  int py_stack = -1;              ///< Graph::python.stacks id; -1 when the file has no trace
  /// Graph::calls id: the one aten op call (dynamo's FX node) this ONNX node is part of,
  /// when the exporter wrote that call as several nodes; -1 otherwise.
  int call = -1;

  const Attribute* attr(std::string_view key) const { return attrs.find(key); }
  int64_t attr_int(std::string_view key, int64_t dflt) const;
  double attr_float(std::string_view key, double dflt) const;
  std::string attr_string(std::string_view key, const std::string& dflt) const;
  std::vector<int64_t> attr_ints(std::string_view key, std::vector<int64_t> dflt = {}) const;
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] >= 0; }
};
// Two cache lines: the one-byte flags sit together rather than padded apart (136 bytes).
static_assert(sizeof(Node) <= 128, "a million-node graph holds a million of them");

struct Graph {
  std::string file;               ///< the file it was read from, for messages
  int64_t opset = 0;              ///< default-domain opset
  std::string producer;           ///< "pytorch 2.11.0" when the file says so
  std::vector<Tensor> tensors;
  std::vector<Node> nodes;        ///< in topological order once verified
  std::vector<int> inputs;        ///< data inputs (initializers excluded)
  std::vector<int> outputs;
  std::vector<std::string> warnings;  ///< things assumed; shown on stderr and in JSON
  PySource python;                ///< the Python stacks nodes were traced in (Node::py_stack)
  /// Containers called as a whole whose submodules the paths reach by number: "blocks"
  /// for timm's `x = self.blocks(x)` (an nn.Sequential), "layer1" for torchvision's
  /// ResNet; not a ModuleList iterated in Python (`for blk in self.blocks`). From the
  /// dynamo exporter's namespaces or the legacy exporter's node scopes, which name each
  /// module whose forward ran; frames.h holds such a call's argument until it returns.
  std::vector<std::string> called_containers;
  /// The aten op of each call nodes name in Node::call ("aten.gelu.default").
  std::vector<std::string> calls;
  /// The exporter lists which initializers are parameters (a dynamo export's graph
  /// signature), so a listed weight no gradient reaches is still torch's parameter.
  bool lists_parameters = false;
  /// Such parameters (DeepSeek-V3.2's @torch.no_grad() indexer projections): buffers in
  /// memory (no gradient, no optimizer state), parameters in torch's count.
  std::vector<int> gradless_parameters;
  /// Parameters the exporter computed from a parameter by indexing it (`index_5`: LeViT's
  /// attention biases gathered by a buffer of indices, Swin's and MViTv2's relative
  /// position tables): parameters in memory (torch sends gradients through the
  /// computation), but larger than torch's own, whose size the file does not hold.
  std::vector<int> derived_parameters;
  /// Parameters the exporter lists that no op reads and the file holds in no form (a
  /// vision tower beside a forward on token ids: frontends/unread_parameters.h): torch
  /// keeps them on the GPU, their sizes are unknown, so they are not in any count.
  size_t unread_parameters = 0;

  /// Id of the tensor with this name, creating it if absent.
  int tensor_id(std::string_view name);
  /// Same, taking `name`'s storage when the tensor is new (left as is otherwise).
  int adopt_tensor(std::string&& name);
  /// Id of the tensor with this name, or -1.
  int find_tensor(std::string_view name) const;
  /// The hash the name index files `name` under: a frontend that looks up many
  /// names hashes each once and hints the lookups ahead (prefetch_*).
  static uint32_t name_hash(std::string_view name);
  /// tensor_id() for a name whose name_hash() is known.
  int tensor_id(std::string_view name, uint32_t hash);
  /// Hints that a name with this hash is about to be looked up: starts loading its
  /// index slot. Changes nothing.
  void prefetch_slot(uint32_t hash) const;
  /// The next hint, once the slot has had time to load: starts loading the tensor
  /// the slot names, if any. Changes nothing.
  void prefetch_tensor(uint32_t hash) const;
  /// Appends a fresh tensor with a unique name derived from `hint`.
  int new_tensor(const std::string& hint);
  /// Rebuilds producer/consumer links from the nodes (dead nodes ignored).
  void relink();
  /// Makes room for this many tensors and nodes (frontends know the counts up front).
  void reserve(size_t tensor_count, size_t node_count);
  /// Frees the name index once the passes that look names up have run (a million-node
  /// graph's is 34 MB, which the allocator replay then reuses); the next lookup rebuilds it.
  void drop_index();
  void warn(const std::string& what);

 private:
  // Name -> id as open addressing over ids, compared against tensors[id].name: the
  // name is stored once, a slot is 8 bytes, and a lookup allocates nothing.
  struct Slot {
    uint32_t hash = 0;
    int32_t id = -1;  ///< -1: empty
  };
  /// The slot holding `name`, or the empty slot where it would go.
  size_t slot_of(std::string_view name, uint32_t hash) const;
  /// Appends a tensor named `name` whose slot is `slot`.
  int add_tensor(std::string&& name, size_t slot, uint32_t hash);
  void grow_index(size_t tensor_count) const;
  /// Files a slot at its hash's first empty place (the index has room).
  void place(Slot slot) const;
  /// Builds the index again after drop_index(), when there are tensors to find.
  void ensure_index() const;
  mutable std::vector<Slot> index_;
  mutable bool index_dropped_ = false;
};

/// Module path from a legacy-exporter node name: "/layer1/layer1.0/conv1/Conv" -> "layer1.0.conv1".
std::string module_from_scoped_name(std::string_view node_name, std::set<std::string>* containers = nullptr);
/// Whether `child` is `parent`'s submodule by number: ("blocks.0", "blocks") yes,
/// ("blocks.0.attn", "blocks") no, ("blocks.attn", "blocks") no.
bool is_numbered_child(std::string_view child, std::string_view parent);
/// Module path from a parameter name: "layer1.0.conv1.weight" -> "layer1.0.conv1".
std::string module_from_param_name(const std::string& param);
/// Whether `child` is a direct submodule of `parent`: ("x.bn.act", "x.bn") yes, ("x.act", "x") yes,
/// ("x.bn.act", "x") no; every module is a child of the top level "" only when it has no dot.
bool is_child_module(std::string_view child, std::string_view parent);

/// Tensor t's integer contents where they are known: its folded value, else the attribute
/// of the live Constant node that makes it; nullopt otherwise (or for t < 0).
std::optional<std::vector<int64_t>> constant_ints(const Graph& g, int t);

}  // namespace memest
