// IR helpers: dtypes, attribute access, tensor bookkeeping, module paths.
#include "estimator/ir.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "estimator/error.h"

namespace memest {

int64_t dtype_size(DType t) {
  switch (t) {
    case DType::F64: case DType::I64: case DType::C64: return 8;
    case DType::F32: case DType::I32: return 4;
    case DType::F16: case DType::BF16: case DType::I16: return 2;
    case DType::F8: case DType::I8: case DType::U8: case DType::Bool: return 1;
    case DType::C128: return 16;
    case DType::Undefined: case DType::String: return 0;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "float32";
    case DType::F16: return "float16";
    case DType::BF16: return "bfloat16";
    case DType::F64: return "float64";
    case DType::F8: return "float8";
    case DType::I64: return "int64";
    case DType::I32: return "int32";
    case DType::I16: return "int16";
    case DType::I8: return "int8";
    case DType::U8: return "uint8";
    case DType::Bool: return "bool";
    case DType::C64: return "complex64";
    case DType::C128: return "complex128";
    case DType::String: return "string";
    case DType::Undefined: return "undefined";
  }
  return "undefined";
}

DType dtype_from_onnx(int t) {
  // onnx.TensorProto.DataType codes.
  switch (t) {
    case 1: return DType::F32;
    case 2: return DType::U8;
    case 3: return DType::I8;
    case 4: return DType::I16;  // uint16
    case 5: return DType::I16;
    case 6: return DType::I32;
    case 7: return DType::I64;
    case 8: return DType::String;
    case 9: return DType::Bool;
    case 10: return DType::F16;
    case 11: return DType::F64;
    case 12: return DType::I32;  // uint32
    case 13: return DType::I64;  // uint64
    case 14: return DType::C64;
    case 15: return DType::C128;
    case 16: return DType::BF16;
    case 17: case 18: case 19: case 20: return DType::F8;
    default: return DType::Undefined;
  }
}

std::optional<DType> dtype_from_name(const std::string& n) {
  static const std::pair<const char*, DType> names[] = {
      {"float32", DType::F32}, {"float", DType::F32},   {"fp32", DType::F32},  {"f32", DType::F32},
      {"float16", DType::F16}, {"half", DType::F16},    {"fp16", DType::F16},  {"f16", DType::F16},
      {"bfloat16", DType::BF16}, {"bf16", DType::BF16}, {"float64", DType::F64}, {"double", DType::F64},
      {"int64", DType::I64},   {"long", DType::I64},    {"int32", DType::I32}, {"int", DType::I32},
      {"int16", DType::I16},   {"int8", DType::I8},     {"uint8", DType::U8},  {"bool", DType::Bool},
  };
  for (const auto& [name, t] : names) {
    if (n == name) return t;
  }
  return std::nullopt;
}

bool is_floating(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64 || t == DType::F8;
}

const char* kind_name(TensorKind k) {
  switch (k) {
    case TensorKind::Activation: return "activation";
    case TensorKind::Input: return "input";
    case TensorKind::Parameter: return "parameter";
    case TensorKind::Buffer: return "buffer";
    case TensorKind::Constant: return "constant";
  }
  return "activation";
}

Expr Tensor::bytes() const {
  if (!shape) throw Error("", name, "shape is not known");
  return product(*shape) * Expr(dtype_size(dtype));
}

const AttributeExtra Attribute::kNoExtra;

const Attribute* Attrs::find(std::string_view key) const {
  for (const auto& [k, a] : items_) {
    if (k == key) return &a;
  }
  return nullptr;
}

void Attrs::emplace(std::string key, Attribute a) {
  if (!find(key)) items_.emplace_back(std::move(key), std::move(a));
}

Attribute& Attrs::operator[](std::string_view key) {
  for (auto& [k, a] : items_) {
    if (k == key) return a;
  }
  return items_.emplace_back(std::string(key), Attribute{}).second;
}

int64_t Node::attr_int(std::string_view key, int64_t dflt) const {
  const Attribute* a = attr(key);
  return a && a->kind == Attribute::Int ? a->i : dflt;
}

double Node::attr_float(std::string_view key, double dflt) const {
  const Attribute* a = attr(key);
  if (!a) return dflt;
  if (a->kind == Attribute::Float) return a->f;
  if (a->kind == Attribute::Int) return static_cast<double>(a->i);
  return dflt;
}

std::string Node::attr_string(std::string_view key, const std::string& dflt) const {
  const Attribute* a = attr(key);
  return a && a->kind == Attribute::String ? a->s : dflt;
}

std::vector<int64_t> Node::attr_ints(std::string_view key, std::vector<int64_t> dflt) const {
  const Attribute* a = attr(key);
  return a && a->kind == Attribute::Ints ? a->ints : dflt;
}

namespace {

// Asks the kernel to back an array of at least 8 MiB with 2 MiB pages. The name
// index of a million-node graph is probed at random: with 4 KiB pages nearly every
// probe would also miss the TLB. Only advice: with transparent huge pages off it
// changes nothing.
void advise_huge_pages(const void* data, size_t bytes) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (bytes < 4 * kHuge) return;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

// 64x64 -> 128-bit multiply, halves folded: each input bit reaches every output bit.
uint64_t mix(uint64_t a, uint64_t b) {
  const unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

}  // namespace

uint32_t Graph::name_hash(std::string_view name) {
  // Eight bytes at a time (tensor names run to tens of bytes), the length in the seed.
  constexpr uint64_t k0 = 0x9e3779b97f4a7c15ull, k1 = 0xe7037ed1a0b428dbull;
  uint64_t h = mix(name.size() ^ k0, k1);
  const char* p = name.data();
  size_t n = name.size();
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = mix(h ^ w, k1);
  }
  if (n > 0) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = mix(h ^ w, k0);
  }
  return static_cast<uint32_t>(h ^ (h >> 32));
}

