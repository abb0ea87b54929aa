// Decoding the ONNX messages the reader uses from their wire bytes.
#include "frontends/onnx_views.h"

#include <cstring>
#include <string>

namespace memest::onnx_views {

using wire::Field;
using wire::Fields;
using wire::kFixed32;
using wire::kLen;
using wire::kVarint;

namespace {

// The value of an int32 field: protobuf keeps the varint's low 32 bits.
int32_t as_int32(uint64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }

// The elements of repeated varint field `number` (int64, or int32 when `narrow`)
// when there are exactly `numel` of them; nullopt otherwise.
std::optional<std::vector<int64_t>> varint_values(const Parts& parts, uint32_t number, int64_t numel, bool narrow) {
  std::vector<int64_t> v;
  uint64_t total = 0;
  parts.each_field([&](const Field& f) {
    if (f.number != number) return;
    total += wire::count_varints(f);
    if (total > static_cast<uint64_t>(numel)) return;
    wire::each_varint(f, [&](int64_t x) { v.push_back(narrow ? as_int32(static_cast<uint64_t>(x)) : x); });
  });
  if (total != static_cast<uint64_t>(numel)) return std::nullopt;
  return v;
}

// The same for repeated float (T = float) or double field `number`.
template <typename T>
std::optional<std::vector<double>> fixed_values(const Parts& parts, uint32_t number, int64_t numel) {
  std::vector<double> v;
  uint64_t total = 0;
  parts.each_field([&](const Field& f) {
    if (f.number != number) return;
    total += wire::count_fixed<T>(f);
    if (total > static_cast<uint64_t>(numel)) return;
    wire::each_fixed<T>(f, [&](T x) { v.push_back(x); });
  });
  if (total != static_cast<uint64_t>(numel)) return std::nullopt;
  return v;
}

}  // namespace

ModelView read_model(std::string_view bytes) {
  ModelView m;
  Field f;
  for (Fields fields(bytes); fields.next(f);) {
    if (f.number == 1 && f.type == kVarint) {
      m.ir_version = static_cast<int64_t>(f.value);
      continue;
    }
    if (f.type != kLen) continue;
    switch (f.number) {
      case 2: m.producer_name = f.data; break;
      case 3: m.producer_version = f.data; break;
      case 7: m.has_graph = true; m.graph.add(f.data); break;
      case 8: m.opset_imports.push_back(f.data); break;
      case 14: m.metadata_props.push_back(f.data); break;
      case 25: m.functions.push_back(f.data); break;
      default: break;
    }
  }
  return m;
}

OpsetView read_opset(std::string_view bytes) {
  OpsetView o;
  Field f;
  for (Fields fields(bytes); fields.next(f);) {
    if (f.number == 1 && f.type == kLen) o.domain = f.data;
    if (f.number == 2 && f.type == kVarint) o.version = static_cast<int64_t>(f.value);
  }
  return o;
}

EntryView read_entry(std::string_view bytes) {
  EntryView e;
  Field f;
  for (Fields fields(bytes); fields.next(f);) {
    if (f.type != kLen) continue;
    if (f.number == 1) e.key = f.data;
    if (f.number == 2) e.value = f.data;
  }
  return e;
}

void read_tensor(TensorView& t, std::vector<int64_t>& dims) {
  dims.clear();
  t.parts.each_field([&](const Field& f) {
    switch (f.number) {
      case 1: wire::each_varint(f, [&](int64_t d) { dims.push_back(d); }); break;
      case 2: if (f.type == kVarint) t.data_type = as_int32(f.value); break;
      case 8: if (f.type == kLen) t.name = f.data; break;
      case 9:
        if (f.type == kLen) {
          t.has_raw = true;
          t.raw = f.data;
        }
        break;
      case 14:
        // An enum: a value outside DataLocation is kept as an unknown field.
        if (f.type == kVarint && (as_int32(f.value) == 0 || as_int32(f.value) == 1)) t.external = as_int32(f.value) == 1;
        break;
      default: break;
    }
  });
}

std::optional<std::vector<int64_t>> read_ints(const TensorView& t, int64_t numel) {
  constexpr int64_t kMaxValueElems = 64;  // integer tensors up to this many elements are read (shape constants)
  if (numel > kMaxValueElems || t.external) return std::nullopt;
  std::vector<int64_t> v;
  const int dt = t.data_type;
  if (dt == 7) {  // INT64
    if (!t.has_raw) return varint_values(t.parts, 7, numel, false);
    if (t.raw.size() != static_cast<size_t>(numel) * 8) return std::nullopt;
    v.resize(numel);
    if (numel > 0) std::memcpy(v.data(), t.raw.data(), numel * 8);  // v.data() may be null when empty
  } else if (dt == 6 || dt == 5 || dt == 3 || dt == 2 || dt == 9) {  // INT32, INT16, INT8, UINT8, BOOL
    if (!t.has_raw) return varint_values(t.parts, 5, numel, true);
    const size_t esz = dt == 6 ? 4 : dt == 5 ? 2 : 1;
    if (t.raw.size() != static_cast<size_t>(numel) * esz) return std::nullopt;
    const char* p = t.raw.data();
    for (int64_t i = 0; i < numel; ++i) {
      int64_t x = 0;
      if (esz == 4) {
        int32_t y;
        std::memcpy(&y, p + 4 * i, 4);
        x = y;
      } else if (esz == 2) {
        int16_t y;
        std::memcpy(&y, p + 2 * i, 2);
        x = y;
      } else if (dt == 3) {
        x = static_cast<int8_t>(p[i]);
      } else {
        x = static_cast<uint8_t>(p[i]);
      }
      v.push_back(x);
    }
  } else {
    return std::nullopt;
  }
  return v;
}

std::optional<std::vector<double>> read_floats(const TensorView& t, int64_t numel) {
  if (numel > 16 || t.external) return std::nullopt;
  std::vector<double> v;
  if (t.data_type == 1) {  // FLOAT
    if (!t.has_raw) return fixed_values<float>(t.parts, 4, numel);
    if (t.raw.size() != static_cast<size_t>(numel) * 4) return std::nullopt;
    for (int64_t i = 0; i < numel; ++i) {
      float f;
      std::memcpy(&f, t.raw.data() + 4 * i, 4);
      v.push_back(f);
    }
  } else if (t.data_type == 11) {  // DOUBLE
    if (!t.has_raw) return fixed_values<double>(t.parts, 10, numel);
    if (t.raw.size() != static_cast<size_t>(numel) * 8) return std::nullopt;
    v.resize(numel);
    if (numel > 0) std::memcpy(v.data(), t.raw.data(), numel * 8);  // v.data() may be null when empty
  } else {
    return std::nullopt;
  }
  return v;
}

ValueInfoView read_value_info(std::string_view bytes) {
  ValueInfoView vi;
  Field f;
  for (Fields fields(bytes); fields.next(f);) {
    if (f.type != kLen) continue;
    if (f.number == 1) vi.name = f.data;
    if (f.number == 2) vi.type.add(f.data);
    if (f.number == 4) {
      const EntryView e = read_entry(f.data);
      if (e.key == "pkg.onnxscript.optimizer.folded_from") vi.folded_from = e.value;
    }
  }
  return vi;
}

void read_tensor_type(const Parts& type, TensorTypeView& out) {
  // TypeProto's oneof: switching members drops what the previous one merged.
  Parts tensor;
  uint32_t which = 0;
  type.each_field([&](const Field& f) {
    if (f.type != kLen) return;
    switch (f.number) {
      case 1: case 4: case 5: case 7: case 8: case 9:
        if (f.number != which) {
          which = f.number;
          tensor.clear();
        }
        if (which == 1) tensor.add(f.data);
        break;
      default: break;
    }
  });
  out.has_tensor = which == 1;
  out.elem_type = 0;
  out.shape.clear();
  tensor.each_field([&](const Field& f) {
    if (f.number == 1 && f.type == kVarint) out.elem_type = as_int32(f.value);
    if (f.number == 2 && f.type == kLen) out.shape.add(f.data);
  });
}

DimView read_dim(std::string_view bytes) {
  DimView d;
  Field f;
  for (Fields fields(bytes); fields.next(f);) {
    if (f.number == 1 && f.type == kVarint) {
      d.which = DimView::Value;
      d.value = static_cast<int64_t>(f.value);
    } else if (f.number == 2 && f.type == kLen) {
      d.which = DimView::Param;
      d.param = f.data;
    }
  }
  return d;
}

void read_node(std::string_view bytes, NodeView& n) {
  n.name = n.op_type = n.domain = {};
  n.inputs.clear();
  n.outputs.clear();
  n.metadata.clear();
  n.attrs.clear();
  n.hashes.clear();
  Field f;
  for (Fields fields(bytes); fields.next(f);) {
    if (f.type != kLen) continue;
    switch (f.number) {
      case 1: n.inputs.push_back(f.data); break;
      case 2: n.outputs.push_back(f.data); break;
      case 3: n.name = f.data; break;
      case 4: n.op_type = f.data; break;
      case 5: n.attrs.push_back(AttrRef{f.data, {}, false}); break;
      case 7: n.domain = f.data; break;
      case 9: n.metadata.push_back(f.data); break;
      default: break;
    }
  }
}

void read_attr(const AttrRef& ref, AttrView& a) {
  a.name = a.ref_attr_name = a.s = {};
  a.type = 0;
  a.has_i = a.has_f = a.has_s = false;
  a.i = 0;
  a.f = 0;
  a.t.clear();
  a.bytes = ref.bytes;
  Field f;
  for (Fields fields(ref.bytes); fields.next(f);) {
    switch (f.number) {
      case 1: if (f.type == kLen) a.name = f.data; break;
      case 21: if (f.type == kLen) a.ref_attr_name = f.data; break;
      case 20:
        // An enum: values outside AttributeType (0 to 14) are kept as unknown fields.
        if (f.type == kVarint && as_int32(f.value) >= 0 && as_int32(f.value) <= 14) a.type = as_int32(f.value);
        break;
      case 2:
        if (f.type == kFixed32) {
          a.has_f = true;
          const uint32_t bits = static_cast<uint32_t>(f.value);
          std::memcpy(&a.f, &bits, 4);
        }
        break;
      case 3:
        if (f.type == kVarint) {
          a.has_i = true;
          a.i = static_cast<int64_t>(f.value);
        }
        break;
      case 4:
        if (f.type == kLen) {
          a.has_s = true;
          a.s = f.data;
        }
        break;
      case 5: if (f.type == kLen) a.t.add(f.data); break;
      default: break;
    }
  }
  if (ref.renamed) a.name = ref.name;
}

std::vector<int64_t> attr_ints(const AttrView& a) {
  std::vector<int64_t> v;
  Field f;
  for (Fields fields(a.bytes); fields.next(f);) {
    if (f.number == 8) wire::each_varint(f, [&](int64_t x) { v.push_back(x); });
  }
  return v;
}

std::vector<double> attr_floats(const AttrView& a) {
  std::vector<double> v;
  Field f;
  for (Fields fields(a.bytes); fields.next(f);) {
    if (f.number == 7) wire::each_fixed<float>(f, [&](float x) { v.push_back(x); });
  }
  return v;
}

std::vector<std::string> attr_strings(const AttrView& a) {
  std::vector<std::string> v;
  Field f;
  for (Fields fields(a.bytes); fields.next(f);) {
    if (f.number == 9 && f.type == kLen) v.emplace_back(f.data);
  }
  return v;
}

FunctionView read_function(std::string_view bytes) {
  FunctionView fn;
  Field f;
  for (Fields fields(bytes); fields.next(f);) {
    if (f.type != kLen) continue;
    switch (f.number) {
      case 1: fn.name = f.data; break;
      case 4: fn.inputs.push_back(f.data); break;
      case 5: fn.outputs.push_back(f.data); break;
      case 7: fn.nodes.push_back(f.data); break;
      case 10: fn.domain = f.data; break;
      default: break;
    }
  }
  return fn;
}

}  // namespace memest::onnx_views
