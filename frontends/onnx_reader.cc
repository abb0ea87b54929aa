// ONNX frontend. Checks the protobuf against onnx.proto's schema, then lowers the
// model straight from the file's bytes (no message objects): tensors, nodes and
// attributes, with model-local functions inlined. Tensor bytes are read only for
// small integer (and tiny float) constants, which shape arithmetic needs; weights
// are never read, so a model whose external-data file is absent works.
#include "frontends/onnx_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "estimator/error.h"
#include "estimator/ops/registry.h"
#include "frontends/onnx_schema.h"
#include "frontends/dynamo_repair.h"
#include "frontends/export_signature.h"
#include "frontends/unread_parameters.h"
#include "frontends/cofolded_parameters.h"
#include "frontends/merged_initializers.h"
#include "frontends/parameter_images.h"
#include "frontends/linear_inputs.h"
#include "frontends/squeeze_if.h"
#include "frontends/fx_node.h"
#include "frontends/scope_repair.h"
#include "frontends/onnx_views.h"
#include "frontends/pystack.h"

namespace memest {
namespace {

using namespace onnx_views;

constexpr int64_t kMinOpset = 7;
constexpr int64_t kMaxOpset = 23;

bool known_domain(std::string_view d) {
  static constexpr std::string_view kKnown[] = {
      "", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training", "com.microsoft", "org.pytorch.aten",
      "com.microsoft.nchwc", "memest", "pkg.onnxscript.torch_lib", "pkg.onnxscript.torch_lib.common",
      "pkg.torch.onnx", "ai.onnx.contrib",
  };
  for (std::string_view k : kKnown) {
    if (d == k) return true;
  }
  return false;
}

int64_t checked_numel(const std::vector<int64_t>& dims, const std::string& file, std::string_view name) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) {
      throw Error(file, "", "tensor '" + std::string(name) + "' has a negative dimension " + std::to_string(d));
    }
    n = checked_mul(n, d);
  }
  return n;
}

Shape shape_of(const std::vector<int64_t>& dims) {
  Shape s;
  s.reserve(dims.size());
  for (int64_t d : dims) s.push_back(Expr(d));
  return s;
}

// The value of a node's metadata_props entry under `key`: the first entry that
// parses as a StringStringEntryProto and has that key ("" when none does).
std::string_view node_metadata(const NodeView& n, std::string_view key) {
  for (std::string_view bytes : n.metadata) {
    if (!onnx_schema::check_entry(bytes)) continue;
    const EntryView e = read_entry(bytes);
    if (e.key == key) return e.value;
  }
  return {};
}


// module_from_scoped_name() for a run of nodes: the path depends only on the name up
// to its last '/', which consecutive nodes of one module share.
// Interned here, once per scope: consecutive nodes share a scope, and interning looks
// the name up in the pool of every module of the graph.
// Beside it, the containers the scopes show called as a whole (called_containers).
class ScopeCache {
 public:
  Atom module(std::string_view node_name) {
    const size_t slash = node_name.rfind('/');
    const std::string_view scope = node_name.substr(0, slash == std::string_view::npos ? 0 : slash + 1);
    if (!valid_ || scope != scope_) {
      scope_.assign(scope);
      module_ = module_from_scoped_name(node_name, &containers);
      valid_ = true;
    }
    return module_;
  }
  /// Graph::called_containers, as the nodes read so far show them.
  std::set<std::string> containers;

 private:
  bool valid_ = false;
  std::string scope_;
  Atom module_;
};