size_t Graph::slot_of(std::string_view name, uint32_t hash) const {
  const size_t mask = index_.size() - 1;
  for (size_t s = hash & mask;; s = (s + 1) & mask) {
    const Slot& slot = index_[s];
    if (slot.id < 0 || (slot.hash == hash && tensors[slot.id].name == name)) return s;
  }
}

void Graph::grow_index(size_t tensor_count) const {
  // At most half full, so probes stay short.
  size_t cap = 16;
  while (cap < 2 * tensor_count) cap *= 2;
  if (cap <= index_.size()) return;
  std::vector<Slot> old = std::move(index_);
  index_ = std::vector<Slot>();
  index_.reserve(cap);
  advise_huge_pages(index_.data(), cap * sizeof(Slot));
  index_.assign(cap, Slot{});
  for (const Slot& slot : old) {
    if (slot.id >= 0) place(slot);
  }
}

void Graph::place(Slot slot) const {
  const size_t mask = index_.size() - 1;
  size_t s = slot.hash & mask;
  while (index_[s].id >= 0) s = (s + 1) & mask;
  index_[s] = slot;
}

void Graph::drop_index() {
  index_ = std::vector<Slot>();
  index_dropped_ = true;
}

void Graph::ensure_index() const {
  if (!index_dropped_) return;
  index_dropped_ = false;
  grow_index(tensors.size() + 1);
  for (size_t id = 0; id < tensors.size(); ++id) place(Slot{name_hash(tensors[id].name), static_cast<int32_t>(id)});
}

int Graph::add_tensor(std::string&& name, size_t slot, uint32_t hash) {
  const int id = static_cast<int>(tensors.size());
  tensors.emplace_back();
  tensors.back().name = std::move(name);
  index_[slot] = Slot{hash, id};
  if (2 * tensors.size() > index_.size()) grow_index(tensors.size());
  return id;
}

int Graph::tensor_id(std::string_view name) { return tensor_id(name, name_hash(name)); }

int Graph::tensor_id(std::string_view name, uint32_t hash) {
  ensure_index();
  if (index_.empty()) grow_index(tensors.size() + 1);
  const size_t s = slot_of(name, hash);
  return index_[s].id >= 0 ? index_[s].id : add_tensor(std::string(name), s, hash);
}

void Graph::prefetch_slot(uint32_t hash) const {
  ensure_index();
  if (!index_.empty()) __builtin_prefetch(&index_[hash & (index_.size() - 1)]);
}

void Graph::prefetch_tensor(uint32_t hash) const {
  ensure_index();
  if (index_.empty()) return;
  const size_t mask = index_.size() - 1;
  for (size_t s = hash & mask; index_[s].id >= 0; s = (s + 1) & mask) {
    if (index_[s].hash == hash) {
      __builtin_prefetch(&tensors[index_[s].id]);
      return;
    }
  }
}

