// The graph walk: forward() inlined, its inputs bound to the --input-shape specs,
// the module's weights described as initializers, then every node lowered in
// order through the op table. Control flow is folded: a branch is taken when its
// condition is known (a constant, or a size memest's shape pass computes from the
// graph so far), or when the other branch only raises (checks of the input).
#include "ts_lower.h"

#include <sys/stat.h>
#include <torch/csrc/jit/api/function_impl.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "estimator/error.h"
#include "estimator/shapes.h"
#include "frontends/onnx_reader.h"
#include "ts_consts.h"
#include "ts_ops.h"

namespace memest::ts {
namespace {

constexpr int64_t kMaxUnroll = 10000;
constexpr int kMaxCallDepth = 200;

std::string first_line(const std::string& s) {
  auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

std::string basename(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

bool raises(const torch::jit::Block* b) {
  for (const auto* n : b->nodes()) {
    if (n->kind() == c10::prim::RaiseException) return true;
  }
  return false;
}

std::vector<int64_t> sizes_of(const at::Tensor& t) { return {t.sizes().begin(), t.sizes().end()}; }

const c10::TensorImpl* identity(const at::Tensor& t) { return t.unsafeGetTensorImpl(); }

}  // namespace

InputSpec parse_spec(const std::string& text) {
  InputSpec spec;
  std::string dims = text;
  auto colon = text.find(':');
  if (colon != std::string::npos) {
    dims = text.substr(0, colon);
    static const std::unordered_map<std::string, at::ScalarType> kTypes = {
        {"float32", at::kFloat}, {"float", at::kFloat},   {"fp32", at::kFloat},     {"float16", at::kHalf},
        {"fp16", at::kHalf},     {"half", at::kHalf},     {"bfloat16", at::kBFloat16}, {"bf16", at::kBFloat16},
        {"float64", at::kDouble}, {"double", at::kDouble}, {"int64", at::kLong},     {"long", at::kLong},
        {"int32", at::kInt},     {"int", at::kInt},       {"int16", at::kShort},    {"int8", at::kChar},
        {"uint8", at::kByte},    {"bool", at::kBool},
    };
    auto it = kTypes.find(text.substr(colon + 1));
    if (it == kTypes.end()) throw LowerError("--input-shape '" + text + "': unknown dtype '" + text.substr(colon + 1) + "'");
    spec.dtype = it->second;
  }
  if (dims == "-" || dims.empty()) return spec;
  size_t start = 0;
  for (;;) {
    size_t x = dims.find('x', start);
    std::string part = dims.substr(start, x == std::string::npos ? std::string::npos : x - start);
    if (part.empty() || part.size() > 12 || part.find_first_not_of("0123456789") != std::string::npos) {
      throw LowerError("--input-shape '" + text + "': expected dims like 3x224x224 or 512:int64");
    }
    int64_t d = std::stoll(part);
    if (d <= 0) throw LowerError("--input-shape '" + text + "': dims must be positive");
    spec.dims.push_back(d);
    if (x == std::string::npos) break;
    start = x + 1;
  }
  return spec;
}

Val Val::constant(c10::IValue v) {
  Val out;
  out.kind = Kind::Const;
  out.value = std::move(v);
  if (out.value.isTensor()) {
    out.rank = static_cast<int>(out.value.toTensor().dim());
    out.dtype = out.value.toTensor().scalar_type();
  }
  return out;
}

Val Val::tensor(std::string name, int rank, at::ScalarType dtype) {
  Val out;
  out.kind = Kind::Tensor;
  out.name = std::move(name);
  out.rank = rank;
  out.dtype = dtype;
  return out;
}

Val Val::scalar(std::string name, at::ScalarType dtype) {
  Val out;
  out.kind = Kind::Scalar;
  out.name = std::move(name);
  out.rank = 0;
  out.dtype = dtype;
  return out;
}

int onnx_type(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return kFloat;
    case at::kDouble: return kDouble;
    case at::kHalf: return kFloat16;
    case at::kBFloat16: return kBFloat16;
    case at::kLong: return kInt64;
    case at::kInt: return kInt32;
    case at::kShort: return kInt16;
    case at::kChar: return kInt8;
    case at::kByte: return kUint8;
    case at::kBool: return kBool;
    case at::kComplexFloat: return kComplex64;
    case at::kComplexDouble: return kComplex128;
    default: throw LowerError(std::string("dtype ") + c10::toString(t) + " has no ONNX equivalent");
  }
}

std::string dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return "float32";
    case at::kDouble: return "float64";
    case at::kHalf: return "float16";
    case at::kBFloat16: return "bfloat16";
    case at::kLong: return "int64";
    case at::kInt: return "int32";
    case at::kShort: return "int16";
    case at::kChar: return "int8";
    case at::kByte: return "uint8";
    case at::kBool: return "bool";
    default: return c10::toString(t);
  }
}