// With `node`, also what the module classes say of it (ops/modules.cc): whether one of
// them disables autocast, and whether the innermost keeps locals or casts to its input's
// dtype. `ns`: the node's "namespace" metadata ("" when none).
Atom module_of(const NodeView& n, std::string_view ns, ScopeCache& scopes, Node* node = nullptr) {
  // The dynamo exporter's "namespace": ": pkg.Root/layer1: torch.nn.Sequential/layer1.0.conv1:
  // torch.nn.Conv2d/conv2d: aten.conv2d.default". The last component names the op; the one
  // before it, the innermost module.
  if (!ns.empty()) {
    std::string_view module;
    size_t start = 0;
    while (start <= ns.size()) {
      const size_t slash = ns.find('/', start);
      const std::string_view part = ns.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
      const size_t colon = part.find(": ");
      const std::string_view name = colon == std::string_view::npos ? part : part.substr(0, colon);
      const std::string_view type = colon == std::string_view::npos ? std::string_view() : part.substr(colon + 2);
      if (!type.starts_with("aten.") && !type.starts_with("prims.")) {
        if (!module.empty() && is_numbered_child(name, module)) scopes.containers.emplace(module);
        module = name;
        if (node) {
          node->keeps_locals = module_keeps_locals(type);
          node->casts_to_input = module_casts_to_input(type);
        }
      }
      if (node && !type.empty() && module_disables_autocast(type)) node->autocast_off = true;
      if (slash == std::string_view::npos) break;
      start = slash + 1;
    }
    return Atom(module);
  }
  return scopes.module(n.name);
}

using Rename = std::unordered_map<std::string, std::string>;

class Lowering {
 public:
  Lowering(Graph& g, const ModelView& m, const onnx_schema::ModelCheck& check) : g_(g), m_(m), check_(check) {
    for (std::string_view bytes : m.functions) {
      functions_.push_back(read_function(bytes));
      const FunctionView& f = functions_.back();
      function_index_[std::string(f.domain) + "::" + std::string(f.name)] = functions_.size() - 1;
    }
  }

  void run() {
    const GraphView& graph = check_.graph;
    const size_t tensors = graph.initializers.size() + graph.inputs.size() + graph.outputs.size() + check_.node_outputs;
    // Room for the loss's few tensors too, so appending them moves nothing.
    g_.reserve(tensors + 8, graph.nodes + 4);
    for (std::string_view init : graph.initializers) lower_initializer(init);
    for (std::string_view sp : graph.sparse_initializers) lower_sparse_initializer(sp);
    // Initializers (and only they) have the ids below this.
    const int initializers = static_cast<int>(g_.tensors.size());
    for (std::string_view bytes : graph.inputs) {
      const ValueInfoView in = read_value_info(bytes);
      const int known = g_.find_tensor(in.name);
      if (known >= 0 && known < initializers) continue;  // IR < 4 lists initializers as inputs too
      const int id = g_.tensor_id(in.name);
      Tensor& t = g_.tensors[id];
      t.kind = TensorKind::Input;
      lower_type(in, t, /*is_input=*/true);
      g_.inputs.push_back(id);
    }
    for (std::string_view bytes : graph.value_infos) {
      const ValueInfoView vi = read_value_info(bytes);
      const int id = g_.tensor_id(vi.name);
      Tensor probe;
      lower_type(vi, probe, false);
      if (probe.shape) g_.tensors[id].declared = *probe.shape;
      if (g_.tensors[id].dtype == DType::Undefined) g_.tensors[id].dtype = probe.dtype;
      if (!vi.folded_from.empty() && id < initializers) folded_from_.emplace_back(id, vi.folded_from);
    }
    lower_nodes();
    g_.called_containers.assign(scopes_.containers.begin(), scopes_.containers.end());
    for (std::string_view bytes : graph.outputs) {
      const ValueInfoView out = read_value_info(bytes);
      if (out.name.empty()) continue;
      const int id = g_.tensor_id(out.name);
      g_.tensors[id].graph_output = true;
      Tensor probe;
      lower_type(out, probe, false);
      if (probe.shape && !g_.tensors[id].declared) g_.tensors[id].declared = *probe.shape;
      g_.outputs.push_back(id);
    }
  }

  /// The inputs BatchNormalization nodes take as running mean and variance.
  const std::vector<int>& bn_statistics() const { return bn_statistics_; }
  /// Per node, its FX call ("pkg.torch.onnx.fx_node"; "" for none): views into the file.
  const std::vector<std::string_view>& fx_calls() const { return fx_calls_; }
  /// Initializers the exporter folded, with what it folded into each (TensorView::folded_from).
  const std::vector<std::pair<int, std::string_view>>& folded_from() const { return folded_from_; }

