// Builds the benchmark's transformer stack with ONNX's protobuf classes, so the
// benchmark needs no Python. Node names follow the legacy exporter's scopes
// ("/blocks.3/attn/q/MatMul") so memest groups them into modules as it would a
// real export; weights are named "blocks.3.attn.q.weight" and carry no data.
#include "bench/gen_graph.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <unordered_map>
#include <vector>

namespace memest::bench {
namespace {

constexpr int64_t kNodesPerBlock = 39;

class Builder {
 public:
  explicit Builder(onnx::GraphProto* g) : g_(g) {}

  // A node whose single output is named after the node; returns the output's name.
  std::string node(const std::string& scope, const std::string& op, std::initializer_list<std::string> inputs) {
    onnx::NodeProto* n = g_->add_node();
    const std::string name = scope + "/" + op + (op_count_[scope + op]++ ? "_" + std::to_string(op_count_[scope + op] - 1) : "");
    n->set_name(name);
    n->set_op_type(op);
    for (const auto& in : inputs) n->add_input(in);
    n->add_output(name + "_output_0");
    last_ = n;
    return n->output(0);
  }
  void attr_int(const std::string& key, int64_t v) {
    auto* a = last_->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  void attr_ints(const std::string& key, std::initializer_list<int64_t> v) {
    auto* a = last_->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  void attr_float(const std::string& key, float v) {
    auto* a = last_->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }

  // A float weight: dims only, no data (memest never reads weights).
  std::string weight(const std::string& name, std::initializer_list<int64_t> dims) {
    onnx::TensorProto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    return name;
  }
  std::string int_const(const std::string& name, std::vector<int64_t> values, bool scalar = false) {
    onnx::TensorProto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    if (!scalar) t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
    return name;
  }
  std::string float_scalar(const std::string& name, float v) {
    onnx::TensorProto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(v);
    return name;
  }

  void clear_counts() { op_count_.clear(); }

 private:
  onnx::GraphProto* g_;
  onnx::NodeProto* last_ = nullptr;
  std::unordered_map<std::string, int> op_count_;
};

void value_info(onnx::ValueInfoProto* vi, const std::string& name, int elem, std::initializer_list<std::string> dims) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  for (const auto& d : dims) {
    auto* dim = tt->mutable_shape()->add_dim();
    if (!d.empty() && d[0] >= '0' && d[0] <= '9') {
      dim->set_dim_value(std::stoll(d));
    } else {
      dim->set_dim_param(d);
    }
  }
}

}  // namespace

int64_t nodes_per_block() { return kNodesPerBlock; }

std::string generate_transformer(const GenOptions& o) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("memest_bench");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("transformer_stack");
  Builder b(g);

  const int64_t d = o.hidden, h = o.heads, dh = o.hidden / o.heads;
  const int64_t blocks = std::max<int64_t>(1, (o.nodes - 3 + kNodesPerBlock - 1) / kNodesPerBlock);

  value_info(g->add_input(), "input_ids", onnx::TensorProto::INT64, {"batch", std::to_string(o.seq)});
  // Shared literals, as a constant-folding exporter leaves them.
  const std::string zero = b.int_const("const_zero", {0}, /*scalar=*/true);
  const std::string axes0 = b.int_const("const_axes0", {0});
  const std::string split_heads = b.int_const("const_split_heads", {o.seq, h, dh});
  const std::string merge_heads = b.int_const("const_merge_heads", {o.seq, d});
  const std::string scale = b.float_scalar("const_scale", static_cast<float>(1 / std::sqrt(std::sqrt(static_cast<double>(dh)))));
  const std::string sqrt2 = b.float_scalar("const_sqrt2", 1.41421356f);
  const std::string one = b.float_scalar("const_one", 1.0f);
  const std::string half = b.float_scalar("const_half", 0.5f);

  std::string x = b.node("/embed", "Gather", {b.weight("embed.weight", {o.vocab, d}), "input_ids"});

