// ShapeContext and OpInfo helpers shared by every op family.
#include "estimator/ops/op_info.h"

#include <cstring>

namespace memest {

const Tensor& ShapeContext::input(size_t i) const {
  if (!n_.has_input(i)) fail("input " + std::to_string(i) + " is missing");
  return g_.tensors[n_.inputs[i]];
}

const Shape& ShapeContext::in_shape(size_t i) const {
  const Tensor& t = input(i);
  if (!t.shape) fail("shape of input '" + t.name + "' is not known");
  return *t.shape;
}

const std::vector<Expr>* ShapeContext::in_value(size_t i) const {
  if (!n_.has_input(i)) return nullptr;
  const Tensor& t = g_.tensors[n_.inputs[i]];
  return t.value ? &*t.value : nullptr;
}

const std::vector<double>* ShapeContext::in_fvalue(size_t i) const {
  if (!n_.has_input(i)) return nullptr;
  const Tensor& t = g_.tensors[n_.inputs[i]];
  return t.fvalue ? &*t.fvalue : nullptr;
}

void ShapeContext::set_fvalue(size_t i, std::vector<double> v) {
  if (i >= n_.outputs.size() || n_.outputs[i] < 0) return;
  g_.tensors[n_.outputs[i]].fvalue = std::move(v);
}

void ShapeContext::set_output(size_t i, DType t, Shape s) {
  if (i >= n_.outputs.size() || n_.outputs[i] < 0) return;
  Tensor& out = g_.tensors[n_.outputs[i]];
  out.dtype = t;
  out.shape = std::move(s);
}

void ShapeContext::set_value(size_t i, std::vector<Expr> v) {
  if (i >= n_.outputs.size() || n_.outputs[i] < 0) return;
  g_.tensors[n_.outputs[i]].value = std::move(v);
}

void ShapeContext::fail(const std::string& what) const {
  throw Error(g_.file, n_.name.empty() ? n_.op.str() : n_.name.str(), n_.op + ": " + what);
}

void ShapeContext::warn(const std::string& what) const {
  g_.warn((n_.name.empty() ? n_.op.str() : n_.name.str()) + ": " + what);
}

const char* autocast_name(Autocast a) {
  switch (a) {
    case Autocast::Keep: return "keep";
    case Autocast::Lower: return "lower";
    case Autocast::Fp32: return "fp32";
    case Autocast::Widen: return "widen";
    case Autocast::Like: return "like";
    case Autocast::WidenHalf: return "widen (fp16) / fp32 (bf16)";
    case Autocast::Promote: return "promote";
    case Autocast::None: return "--";
  }
  return "--";
}

char OpInfo::grad_of(size_t i) const {
  size_t n = std::strlen(grads);
  if (n == 0) return 'N';
  return grads[i < n ? i : n - 1];
}

}  // namespace memest