 private:
  // The graph's nodes pass through a short pipeline: each is decoded a few nodes
  // ahead of its lowering, its names hashed and their index slots prefetched, then
  // the tensors those slots name. A million-node graph's lookups then overlap their
  // waits on memory instead of taking them one at a time. (A small graph's index
  // stays in cache: there the hints would only cost.)
  void lower_nodes() {
    static const Rename kNoRename;
    static const std::string kNoPrefix;
    const bool hint = check_.graph.nodes >= 32768;
    size_t read = 0, lowered = 0;
    auto lower_next = [&] {
      lower_node(ahead_[lowered % kAhead], kNoPrefix, kNoRename, kNoPrefix);
      ++lowered;
    };
    each_node(m_.graph, [&](std::string_view bytes) {
      NodeView& n = ahead_[read % kAhead];
      read_node(bytes, n);
      for (auto names : {&n.inputs, &n.outputs}) {
        for (std::string_view s : *names) n.hashes.push_back(Graph::name_hash(s));
      }
      if (hint) {
        for (uint32_t h : n.hashes) g_.prefetch_slot(h);
      }
      if (hint && read >= kAhead / 2) {
        for (uint32_t h : ahead_[(read - kAhead / 2) % kAhead].hashes) g_.prefetch_tensor(h);
      }
      ++read;
      if (read - lowered == kAhead) lower_next();
    });
    while (lowered < read) lower_next();
  }

