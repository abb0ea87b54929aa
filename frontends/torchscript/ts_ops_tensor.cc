// Tensor arithmetic: elementwise ops (on tensors and on run-time scalars alike),
// matrix products, reductions, casts and tensor creation.
#include "ts_ops.h"

namespace memest::ts {
namespace {

std::optional<int64_t> named_int(Call& c, const char* name) {
  int i = c.arg(name);
  return i < 0 ? std::nullopt : c.int_(static_cast<size_t>(i));
}

// ---- Elementwise -----------------------------------------------------------------

bool lower_compare(Call& c) {
  if (!lower_binary(c)) return false;
  c.out(0).dtype = at::kBool;
  return true;
}

bool lower_ne(Call& c) {
  if (!lower_compare(c)) return false;
  c.set(0, c.emit1("Not", {c.out(0).name}));
  return true;
}

// div(a, b, rounding_mode): "floor" and "trunc" round a float quotient (both as
// Floor: they differ only in sign handling, never in memory).
bool lower_div(Call& c) {
  if (!lower_binary(c)) return false;
  int mi = c.arg("rounding_mode");
  auto mode = mi >= 0 ? c.str(static_cast<size_t>(mi)) : std::nullopt;
  if (mode && c10::isFloatingType(c.out(0).dtype)) {
    c.set(0, c.emit1("Floor", {c.out(0).name}));
  }
  return true;
}

bool lower_floor_divide(Call& c) {
  if (!lower_binary(c)) return false;
  if (c10::isFloatingType(c.out(0).dtype) && c.out(0).kind == Val::Kind::Tensor) {
    c.set(0, c.emit1("Floor", {c.out(0).name}));
  }
  return true;
}

// rsub(x, y, alpha) = y - alpha * x.
bool lower_rsub(Call& c) {
  std::string x = c.tensor(0, 1), y = c.tensor(1, 0);
  auto alpha = c.num(2);
  if (alpha && *alpha != 1.0) x = c.emit1("Mul", {x, c.tensor(2, 0)});
  c.set(0, c.emit1("Sub", {y, x}));
  return true;
}

bool lower_rsqrt(Call& c) {
  c.set(0, c.emit1("Reciprocal", {c.emit1("Sqrt", {c.tensor(0)})}));
  return true;
}

bool lower_square(Call& c) {
  std::string x = c.tensor(0);
  c.set(0, c.emit1("Mul", {x, x}));
  return true;
}

// clamp(x, min, max) with numbers or tensors; absent bounds stay absent.
bool lower_clamp(Call& c) {
  const std::string name = c.node()->kind().toUnqualString();
  std::string lo, hi;
  if (name == "clamp_max") {
    hi = c.tensor(1, 0);
  } else {
    if (!c.none(1)) lo = c.tensor(1, 0);
    if (name != "clamp_min" && !c.none(2)) hi = c.tensor(2, 0);
  }
  std::vector<std::string> ins = {c.tensor(0), lo, hi};
  while (ins.back().empty()) ins.pop_back();
  c.set(0, c.emit1("Clip", ins));
  return true;
}

bool lower_where(Call& c) {
  if (c.size() < 3) return false;  // where(cond) is nonzero
  Val& out = c.set(0, c.emit1("Where", {c.tensor(0), c.tensor(1, 2), c.tensor(2, 1)}));
  out.dtype = c.in(1).is_tensor() ? c.dtype(1) : c.dtype(2);
  return true;
}

// masked_fill(x, mask, value) = Where(mask, value, x).
bool lower_masked_fill(Call& c) {
  c.set(0, c.emit1("Where", {c.tensor(1), c.tensor(2, 0), c.tensor(0)}));
  c.out(0).dtype = c.dtype(0);
  return true;
}

// max/min: of two tensors (elementwise), along a dim (values and indices), or of all.
bool lower_max_min(Call& c) {
  const bool max = std::string(c.node()->kind().toUnqualString()) == "max";
  if (c.arg("other") >= 0) {
    c.set(0, c.emit1(max ? "Max" : "Min", {c.tensor(0, 1), c.tensor(1, 0)}));
    return true;
  }
  if (c.in(0).kind != Val::Kind::Tensor) return false;
  const char* reduce = max ? "ReduceMax" : "ReduceMin";
  if (c.arg("dim") < 0) {
    c.set(0, c.emit1(reduce, {c.tensor(0)}, {attr_i("keepdims", 0)})).rank = 0;
    return true;
  }
  auto dim = c.int_(1);
  if (!dim) return false;
  const bool keep = c.flag(2).value_or(false);
  Attrs attrs = {attr_ints("axes", {*dim}), attr_i("keepdims", keep)};
  const int rank = c.rank(0) < 0 ? -1 : keep ? c.rank(0) : c.rank(0) - 1;
  c.set(0, c.emit1(reduce, {c.tensor(0)}, attrs)).rank = rank;
  if (c.num_outputs() > 1) {
    Val& idx = c.set(1, c.emit1(max ? "ArgMax" : "ArgMin", {c.tensor(0)}, {attr_i("axis", *dim), attr_i("keepdims", keep)}));
    idx.rank = rank;
    idx.dtype = at::kLong;
  }
  return true;
}

// ---- Matrix products -------------------------------------------------------------

bool lower_matmul(Call& c) {
  Val& out = c.set(0, c.emit1("MatMul", {c.tensor(0), c.tensor(1)}));
  const int a = c.rank(0), b = c.rank(1);
  out.rank = a < 0 || b < 0 ? -1 : std::max(a, b) - (a == 1 || b == 1 ? 1 : 0);
  return true;
}

// addmm(bias, a, b, beta, alpha) = Gemm(a, b, bias).
bool lower_addmm(Call& c) {
  Val& out = c.set(0, c.emit1("Gemm", {c.tensor(1), c.tensor(2), c.tensor(0)},
                              {attr_f("beta", c.num(3).value_or(1.0)), attr_f("alpha", c.num(4).value_or(1.0))}));
  out.rank = 2;
  out.dtype = c.dtype(1);
  return true;
}

// baddbmm(bias, a, b, beta, alpha) = bias + a @ b (scales dropped: no memory).
bool lower_baddbmm(Call& c) {
  auto mm = c.emit1("MatMul", {c.tensor(1), c.tensor(2)});
  Val& out = c.set(0, c.emit1("Add", {c.tensor(0), mm}));
  out.rank = 3;
  out.dtype = c.dtype(1);
  return true;
}

bool lower_einsum(Call& c) {
  auto eq = c.str(0);
  if (!eq || c.in(1).kind != Val::Kind::List) return false;
  std::vector<std::string> ins;
  for (const Val& v : c.in(1).items) ins.push_back(c.lowerer().materialize(v, at::ScalarType::Undefined, c.node()));
  Val& out = c.set(0, c.emit1("Einsum", ins, {attr_s("equation", *eq)}));
  auto arrow = eq->find("->");
  out.rank = arrow == std::string::npos ? -1 : static_cast<int>(eq->size() - arrow - 2);
  out.dtype = c.in(1).items.empty() ? at::kFloat : c.in(1).items[0].dtype;
  return true;
}

// ---- Reductions --------------------------------------------------------------------

// sum/mean/amax/...(x, dim, keepdim, dtype) or (x, dtype): opset 17 takes ReduceSum's
// axes as an input and the others' as an attribute.
bool lower_reduce(Call& c) {
  if (c.in(0).kind != Val::Kind::Tensor) return false;
  const std::string op = c.entry().onnx;
  int di = c.arg("dim");
  std::optional<std::vector<int64_t>> axes;
  if (di >= 0 && !c.none(static_cast<size_t>(di))) {
    axes = c.ints(static_cast<size_t>(di));
    if (!axes) return false;
  }
  auto keep = named_int(c, "keepdim").value_or(0) != 0;
  std::string x = c.tensor(0);
  if (auto t = named_int(c, "dtype")) x = c.emit1("Cast", {x}, {attr_i("to", onnx_type(static_cast<at::ScalarType>(*t)))});
  Attrs attrs = {attr_i("keepdims", keep)};
  std::vector<std::string> ins = {x};
  if (axes && !axes->empty()) {
    if (op == "ReduceSum") ins.push_back(c.ints_const(*axes));
    else attrs.push_back(attr_ints("axes", *axes));
  }
  Val& out = c.set(0, c.emit1(op, ins, attrs));
  if (!axes || axes->empty()) out.rank = keep ? c.rank(0) : 0;
  else out.rank = c.rank(0) < 0 ? -1 : keep ? c.rank(0) : c.rank(0) - static_cast<int>(axes->size());
  return true;
}

// argmax(x, dim, keepdim); no dim: over the flattened tensor.
bool lower_arg_reduce(Call& c) {
  std::string x = c.tensor(0);
  auto dim = c.int_(1);
  const bool keep = c.flag(2).value_or(false);
  if (!dim) x = c.emit1("Reshape", {x, c.ints_const({-1})});
  Val& out = c.set(0, c.emit1(c.entry().onnx, {x}, {attr_i("axis", dim.value_or(0)), attr_i("keepdims", keep)}));
  out.rank = !dim ? 0 : c.rank(0) < 0 ? -1 : keep ? c.rank(0) : c.rank(0) - 1;
  out.dtype = at::kLong;
  return true;
}

bool lower_cumsum(Call& c) {
  auto dim = c.int_(1);
  if (!dim) return false;
  c.set(0, c.emit1("CumSum", {c.tensor(0), c.lowerer().onnx().const_ints({*dim}, true, c.lowerer().module())}));
  return true;
}

// ---- Casts and copies -------------------------------------------------------------------

at::ScalarType cast_target(Call& c) {
  if (auto t = named_int(c, "dtype")) return static_cast<at::ScalarType>(*t);
  int oi = c.arg("other");
  if (oi >= 0 && c.in(static_cast<size_t>(oi)).dtype != at::ScalarType::Undefined) {
    return c.in(static_cast<size_t>(oi)).dtype;
  }
  return at::ScalarType::Undefined;
}

// to(dtype) / to(other) / type_as(other): a Cast when the dtype changes; a move
// between devices is nothing.
bool lower_to(Call& c) {
  if (c.in(0).kind != Val::Kind::Tensor && c.in(0).kind != Val::Kind::Scalar) return false;
  at::ScalarType t = cast_target(c);
  if (t == at::ScalarType::Undefined || t == c.dtype(0)) {
    c.out(0) = c.in(0);
    return true;
  }
  Val& out = c.set(0, c.emit1("Cast", {c.tensor(0)}, {attr_i("to", onnx_type(t))}));
  out.dtype = t;
  return true;
}

bool lower_clone(Call& c) {
  c.set(0, c.emit1("Identity", {c.tensor(0)}));
  return true;
}

// ---- Creation ---------------------------------------------------------------------------

// zeros/ones/full/empty/rand*(size, ...), *_like(x, ...), new_*(x, size, ...):
// ConstantOfShape, in the requested dtype.
bool lower_fill(Call& c) {
  const std::string name = c.node()->kind().toUnqualString();
  const bool like = name.size() > 5 && name.compare(name.size() - 5, 5, "_like") == 0;
  const bool method = name.rfind("new_", 0) == 0;
  std::string shape;
  int rank = -1;
  at::ScalarType t = at::kFloat;
  if (like) {
    shape = c.emit1("Shape", {c.tensor(0)});
    rank = c.rank(0);
    t = c.dtype(0);
  } else {
    const size_t si = method ? 1 : 0;
    shape = c.shape(si);
    const Val& s = c.in(si);
    if (s.is_const() && s.value.isIntList()) rank = static_cast<int>(s.value.toIntList().size());
    if (s.kind == Val::Kind::List && !s.items.empty()) rank = static_cast<int>(s.items.size());
    if (method) t = c.dtype(0);
  }
  if (auto d = named_int(c, "dtype")) t = static_cast<at::ScalarType>(*d);
  double value = name.find("ones") != std::string::npos ? 1.0 : 0.0;
  if (name.find("full") != std::string::npos) {
    int fi = c.arg("fill_value");
    if (fi >= 0) value = c.num(static_cast<size_t>(fi)).value_or(0.0);
  }
  onnx::AttributeProto v;
  v.set_name("value");
  v.set_type(onnx::AttributeProto::TENSOR);
  v.mutable_t()->add_dims(1);
  v.mutable_t()->set_data_type(onnx_type(t));
  switch (onnx_type(t)) {
    case kFloat: v.mutable_t()->add_float_data(static_cast<float>(value)); break;
    case kDouble: v.mutable_t()->add_double_data(value); break;
    case kInt64: v.mutable_t()->add_int64_data(static_cast<int64_t>(value)); break;
    default: v.mutable_t()->add_int32_data(static_cast<int32_t>(value)); break;
  }
  Val& out = c.set(0, c.emit1("ConstantOfShape", {shape}, {v}));
  out.rank = rank;
  out.dtype = t;
  return true;
}

// bernoulli_/uniform_/fill_/zero_ refill a tensor in place: no memory, no node.
// The out-of-place forms make a tensor like their input.
bool lower_refill(Call& c) {
  if (c.inplace()) {
    c.out(0) = c.in(0);
    return true;
  }
  if (c.in(0).kind != Val::Kind::Tensor) return false;
  onnx::AttributeProto v;
  v.set_name("value");
  v.set_type(onnx::AttributeProto::TENSOR);
  v.mutable_t()->add_dims(1);
  v.mutable_t()->set_data_type(kFloat);
  v.mutable_t()->add_float_data(0.0f);
  std::string made = c.emit1("ConstantOfShape", {c.emit1("Shape", {c.tensor(0)})}, {v});
  if (c.dtype(0) != at::ScalarType::Undefined && c.dtype(0) != at::kFloat) {
    made = c.emit1("Cast", {made}, {attr_i("to", onnx_type(c.dtype(0)))});
  }
  c.set(0, made);
  return true;
}

// arange(end) / arange(start, end[, step]) -> Range over 0-d operands.
bool lower_arange(Call& c) {
  int si = c.arg("start"), ei = c.arg("end"), pi = c.arg("step");
  if (ei < 0) return false;
  bool floating = false;
  for (int i : {si, ei, pi}) {
    if (i >= 0 && c.in(static_cast<size_t>(i)).is_const() && c.in(static_cast<size_t>(i)).value.isDouble()) floating = true;
  }
  at::ScalarType t = floating ? at::kFloat : at::kLong;
  if (auto d = named_int(c, "dtype")) t = static_cast<at::ScalarType>(*d);
  auto operand = [&](int i, double dflt) {
    if (i < 0 || c.none(static_cast<size_t>(i))) return c.scalar_const(dflt, t);
    const Val& v = c.in(static_cast<size_t>(i));
    std::string s = c.lowerer().materialize(v, t, c.node());
    if (!v.is_const() && v.dtype != t) s = c.emit1("Cast", {s}, {attr_i("to", onnx_type(t))});
    return s;
  };
  Val& out = c.set(0, c.emit1("Range", {operand(si, 0), operand(ei, 0), operand(pi, 1)}));
  out.rank = 1;
  out.dtype = t;
  return true;
}

bool lower_trilu(Call& c) {
  const bool upper = std::string(c.node()->kind().toUnqualString()) == "triu";
  std::vector<std::string> ins = {c.tensor(0)};
  if (!c.none(1)) ins.push_back(c.lowerer().onnx().const_ints({c.int_(1).value_or(0)}, true, c.lowerer().module()));
  c.set(0, c.emit1("Trilu", ins, {attr_i("upper", upper)}));
  return true;
}

const OpEntry kOps[] = {
    {"aten::add", lower_binary, "Add", "Add (alpha as a Mul); ints too"},
    {"aten::sub", lower_binary, "Sub", "Sub (alpha as a Mul); ints too"},
    {"aten::mul", lower_binary, "Mul", "Mul; ints too"},
    {"aten::div", lower_div, "Div", "Div, rounding_mode as Floor/Ceil"},
    {"aten::true_divide", lower_binary, "Div", "Div"},
    {"aten::floor_divide", lower_floor_divide, "Div", "Div (+Floor for floats)"},
    {"aten::floordiv", lower_binary, "Div", "int // int"},
    {"aten::remainder", lower_binary, "Mod", "Mod"},
    {"aten::fmod", lower_binary, "Mod", "Mod"},
    {"aten::pow", lower_binary, "Pow", "Pow"},
    {"aten::rsub", lower_rsub, "Sub", "y - alpha * x"},
    {"aten::eq", lower_compare, "Equal", "Equal"},
    {"aten::ne", lower_ne, "Equal", "Not(Equal)"},
    {"aten::lt", lower_compare, "Less", "Less"},
    {"aten::gt", lower_compare, "Greater", "Greater"},
    {"aten::le", lower_compare, "LessOrEqual", "LessOrEqual"},
    {"aten::ge", lower_compare, "GreaterOrEqual", "GreaterOrEqual"},
    {"aten::maximum", lower_binary, "Max", "Max"},
    {"aten::minimum", lower_binary, "Min", "Min"},
    {"aten::max", lower_max_min, "Max", "Max, ReduceMax(+ArgMax) by overload"},
    {"aten::min", lower_max_min, "Min", "Min, ReduceMin(+ArgMin) by overload"},
    {"aten::logical_and", lower_compare, "And", "And"},
    {"aten::logical_or", lower_compare, "Or", "Or"},
    {"aten::logical_xor", lower_compare, "Xor", "Xor"},
    {"aten::__and__", lower_binary, "And", "And"},
    {"aten::__or__", lower_binary, "Or", "Or"},
    {"aten::logical_not", lower_unary, "Not", "Not"},
    {"aten::bitwise_not", lower_unary, "Not", "Not"},
    {"aten::neg", lower_unary, "Neg", "Neg"},
    {"aten::exp", lower_unary, "Exp", "Exp"},
    {"aten::log", lower_unary, "Log", "Log"},
    {"aten::sqrt", lower_unary, "Sqrt", "Sqrt"},
    {"aten::rsqrt", lower_rsqrt, "Sqrt", "Reciprocal(Sqrt)"},
    {"aten::square", lower_square, "Mul", "Mul(x, x)"},
    {"aten::abs", lower_unary, "Abs", "Abs"},
    {"aten::sin", lower_unary, "Sin", "Sin"},
    {"aten::cos", lower_unary, "Cos", "Cos"},
    {"aten::erf", lower_unary, "Erf", "Erf"},
    {"aten::reciprocal", lower_unary, "Reciprocal", "Reciprocal"},
    {"aten::floor", lower_unary, "Floor", "Floor"},
    {"aten::ceil", lower_unary, "Ceil", "Ceil"},
    {"aten::round", lower_unary, "Round", "Round"},
    {"aten::sign", lower_unary, "Sign", "Sign"},
    {"aten::isnan", lower_unary, "IsNaN", "IsNaN"},
    {"aten::clamp", lower_clamp, "Clip", "Clip with optional bounds"},
    {"aten::clamp_min", lower_clamp, "Clip", "Clip(min)"},
    {"aten::clamp_max", lower_clamp, "Clip", "Clip(max)"},
    {"aten::clip", lower_clamp, "Clip", "Clip with optional bounds"},
    {"aten::where", lower_where, "Where", "Where(cond, x, y)"},
    {"aten::masked_fill", lower_masked_fill, "Where", "Where(mask, value, x)"},
    {"aten::matmul", lower_matmul, "MatMul", "MatMul"},
    {"aten::mm", lower_matmul, "MatMul", "MatMul"},
    {"aten::bmm", lower_matmul, "MatMul", "MatMul"},
    {"aten::addmm", lower_addmm, "Gemm", "Gemm(a, b, bias, alpha, beta)"},
    {"aten::baddbmm", lower_baddbmm, "MatMul", "MatMul + Add"},
    {"aten::einsum", lower_einsum, "Einsum", "Einsum(equation)"},
    {"aten::sum", lower_reduce, "ReduceSum", "ReduceSum(axes input), dtype as a Cast"},
    {"aten::mean", lower_reduce, "ReduceMean", "ReduceMean(axes)"},
    {"aten::amax", lower_reduce, "ReduceMax", "ReduceMax(axes)"},
    {"aten::amin", lower_reduce, "ReduceMin", "ReduceMin(axes)"},
    {"aten::prod", lower_reduce, "ReduceProd", "ReduceProd(axes)"},
    {"aten::logsumexp", lower_reduce, "ReduceLogSumExp", "ReduceLogSumExp(axes)"},
    {"aten::var", lower_reduce, "ReduceMean", "approximated as ReduceMean (same shape, saves its input)"},
    {"aten::std", lower_reduce, "ReduceMean", "approximated as ReduceMean (same shape, saves its input)"},
    {"aten::argmax", lower_arg_reduce, "ArgMax", "ArgMax (no dim: over the flattened tensor)"},
    {"aten::argmin", lower_arg_reduce, "ArgMin", "ArgMin (no dim: over the flattened tensor)"},
    {"aten::cumsum", lower_cumsum, "CumSum", "CumSum"},
    {"aten::to", lower_to, "Cast", "Cast when the dtype changes; devices ignored"},
    {"aten::type_as", lower_to, "Cast", "Cast to the other's dtype"},
    {"aten::clone", lower_clone, "Identity", "Identity (a copy)"},
    {"aten::zeros", lower_fill, "ConstantOfShape", "ConstantOfShape(0)"},
    {"aten::ones", lower_fill, "ConstantOfShape", "ConstantOfShape(1)"},
    {"aten::full", lower_fill, "ConstantOfShape", "ConstantOfShape(fill_value)"},
    {"aten::empty", lower_fill, "ConstantOfShape", "ConstantOfShape"},
    {"aten::rand", lower_fill, "ConstantOfShape", "ConstantOfShape (memory only)"},
    {"aten::randn", lower_fill, "ConstantOfShape", "ConstantOfShape (memory only)"},
    {"aten::zeros_like", lower_fill, "ConstantOfShape", "ConstantOfShape(Shape(x))"},
    {"aten::ones_like", lower_fill, "ConstantOfShape", "ConstantOfShape(Shape(x))"},
    {"aten::full_like", lower_fill, "ConstantOfShape", "ConstantOfShape(Shape(x))"},
    {"aten::empty_like", lower_fill, "ConstantOfShape", "ConstantOfShape(Shape(x))"},
    {"aten::rand_like", lower_fill, "ConstantOfShape", "ConstantOfShape(Shape(x))"},
    {"aten::randn_like", lower_fill, "ConstantOfShape", "ConstantOfShape(Shape(x))"},
    {"aten::new_zeros", lower_fill, "ConstantOfShape", "ConstantOfShape, x's dtype"},
    {"aten::new_ones", lower_fill, "ConstantOfShape", "ConstantOfShape, x's dtype"},
    {"aten::new_full", lower_fill, "ConstantOfShape", "ConstantOfShape, x's dtype"},
    {"aten::new_empty", lower_fill, "ConstantOfShape", "ConstantOfShape, x's dtype"},
    {"aten::arange", lower_arange, "Range", "Range"},
    {"aten::bernoulli", lower_refill, "ConstantOfShape", "in place (bernoulli_): nothing; else a tensor like x"},
    {"aten::uniform", lower_refill, "ConstantOfShape", "in place (uniform_): nothing; else a tensor like x"},
    {"aten::normal", lower_refill, "ConstantOfShape", "in place (normal_): nothing; else a tensor like x"},
    {"aten::fill", lower_refill, "ConstantOfShape", "in place (fill_): nothing; else a tensor like x"},
    {"aten::zero", lower_refill, "ConstantOfShape", "in place (zero_): nothing; else a tensor like x"},
    {"aten::tril", lower_trilu, "Trilu", "Trilu(upper=0)"},
    {"aten::triu", lower_trilu, "Trilu", "Trilu(upper=1)"},
};

}  // namespace

OpTable tensor_ops() { return {kOps, sizeof(kOps) / sizeof(kOps[0])}; }

}  // namespace memest::ts
