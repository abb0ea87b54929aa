// The registry of TorchScript ops (every family's table, looked up by name), the
// Call through which handlers read arguments and emit ONNX, and the handlers
// shared by several families.
#include "ts_ops.h"

#include "ts_consts.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace memest::ts {
namespace {

OpTable (*const kFamilies[])() = {nn_ops, tensor_ops, shape_ops, const_ops};

struct Registry {
  std::unordered_map<std::string, const OpEntry*> by_name;
  std::vector<const OpEntry*> all;
  Registry() {
    for (auto family : kFamilies) {
      OpTable t = family();
      for (size_t i = 0; i < t.size; ++i) {
        by_name.emplace(t.begin[i].name, t.begin + i);
        all.push_back(t.begin + i);
      }
    }
    std::sort(all.begin(), all.end(), [](const OpEntry* a, const OpEntry* b) { return std::strcmp(a->name, b->name) < 0; });
  }
};

const Registry& registry() {
  static const Registry r;
  return r;
}

bool is_tensor_type(const c10::TypePtr& t) {
  return t->isSubtypeOf(*c10::TensorType::get()) || t->isSubtypeOf(*c10::OptionalType::ofTensor());
}

}  // namespace

const OpEntry* find_op(const std::string& name) {
  auto& m = registry().by_name;
  auto it = m.find(name);
  return it == m.end() ? nullptr : it->second;
}

std::vector<const OpEntry*> all_ops() { return registry().all; }

// ---- Call ------------------------------------------------------------------------

Call::Call(Lowerer& l, torch::jit::Node* n, const OpEntry& e, bool inplace) : l_(l), n_(n), e_(e), inplace_(inplace) {
  int rank = -1;
  at::ScalarType dtype = at::ScalarType::Undefined;
  for (const auto* v : n->inputs()) {
    in_.push_back(l.value(v));
    const Val& x = in_.back();
    if (x.is_tensor() || (x.is_const() && x.value.isTensor())) {
      rank = std::max(rank, x.rank);
      if (dtype == at::ScalarType::Undefined) dtype = x.dtype;
    }
  }
  for (const auto* o : n->outputs()) {
    const auto& t = o->type();
    if (is_tensor_type(t)) {
      out_.push_back(Val::tensor("", rank, dtype == at::ScalarType::Undefined ? at::kFloat : dtype));
    } else if (t->kind() == c10::TypeKind::IntType) {
      out_.push_back(Val::scalar("", at::kLong));
    } else if (t->kind() == c10::TypeKind::FloatType) {
      out_.push_back(Val::scalar("", at::kFloat));
    } else if (t->kind() == c10::TypeKind::BoolType) {
      out_.push_back(Val::scalar("", at::kBool));
    } else {
      out_.push_back(Val());
    }
  }
}

const Val& Call::in(size_t i) const {
  static const Val kNone = Val::constant(c10::IValue());
  return i < in_.size() ? in_[i] : kNone;
}

int Call::arg(const char* name) const {
  const auto* schema = n_->maybeSchema();
  if (!schema) return -1;
  auto i = schema->argumentIndexWithName(name);
  return i ? static_cast<int>(*i) : -1;
}

bool Call::none(size_t i) const { return i >= in_.size() || in_[i].is_none(); }

std::optional<int64_t> Call::int_(size_t i) const {
  const Val& v = in(i);
  if (!v.is_const()) return std::nullopt;
  if (v.value.isInt()) return v.value.toInt();
  if (v.value.isBool()) return v.value.toBool() ? 1 : 0;
  if (v.value.isTensor() && v.value.toTensor().numel() == 1 && !v.value.toTensor().is_floating_point()) {
    return v.value.toTensor().item().toLong();
  }
  if (v.value.isIntList() && v.value.toIntList().size() == 1) return v.value.toIntList().get(0);
  return std::nullopt;
}

std::optional<double> Call::num(size_t i) const {
  const Val& v = in(i);
  if (!v.is_const()) return std::nullopt;
  if (v.value.isDouble()) return v.value.toDouble();
  if (v.value.isInt()) return static_cast<double>(v.value.toInt());
  if (v.value.isBool()) return v.value.toBool() ? 1.0 : 0.0;
  if (v.value.isTensor() && v.value.toTensor().numel() == 1) return v.value.toTensor().item().toDouble();
  return std::nullopt;
}

std::optional<bool> Call::flag(size_t i) const {
  const Val& v = in(i);
  if (!v.is_const()) return std::nullopt;
  if (v.value.isBool()) return v.value.toBool();
  if (v.value.isInt()) return v.value.toInt() != 0;
  return std::nullopt;
}

std::optional<std::vector<int64_t>> Call::ints(size_t i, size_t repeat) const {
  const Val& v = in(i);
  if (!v.is_const()) return std::nullopt;
  if (v.value.isIntList()) {
    auto list = v.value.toIntVector();
    if (list.size() == 1 && repeat > 1) list.assign(repeat, list[0]);
    return list;
  }
  if (v.value.isInt()) return std::vector<int64_t>(repeat, v.value.toInt());
  return std::nullopt;
}

