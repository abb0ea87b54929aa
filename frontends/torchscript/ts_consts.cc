// Constants, containers, scalars and control flow. Shape arithmetic stays in
// TorchScript terms while it is known (module attributes, list lengths, the
// per-sample dims of --input-shape); what depends on the batch becomes ONNX
// Shape/Gather arithmetic that memest folds symbolically, as for exported ONNX.
#include "ts_consts.h"

#include <unordered_set>

#include "ts_ops.h"

namespace memest::ts {
namespace {

using c10::Symbol;

bool is_tensor_type(const c10::TypePtr& t) {
  return t->isSubtypeOf(*c10::TensorType::get()) || t->isSubtypeOf(*c10::OptionalType::ofTensor());
}

bool contains_tensor(const c10::TypePtr& t) {
  if (is_tensor_type(t)) return true;
  for (const auto& c : t->containedTypes()) {
    if (contains_tensor(c)) return true;
  }
  return false;
}

// Ops that make a tensor from scalars and are cheap whatever the arguments: the
// others (zeros, ones, arange of a size) would allocate the real thing.
bool scalar_to_tensor(Symbol k) {
  static const std::unordered_set<Symbol> kOps = {
      c10::prim::NumToTensor, Symbol::fromQualString("aten::scalar_tensor"), Symbol::fromQualString("aten::tensor"),
      Symbol::fromQualString("aten::as_tensor")};
  return kOps.count(k) > 0;
}

}  // namespace

std::optional<std::vector<Val>> fold_constant(torch::jit::Node* n, const std::vector<Val>& in) {
  if (!n->blocks().empty() || n->kind() == c10::prim::Constant || n->kind() == c10::prim::GetAttr) return std::nullopt;
  const std::string name = n->kind().toQualString();
  if (name.back() == '_' && name[name.size() - 2] != '_') return std::nullopt;  // in place
  bool tensor_in = false;
  for (const Val& v : in) {
    if (!v.is_const()) return std::nullopt;
    if (v.value.isTensor()) {
      if (v.value.toTensor().numel() > kMaxConstElems) return std::nullopt;
      tensor_in = true;
    }
    if (v.value.isObject() || v.value.isFuture() || v.value.isCapsule()) return std::nullopt;
  }
  bool tensor_out = false;
  for (const auto* o : n->outputs()) tensor_out |= contains_tensor(o->type());
  if (tensor_out && !tensor_in && !scalar_to_tensor(n->kind())) return std::nullopt;
  // Not n->hasSideEffects(): it calls every conservatively-registered op impure,
  // string formatting included, and only these really act on the world.
  static const std::unordered_set<Symbol> kEffects = {
      c10::prim::Print, c10::prim::RaiseException, c10::aten::warn, c10::prim::SetAttr, c10::prim::CallFunction,
      c10::prim::CallMethod, Symbol::fromQualString("aten::manual_seed"), Symbol::fromQualString("aten::save")};
  if (kEffects.count(n->kind()) || n->isNondeterministic() || !n->maybeOperator()) return std::nullopt;
  torch::jit::Stack stack;
  // Small constants are made here, on the CPU, whatever device the code names.
  for (const Val& v : in) stack.push_back(v.value.isDevice() ? c10::IValue(c10::Device(c10::kCPU)) : v.value);
  // The interpreter passes a vararg op (format, ...) its argument count on top.
  if (const auto* schema = n->maybeSchema(); schema && schema->is_vararg()) {
    stack.push_back(static_cast<int64_t>(in.size()));
  }
  try {
    n->getOperation()(stack);
  } catch (const c10::Error&) {
    return std::nullopt;  // left to the table, which reports it with context
  }
  if (stack.size() != n->outputs().size()) return std::nullopt;
  std::vector<Val> out;
  for (auto& v : stack) out.push_back(Val::constant(std::move(v)));
  return out;
}

std::vector<Val> list_items(const Val& v) {
  if (v.kind == Val::Kind::List || v.kind == Val::Kind::Tuple) return v.items;
  std::vector<Val> out;
  if (v.is_const() && v.value.isList()) {
    for (const auto& x : v.value.toListRef()) out.push_back(Val::constant(x));
  } else if (v.is_const() && v.value.isTuple()) {
    for (const auto& x : v.value.toTupleRef().elements()) out.push_back(Val::constant(x));
  }
  return out;
}

bool is_list(const Val& v) {
  return v.kind == Val::Kind::List || v.kind == Val::Kind::Tuple ||
         (v.is_const() && (v.value.isList() || v.value.isTuple()));
}

namespace {

// ---- Values and attributes -------------------------------------------------------

bool lower_constant(Call& c) {
  if (auto v = torch::jit::toIValue(c.node()->output())) c.out(0) = Val::constant(*v);
  else c.out(0) = Val();  // a Function constant: only calls use it, and they are inlined
  return true;
}

bool lower_get_attr(Call& c) {
  c.out(0) = c.lowerer().attribute(c.in(0), c.node()->s(c10::attr::name), c.node());
  return true;
}

bool lower_nothing(Call& c) {
  for (size_t k = 0; k < c.num_outputs(); ++k) c.out(k) = Val();
  return true;
}

bool lower_raise(Call& c) {
  std::string msg;
  if (c.size() > 0 && c.in(0).is_const() && c.in(0).value.isString()) msg = ": " + c.in(0).value.toStringRef();
  c.fail("forward() raises an exception for these input shapes" + msg);
}

// ---- Control flow ----------------------------------------------------------------

bool lower_if(Call& c) {
  c.lowerer().lower_if(c.node());
  for (size_t k = 0; k < c.num_outputs(); ++k) c.out(k) = c.lowerer().value(c.node()->output(k));
  return true;
}

bool lower_loop(Call& c) {
  c.lowerer().lower_loop(c.node());
  for (size_t k = 0; k < c.num_outputs(); ++k) c.out(k) = c.lowerer().value(c.node()->output(k));
  return true;
}

// ---- Calls -----------------------------------------------------------------------

std::vector<Val> args_from(Call& c, size_t first) {
  std::vector<Val> args;
  for (size_t i = first; i < c.size(); ++i) args.push_back(c.in(i));
  return args;
}

void set_results(Call& c, const std::vector<Val>& results) {
  if (results.size() != c.num_outputs()) c.fail("the callee returns a different number of values");
  for (size_t k = 0; k < results.size(); ++k) c.out(k) = results[k];
}

// module.method(args): the method's graph, in the module's path.
bool lower_call_method(Call& c) {
  const Val& self = c.in(0);
  const std::string name = c.node()->s(c10::attr::name);
  if (self.kind != Val::Kind::Module || !self.object) c.fail("calls " + name + "() on something that is not a module");
  auto* fn = self.object->type()->findMethod(name);
  if (!fn) c.fail("module '" + self.path + "' has no method " + name + "()");
  set_results(c, c.lowerer().call(*fn, args_from(c, 0), &self.path, c.node()));
  return true;
}

// f(args): a TorchScript function (torch.nn.functional's, the user's), in the caller's module.
bool lower_call_function(Call& c) {
  auto type = c.node()->input(0)->type()->cast<c10::FunctionType>();
  if (!type) c.fail("calls something that is not a TorchScript function");
  set_results(c, c.lowerer().call(*type->function(), args_from(c, 1), nullptr, c.node()));
  return true;
}

// ---- Containers ------------------------------------------------------------------

Val container(Call& c, Val::Kind kind) {
  Val v;
  v.kind = kind;
  for (size_t i = 0; i < c.size(); ++i) v.items.push_back(c.in(i));
  return v;
}

bool all_const(Call& c) {
  for (size_t i = 0; i < c.size(); ++i) {
    if (!c.in(i).is_const()) return false;
  }
  return true;
}

// A dict returned by forward(): its values, in order (the keys matter to no op here).
bool lower_dict(Call& c) {
  Val v;
  v.kind = Val::Kind::Tuple;
  for (size_t i = 1; i < c.size(); i += 2) v.items.push_back(c.in(i));
  c.out(0) = v;
  return true;
}

// Lists and tuples of constants are constants (the interpreter builds them
// without an operator, so fold_constant leaves them here).
bool lower_list(Call& c) {
  if (all_const(c)) {
    c10::impl::GenericList list(c.node()->output()->type()->expectRef<c10::ListType>().getElementType());
    for (size_t i = 0; i < c.size(); ++i) list.push_back(c.in(i).value);
    c.out(0) = Val::constant(c10::IValue(std::move(list)));
    return true;
  }
  c.out(0) = container(c, Val::Kind::List);
  return true;
}

bool lower_tuple(Call& c) {
  if (all_const(c)) {
    std::vector<c10::IValue> items;
    for (size_t i = 0; i < c.size(); ++i) items.push_back(c.in(i).value);
    c.out(0) = Val::constant(c10::ivalue::Tuple::create(std::move(items)));
    return true;
  }
  c.out(0) = container(c, Val::Kind::Tuple);
  return true;
}

bool lower_unpack(Call& c) {
  const Val& v = c.in(0);
  auto items = list_items(v);
  if (v.kind != Val::Kind::List && v.kind != Val::Kind::Tuple && !v.is_const()) {
    c.fail("unpacks a value the helper could not follow");
  }
  if (items.size() != c.num_outputs()) {
    c.fail("unpacks " + std::to_string(items.size()) + " items into " + std::to_string(c.num_outputs()) + " values");
  }
  for (size_t k = 0; k < c.num_outputs(); ++k) c.out(k) = items[k];
  return true;
}

bool lower_getitem(Call& c) {
  auto items = list_items(c.in(0));
  auto i = c.int_(1);
  if (!i || items.empty()) return false;
  int64_t k = *i < 0 ? *i + static_cast<int64_t>(items.size()) : *i;
  if (k < 0 || k >= static_cast<int64_t>(items.size())) c.fail("index " + std::to_string(*i) + " is out of range");
  c.out(0) = items[static_cast<size_t>(k)];
  return true;
}

bool lower_len(Call& c) {
  const Val& v = c.in(0);
  if (v.kind == Val::Kind::List || v.kind == Val::Kind::Tuple) {
    c.out(0) = Val::constant(static_cast<int64_t>(v.items.size()));
    return true;
  }
  if (v.is_tensor() && v.rank >= 0) {
    // len(tensor) is its first dim.
    auto shape = c.emit1("Shape", {v.name}, {attr_i("start", 0), attr_i("end", 1)});
    c.set(0, c.emit1("Squeeze", {shape, c.ints_const({0})}));
    return true;
  }
  return false;
}

// list.append(x) mutates the list that later nodes read.
bool lower_append(Call& c) {
  Val list = c.in(0);
  if (list.is_const()) {
    Val v;
    v.kind = Val::Kind::List;
    v.items = list_items(list);
    list = v;
  }
  if (list.kind != Val::Kind::List) return false;
  list.items.push_back(c.in(1));
  c.lowerer().bind(c.node()->input(0), list);
  c.out(0) = list;
  return true;
}

// ---- Sizes -----------------------------------------------------------------------

bool lower_dim(Call& c) {
  if (c.rank(0) < 0) {
    c.out(0) = Val();  // a shape check on it will be assumed to pass
    return true;
  }
  c.out(0) = Val::constant(static_cast<int64_t>(c.rank(0)));
  return true;
}

// Dim d of x: the number when --input-shape or a weight says it, else Shape+Gather.
Val size_of(Call& c, const Val& x, int64_t d) {
  if (x.rank >= 0 && (d < 0 ? d + x.rank : d) >= 0) d = d < 0 ? d + x.rank : d;
  if (d >= 0 && static_cast<size_t>(d) < x.dims.size() && x.dims[d] >= 0) return Val::constant(x.dims[d]);
  auto shape = c.emit1("Shape", {x.name});
  auto g = c.emit1("Gather", {shape, c.lowerer().onnx().const_ints({d}, true, c.lowerer().module())},
                   {attr_i("axis", 0)});
  return Val::scalar(g, at::kLong);
}

bool lower_size(Call& c) {
  const Val& x = c.in(0);
  if (!x.is_tensor()) return false;
  if (c.size() > 1) {
    auto d = c.int_(1);
    if (!d) return false;
    c.out(0) = size_of(c, x, *d);
    return true;
  }
  if (x.rank < 0) {
    // Rank unknown: the list is one ONNX tensor, usable as a Reshape target.
    Val list;
    list.kind = Val::Kind::List;
    list.name = c.emit1("Shape", {x.name});
    c.out(0) = list;
    return true;
  }
  Val list;
  list.kind = Val::Kind::List;
  std::vector<int64_t> known;
  for (int d = 0; d < x.rank; ++d) {
    list.items.push_back(size_of(c, x, d));
    if (list.items.back().is_const()) known.push_back(list.items.back().value.toInt());
  }
  c.out(0) = known.size() == list.items.size() ? Val::constant(c10::IValue(known)) : list;
  return true;
}

bool lower_numel(Call& c) {
  if (!c.in(0).is_tensor()) return false;
  c.set(0, c.emit1("Size", {c.in(0).name}));
  return true;
}

// ---- Scalars ---------------------------------------------------------------------

// int(t), float(t), NumToTensor(s): the same 0-d value, cast when the kind changes.
bool lower_scalar_cast(Call& c) {
  const Val& x = c.in(0);
  Val& out = c.out(0);
  if (x.is_const()) {
    if (x.value.isTensor()) {
      const auto s = x.value.toTensor().item();
      out = Val::constant(out.dtype == at::kLong ? c10::IValue(s.toLong())
                                                 : out.dtype == at::kBool ? c10::IValue(s.toBool())
                                                                          : c10::IValue(s.toDouble()));
    } else if (out.kind == Val::Kind::Tensor) {
      out = Val::constant(x.value.isInt() ? at::scalar_tensor(x.value.toInt(), at::kLong)
                                          : at::scalar_tensor(x.value.toDouble(), at::kDouble));
    } else {
      out = x;
    }
    return true;
  }
  if (x.kind != Val::Kind::Tensor && x.kind != Val::Kind::Scalar) return false;
  const at::ScalarType want = out.kind == Val::Kind::Tensor ? x.dtype : out.dtype;
  std::string name = x.name;
  if (want != at::ScalarType::Undefined && x.dtype != at::ScalarType::Undefined && want != x.dtype) {
    name = c.emit1("Cast", {name}, {attr_i("to", onnx_type(want))});
  }
  out.name = name;
  out.rank = 0;
  if (want != at::ScalarType::Undefined) out.dtype = want;
  return true;
}

bool lower_is(Call& c) {
  const bool isnot = c.node()->kind() == Symbol::fromQualString("aten::__isnot__");
  // `query is key`: two tensors are the same object when they are the same ONNX value.
  if (c.in(0).is_tensor() && c.in(1).is_tensor()) {
    c.out(0) = Val::constant((c.in(0).name == c.in(1).name) != isnot);
    return true;
  }
  // `x is None` where x is a tensor, module or list: known without running anything.
  const bool a_none = c.in(0).is_none(), b_none = c.in(1).is_none();
  const bool a_some = !c.in(0).is_const() && c.in(0).kind != Val::Kind::Unknown;
  const bool b_some = !c.in(1).is_const() && c.in(1).kind != Val::Kind::Unknown;
  if (!((a_none && b_some) || (b_none && a_some))) return false;
  c.out(0) = Val::constant(isnot);
  return true;
}

bool lower_dtype(Call& c) {
  if (c.dtype(0) == at::ScalarType::Undefined) return false;
  c.out(0) = Val::constant(static_cast<int64_t>(c.dtype(0)));
  return true;
}

// The protocol trains on the GPU: code that asks where a tensor lives gets cuda.
bool lower_device(Call& c) {
  c.out(0) = Val::constant(c10::Device(c10::kCUDA, 0));
  return true;
}

bool lower_true(Call& c) {
  c.out(0) = Val::constant(true);
  return true;
}

bool lower_false(Call& c) {
  c.out(0) = Val::constant(false);
  return true;
}

bool lower_is_floating(Call& c) {
  if (c.dtype(0) == at::ScalarType::Undefined) return false;
  c.out(0) = Val::constant(c10::isFloatingType(c.dtype(0)));
  return true;
}

bool lower_not(Call& c) {
  if (c.in(0).kind != Val::Kind::Scalar) return false;
  c.set(0, c.emit1("Not", {c.in(0).name}));
  return true;
}

const OpEntry kOps[] = {
    {"prim::Constant", lower_constant, "", "a literal: numbers, lists, small tensors with contents"},
    {"prim::GetAttr", lower_get_attr, "", "submodules, weights (by identity: tied weights are one), flags"},
    {"prim::SetAttr", lower_nothing, "", "ignored: module state is not memory of the step"},
    {"prim::If", lower_if, "", "folded: the known branch, or the one that does not raise"},
    {"prim::Loop", lower_loop, "", "unrolled when its trip count is known"},
    {"prim::CallMethod", lower_call_method, "", "inlined; its nodes are named by the module's path"},
    {"prim::CallFunction", lower_call_function, "", "inlined in the caller's module"},
    {"prim::RaiseException", lower_raise, "", "an error: reached only when forward() always raises"},
    {"prim::Uninitialized", lower_nothing, "", "the value of a branch that raises"},
    {"prim::Print", lower_nothing, "", "ignored"},
    {"aten::warn", lower_nothing, "", "ignored"},
    {"prim::ListConstruct", lower_list, "", "a list; int lists feed Reshape/Expand targets"},
    {"prim::TupleConstruct", lower_tuple, "", "a tuple; outputs are flattened"},
    {"prim::DictConstruct", lower_dict, "", "its values, as a tuple: outputs are flattened"},
    {"prim::ListUnpack", lower_unpack, "", "the items of a list (split/chunk results included)"},
    {"prim::TupleUnpack", lower_unpack, "", "the items of a tuple"},
    {"prim::TupleIndex", lower_getitem, "", "an item of a tuple"},
    {"aten::__getitem__", lower_getitem, "", "an item of a list"},
    {"aten::len", lower_len, "", "a list's length, or a tensor's first dim"},
    {"aten::append", lower_append, "", "list.append: the list grows for later readers"},
    {"aten::dim", lower_dim, "", "the rank, tracked through the graph"},
    {"aten::size", lower_size, "", "known dims fold; the batch becomes Shape+Gather"},
    {"aten::numel", lower_numel, "Size", "Size"},
    {"prim::NumToTensor", lower_scalar_cast, "", "the same 0-d value"},
    {"aten::Int", lower_scalar_cast, "", "the same 0-d value, cast to int64"},
    {"aten::Float", lower_scalar_cast, "", "the same 0-d value, cast to float"},
    {"aten::Bool", lower_scalar_cast, "", "the same 0-d value, cast to bool"},
    {"aten::ScalarImplicit", lower_scalar_cast, "", "the same 0-d value"},
    {"aten::IntImplicit", lower_scalar_cast, "", "the same 0-d value"},
    {"aten::FloatImplicit", lower_scalar_cast, "", "the same 0-d value"},
    {"prim::unchecked_cast", lower_identity, "", "the same value"},
    {"aten::list", lower_identity, "", "the same list"},
    {"aten::__is__", lower_is, "", "`x is None`, known for tensors and modules"},
    {"aten::__isnot__", lower_is, "", "`x is not None`, likewise"},
    {"aten::__not__", lower_not, "Not", "Not"},
    {"prim::dtype", lower_dtype, "", "the dtype, tracked through the graph"},
    {"prim::device", lower_device, "", "cuda:0, where the protocol trains"},
    {"prim::is_cuda", lower_true, "", "true, where the protocol trains"},
    {"prim::is_nested", lower_false, "", "false: no nested tensors"},
    {"aten::is_floating_point", lower_is_floating, "", "from the tracked dtype"},
};

}  // namespace

OpTable const_ops() { return {kOps, sizeof(kOps) / sizeof(kOps[0])}; }

}  // namespace memest::ts
