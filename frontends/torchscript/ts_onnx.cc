// ONNX ModelProto construction for the TorchScript helper. Weights are described,
// never copied: memest reads dimensions and dtypes only.
#include "ts_onnx.h"

#include <set>

namespace memest::ts {

onnx::AttributeProto attr_i(const std::string& name, int64_t v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}

onnx::AttributeProto attr_f(const std::string& name, double v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(static_cast<float>(v));
  return a;
}

onnx::AttributeProto attr_s(const std::string& name, const std::string& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::STRING);
  a.set_s(v);
  return a;
}

onnx::AttributeProto attr_ints(const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
  return a;
}

OnnxBuilder::OnnxBuilder() {
  model_.set_ir_version(8);
  model_.set_producer_name("memest-torchscript");
  auto* std_opset = model_.add_opset_import();
  std_opset->set_domain("");
  std_opset->set_version(17);
  auto* memest_opset = model_.add_opset_import();
  memest_opset->set_domain("memest");
  memest_opset->set_version(1);
  graph_ = model_.mutable_graph();
  graph_->set_name("torchscript");
}

std::string OnnxBuilder::unique(const std::string& base) {
  for (;;) {
    int& n = used_[base];
    std::string name = n == 0 ? base : base + "_" + std::to_string(n);
    ++n;
    if (name == base) return name;
    // "x_1" may already exist as a name of its own.
    if (used_.emplace(name, 1).second) return name;
  }
}

std::string OnnxBuilder::node_name(const std::string& op, const std::string& module) {
  return unique((module.empty() ? "" : "/" + module) + "/" + op);
}

void OnnxBuilder::add_input(const std::string& name, int type, const std::vector<int64_t>& dims) {
  used_[name] = 1;
  auto* in = graph_->add_input();
  in->set_name(name);
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(type);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d < 0) dim->set_dim_param("batch");
    else dim->set_dim_value(d);
  }
}

void OnnxBuilder::add_initializer(const std::string& name, int type, const std::vector<int64_t>& dims) {
  used_[name] = 1;
  auto* t = graph_->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (int64_t d : dims) t->add_dims(d);
  // The bytes stay in the TorchScript archive; memest never reads weights.
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* loc = t->add_external_data();
  loc->set_key("location");
  loc->set_value("torchscript-archive");
}

void OnnxBuilder::add_output(const std::string& name) {
  for (const auto& o : graph_->output()) {
    if (o.name() == name) return;
  }
  graph_->add_output()->set_name(name);
}

void OnnxBuilder::set_metadata(const std::string& key, const std::string& value) {
  auto* p = model_.add_metadata_props();
  p->set_key(key);
  p->set_value(value);
}

std::vector<std::string> OnnxBuilder::node(const std::string& op, const std::vector<std::string>& inputs,
                                           const Attrs& attrs, int num_outputs, const std::string& module,
                                           const std::string& domain) {
  auto* n = graph_->add_node();
  n->set_name(node_name(op, module));
  n->set_op_type(op);
  if (!domain.empty()) n->set_domain(domain);
  for (const auto& in : inputs) n->add_input(in);
  std::vector<std::string> outs;
  for (int k = 0; k < num_outputs; ++k) {
    outs.push_back(unique(n->name() + "_output_" + std::to_string(k)));
    n->add_output(outs.back());
    producer_[outs.back()] = graph_->node_size() - 1;
  }
  for (const auto& a : attrs) *n->add_attribute() = a;
  if (!domain.empty()) {
    bool known = false;
    for (const auto& o : model_.opset_import()) known |= o.domain() == domain;
    if (!known) {
      auto* o = model_.add_opset_import();
      o->set_domain(domain);
      o->set_version(1);
    }
  }
  return outs;
}

std::string OnnxBuilder::constant(int type, const std::vector<int64_t>& dims, const std::vector<double>& values,
                                  const std::string& module) {
  onnx::AttributeProto a;
  a.set_name("value");
  a.set_type(onnx::AttributeProto::TENSOR);
  auto* t = a.mutable_t();
  t->set_data_type(type);
  for (int64_t d : dims) t->add_dims(d);
  for (double v : values) {
    switch (type) {
      case kDouble: t->add_double_data(v); break;
      case kInt64: t->add_int64_data(static_cast<int64_t>(v)); break;
      case kFloat: t->add_float_data(static_cast<float>(v)); break;
      // float16/bfloat16 are stored as their bits in int32_data; memest reads only
      // integer contents, so the bits of a half constant never matter.
      case kFloat16: case kBFloat16: t->add_int32_data(0); break;
      default: t->add_int32_data(static_cast<int32_t>(v)); break;
    }
  }
  return node("Constant", {}, {a}, 1, module)[0];
}

std::string OnnxBuilder::const_ints(const std::vector<int64_t>& v, bool scalar, const std::string& module) {
  onnx::AttributeProto a;
  a.set_name("value");
  a.set_type(onnx::AttributeProto::TENSOR);
  auto* t = a.mutable_t();
  t->set_data_type(kInt64);
  if (!scalar) t->add_dims(static_cast<int64_t>(v.size()));
  for (int64_t x : v) t->add_int64_data(x);
  return node("Constant", {}, {a}, 1, module)[0];
}

std::string OnnxBuilder::const_opaque(int type, const std::vector<int64_t>& dims, const std::string& module) {
  onnx::AttributeProto a;
  a.set_name("value");
  a.set_type(onnx::AttributeProto::TENSOR);
  auto* t = a.mutable_t();
  t->set_data_type(type);
  for (int64_t d : dims) t->add_dims(d);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  return node("Constant", {}, {a}, 1, module)[0];
}

void OnnxBuilder::mark(const std::string& output, const onnx::AttributeProto& a) {
  auto it = producer_.find(output);
  if (it != producer_.end()) *graph_->mutable_node(it->second)->add_attribute() = a;
}

void OnnxBuilder::prune(onnx::GraphProto& g) {
  // Backwards from the outputs: shape arithmetic the lowering emitted eagerly
  // (aten::size of every dim, unused hidden states) is dropped when unread.
  std::set<std::string> live;
  for (const auto& o : g.output()) live.insert(o.name());
  const int n = g.node_size();
  std::vector<bool> keep(n, false);
  for (int i = n - 1; i >= 0; --i) {
    const auto& node = g.node(i);
    for (const auto& out : node.output()) keep[i] = keep[i] || live.count(out);
    if (keep[i]) {
      for (const auto& in : node.input()) live.insert(in);
    }
  }
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  for (int i = 0; i < n; ++i) {
    if (keep[i]) kept.Add()->Swap(g.mutable_node(i));
  }
  g.mutable_node()->Swap(&kept);
}

onnx::ModelProto OnnxBuilder::finish() {
  prune(*graph_);
  producer_.clear();
  return model_;
}

onnx::ModelProto OnnxBuilder::snapshot(const std::string& output) const {
  onnx::ModelProto m = model_;
  m.mutable_graph()->clear_output();
  m.mutable_graph()->add_output()->set_name(output);
  prune(*m.mutable_graph());
  return m;
}

}  // namespace memest::ts
