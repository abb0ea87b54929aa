// The ONNX reader as it was before the wire-format one: libprotobuf parses a
// ModelProto, and the lowering reads the message. Kept as the oracle that the
// differential fuzz target and its replay test hold frontends/onnx_reader.cc to;
// its behaviour, not its speed, is the point.
#include "tests/fuzz/reference_reader.h"

#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/unknown_field_set.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

#include "estimator/error.h"
#include "estimator/ops/registry.h"
#include "frontends/fx_node.h"
#include "frontends/dynamo_repair.h"
#include "frontends/merged_initializers.h"
#include "frontends/scope_repair.h"
#include "frontends/onnx_reader.h"
#include "frontends/pystack.h"

namespace memest::reference {
namespace {

constexpr int64_t kMinOpset = 7;
constexpr int64_t kMaxOpset = 23;
// Integer initializers up to this many elements are read (shape constants).
constexpr int64_t kMaxValueElems = 64;

const std::set<std::string>& known_domains() {
  static const std::set<std::string> d = {
      "", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training", "com.microsoft", "org.pytorch.aten",
      "com.microsoft.nchwc", "memest", "pkg.onnxscript.torch_lib", "pkg.onnxscript.torch_lib.common",
      "pkg.torch.onnx", "ai.onnx.contrib",
  };
  return d;
}

int64_t checked_numel(const google::protobuf::RepeatedField<int64_t>& dims, const std::string& file,
                      const std::string& name) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) throw Error(file, "", "tensor '" + name + "' has a negative dimension " + std::to_string(d));
    n = checked_mul(n, d);
  }
  return n;
}

// Integer contents of a small tensor stored inline; nullopt for float, large or external data.
std::optional<std::vector<int64_t>> read_ints(const onnx::TensorProto& t, int64_t numel) {
  if (numel > kMaxValueElems || t.data_location() == onnx::TensorProto::EXTERNAL) return std::nullopt;
  std::vector<int64_t> v;
  const int dt = t.data_type();
  if (dt == onnx::TensorProto::INT64) {
    if (t.has_raw_data()) {
      if (t.raw_data().size() != static_cast<size_t>(numel) * 8) return std::nullopt;
      v.resize(numel);
      if (numel > 0) std::memcpy(v.data(), t.raw_data().data(), numel * 8);
    } else {
      if (t.int64_data_size() != numel) return std::nullopt;
      v.assign(t.int64_data().begin(), t.int64_data().end());
    }
  } else if (dt == onnx::TensorProto::INT32 || dt == onnx::TensorProto::INT16 || dt == onnx::TensorProto::INT8 ||
             dt == onnx::TensorProto::UINT8 || dt == onnx::TensorProto::BOOL) {
    if (t.has_raw_data()) {
      const size_t esz = dt == onnx::TensorProto::INT32 ? 4 : dt == onnx::TensorProto::INT16 ? 2 : 1;
      if (t.raw_data().size() != static_cast<size_t>(numel) * esz) return std::nullopt;
      const char* p = t.raw_data().data();
      for (int64_t i = 0; i < numel; ++i) {
        int64_t x = 0;
        if (esz == 4) { int32_t y; std::memcpy(&y, p + 4 * i, 4); x = y; }
        else if (esz == 2) { int16_t y; std::memcpy(&y, p + 2 * i, 2); x = y; }
        else if (dt == onnx::TensorProto::INT8) { x = static_cast<int8_t>(p[i]); }
        else { x = static_cast<uint8_t>(p[i]); }
        v.push_back(x);
      }
    } else {
      if (t.int32_data_size() != numel) return std::nullopt;
      v.assign(t.int32_data().begin(), t.int32_data().end());
    }
  } else {
    return std::nullopt;
  }
  return v;
}