std::string Lowerer::input_spec(const std::string& name) const {
  auto it = input_specs_.find(name);
  return it == input_specs_.end() ? "" : it->second;
}

std::string where(const torch::jit::Node* n) {
  auto flc = n->sourceRange().file_line_col();
  if (!flc) return "";
  const auto& [file, line, col] = *flc;
  if (file.empty()) return "";
  return basename(file) + ":" + std::to_string(line);
}

Lowerer::Lowerer(torch::jit::Module module, std::string file) : root_(std::move(module)), file_(std::move(file)) {}

Val& Lowerer::value(const torch::jit::Value* v) { return env_[v]; }

void Lowerer::fail(const torch::jit::Node* n, const std::string& what) const {
  std::string at = n ? where(n) : "";
  std::string op = n ? n->kind().toQualString() : "";
  throw LowerError((op.empty() ? "" : op + (at.empty() ? "" : " at " + at) + ": ") + what);
}

void Lowerer::add_state() {
  std::vector<std::string> buffers;
  auto add = [&](const std::string& name, const at::Tensor& t, bool buffer) {
    if (state_.count(identity(t))) return;  // tied: the first name owns it
    Val v = Val::tensor(name, static_cast<int>(t.dim()), t.scalar_type());
    v.state = true;
    v.dims = sizes_of(t);
    onnx_.add_initializer(name, onnx_type(t.scalar_type()), v.dims);
    state_.emplace(identity(t), std::move(v));
    // Frozen weights take no gradient or optimizer state: memest treats them as buffers.
    if (buffer || !t.requires_grad()) buffers.push_back(name);
  };
  for (const auto& p : root_.named_parameters(/*recurse=*/true)) add(p.name, p.value, false);
  for (const auto& b : root_.named_buffers(/*recurse=*/true)) add(b.name, b.value, true);
  if (!buffers.empty()) onnx_.set_metadata("memest.buffers", join(buffers, ","));
}

Val Lowerer::attribute(const Val& mod, const std::string& name, const torch::jit::Node* at) {
  if (mod.kind != Val::Kind::Module || !mod.object) fail(at, "attribute '" + name + "' of something that is not a module");
  const auto& obj = mod.object;
  if (!obj->type()->hasAttribute(name)) fail(at, "module '" + mod.path + "' has no attribute '" + name + "'");
  // The protocol trains: model.train() sets every module's flag, whatever it was when saved.
  if (name == "training") return Val::constant(true);
  const c10::IValue v = obj->getAttr(name);
  const std::string path = mod.path.empty() ? name : mod.path + "." + name;
  auto weight = [&](const at::Tensor& t) {
    auto it = state_.find(identity(t));
    if (it != state_.end()) return it->second;
    // A tensor attribute that is neither parameter nor buffer still lives on the device.
    Val v = Val::tensor(path, static_cast<int>(t.dim()), t.scalar_type());
    v.state = true;
    v.dims = sizes_of(t);
    onnx_.add_initializer(path, onnx_type(t.scalar_type()), v.dims);
    state_.emplace(identity(t), v);
    return v;
  };
  if (v.isObject()) {
    Val m;
    m.kind = Val::Kind::Module;
    m.object = v.toObject();
    m.path = path;
    return m;
  }
  if (v.isTensor()) return weight(v.toTensor());
  if (v.isTensorList()) {
    Val list;
    list.kind = Val::Kind::List;
    for (const at::Tensor& t : v.toTensorVector()) list.items.push_back(weight(t));
    return list;
  }
  return Val::constant(v);
}