  for (int64_t i = 0; i < blocks; ++i) {
    const std::string blk = "blocks." + std::to_string(i);
    const std::string s = "/" + blk;
    auto linear = [&](const std::string& name, const std::string& in, int64_t fan_in, int64_t fan_out) {
      const std::string scope = s + "/" + name;
      std::string mm = b.node(scope, "MatMul", {in, b.weight(blk + "." + name + ".weight", {fan_in, fan_out})});
      return b.node(scope, "Add", {mm, b.weight(blk + "." + name + ".bias", {fan_out})});
    };
    // Attention.
    std::string h1 = b.node(s + "/ln1", "LayerNormalization",
                            {x, b.weight(blk + ".ln1.weight", {d}), b.weight(blk + ".ln1.bias", {d})});
    b.attr_int("axis", -1);
    b.attr_float("epsilon", 1e-5f);
    std::string shape = b.node(s + "/attn", "Shape", {h1});
    std::string batch = b.node(s + "/attn", "Gather", {shape, zero});
    b.attr_int("axis", 0);
    std::string batch1 = b.node(s + "/attn", "Unsqueeze", {batch, axes0});
    std::string shape4 = b.node(s + "/attn", "Concat", {batch1, split_heads});
    b.attr_int("axis", 0);
    std::string shape3 = b.node(s + "/attn", "Concat", {batch1, merge_heads});
    b.attr_int("axis", 0);
    auto heads = [&](const std::string& name, std::initializer_list<int64_t> perm) {
      std::string y = linear("attn/" + name, h1, d, d);
      y = b.node(s + "/attn/" + name, "Reshape", {y, shape4});
      y = b.node(s + "/attn/" + name, "Transpose", {y});
      b.attr_ints("perm", perm);
      return y;
    };
    std::string q = heads("q", {0, 2, 1, 3});
    std::string k = heads("k", {0, 2, 3, 1});
    std::string v = heads("v", {0, 2, 1, 3});
    // As torch.onnx spells scaled_dot_product_attention: the scale split over q and k^T.
    q = b.node(s + "/attn", "Mul", {q, scale});
    k = b.node(s + "/attn", "Mul", {k, scale});
    std::string scores = b.node(s + "/attn", "MatMul", {q, k});
    std::string probs = b.node(s + "/attn", "Softmax", {scores});
    b.attr_int("axis", -1);
    std::string ctx = b.node(s + "/attn", "MatMul", {probs, v});
    ctx = b.node(s + "/attn", "Transpose", {ctx});
    b.attr_ints("perm", {0, 2, 1, 3});
    ctx = b.node(s + "/attn", "Reshape", {ctx, shape3});
    std::string attn = linear("attn/proj", ctx, d, d);
    x = b.node(s, "Add", {x, attn});
    // MLP with the erf GELU.
    std::string h2 = b.node(s + "/ln2", "LayerNormalization",
                            {x, b.weight(blk + ".ln2.weight", {d}), b.weight(blk + ".ln2.bias", {d})});
    b.attr_int("axis", -1);
    b.attr_float("epsilon", 1e-5f);
    std::string f = linear("mlp/fc1", h2, d, o.ffn);
    std::string e = b.node(s + "/mlp/act", "Div", {f, sqrt2});
    e = b.node(s + "/mlp/act", "Erf", {e});
    e = b.node(s + "/mlp/act", "Add", {e, one});
    e = b.node(s + "/mlp/act", "Mul", {f, e});
    e = b.node(s + "/mlp/act", "Mul", {e, half});
    std::string mlp = linear("mlp/fc2", e, o.ffn, d);
    x = b.node(s, "Add", {x, mlp});
    b.clear_counts();
  }
  std::string y = b.node("/ln_f", "LayerNormalization", {x, b.weight("ln_f.weight", {d}), b.weight("ln_f.bias", {d})});
  b.attr_int("axis", -1);
  std::string logits = b.node("/head", "MatMul", {y, b.weight("head.weight", {d, o.vocab})});
  value_info(g->add_output(), logits, onnx::TensorProto::FLOAT, {"batch", std::to_string(o.seq), std::to_string(o.vocab)});
  return m.SerializeAsString();
}

}  // namespace memest::bench