// Float contents of a tiny tensor (Resize scales, scalar constants).
std::optional<std::vector<double>> read_floats(const onnx::TensorProto& t, int64_t numel) {
  if (numel > 16 || t.data_location() == onnx::TensorProto::EXTERNAL) return std::nullopt;
  std::vector<double> v;
  if (t.data_type() == onnx::TensorProto::FLOAT) {
    if (t.has_raw_data()) {
      if (t.raw_data().size() != static_cast<size_t>(numel) * 4) return std::nullopt;
      for (int64_t i = 0; i < numel; ++i) {
        float f;
        std::memcpy(&f, t.raw_data().data() + 4 * i, 4);
        v.push_back(f);
      }
    } else {
      if (t.float_data_size() != numel) return std::nullopt;
      v.assign(t.float_data().begin(), t.float_data().end());
    }
  } else if (t.data_type() == onnx::TensorProto::DOUBLE) {
    if (t.has_raw_data()) {
      if (t.raw_data().size() != static_cast<size_t>(numel) * 8) return std::nullopt;
      v.resize(numel);
      if (numel > 0) std::memcpy(v.data(), t.raw_data().data(), numel * 8);
    } else {
      if (t.double_data_size() != numel) return std::nullopt;
      v.assign(t.double_data().begin(), t.double_data().end());
    }
  } else {
    return std::nullopt;
  }
  return v;
}

Attribute lower_attribute(onnx::AttributeProto& a, const std::string& file) {
  Attribute out;
  switch (a.type()) {
    case onnx::AttributeProto::INT: out.kind = Attribute::Int; out.i = a.i(); break;
    case onnx::AttributeProto::FLOAT: out.kind = Attribute::Float; out.f = a.f(); break;
    case onnx::AttributeProto::STRING: out.kind = Attribute::String; out.s = std::move(*a.mutable_s()); break;
    case onnx::AttributeProto::INTS:
      out.kind = Attribute::Ints;
      out.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case onnx::AttributeProto::FLOATS:
      out.kind = Attribute::Floats;
      out.extra().floats.assign(a.floats().begin(), a.floats().end());
      break;
    case onnx::AttributeProto::STRINGS:
      out.kind = Attribute::Strings;
      out.extra().strings.assign(a.strings().begin(), a.strings().end());
      break;
    case onnx::AttributeProto::TENSOR: {
      out.kind = Attribute::Tensor;
      const auto& t = a.t();
      out.extra().t_dtype = dtype_from_onnx(t.data_type());
      out.extra().t_dims.assign(t.dims().begin(), t.dims().end());
      int64_t numel = checked_numel(t.dims(), file, a.name());
      out.extra().t_ints = read_ints(t, numel);
      out.extra().t_floats = read_floats(t, numel);
      break;
    }
    case onnx::AttributeProto::GRAPH:
    case onnx::AttributeProto::GRAPHS:
      out.kind = Attribute::Graph;
      break;
    default:
      // Legacy files may leave `type` unset; infer from which field is filled.
      if (a.has_i()) { out.kind = Attribute::Int; out.i = a.i(); }
      else if (a.has_f()) { out.kind = Attribute::Float; out.f = a.f(); }
      else if (a.has_s()) { out.kind = Attribute::String; out.s = a.s(); }
      else if (a.ints_size()) { out.kind = Attribute::Ints; out.ints.assign(a.ints().begin(), a.ints().end()); }
      else if (a.floats_size()) { out.kind = Attribute::Floats; out.extra().floats.assign(a.floats().begin(), a.floats().end()); }
      break;
  }
  return out;
}

// The module path of a node: the dynamo exporter's name scopes, else the legacy scoped name.
// NodeProto.metadata_props (field 9, onnx >= 1.16) is unknown to Debian's onnx 1.12
// classes, so it is read from the unknown fields as StringStringEntryProto.
std::string node_metadata(const onnx::NodeProto& n, const std::string& key) {
  const auto& unknown = n.GetReflection()->GetUnknownFields(n);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const auto& f = unknown.field(i);
    if (f.number() != 9 || f.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) continue;
    onnx::StringStringEntryProto entry;
    if (entry.ParseFromString(f.length_delimited()) && entry.key() == key) return entry.value();
  }
  return "";
}

// module_from_scoped_name() for a run of nodes: the path depends only on the name up
// to its last '/', which consecutive nodes of one module share.
class ScopeCache {
 public:
  const std::string& module(const std::string& node_name) {
    const size_t slash = node_name.rfind('/');
    const std::string_view scope = std::string_view(node_name).substr(0, slash == std::string::npos ? 0 : slash + 1);
    if (!valid_ || scope != scope_) {
      scope_.assign(scope);
      module_ = module_from_scoped_name(node_name);
      valid_ = true;
    }
    return module_;
  }

 private:
  bool valid_ = false;
  std::string scope_, module_;
};