std::string Lowerer::materialize(const Val& v, at::ScalarType like, const torch::jit::Node* at) {
  switch (v.kind) {
    case Val::Kind::Tensor:
    case Val::Kind::Scalar:
      return v.name;
    case Val::Kind::Const:
      break;
    case Val::Kind::List:
    case Val::Kind::Tuple:
      fail(at, "expected a tensor, got a list");
    case Val::Kind::Module:
      fail(at, "expected a tensor, got a module");
    case Val::Kind::Unknown:
      fail(at, "an input has no ONNX equivalent (an unsupported op produced it)");
  }
  const c10::IValue& c = v.value;
  const bool like_float = like != at::ScalarType::Undefined && c10::isFloatingType(like);
  if (c.isInt() || c.isBool()) {
    at::ScalarType t = c.isBool() ? at::kBool : at::kLong;
    if (like != at::ScalarType::Undefined && (like_float || !c.isBool())) t = like;
    return onnx_.constant(onnx_type(t), {}, {static_cast<double>(c.isBool() ? c.toBool() : c.toInt())}, module_);
  }
  if (c.isDouble()) {
    return onnx_.constant(onnx_type(like_float ? like : at::kFloat), {}, {c.toDouble()}, module_);
  }
  if (c.isIntList()) return onnx_.const_ints(c.toIntVector(), /*scalar=*/false, module_);
  if (c.isDoubleList()) {
    auto d = c.toDoubleVector();
    return onnx_.constant(kFloat, {static_cast<int64_t>(d.size())}, d, module_);
  }
  if (c.isTensor()) {
    const at::Tensor& t = c.toTensor();
    // An operand takes the dtype the op computes in (the caller's `like`).
    const int type = onnx_type(like != at::ScalarType::Undefined ? like : t.scalar_type());
    if (t.numel() > kMaxConstElems || t.is_complex()) return onnx_.const_opaque(type, sizes_of(t), module_);
    at::Tensor d = t.to(at::kDouble).contiguous();
    std::vector<double> vals(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
    return onnx_.constant(type, sizes_of(t), vals, module_);
  }
  if (c.isNone()) fail(at, "expected a tensor, got None");
  fail(at, "expected a tensor, got a constant " + c.tagKind());
}

std::optional<int64_t> Lowerer::evaluate(const Val& v) {
  if (v.kind != Val::Kind::Scalar || v.name.empty()) return std::nullopt;
  std::string bytes;
  if (!onnx_.snapshot(v.name).SerializeToString(&bytes)) return std::nullopt;
  try {
    Graph g = read_onnx_bytes(bytes, file_);
    verify_and_sort(g);
    infer_shapes(g);
    const int id = g.find_tensor(v.name);
    if (id < 0 || !g.tensors[id].value || g.tensors[id].value->size() != 1) return std::nullopt;
    return (*g.tensors[id].value)[0].as_const();
  } catch (const Error&) {
    return std::nullopt;
  }
}

void Lowerer::lower_if(torch::jit::Node* n) {
  const Val& cond = value(n->input(0));
  torch::jit::Block* taken = nullptr;
  std::optional<int64_t> known;
  if (cond.is_const() && cond.value.isBool()) {
    known = cond.value.toBool();
  } else if (!raises(n->blocks()[0]) && !raises(n->blocks()[1])) {
    known = evaluate(cond);  // a size-dependent branch: memest's shape pass knows the sizes
  }
  if (known) {
    taken = n->blocks()[*known ? 0 : 1];
  } else if (raises(n->blocks()[0])) {
    taken = n->blocks()[1];  // a check that the model is used correctly: assume it is
  } else if (raises(n->blocks()[1])) {
    taken = n->blocks()[0];
  } else {
    fail(n, "the branch taken depends on the batch or on data; trace the model (torch.jit.trace) to fix the path");
  }
  lower_block(taken);
  for (size_t i = 0; i < n->outputs().size(); ++i) bind(n->output(i), value(taken->outputs()[i]));
}

void Lowerer::lower_loop(torch::jit::Node* n) {
  Val trip = value(n->input(0));
  Val cond0 = value(n->input(1));
  if (auto v = evaluate(trip)) trip = Val::constant(*v);
  if (auto v = evaluate(cond0)) cond0 = Val::constant(static_cast<bool>(*v));
  if (!trip.is_const() || !trip.value.isInt()) {
    fail(n, "a loop runs a number of times that depends on the batch; trace the model (torch.jit.trace) to unroll it");
  }
  if (!cond0.is_const() || !cond0.value.isBool()) fail(n, "a while loop's condition is known only at run time");
  torch::jit::Block* body = n->blocks()[0];
  std::vector<Val> carried;
  for (size_t i = 2; i < n->inputs().size(); ++i) carried.push_back(value(n->input(i)));
  bool go = cond0.value.toBool();
  for (int64_t i = 0; go && i < trip.value.toInt(); ++i) {
    if (i >= kMaxUnroll) fail(n, "a loop runs more than " + std::to_string(kMaxUnroll) + " times");
    bind(body->inputs()[0], Val::constant(i));
    for (size_t k = 0; k < carried.size(); ++k) bind(body->inputs()[k + 1], carried[k]);
    lower_block(body);
    Val c = value(body->outputs()[0]);
    if (auto v = evaluate(c)) c = Val::constant(static_cast<bool>(*v));
    if (!c.is_const() || !c.value.isBool()) fail(n, "a loop's condition is known only at run time");
    go = c.value.toBool();
    for (size_t k = 0; k < carried.size(); ++k) carried[k] = value(body->outputs()[k + 1]);
  }
  for (size_t k = 0; k < carried.size(); ++k) bind(n->output(k), carried[k]);
}

void Lowerer::lower_block(torch::jit::Block* b) {
  for (auto* n : b->nodes()) lower_node(n);
}

std::vector<Val> Lowerer::call(const torch::jit::Function& fn, const std::vector<Val>& args, const std::string* module,
                               const torch::jit::Node* at) {
  if (depth_ >= kMaxCallDepth) fail(at, "calls nest deeper than " + std::to_string(kMaxCallDepth));
  const auto& graph = torch::jit::toGraphFunction(fn).graph();
  if (graph->inputs().size() != args.size()) {
    fail(at, "calls " + fn.qualname().qualifiedName() + " with " + std::to_string(args.size()) + " arguments, it takes " +
                 std::to_string(graph->inputs().size()));
  }
  for (size_t i = 0; i < args.size(); ++i) bind(graph->inputs()[i], args[i]);
  const std::string saved = module_;
  if (module) module_ = *module;
  ++depth_;
  lower_block(graph->block());
  --depth_;
  module_ = saved;
  std::vector<Val> out;
  for (const auto* o : graph->outputs()) out.push_back(value(o));
  return out;
}

void Lowerer::lower_node(torch::jit::Node* n) {
  try {
    lower_call(n);
  } catch (const c10::Error& e) {
    fail(n, first_line(e.what_without_backtrace()));
  }
}

// MEMEST_TS_TRACE=1 prints what each node became, for debugging a lowering.
void trace(const torch::jit::Node* n, const char* how, const std::vector<Val>& outs) {
  static const bool on = std::getenv("MEMEST_TS_TRACE") != nullptr;
  if (!on) return;
  static const char* const kKinds[] = {"unknown", "const", "tensor", "scalar", "list", "tuple", "module"};
  std::string line = std::string(n->kind().toQualString()) + " [" + how + "] ->";
  for (const Val& v : outs) {
    line += ' ';
    line += kKinds[static_cast<int>(v.kind)];
    if (v.is_const()) {
      line += '(';
      line += v.value.type()->str();
      line += ')';
    }
    if (!v.name.empty()) {
      line += ':';
      line += v.name;
    }
  }
  std::fprintf(stderr, "%s  %s\n", line.c_str(), where(n).c_str());
}

void Lowerer::lower_call(torch::jit::Node* n) {
  std::vector<Val> in;
  in.reserve(n->inputs().size());
  for (const auto* v : n->inputs()) in.push_back(value(v));
  if (auto folded = fold_constant(n, in)) {
    trace(n, "folded", *folded);
    for (size_t i = 0; i < n->outputs().size(); ++i) bind(n->output(i), std::move((*folded)[i]));
    return;
  }
  const std::string name = n->kind().toQualString();
  const OpEntry* entry = find_op(name);
  bool inplace = false;
  if (!entry && name.size() > 1 && name.back() == '_' && name[name.size() - 2] != '_') {
    entry = find_op(name.substr(0, name.size() - 1));
    inplace = entry != nullptr;
  }
  // Updating a weight or buffer in place (num_batches_tracked += 1) is not part
  // of the step's memory: the state is already counted.
  if (inplace && !in.empty() && in[0].state) {
    for (auto* o : n->outputs()) bind(o, in[0]);
    return;
  }
  static const OpEntry kGeneric = {"", lower_aten, "", ""};
  Call call(*this, n, entry ? *entry : kGeneric, inplace);
  if (!call.entry().lower(call)) {
    Call generic(*this, n, kGeneric, inplace);
    lower_aten(generic);
    call.outputs() = std::move(generic.outputs());
  }
  auto& outs = call.outputs();
  for (auto& o : outs) {
    if ((o.kind == Val::Kind::Tensor || o.kind == Val::Kind::Scalar) && o.name.empty()) o = Val();
  }
  if (inplace && !outs.empty() && outs[0].is_tensor()) {
    // (A refill in place emits nothing: its result is its input, already marked or not.)
    if (outs[0].name != in[0].name) onnx_.mark(outs[0].name, attr_i("inplace", 1));
    // Later reads of the mutated input see the result.
    bind(n->input(0), outs[0]);
  }
  trace(n, entry ? "table" : "aten", outs);
  for (size_t i = 0; i < n->outputs().size(); ++i) bind(n->output(i), std::move(outs[i]));
}

onnx::ModelProto Lowerer::run(const std::vector<InputSpec>& specs) {
  if (!root_.find_method("forward")) throw LowerError("the module has no forward() method");
  auto method = root_.get_method("forward");
  const auto& graph = method.graph();

  const auto& args = method.function().getSchema().arguments();
  const size_t n_inputs = graph->inputs().size() - 1;
  size_t required = 0;
  std::vector<std::string> names;
  for (size_t i = 1; i < args.size(); ++i) {
    names.push_back(args[i].name());
    if (!args[i].default_value()) required = i;
  }
  if (specs.size() < required || specs.size() > n_inputs) {
    throw LowerError("forward() takes " + std::to_string(n_inputs) + " input" + (n_inputs == 1 ? "" : "s") + " (" +
                     join(names, ", ") + "), --input-shape was given " + std::to_string(specs.size()) + " time" +
                     (specs.size() == 1 ? "" : "s"));
  }

  Val self;
  self.kind = Val::Kind::Module;
  self.object = root_._ivalue();
  bind(graph->inputs()[0], self);
  add_state();
  for (size_t i = 0; i < n_inputs; ++i) {
    const auto* input = graph->inputs()[i + 1];
    const std::string name = i < names.size() ? names[i] : "input_" + std::to_string(i);
    if (i >= specs.size()) {
      bind(input, Val::constant(*args[i + 1].default_value()));
      continue;
    }
    if (!input->type()->isSubtypeOf(*c10::TensorType::get()) &&
        !input->type()->isSubtypeOf(*c10::OptionalType::ofTensor())) {
      throw LowerError("input '" + name + "' of forward() is a " + input->type()->annotation_str() +
                       ", not a tensor; --input-shape describes tensors only");
    }
    std::vector<int64_t> dims = {-1};
    dims.insert(dims.end(), specs[i].dims.begin(), specs[i].dims.end());
    onnx_.add_input(name, onnx_type(specs[i].dtype), dims);
    std::string text;
    for (int64_t d : specs[i].dims) {
      if (!text.empty()) text += 'x';
      text += std::to_string(d);
    }
    input_specs_[name] = text.empty() ? "-" : text;
    Val v = Val::tensor(name, static_cast<int>(dims.size()), specs[i].dtype);
    v.dims = dims;
    bind(input, v);
  }

  lower_block(graph->block());

  // A structure of outputs (a tuple, logits and hidden states) becomes its tensors in order.
  std::vector<Val> pending;
  for (const auto* o : graph->outputs()) pending.push_back(value(o));
  int n_out = 0;
  for (size_t i = 0; i < pending.size(); ++i) {
    const Val& v = pending[i];
    if (v.kind == Val::Kind::List || v.kind == Val::Kind::Tuple) {
      pending.insert(pending.begin() + static_cast<std::ptrdiff_t>(i) + 1, v.items.begin(), v.items.end());
    } else if (v.is_tensor()) {
      onnx_.add_output(v.name);
      ++n_out;
    }
  }
  if (n_out == 0) throw LowerError("forward() returns no tensor");
  return onnx_.finish();
}

onnx::ModelProto lower_torchscript(const std::string& path, const std::vector<InputSpec>& specs) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) throw LowerError("no such file");
  if (S_ISDIR(st.st_mode)) throw LowerError("is a directory, not a TorchScript file");
  std::ifstream in(path, std::ios::binary);
  char magic[2] = {0, 0};
  if (!in || !in.read(magic, 2) || magic[0] != 'P' || magic[1] != 'K') {
    throw LowerError("not a TorchScript archive (a TorchScript .pt file is a zip archive)");
  }
  torch::jit::Module module;
  try {
    module = torch::jit::load(path, c10::Device(c10::kCPU));
  } catch (const c10::Error& e) {
    throw LowerError("libtorch cannot load it as TorchScript: " + first_line(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    throw LowerError("libtorch cannot load it as TorchScript: " + first_line(e.what()));
  }
  try {
    return Lowerer(std::move(module), path).run(specs);
  } catch (const c10::Error& e) {
    throw LowerError(first_line(e.what_without_backtrace()));
  }
}

}  // namespace memest::ts