int Graph::adopt_tensor(std::string&& name) {
  ensure_index();
  if (index_.empty()) grow_index(tensors.size() + 1);
  const uint32_t h = name_hash(name);
  const size_t s = slot_of(name, h);
  return index_[s].id >= 0 ? index_[s].id : add_tensor(std::move(name), s, h);
}

int Graph::find_tensor(std::string_view name) const {
  ensure_index();
  if (index_.empty()) return -1;
  const Slot& slot = index_[slot_of(name, name_hash(name))];
  return slot.id;
}

int Graph::new_tensor(const std::string& hint) {
  std::string name = hint;
  for (int k = 1; find_tensor(name) >= 0; ++k) name = hint + "#" + std::to_string(k);
  return tensor_id(name);
}

void Graph::relink() {
  for (auto& t : tensors) {
    t.producer = -1;
    t.consumers.clear();
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (n.dead) continue;
    for (int in : n.inputs) {
      if (in >= 0) tensors[in].consumers.push_back(static_cast<int>(i));
    }
    for (int out : n.outputs) {
      if (out >= 0) tensors[out].producer = static_cast<int>(i);
    }
  }
}

void Graph::reserve(size_t tensor_count, size_t node_count) {
  tensors.reserve(tensor_count);
  ensure_index();
  grow_index(tensor_count);
  nodes.reserve(node_count);
}

void Graph::warn(const std::string& what) {
  if (std::find(warnings.begin(), warnings.end(), what) == warnings.end()) warnings.push_back(what);
}

bool is_numbered_child(std::string_view child, std::string_view parent) {
  if (child.size() <= parent.size() + 1 || !child.starts_with(parent) || child[parent.size()] != '.') return false;
  const std::string_view rest = child.substr(parent.size() + 1);
  return std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string module_from_scoped_name(std::string_view node_name, std::set<std::string>* containers) {
  // "/layer1/layer1.0/conv1/Conv" -> segments layer1, layer1.0, conv1 (the last, "Conv", is the op).
  // Each segment is a module whose forward ran: layer1, followed by its element layer1.0,
  // is a container called as a whole (Graph::called_containers).
  if (node_name.empty() || node_name[0] != '/') return "";
  const std::string_view name = node_name;
  std::string path;
  size_t start = 1;
  while (start <= name.size()) {
    size_t slash = name.find('/', start);
    if (slash == std::string_view::npos) break;  // the last segment names the op
    const std::string_view s = name.substr(start, slash - start);
    start = slash + 1;
    if (s.empty()) continue;
    // A segment is either a full dotted path ("layer1.0", extending the current one)
    // or an attribute name relative to it ("conv1").
    const bool extends = s.size() > path.size() && s.compare(0, path.size(), path) == 0 && s[path.size()] == '.';
    const std::string parent = containers && !path.empty() ? path : std::string();
    if (path.empty() || extends) {
      path.assign(s);
    } else {
      path += '.';
      path += s;
    }
    if (!parent.empty() && is_numbered_child(path, parent)) containers->insert(parent);
  }
  return path;
}

std::string module_from_param_name(const std::string& param) {
  auto dot = param.rfind('.');
  return dot == std::string::npos ? "" : param.substr(0, dot);
}

bool is_child_module(std::string_view child, std::string_view parent) {
  if (parent.empty()) return !child.empty() && child.find('.') == std::string_view::npos;
  if (child.size() <= parent.size() + 1 || !child.starts_with(parent) || child[parent.size()] != '.') return false;
  return child.find('.', parent.size() + 1) == std::string_view::npos;
}

std::optional<std::vector<int64_t>> constant_ints(const Graph& g, int t) {
  if (t < 0) return std::nullopt;
  const Tensor& x = g.tensors[static_cast<size_t>(t)];
  if (x.value) {
    std::vector<int64_t> out;
    for (const Expr& e : *x.value) {
      const auto c = e.as_const();
      if (!c) return std::nullopt;
      out.push_back(*c);
    }
    return out;
  }
  if (x.producer < 0) return std::nullopt;
  const Node& p = g.nodes[static_cast<size_t>(x.producer)];
  if (p.dead || !p.domain.empty() || p.op != "Constant") return std::nullopt;
  if (const Attribute* a = p.attr("value"); a && a->kind == Attribute::Tensor && a->extra().t_ints) {
    return *a->extra().t_ints;
  }
  if (const Attribute* a = p.attr("value_int")) return std::vector<int64_t>{a->i};
  if (const Attribute* a = p.attr("value_ints")) return a->ints;
  return std::nullopt;
}

}  // namespace memest