std::string module_of(const onnx::NodeProto& n, ScopeCache& scopes, Node* node = nullptr) {
  // The dynamo exporter's "namespace": ": pkg.Root/layer1: torch.nn.Sequential/layer1.0.conv1:
  // torch.nn.Conv2d/conv2d: aten.conv2d.default". The last component names the op; the one
  // before it, the innermost module.
  const std::string ns = node_metadata(n, "namespace");
  if (!ns.empty()) {
    std::string module;
    size_t start = 0;
    while (start <= ns.size()) {
      size_t slash = ns.find('/', start);
      std::string part = ns.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
      size_t colon = part.find(": ");
      std::string name = colon == std::string::npos ? part : part.substr(0, colon);
      std::string type = colon == std::string::npos ? "" : part.substr(colon + 2);
      if (type.rfind("aten.", 0) != 0 && type.rfind("prims.", 0) != 0) {
        module = name;
        if (node) {
          node->keeps_locals = module_keeps_locals(type);
          node->casts_to_input = module_casts_to_input(type);
        }
      }
      if (node && !type.empty() && module_disables_autocast(type)) node->autocast_off = true;
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
    return module;
  }
  return scopes.module(n.name());
}

// Names, strings and node lists are moved out of the message rather than copied:
// the message is thrown away once lowered.
class Lowering {
 public:
  Lowering(Graph& g, onnx::ModelProto& m) : g_(g), m_(m) {
    for (const auto& f : m.functions()) functions_[f.domain() + "::" + f.name()] = &f;
  }

  void run() {
    auto& graph = *m_.mutable_graph();
    size_t tensors = static_cast<size_t>(graph.initializer_size()) + graph.input_size() + graph.output_size();
    for (const auto& n : graph.node()) tensors += n.output_size();
    // Room for the loss's few tensors too, so appending them moves nothing.
    g_.reserve(tensors + 8, static_cast<size_t>(graph.node_size()) + 4);
    for (auto& init : *graph.mutable_initializer()) lower_initializer(init);
    for (const auto& sp : graph.sparse_initializer()) {
      int id = g_.tensor_id(sp.values().name());
      Tensor& t = g_.tensors[id];
      t.kind = TensorKind::Parameter;
      t.dtype = dtype_from_onnx(sp.values().data_type());
      Shape s;
      for (int64_t d : sp.dims()) s.push_back(Expr(d));
      t.shape = std::move(s);
    }
    // Initializers (and only they) have the ids below this.
    const int initializers = static_cast<int>(g_.tensors.size());
    for (const auto& in : graph.input()) {
      if (g_.find_tensor(in.name()) >= 0 && g_.find_tensor(in.name()) < initializers) continue;  // IR < 4 lists initializers as inputs too
      int id = g_.tensor_id(in.name());
      Tensor& t = g_.tensors[id];
      t.kind = TensorKind::Input;
      lower_type(in, t, /*is_input=*/true);
      g_.inputs.push_back(id);
    }
    for (const auto& vi : graph.value_info()) {
      int id = g_.tensor_id(vi.name());
      Tensor probe;
      lower_type(vi, probe, false);
      if (probe.shape) g_.tensors[id].declared = *probe.shape;
      if (g_.tensors[id].dtype == DType::Undefined) g_.tensors[id].dtype = probe.dtype;
    }
    for (auto& n : *graph.mutable_node()) lower_node(n, "", {}, "");
    for (const auto& out : graph.output()) {
      if (out.name().empty()) continue;
      int id = g_.tensor_id(out.name());
      g_.tensors[id].graph_output = true;
      Tensor probe;
      lower_type(out, probe, false);
      if (probe.shape && !g_.tensors[id].declared) g_.tensors[id].declared = *probe.shape;
      g_.outputs.push_back(id);
    }
  }

 private:
  void lower_initializer(onnx::TensorProto& init) {
    int id = g_.adopt_tensor(std::move(*init.mutable_name()));
    Tensor& t = g_.tensors[id];
    t.dtype = dtype_from_onnx(init.data_type());
    int64_t numel = checked_numel(init.dims(), g_.file, t.name);
    Shape s;
    s.reserve(static_cast<size_t>(init.dims_size()));
    for (int64_t d : init.dims()) s.push_back(Expr(d));
    t.shape = std::move(s);
    if (is_floating(t.dtype)) {
      t.kind = TensorKind::Parameter;  // refined by classify_initializers()
      t.fvalue = read_floats(init, numel);
    } else if (auto v = read_ints(init, numel)) {
      t.kind = TensorKind::Constant;
      t.value = std::vector<Expr>(v->begin(), v->end());
    } else {
      t.kind = TensorKind::Buffer;
    }
    t.module = module_from_param_name(t.name);
  }

  void lower_type(const onnx::ValueInfoProto& vi, Tensor& t, bool is_input) {
    if (!vi.has_type() || !vi.type().has_tensor_type()) return;
    const auto& tt = vi.type().tensor_type();
    t.dtype = dtype_from_onnx(tt.elem_type());
    if (!tt.has_shape()) return;
    Shape s;
    int k = 0;
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value()) {
        if (d.dim_value() < 0) throw Error(g_.file, "", "'" + vi.name() + "' declares a negative dimension");
        s.push_back(Expr(d.dim_value()));
      } else if (d.has_dim_param() && !d.dim_param().empty()) {
        // A formula is an expression over the input dims ("64*batch"); one beyond
        // polynomials is undecided inside the graph and an opaque name on an input.
        if (auto e = parse_expr(d.dim_param())) {
          s.push_back(std::move(*e));
        } else if (is_input) {
          s.push_back(Expr::symbol(d.dim_param()));
        } else {
          return;
        }
      } else if (is_input) {
        s.push_back(Expr::symbol(vi.name() + "_dim" + std::to_string(k)));
      } else {
        return;  // an unnamed unknown dim inside the graph: leave it to the shape pass
      }
      ++k;
    }
    t.shape = std::move(s);
  }

  // Lowers one node; `prefix` and `rename` serve function inlining.
  // symbolic_opset11.squeeze's If (frontends/squeeze_if.h), read from the protobuf: the
  // squeezed tensor's name and the axis, or nullopt.
  static std::optional<std::pair<std::string, int64_t>> dynamic_squeeze(const onnx::NodeProto& n) {
    if (n.input_size() != 1 || n.output_size() != 1) return std::nullopt;
    const onnx::GraphProto* then_g = nullptr;
    const onnx::GraphProto* else_g = nullptr;
    for (const auto& a : n.attribute()) {
      if (a.name() == "then_branch" && a.has_g()) then_g = &a.g();
      if (a.name() == "else_branch" && a.has_g()) else_g = &a.g();
    }
    if (!then_g || !else_g || then_g->output_size() != 1 || else_g->output_size() != 1 || else_g->node_size() != 1 ||
        then_g->node_size() > 2) {
      return std::nullopt;
    }
    auto plain = [](const onnx::NodeProto& x) { return x.domain().empty() || x.domain() == "ai.onnx"; };
    const onnx::NodeProto& id = else_g->node(0);
    if (id.op_type() != "Identity" || !plain(id) || id.input_size() != 1 || id.output_size() != 1 ||
        id.output(0) != else_g->output(0).name()) {
      return std::nullopt;
    }
    auto maker = [&](const std::string& name) -> const onnx::NodeProto* {
      for (const auto& x : then_g->node()) {
        for (const auto& o : x.output()) {
          if (o == name) return &x;
        }
      }
      return nullptr;
    };
    const onnx::NodeProto* sq = maker(then_g->output(0).name());
    if (!sq || sq->op_type() != "Squeeze" || !plain(*sq) || sq->input_size() < 1 || sq->input(0) != id.input(0)) {
      return std::nullopt;
    }
    std::optional<int64_t> axis;
    if (sq->input_size() == 2) {
      const onnx::NodeProto* c = maker(sq->input(1));
      if (!c || c->op_type() != "Constant" || !plain(*c)) return std::nullopt;
      for (const auto& a : c->attribute()) {
        if (a.name() == "value_ints" && a.ints_size() == 1) axis = a.ints(0);
        if (a.name() != "value" || !a.has_t()) continue;
        const onnx::TensorProto& t = a.t();
        if (t.int64_data_size() == 1) axis = t.int64_data(0);
        if (t.raw_data().size() == 8) {
          int64_t v;
          std::memcpy(&v, t.raw_data().data(), 8);
          axis = v;
        }
      }
    } else {
      for (const auto& a : sq->attribute()) {
        if (a.name() == "axes" && a.ints_size() == 1) axis = a.ints(0);
      }
    }
    if (!axis) return std::nullopt;
    return std::make_pair(id.input(0), *axis);
  }

  void lower_node(onnx::NodeProto& n, const std::string& prefix,
                  const std::unordered_map<std::string, std::string>& rename, const std::string& outer_module) {
    auto map_name = [&](const std::string& s) -> std::string {
      if (s.empty()) return s;
      auto it = rename.find(s);
      if (it != rename.end()) return it->second;
      return prefix.empty() ? s : prefix + s;
    };
    static const std::string kDefaultDomain;
    const std::string& dom = n.domain() == "ai.onnx" ? kDefaultDomain : n.domain();
    if (!functions_.empty()) {
      auto fn = functions_.find(dom + "::" + n.op_type());
      if (fn != functions_.end() && depth_ < 16) {
        inline_function(*fn->second, n, map_name, outer_module);
        return;
      }
    }
    if (n.op_type() == "If" && dom.empty()) {
      if (const auto sq = dynamic_squeeze(n)) {
        onnx::NodeProto m;
        m.set_name(n.name());
        m.set_op_type("SqueezeIf");
        m.set_domain("memest");
        m.add_input(sq->first);
        m.add_input(n.input(0));
        m.add_output(n.output(0));
        // The metadata (NodeProto field 9, unknown to this onnx's schema) goes along.
        m.GetReflection()->MutableUnknownFields(&m)->MergeFrom(n.GetReflection()->GetUnknownFields(n));
        onnx::AttributeProto* axes = m.add_attribute();
        axes->set_name("axes");
        axes->set_type(onnx::AttributeProto::INTS);
        axes->add_ints(sq->second);
        lower_node(m, prefix, rename, outer_module);
        return;
      }
    }
    if (!known_domains().count(dom)) {
      throw Error(g_.file, n.name().empty() ? n.op_type() : n.name(),
                  "op " + n.op_type() + " is in domain '" + dom + "', which memest does not know");
    }
    Node& node = g_.nodes.emplace_back();
    node.domain = dom;
    node.module = module_of(n, scopes_, &node);
    if (node.module.empty()) node.module = outer_module;
    const std::string trace = node_metadata(n, "pkg.torch.onnx.stack_trace");
    if (!trace.empty()) node.py_stack = stacks_.read(trace, node_metadata(n, "namespace"));
    if (node_metadata(n, "namespace").find("scaled_dot_product_attention") != std::string::npos) {
      if (n.op_type() == "Softmax") {
        Attribute one;
        one.i = 1;
        node.attrs["from_sdpa"] = one;
      }
      if (const auto p = fx_sdpa_dropout(node_metadata(n, "pkg.torch.onnx.fx_node")); p && *p > 0) {
        Attribute a;
        a.kind = Attribute::Float;
        a.f = *p;
        node.attrs["sdpa_dropout_p"] = a;
      }
    }
    // Outside inlined functions (nearly always) a name is the tensor's own, and a new
    // tensor takes it from the message.
    const bool as_is = prefix.empty() && rename.empty();
    auto id_of = [&](std::string& s) {
      if (s.empty()) return -1;
      return as_is ? g_.adopt_tensor(std::move(s)) : g_.tensor_id(map_name(s));
    };
    node.inputs.reserve(static_cast<size_t>(n.input_size()));
    node.outputs.reserve(static_cast<size_t>(n.output_size()));
    // Links as Graph::relink() makes them, built while each tensor is at hand.
    const int index = static_cast<int>(g_.nodes.size()) - 1;
    for (auto& in : *n.mutable_input()) {
      const int id = id_of(in);
      node.inputs.push_back(id);
      if (id >= 0) g_.tensors[id].consumers.push_back(index);
    }
    for (auto& out : *n.mutable_output()) {
      const int id = id_of(out);
      node.outputs.push_back(id);
      if (id >= 0) g_.tensors[id].producer = index;
    }
    node.attrs.reserve(static_cast<size_t>(n.attribute_size()));
    for (auto& a : *n.mutable_attribute()) {
      Attribute attr = lower_attribute(a, g_.file);
      if (attr.kind == Attribute::Graph && subgraph_ops_.insert(n.op_type()).second) {
        g_.warn(n.op_type() + " nodes hold subgraphs (the first: '" + (n.name().empty() ? n.op_type() : n.name()) +
                "'); memest does not look inside them");
      }
      node.attrs.emplace(a.name(), std::move(attr));
    }
    if (!prefix.empty()) {
      node.name = prefix + n.name();
    } else if (!n.name().empty()) {
      node.name = std::move(*n.mutable_name());
    }
    node.op = std::move(*n.mutable_op_type());
  }

  template <typename MapName>
  void inline_function(const onnx::FunctionProto& f, const onnx::NodeProto& call, MapName map_name,
                       const std::string& outer_module) {
    ++depth_;
    std::string inner = "__" + f.name() + std::to_string(inlined_++) + "/";
    std::unordered_map<std::string, std::string> rename;
    for (int i = 0; i < f.input_size() && i < call.input_size(); ++i) rename[f.input(i)] = map_name(call.input(i));
    for (int i = 0; i < f.output_size() && i < call.output_size(); ++i) {
      rename[f.output(i)] = map_name(call.output(i));
    }
    // Attribute references inside a function are resolved from the call site.
    std::string module = module_of(call, scopes_);
    if (module.empty()) module = outer_module;
    for (const auto& fn : f.node()) {
      onnx::NodeProto copy = fn;
      for (auto& a : *copy.mutable_attribute()) {
        if (a.ref_attr_name().empty()) continue;
        for (const auto& ca : call.attribute()) {
          if (ca.name() == a.ref_attr_name()) {
            std::string name = a.name();
            a = ca;
            a.set_name(name);
          }
        }
      }
      lower_node(copy, inner, rename, module);
    }
    --depth_;
  }

  Graph& g_;
  onnx::ModelProto& m_;
  std::unordered_map<std::string, const onnx::FunctionProto*> functions_;
  ScopeCache scopes_;
  PyStackReader stacks_{g_.python};
  int depth_ = 0;
  std::set<std::string> subgraph_ops_;  // op types whose subgraphs were warned of
  int inlined_ = 0;
};