std::optional<std::string> Call::str(size_t i) const {
  const Val& v = in(i);
  if (v.is_const() && v.value.isString()) return v.value.toStringRef();
  return std::nullopt;
}

int Call::rank(size_t i) const { return in(i).rank; }

at::ScalarType Call::dtype(size_t i) const { return in(i).dtype; }

std::string Call::tensor(size_t i, int like) {
  at::ScalarType t = at::ScalarType::Undefined;
  if (like >= 0 && !in(like).is_const()) t = in(like).dtype;
  if (like >= 0 && in(like).is_const() && in(like).value.isTensor()) t = in(like).dtype;
  return l_.materialize(in(i), t, n_);
}

std::string Call::shape_of(const Val& v) {
  if (v.is_const()) {
    if (v.value.isIntList()) return ints_const(v.value.toIntVector());
    if (v.value.isInt()) return ints_const({v.value.toInt()});
    fail("expects a list of ints");
  }
  if (v.kind == Val::Kind::List && v.items.empty() && !v.name.empty()) return v.name;
  if (v.kind == Val::Kind::Tensor) return v.name;  // a shape given as a tensor
  if (v.kind != Val::Kind::List) fail("expects a list of ints");
  // Runs of known dims become one constant; each run-time dim is unsqueezed to 1-D.
  std::vector<std::string> parts;
  std::vector<int64_t> run;
  auto flush = [&] {
    if (!run.empty()) parts.push_back(ints_const(run));
    run.clear();
  };
  for (const Val& item : v.items) {
    if (item.is_const() && item.value.isInt()) {
      run.push_back(item.value.toInt());
      continue;
    }
    flush();
    std::string s = l_.materialize(item, at::kLong, n_);
    if (item.dtype != at::kLong && item.dtype != at::ScalarType::Undefined) {
      s = emit1("Cast", {s}, {attr_i("to", kInt64)});
    }
    parts.push_back(emit1("Unsqueeze", {s, ints_const({0})}));
  }
  flush();
  if (parts.size() == 1) return parts[0];
  return emit1("Concat", parts, {attr_i("axis", 0)});
}

std::string Call::ints_const(const std::vector<int64_t>& v) { return l_.onnx().const_ints(v, false, l_.module()); }

std::string Call::scalar_const(double v, at::ScalarType t) { return l_.onnx().constant(onnx_type(t), {}, {v}, l_.module()); }

std::vector<std::string> Call::emit(const std::string& op, const std::vector<std::string>& inputs, const Attrs& attrs,
                                    int num_outputs, const std::string& domain) {
  return l_.onnx().node(op, inputs, attrs, num_outputs, l_.module(), domain);
}

std::string Call::emit1(const std::string& op, const std::vector<std::string>& inputs, const Attrs& attrs,
                        const std::string& domain) {
  return emit(op, inputs, attrs, 1, domain)[0];
}

Val& Call::set(size_t k, const std::string& name) {
  Val& v = out_.at(k);
  if (v.kind != Val::Kind::Scalar) v.kind = Val::Kind::Tensor;
  v.name = name;
  return v;
}

size_t Call::unpack_count(size_t k) const {
  for (const auto& use : n_->output(k)->uses()) {
    if (use.user->kind() == c10::prim::ListUnpack) return use.user->outputs().size();
  }
  return 0;
}

void Call::fail(const std::string& what) const { l_.fail(n_, what); }

// ---- Shared handlers -------------------------------------------------------------

bool lower_unary(Call& c) {
  if (c.in(0).kind != Val::Kind::Tensor && c.in(0).kind != Val::Kind::Scalar) return false;
  c.set(0, c.emit1(c.entry().onnx, {c.tensor(0)}));
  return true;
}

namespace {

// torch's type promotion (c10 ResultTypeState): tensors with dims decide the
// dtype; a 0-d tensor or a Python number only when its category (bool < int <
// float < complex) is higher. x * 0.5 stays float16; int64 ** -0.5 is float32.
int category(at::ScalarType t) {
  if (t == at::kBool) return 0;
  if (c10::isComplexType(t)) return 3;
  if (c10::isFloatingType(t)) return 2;
  return 1;
}

struct Promotion {
  at::ScalarType dims = at::ScalarType::Undefined, zero = at::ScalarType::Undefined,
                 number = at::ScalarType::Undefined;

  static at::ScalarType merge(at::ScalarType a, at::ScalarType b) {
    if (a == at::ScalarType::Undefined) return b;
    if (b == at::ScalarType::Undefined) return a;
    return c10::promoteTypes(a, b);
  }
  void add(const Val& v) {
    if (v.is_const() && !v.value.isTensor()) {
      // A Python number: float means the default dtype if it wins.
      const auto t = v.value.isDouble() ? at::kFloat : v.value.isBool() ? at::kBool : at::kLong;
      number = merge(number, t);
    } else if (v.kind == Val::Kind::Scalar) {
      number = merge(number, c10::isFloatingType(v.dtype) ? at::kFloat : v.dtype);
    } else if (v.dtype != at::ScalarType::Undefined) {
      (v.rank == 0 ? zero : dims) = merge(v.rank == 0 ? zero : dims, v.dtype);
    }
  }
  at::ScalarType result() const {
    at::ScalarType r = dims;
    for (at::ScalarType t : {zero, number}) {
      if (t != at::ScalarType::Undefined && (r == at::ScalarType::Undefined || category(t) > category(r))) r = t;
    }
    return r;
  }
};

}  // namespace