  void lower_initializer(std::string_view bytes) {
    TensorView init;
    init.parts.add(bytes);
    read_tensor(init, dims_);
    const int id = g_.tensor_id(init.name);
    Tensor& t = g_.tensors[id];
    t.dtype = dtype_from_onnx(init.data_type);
    const int64_t numel = checked_numel(dims_, g_.file, t.name);
    t.shape = shape_of(dims_);
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

  void lower_sparse_initializer(std::string_view bytes) {
    TensorView values;
    std::vector<int64_t> dims;
    wire::Field f;
    for (wire::Fields fields(bytes); fields.next(f);) {
      if (f.number == 1 && f.type == wire::kLen) values.parts.add(f.data);
      if (f.number == 3) wire::each_varint(f, [&](int64_t d) { dims.push_back(d); });
    }
    read_tensor(values, dims_);
    const int id = g_.tensor_id(values.name);
    Tensor& t = g_.tensors[id];
    t.kind = TensorKind::Parameter;
    t.dtype = dtype_from_onnx(values.data_type);
    t.shape = shape_of(dims);
  }

  void lower_type(const ValueInfoView& vi, Tensor& t, bool is_input) {
    if (vi.type.empty()) return;
    read_tensor_type(vi.type, type_);
    if (!type_.has_tensor) return;
    t.dtype = dtype_from_onnx(type_.elem_type);
    if (type_.shape.empty()) return;
    Shape s;
    int k = 0;
    bool unknown = false;
    type_.shape.each_field([&](const wire::Field& f) {
      if (unknown || f.number != 1 || f.type != wire::kLen) return;
      const DimView d = read_dim(f.data);
      if (d.which == DimView::Value) {
        if (d.value < 0) throw Error(g_.file, "", "'" + std::string(vi.name) + "' declares a negative dimension");
        s.push_back(Expr(d.value));
      } else if (d.which == DimView::Param && !d.param.empty()) {
        // An exporter names a computed dim by its formula ("64*batch", "s0 + 1"):
        // that is an expression over the input dims, never a new dim to ask for.
        // A formula beyond polynomials (floor, Max) inside the graph is left to the
        // shape pass; on an input it stays one opaque name, as the user wrote it.
        if (auto e = parse_expr(d.param)) {
          s.push_back(std::move(*e));
        } else if (is_input) {
          s.push_back(Expr::symbol(std::string(d.param)));
        } else {
          unknown = true;
          return;
        }
      } else if (is_input) {
        s.push_back(Expr::symbol(std::string(vi.name) + "_dim" + std::to_string(k)));
      } else {
        unknown = true;  // an unnamed unknown dim inside the graph: leave it to the shape pass
        return;
      }
      ++k;
    });
    if (!unknown) t.shape = std::move(s);
  }

  Attribute lower_attribute(const AttrView& a) {
    Attribute out;
    switch (a.type) {
      case 2: out.kind = Attribute::Int; out.i = a.i; break;  // INT
      case 1: out.kind = Attribute::Float; out.f = a.f; break;  // FLOAT
      case 3: out.kind = Attribute::String; out.s = a.s; break;  // STRING
      case 7:  // INTS
        out.kind = Attribute::Ints;
        out.ints = attr_ints(a);
        break;
      case 6:  // FLOATS
        out.kind = Attribute::Floats;
        out.extra().floats = attr_floats(a);
        break;
      case 8:  // STRINGS
        out.kind = Attribute::Strings;
        out.extra().strings = attr_strings(a);
        break;
      case 4: {  // TENSOR
        out.kind = Attribute::Tensor;
        TensorView t;
        t.parts = a.t;
        read_tensor(t, dims_);
        out.extra().t_dtype = dtype_from_onnx(t.data_type);
        out.extra().t_dims = dims_;
        const int64_t numel = checked_numel(dims_, g_.file, a.name);
        out.extra().t_ints = read_ints(t, numel);
        out.extra().t_floats = read_floats(t, numel);
        break;
      }
      case 5:   // GRAPH
      case 10:  // GRAPHS
        out.kind = Attribute::Graph;
        break;
      default:
        // Legacy files may leave `type` unset; infer from which field is filled.
        if (a.has_i) {
          out.kind = Attribute::Int;
          out.i = a.i;
        } else if (a.has_f) {
          out.kind = Attribute::Float;
          out.f = a.f;
        } else if (a.has_s) {
          out.kind = Attribute::String;
          out.s = a.s;
        } else if (auto ints = attr_ints(a); !ints.empty()) {
          out.kind = Attribute::Ints;
          out.ints = std::move(ints);
        } else if (auto floats = attr_floats(a); !floats.empty()) {
          out.kind = Attribute::Floats;
          out.extra().floats = std::move(floats);
        }
        break;
    }
    return out;
  }

  // The If of a dynamic squeeze as memest::SqueezeIf(x, cond), axes [d] (squeeze_if.h).
  NodeView squeeze_if(const NodeView& n, const DynamicSqueeze& sq) {
    NodeView m;
    m.name = n.name;
    m.op_type = "SqueezeIf";
    m.domain = "memest";
    m.metadata = n.metadata;
    m.inputs = {sq.input, n.inputs[0]};
    m.outputs = n.outputs;
    squeeze_axes_.emplace_back();
    m.attrs.push_back(AttrRef{axes_attribute(sq.axis), {}, false});
    return m;
  }

  // An AttributeProto `axes` = [axis], kept alive by the reader (squeeze_axes_).
  std::string_view axes_attribute(int64_t axis) {
    std::string& b = squeeze_axes_.back();
    b.clear();
    auto varint = [&b](uint64_t v) {
      while (v >= 0x80) {
        b.push_back(static_cast<char>((v & 0x7f) | 0x80));
        v >>= 7;
      }
      b.push_back(static_cast<char>(v));
    };
    b.push_back(0x0a);  // field 1 (name), length-delimited
    varint(4);
    b += "axes";
    b.push_back(0x40);  // field 8 (ints), varint
    varint(static_cast<uint64_t>(axis));
    b.push_back(0x50);  // field 20 (type) = INTS (7)
    varint(7);
    return b;
  }

  // Lowers one node; `prefix` and `rename` serve function inlining.
  void lower_node(const NodeView& n, const std::string& prefix, const Rename& rename, const std::string& outer_module) {
    auto map_name = [&](std::string_view s) -> std::string {
      if (s.empty()) return std::string();
      if (!rename.empty()) {
        auto it = rename.find(std::string(s));
        if (it != rename.end()) return it->second;
      }
      return prefix + std::string(s);
    };
    const std::string_view dom = n.domain == "ai.onnx" ? std::string_view() : n.domain;
    if (!function_index_.empty()) {
      auto fn = function_index_.find(std::string(dom) + "::" + std::string(n.op_type));
      if (fn != function_index_.end() && depth_ < 16) {
        inline_function(functions_[fn->second], n, map_name, outer_module);
        return;
      }
    }
    if (n.op_type == "If" && dom.empty()) {
      if (const auto sq = dynamic_squeeze(n)) {
        lower_node(squeeze_if(n, *sq), prefix, rename, outer_module);
        return;
      }
    }
    if (!known_domain(dom)) {
      throw Error(g_.file, std::string(n.name.empty() ? n.op_type : n.name),
                  "op " + std::string(n.op_type) + " is in domain '" + std::string(dom) + "', which memest does not know");
    }
    if (!prefix.empty()) count_expansion();
    Node& node = g_.nodes.emplace_back();
    node.domain = dom;
    // The dynamo exporter's metadata, looked up once: the namespace serves the module
    // path, the aten call and the BatchNorm repair below.
    const std::string_view ns = n.metadata.empty() ? std::string_view() : node_metadata(n, "namespace");
    node.module = module_of(n, ns, scopes_, &node);
    if (node.module.empty()) node.module = outer_module;
    std::string_view trace;  // the stack trace, read once (py_stack, mark_rms_norm)
    if (!n.metadata.empty()) {
      trace = node_metadata(n, "pkg.torch.onnx.stack_trace");
      if (!trace.empty()) node.py_stack = stacks_.read(trace, ns);
      mark_autocast_block(trace, node);
      node.call = aten_call(ns);
      const std::string_view fx = node_metadata(n, "pkg.torch.onnx.fx_node");
      if (!fx.empty()) {
        fx_calls_.resize(g_.nodes.size());
        fx_calls_.back() = fx;
      }
      // The exporter's scaled_dot_product_attention drops dropout_p from the graph; the
      // FX call still says it (fuse.cc gives it to the Attention it builds).
      if (ns.find("scaled_dot_product_attention") != std::string_view::npos) {
        // The softmax of an SDPA call: fuse.cc then needs no scale split to know it (a call
        // with scale=1.0, T5's, is exported with none).
        if (n.op_type == "Softmax") {
          Attribute one;
          one.i = 1;
          node.attrs["from_sdpa"] = one;
        }
        if (const auto p = fx_sdpa_dropout(fx); p && *p > 0) {
          Attribute a;
          a.kind = Attribute::Float;
          a.f = *p;
          node.attrs["sdpa_dropout_p"] = a;
        }
      }
    }
    // Outside inlined functions (nearly always) a name is the tensor's own.
    const bool as_is = prefix.empty() && rename.empty();
    const bool hashed = as_is && n.hashes.size() == n.inputs.size() + n.outputs.size();
    size_t k = 0;  // the name's position in n.hashes
    auto id_of = [&](std::string_view s) {
      const size_t at = k++;
      if (s.empty()) return -1;
      if (!as_is) return g_.tensor_id(map_name(s));
      return hashed ? g_.tensor_id(s, n.hashes[at]) : g_.tensor_id(s);
    };
    node.inputs.reserve(n.inputs.size());
    node.outputs.reserve(n.outputs.size());
    // Links as Graph::relink() makes them, built while each tensor is at hand.
    const int index = static_cast<int>(g_.nodes.size()) - 1;
    for (std::string_view in : n.inputs) {
      const int id = id_of(in);
      node.inputs.push_back(id);
      if (id >= 0) g_.tensors[id].consumers.push_back(index);
    }
    for (std::string_view out : n.outputs) {
      const int id = id_of(out);
      node.outputs.push_back(id);
      if (id >= 0) g_.tensors[id].producer = index;
    }
    if (n.op_type == "BatchNormalization" && node.inputs.size() > 4) {
      for (int id : {node.inputs[3], node.inputs[4]}) {
        if (id >= 0) bn_statistics_.push_back(id);
      }
    }
    node.attrs.reserve(n.attrs.size());
    for (const AttrRef& ref : n.attrs) {
      read_attr(ref, attr_);
      Attribute attr = lower_attribute(attr_);
      if (attr.kind == Attribute::Graph && subgraph_ops_.insert(std::string(n.op_type)).second) {
        // Once per op type: MViT's legacy export holds 51 Loops.
        g_.warn(std::string(n.op_type) + " nodes hold subgraphs (the first: '" +
                std::string(n.name.empty() ? n.op_type : n.name) + "'); memest does not look inside them");
      }
      node.attrs.emplace(std::string(attr_.name), std::move(attr));
    }
    if (!prefix.empty()) {
      node.name = prefix + std::string(n.name);
    } else if (!n.name.empty()) {
      node.name = n.name;
    }
    node.op = op_atom(n.op_type);
    if (!n.metadata.empty() && node.op == "Conv") {
      mark_folded_pad(node, node_metadata(n, "pkg.onnxscript.rewriter.rule_name"),
                      node_metadata(n, "pkg.torch.onnx.fx_node"));
      mark_same_pad_copy(node, ns);
    }
    if (!ns.empty()) mark_upsample_module(node, ns);
    if (!trace.empty()) mark_rms_norm(node, trace);
    // Before restore_batch_norm, which appends a node and so may move `node`.
    if (!n.metadata.empty() && node.op == "BatchNormalization") mark_training_batch_norm(node, namespace_op(ns));
    if (!n.metadata.empty() && may_hide_batch_norm(node.op)) {
      restore_batch_norm(g_, index, namespace_op(ns), bn_statistics_);
    }
  }

  // Functions may call functions, 16 deep: without a bound on the calls and nodes
  // that makes, a few bytes of functions calling each other would run for hours.
  // The bound (262,144) is far above what exporters make of functions (a module's
  // layers) and low enough to be reached in well under a second.
  void count_expansion() {
    if (++expansion_ > kMaxExpansion) {
      throw Error(g_.file, "", "model-local functions expand to more than " + std::to_string(kMaxExpansion) +
                                   " nodes and calls (do they call each other over and over?)");
    }
  }

  template <typename MapName>
  void inline_function(const FunctionView& f, const NodeView& call, MapName map_name, const std::string& outer_module) {
    count_expansion();
    ++depth_;
    const std::string inner = "__" + std::string(f.name) + std::to_string(inlined_++) + "/";
    Rename rename;
    for (size_t i = 0; i < f.inputs.size() && i < call.inputs.size(); ++i) {
      rename[std::string(f.inputs[i])] = map_name(call.inputs[i]);
    }
    for (size_t i = 0; i < f.outputs.size() && i < call.outputs.size(); ++i) {
      rename[std::string(f.outputs[i])] = map_name(call.outputs[i]);
    }
    std::string module = module_of(call, call.metadata.empty() ? std::string_view() : node_metadata(call, "namespace"), scopes_);
    if (module.empty()) module = outer_module;
    NodeView body;
    AttrView a, ca;
    for (std::string_view bytes : f.nodes) {
      read_node(bytes, body);
      // Attribute references inside a function are resolved from the call site: the
      // call's attribute replaces the reference, keeping the reference's name. A
      // replaced attribute carries the call attribute's own ref_attr_name, which the
      // remaining call attributes are then matched against.
      for (AttrRef& ref : body.attrs) {
        read_attr(ref, a);
        if (a.ref_attr_name.empty()) continue;
        const std::string_view name = a.name;
        std::string_view wanted = a.ref_attr_name;
        for (const AttrRef& call_ref : call.attrs) {
          read_attr(call_ref, ca);
          if (ca.name != wanted) continue;
          ref = AttrRef{call_ref.bytes, name, true};
          wanted = ca.ref_attr_name;
        }
      }
      lower_node(body, inner, rename, module);
    }
    --depth_;
  }

  Graph& g_;
  const ModelView& m_;
  const onnx_schema::ModelCheck& check_;
  std::vector<FunctionView> functions_;
  std::unordered_map<std::string, size_t> function_index_;
  ScopeCache scopes_;
  // Op types seen so far, by the file's bytes: a few dozen names, so a lookup stays in
  // cache where the Atom pool (every module path besides) would miss.
  std::unordered_map<std::string_view, Atom> ops_;
  Atom op_atom(std::string_view op) {
    auto it = ops_.find(op);
    if (it == ops_.end()) it = ops_.emplace(op, Atom(op)).first;
    return it->second;
  }
  PyStackReader stacks_{g_.python};  // dynamo exports: the Python stack of each node

  // The Graph::calls id of the namespace's last component ("gelu_3:
  // aten.gelu.default"): nodes of one FX node share it. -1 without an aten op.
  int aten_call(std::string_view ns) {
    const size_t slash = ns.rfind('/');
    const std::string_view last = slash == std::string_view::npos ? ns : ns.substr(slash + 1);
    const std::string_view op = namespace_op(ns);
    if (!op.starts_with("aten.")) return -1;
    auto [it, fresh] = calls_.try_emplace(std::string(last), static_cast<int>(g_.calls.size()));
    if (fresh) g_.calls.emplace_back(op);
    return it->second;
  }
  std::unordered_map<std::string, int> calls_;
  int depth_ = 0;
  int inlined_ = 0;
  static constexpr size_t kMaxExpansion = size_t{1} << 18;
  size_t expansion_ = 0;
  // Scratch reused from node to node; the pipeline's nodes.
  static constexpr size_t kAhead = 8;
  std::array<NodeView, kAhead> ahead_;
  AttrView attr_;
  TensorTypeView type_;
  std::vector<int64_t> dims_;
  std::vector<int> bn_statistics_;
  std::unordered_set<std::string> subgraph_ops_;  ///< op types whose subgraphs were warned of
  std::deque<std::string> squeeze_axes_;           ///< the `axes` attributes squeeze_if() wrote
  std::vector<std::string_view> fx_calls_;
  std::vector<std::pair<int, std::string_view>> folded_from_;
};

// Floating initializers are parameters unless they are BatchNorm running
// statistics (buffers) or scalar literals the exporter lifted (constants).
// `bn_statistics`: the tensors that BatchNormalization nodes take as mean and variance.
void classify_initializers(Graph& g, const std::vector<int>& bn_statistics) {
  std::vector<bool> is_statistic(g.tensors.size());
  for (int id : bn_statistics) is_statistic[id] = true;
  for (auto& t : g.tensors) {
    if (t.kind != TensorKind::Parameter) continue;
    const bool stats = t.name.find("running_mean") != std::string::npos ||
                       t.name.find("running_var") != std::string::npos || is_statistic[&t - g.tensors.data()];
    if (stats) {
      t.kind = TensorKind::Buffer;
      continue;
    }
    int64_t numel = 1;
    for (const auto& d : *t.shape) numel = checked_mul(numel, d.as_const().value_or(1));
    if (numel <= 1 && t.name.find('.') == std::string::npos) t.kind = TensorKind::Constant;
  }
}

Graph read_model(std::string_view bytes, const std::string& file) {
  if (bytes.empty()) throw Error(file, "", "the file is empty, not an ONNX model");
  // The whole file is checked before anything is lowered: a file protobuf would
  // reject gets this message, whatever else is wrong with it.
  const std::optional<onnx_schema::ModelCheck> check = onnx_schema::check_model(bytes);
  if (!check) throw Error(file, "", "not a valid ONNX model (the protobuf is truncated or corrupt)");
  const ModelView model = onnx_views::read_model(bytes);
  if (!model.has_graph || model.ir_version <= 0) {
    throw Error(file, "", "not an ONNX model (no graph or IR version in the protobuf)");
  }
  Graph g;
  g.file = file;
  g.producer = std::string(model.producer_name) +
               (model.producer_version.empty() ? "" : " " + std::string(model.producer_version));
  for (std::string_view bytes : model.opset_imports) {
    const OpsetView op = read_opset(bytes);
    if (op.domain.empty() || op.domain == "ai.onnx") g.opset = op.version;
  }
  if (g.opset == 0) g.opset = model.opset_imports.empty() ? 1 : kMinOpset;
  if (g.opset > kMaxOpset) {
    throw Error(file, "", "opset " + std::to_string(g.opset) + " is newer than memest supports (" +
                              std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) + ")");
  }
  if (g.opset < kMinOpset) {
    g.warn("opset " + std::to_string(g.opset) + " is older than 7; shapes follow opset 7 rules");
  }
  Lowering lowering(g, model, *check);
  lowering.run();
  place_untraced_nodes(g);
  classify_initializers(g, lowering.bn_statistics());
  ParameterReads reads;
  if (const auto params = exported_targets(model, "PARAMETER")) {
    std::vector<std::string_view> buffers = exported_targets(model, "BUFFER").value_or(std::vector<std::string_view>{});
    for (std::string_view c : exported_targets(model, "CONSTANT_TENSOR").value_or(std::vector<std::string_view>{})) {
      buffers.push_back(c);
    }
    reads = parameter_reads(model, lowering.fx_calls());
    for (const auto& [id, list] : lowering.folded_from()) reads.folded_from[id] = python_strings(list);
    classify_group_norm_initializers(g, reads);
    keep_exported_parameters(g, *params, buffers, reads);
    merge_parameter_images(g, *params, buffers, reads);
    g.lists_parameters = true;
    restore_dropped_biases(g, *params, reads);
  } else {
    keep_linear_inputs_as_buffers(g);
  }
  for (const auto& name : declared_buffers(model)) {
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
    const auto params = exported_targets(model, "PARAMETER");
    split_deduplicated_initializers(g, reads, params.value_or(std::vector<std::string_view>{}));
    if (params) {
      restore_merged_modules(g, *params, exported_targets(model, "BUFFER").value_or(std::vector<std::string_view>{}),
                             reads);
    }
  }
  restore_dropped_contiguous(g, lowering.fx_calls());  // it moves the nodes the reads index
  if (const auto params = exported_targets(model, "PARAMETER")) {
    restore_cofolded_parameters(g, *params, reads);
    warn_unread_parameters(g, *params, reads);
  }
  return g;
}

}  // namespace