// Floating initializers are parameters unless they are BatchNorm running
// statistics (buffers) or scalar literals the exporter lifted (constants).
// The links are the reader's (no node is dead yet).
void classify_initializers(Graph& g) {
  for (auto& t : g.tensors) {
    if (t.kind != TensorKind::Parameter) continue;
    bool stats = t.name.find("running_mean") != std::string::npos ||
                 t.name.find("running_var") != std::string::npos;
    for (int c : t.consumers) {
      const Node& n = g.nodes[c];
      if (n.op == "BatchNormalization" && n.inputs.size() > 4) {
        int id = static_cast<int>(&t - g.tensors.data());
        stats |= n.inputs[3] == id || n.inputs[4] == id;
      }
    }
    if (stats) {
      t.kind = TensorKind::Buffer;
      continue;
    }
    int64_t numel = 1;
    for (const auto& d : *t.shape) numel = checked_mul(numel, d.as_const().value_or(1));
    if (numel <= 1 && t.name.find('.') == std::string::npos) t.kind = TensorKind::Constant;
  }
}

// The names the TorchScript helper lists as buffers (it knows exactly which initializers are).
std::vector<std::string> declared_buffers(const onnx::ModelProto& model) {
  std::vector<std::string> names;
  for (const auto& p : model.metadata_props()) {
    if (p.key() != "memest.buffers") continue;
    size_t start = 0;
    while (start < p.value().size()) {
      size_t comma = p.value().find(',', start);
      names.push_back(p.value().substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return names;
}

// The targets of the dynamo exporter's graph signature listed as `kind`, when the graph
// has one: GraphProto.metadata_props is field 16 (onnx >= 1.18), unknown to Debian's
// classes, so it is read from the unknown fields.
std::optional<std::vector<std::string>> exported_targets(const onnx::GraphProto& graph, const std::string& kind) {
  std::optional<std::vector<std::string>> out;
  const auto& unknown = graph.GetReflection()->GetUnknownFields(graph);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const auto& f = unknown.field(i);
    if (f.number() != 16 || f.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) continue;
    onnx::StringStringEntryProto entry;
    if (!entry.ParseFromString(f.length_delimited())) continue;
    if (entry.key() != "pkg.torch.export.ExportedProgram.graph_signature") continue;
    if (!out) out.emplace();
    const std::string& v = entry.value();
    const std::string tag = ": " + kind + " target='";
    for (size_t at = v.find(tag); at != std::string::npos; at = v.find(tag, at + 1)) {
      const size_t start = at + tag.size(), end = v.find('\'', start);
      if (end == std::string::npos) break;
      out->push_back(v.substr(start, end - start));
    }
  }
  return out;
}

// Parses and lowers `bytes`; when `owner` holds them, they are freed as soon as the
// message is parsed, and the message as soon as it is lowered, so the file, the
// message and the IR are never all resident at once.
Graph read_model(std::string_view bytes, std::string* owner, const std::string& file) {
  if (bytes.empty()) throw Error(file, "", "the file is empty, not an ONNX model");
  Graph g;
  g.file = file;
  std::vector<std::string> buffers;
  std::optional<std::vector<std::string>> params;
  std::vector<std::string> lifted;  // BUFFER and CONSTANT_TENSOR targets
  {
    // The message tree lives on an arena: parsing a large graph is then a few big
    // allocations instead of one per node and string, and freeing it is one more.
    google::protobuf::ArenaOptions arena_opts;
    arena_opts.start_block_size = std::min<size_t>(std::max<size_t>(bytes.size() * 2, 4096), size_t{64} << 20);
    arena_opts.max_block_size = size_t{64} << 20;
    google::protobuf::Arena arena(arena_opts);
    onnx::ModelProto& model = *google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
    {
      google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
      google::protobuf::io::CodedInputStream coded(&raw);
      coded.SetTotalBytesLimit(INT32_MAX);
      coded.SetRecursionLimit(64);
      if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
        throw Error(file, "", "not a valid ONNX model (the protobuf is truncated or corrupt)");
      }
    }
    if (owner) std::string().swap(*owner);
    if (!model.has_graph() || model.ir_version() <= 0) {
      throw Error(file, "", "not an ONNX model (no graph or IR version in the protobuf)");
    }
    g.producer = model.producer_name() + (model.producer_version().empty() ? "" : " " + model.producer_version());
    for (const auto& op : model.opset_import()) {
      if (op.domain().empty() || op.domain() == "ai.onnx") g.opset = op.version();
    }
    if (g.opset == 0) g.opset = model.opset_import_size() ? kMinOpset : 1;
    if (g.opset > kMaxOpset) {
      throw Error(file, "", "opset " + std::to_string(g.opset) + " is newer than memest supports (" +
                                std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) + ")");
    }
    if (g.opset < kMinOpset) {
      g.warn("opset " + std::to_string(g.opset) + " is older than 7; shapes follow opset 7 rules");
    }
    params = exported_targets(model.graph(), "PARAMETER");
    for (const char* kind : {"BUFFER", "CONSTANT_TENSOR"}) {
      for (auto& name : exported_targets(model.graph(), kind).value_or(std::vector<std::string>{})) {
        lifted.push_back(std::move(name));
      }
    }
    Lowering(g, model).run();
    place_untraced_nodes(g);
    buffers = declared_buffers(model);
  }
  classify_initializers(g);
  if (params) {
    const std::vector<std::string_view> listed(params->begin(), params->end());
    keep_exported_parameters(g, listed, std::vector<std::string_view>(lifted.begin(), lifted.end()));
    restore_dropped_biases(g, listed);
  }
  for (const auto& name : buffers) {
    int id = g.find_tensor(name);
    if (id >= 0) g.tensors[id].kind = TensorKind::Buffer;
  }
  // The dynamo exporter's namespaces carry whole module paths, so the legacy exporter's
  // scope repair has nothing to mend there, and it would mis-mend: a module reading an
  // initializer the exporter merged across modules (focalnet's final `norm` reading
  // layers.3.downsample.norm.weight) looked like a scope that lost its path, and moved
  // into that module, so the merged weight was split one copy short.
  if (g.python.empty()) {
    recover_module_paths(g);
  } else {
    split_deduplicated_initializers(g);
  }
  return g;
}

}  // namespace

Graph read_onnx_bytes(const std::string& bytes, const std::string& file) {
  return read_model(bytes, nullptr, file);
}

}  // namespace memest::reference