std::string Call::operand(size_t i, at::ScalarType t) {
  const Val& v = in(i);
  std::string name = l_.materialize(v, t, n_);
  if (!v.is_const() && t != at::ScalarType::Undefined && v.dtype != at::ScalarType::Undefined && v.dtype != t) {
    name = emit1("Cast", {name}, {attr_i("to", onnx_type(t))});
  }
  return name;
}

at::ScalarType Call::promoted(std::initializer_list<size_t> args) const {
  Promotion p;
  for (size_t i : args) p.add(in(i));
  return p.result();
}

// list + list and list * n, on lists holding run-time sizes ([x.size(0)] + [1] * k).
bool list_arith(Call& c) {
  const std::string op = c.entry().onnx;
  std::vector<Val> a = list_items(c.in(0));
  if (op == "Add" && is_list(c.in(1))) {
    for (const Val& v : list_items(c.in(1))) a.push_back(v);
  } else if (op == "Mul" && c.int_(1)) {
    std::vector<Val> one = a;
    a.clear();
    for (int64_t k = 0; k < *c.int_(1); ++k) a.insert(a.end(), one.begin(), one.end());
  } else {
    return false;
  }
  Val out;
  out.kind = Val::Kind::List;
  out.items = std::move(a);
  c.out(0) = out;
  return true;
}

bool lower_binary(Call& c) {
  if (is_list(c.in(0))) return list_arith(c);
  for (size_t i : {0, 1}) {
    const auto k = c.in(i).kind;
    if (k == Val::Kind::Unknown || k == Val::Kind::List || k == Val::Kind::Tuple || k == Val::Kind::Module) {
      // Comparing shape lists (a check that raises): nothing to compute.
      if (c.out(0).kind == Val::Kind::Scalar) {
        c.out(0) = Val();
        return true;
      }
      return false;
    }
  }
  Val& out = c.out(0);
  // Python ints divided give a float (int / int); so do the Scalar outputs typed float.
  at::ScalarType t = c.promoted({0, 1});
  if (out.kind == Val::Kind::Scalar && out.dtype != at::ScalarType::Undefined) {
    if (c10::isFloatingType(out.dtype) && !c10::isFloatingType(t)) t = at::kFloat;
  }
  if (std::string(c.entry().onnx) == "Div" && c.node()->kind() == c10::aten::div && !c10::isFloatingType(t) &&
      c.arg("rounding_mode") < 0) {
    t = at::kFloat;  // true division
  }
  std::string x = c.operand(0, t), y = c.operand(1, t);
  // add/sub(a, b, alpha): a + alpha * b.
  int alpha = c.arg("alpha");
  if (alpha >= 0) {
    auto k = c.num(static_cast<size_t>(alpha));
    if (k && *k != 1.0) y = c.emit1("Mul", {y, c.operand(static_cast<size_t>(alpha), t)});
  }
  if (t != at::ScalarType::Undefined) out.dtype = t;
  c.set(0, c.emit1(c.entry().onnx, {x, y}));
  return true;
}

bool lower_identity(Call& c) {
  c.out(0) = c.in(0);
  return true;
}

bool lower_aten(Call& c) {
  std::vector<std::string> inputs;
  for (size_t i = 0; i < c.size(); ++i) {
    const Val& v = c.in(i);
    if (v.is_tensor() || v.kind == Val::Kind::Scalar) {
      inputs.push_back(v.name);
    } else if (v.kind == Val::Kind::List) {
      for (const Val& item : v.items) {
        if (item.is_tensor()) inputs.push_back(item.name);
      }
    } else if (v.is_const() && v.value.isTensor()) {
      inputs.push_back(c.tensor(i));
    }
  }
  int n_tensors = 0;
  for (size_t k = 0; k < c.num_outputs(); ++k) n_tensors += c.out(k).kind == Val::Kind::Tensor;
  if (n_tensors == 0) {
    // Strings and other non-tensor results: harmless unless something reads them.
    for (size_t k = 0; k < c.num_outputs(); ++k) c.out(k) = Val();
    return true;
  }
  if (inputs.empty()) c.fail("has no ONNX equivalent, and no tensor input memest could shape its result after");
  std::string op = c.node()->kind().toUnqualString();
  auto names = c.emit(op, inputs, {}, n_tensors, "org.pytorch.aten");
  size_t next = 0;
  for (size_t k = 0; k < c.num_outputs(); ++k) {
    if (c.out(k).kind == Val::Kind::Tensor) c.set(k, names[next++]);
  }
  return true;
}

}  // namespace memest::ts