Graph read_onnx_bytes(const std::string& bytes, const std::string& file) { return read_model(bytes, file); }

Graph read_onnx_file(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    if (errno == EACCES) throw Error(path, "", "cannot be read (permission denied)");
    throw Error(path, "", errno == ENOENT || errno == ENOTDIR ? "no such file" : std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) throw Error(path, "", "is a directory, not an ONNX file");
  // A FIFO would block and a device may never end: only regular files are read.
  if (!S_ISREG(st.st_mode)) throw Error(path, "", "is not a regular file (a pipe, socket or device), not an ONNX file");
  if (static_cast<uint64_t>(st.st_size) > static_cast<uint64_t>(INT32_MAX)) {
    throw Error(path, "", "is larger than 2 GiB; store weights as external data (memest never reads them)");
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path, "", "cannot be read (permission denied?)");
  // Map the file rather than read it: weights stored inside (torch.onnx's default below
  // 2 GB) are stepped over by their length and never touched, so their pages are never
  // loaded (a 356 MB ResNeXt-101 took 1.1-1.6 s and its size in memory when read whole).
  // The lowering keeps views into the bytes only until read_model returns.
  const size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    close(fd);
    return read_model(std::string_view(), path);
  }
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (map != MAP_FAILED) {
    close(fd);
    struct Unmap {
      void* p;
      size_t n;
      ~Unmap() { munmap(p, n); }
    } unmap{map, size};
    return read_model(std::string_view(static_cast<const char*>(map), size), path);
  }
  // A file system that cannot map: read it into memory that is not cleared first.
  std::unique_ptr<char[]> bytes(new char[size]);
  size_t got = 0;
  while (got < size) {
    const ssize_t n = read(fd, bytes.get() + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  if (got != size) throw Error(path, "", "cannot be read");
  return read_model(std::string_view(bytes.get(), size), path);
}

}  // namespace memest
