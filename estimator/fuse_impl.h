// What fuse.cc and fuse_attention.cc share and nothing else needs: the Fuser, its
// bookkeeping of live uses, the rewrite step, and one member per pattern.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "estimator/ir.h"
#include "estimator/ops/registry.h"

namespace memest {

/// The fusion pass over one graph: fuse_patterns() runs each pattern at the nodes it starts from.
class Fuser {
 public:
  // Links are kept up to date rewrite by rewrite instead of by Graph::relink(),
  // which would make the pass quadratic. Patterns mostly ask how many live uses a
  // tensor has and, when it is one, which node: a count and the sum of the using
  // nodes' indices answer both, and each costs O(1) to update. The full list,
  // when a pattern needs it, is rebuilt from the constructor's lists, following
  // each node a rewrite killed to the fused node that took its inputs (consumers()).
  explicit Fuser(Graph& g) : g_(g) {
    fused_into_.assign(g_.nodes.size(), -1);
    uses_.assign(g_.tensors.size(), 0);
    use_sum_.assign(g_.tensors.size(), 0);
    std::vector<bool> produced(g_.tensors.size(), false);
    for (size_t k = 0; k < g_.nodes.size(); ++k) {
      const Node& n = g_.nodes[k];
      if (n.dead) continue;
      for (int out : n.outputs) {
        if (out < 0) continue;
        // A tensor with two producers (not SSA): only a full relink knows which one wins.
        if (produced[out]) relink_each_time_ = true;
        produced[out] = true;
      }
    }
    for (size_t t = 0; t < g_.tensors.size(); ++t) {
      for (int c : g_.tensors[t].consumers) {
        ++uses_[t];
        use_sum_[t] += c;
      }
    }
  }
  // T(t).consumers is as the constructor found it; rewrites since then show in
  // consumers(t), only_consumer(t) and uses_[t] only.
  const Tensor& T(int t) const { return g_.tensors[t]; }
  // The live nodes reading tensor t, one entry per use, in node order (what
  // Graph::relink() would list). Linear in the uses the constructor saw: a fused
  // node reads only tensors some node of its pattern read, and patterns never
  // match a fused node, so every reader is a listed node or what one was fused into.
  std::vector<int> consumers(int t) const {
    std::vector<int> candidates;
    candidates.reserve(T(t).consumers.size());
    for (int c : T(t).consumers) {
      while (g_.nodes[c].dead && fused_into_[c] >= 0) c = fused_into_[c];
      candidates.push_back(c);
    }
    std::sort(candidates.begin(), candidates.end());
    candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
    std::vector<int> out;
    for (int c : candidates) {
      if (g_.nodes[c].dead) continue;
      for (int in : g_.nodes[c].inputs) {
        if (in == t) out.push_back(c);
      }
    }
    return out;
  }
  // Whether one live node reads t's data; Shape nodes, which read only its shape (and
  // ran in the shape pass), aside. The dynamo exporter's attention reads k's shape.
  bool read_once(int t) const {
    if (t < 0 || T(t).graph_output) return false;
    int data = 0;
    for (int c : consumers(t)) data += g_.nodes[c].op != "Shape";
    return data == 1;
  }
  // The single live consumer of tensor t, or -1.
  int only_consumer(int t) const {
    if (t < 0) return -1;
    if (T(t).graph_output || uses_[t] != 1) return -1;
    return static_cast<int>(use_sum_[t]);
  }
  Node* producer(int t) {
    if (t < 0 || T(t).producer < 0) return nullptr;
    Node* n = &g_.nodes[T(t).producer];
    return n->dead ? nullptr : n;
  }
  // A tensor of one element (a scalar, whatever made it).
  bool one_element(int t) const {
    if (t < 0 || !T(t).shape) return false;
    const auto n = product(*T(t).shape).as_const();
    return n && *n == 1;
  }
  bool is_scalar_const(int t) const {
    if (t < 0) return false;
    const Tensor& ten = T(t);
    if (!ten.shape) return false;
    auto n = product(*ten.shape).as_const();
    if (!n || *n != 1) return false;
    if (ten.kind == TensorKind::Constant || ten.value || ten.fvalue) return true;
    if (ten.producer >= 0) {
      const Node& p = g_.nodes[ten.producer];
      return p.op == "Constant" || p.op == "Sqrt" || p.op == "Cast" || p.op == "Div" || p.op == "Reciprocal";
    }
    return false;
  }
  bool is_param(int t) const { return t >= 0 && T(t).kind == TensorKind::Parameter; }
  // Whether t is a parameter or is computed from parameters and constants alone, looking
  // at most `budget` nodes up (torchvision's Swin V2 qkv bias: q_bias, v_bias and zeros,
  // cloned and a third zeroed in place); false past the budget.
  bool from_weights(int t, int budget = 32) const { return from_weights_within(t, budget); }
  bool from_weights_within(int t, int& budget) const {
    if (t < 0) return false;
    const Tensor& ten = T(t);
    if (ten.kind == TensorKind::Parameter || ten.kind == TensorKind::Constant || ten.value || ten.fvalue) return true;
    if (ten.kind != TensorKind::Activation || ten.producer < 0 || --budget < 0) return false;
    const Node& p = g_.nodes[ten.producer];
    if (p.dead) return false;
    for (int in : p.inputs) {
      if (in >= 0 && !from_weights_within(in, budget)) return false;
    }
    return true;
  }
  // The parameter t is, or is a view of (the legacy exporter's Unsqueeze of a
  // per-channel weight to [C, 1, 1]); -1 otherwise.
  int param_behind(int t) {
    if (is_param(t)) return t;
    const Node* p = producer(t);
    if (p && (p->op == "Unsqueeze" || p->op == "Reshape") && is_param(p->inputs[0])) return p->inputs[0];
    return -1;
  }

  void replace(int last_node, const char* op, std::vector<int> inputs, std::vector<int> dead) {
    for (int d : dead) {
      if (d != last_node && !g_.nodes[d].dead) {
        unlink(d);
        g_.nodes[d].dead = true;
        fused_into_[d] = last_node;
      }
    }
    unlink(last_node);
    // The fused node takes the last node's place, name and module (rewritten in
    // place: building a fresh Node copied both strings per rewrite).
    Node& n = g_.nodes[last_node];
    if (n.name.empty()) n.name = op;
    n.op = op;
    n.domain = "memest";
    n.inputs = std::move(inputs);
    n.outputs.resize(1);
    n.attrs = Attrs();
    n.info = find_op("memest", op);
    link(last_node);
    if (relink_each_time_) relink_all();
    ++count_;
  }

  void unlink(int k) {
    const Node& n = g_.nodes[k];
    for (int in : n.inputs) {
      if (in < 0) continue;
      --uses_[in];
      use_sum_[in] -= k;
    }
    for (int out : n.outputs) {
      if (out >= 0 && g_.tensors[out].producer == k) g_.tensors[out].producer = -1;
    }
  }
  void link(int k) {
    const Node& n = g_.nodes[k];
    for (int in : n.inputs) {
      if (in < 0) continue;
      ++uses_[in];
      use_sum_[in] += k;
    }
    for (int out : n.outputs) {
      if (out >= 0) g_.tensors[out].producer = k;
    }
  }
  void relink_all() {
    g_.relink();
    std::fill(uses_.begin(), uses_.end(), 0);
    std::fill(use_sum_.begin(), use_sum_.end(), 0);
    for (size_t t = 0; t < g_.tensors.size(); ++t) {
      for (int c : g_.tensors[t].consumers) {
        ++uses_[t];
        use_sum_[t] += c;
      }
    }
  }

  // The patterns, each tried at node k (fuse.cc).
  void linear(int k);
  bool shared_weight_view(int w) const;
  void gelu(int k);
  /// The TorchScript exporter's F.gelu(approximate="tanh") at opsets below 20, from its Tanh.
  void gelu_tanh(int k);
  void weight_reorder(int k);
  void aten_call(const std::vector<int>& nodes, const char* op, bool initializers_aside = false);
  void custom_functions();
  void layer_norm(int k);
  void group_norm(int k);
  void slice_assign(int k);
  void circular_pad(int k);
  void silu(int k);
  void mish(int k);
  void batch_stats(int k);
  void rms_norm(int k);
  void variance(int k);
  void rsqrt(int k);
  // Helpers of layer_norm and slice_assign (fuse.cc).
  std::vector<int64_t> mean_axes(const Node& n, size_t rank, bool kept = true) const;
  std::optional<double> scalar_value(int t) const;
  int only_op(int t, const char* op) const;
  static int other_input(const Node& n, int t);
  bool from_shapes(int t, std::vector<int>& chain, int depth);

  // Scaled-dot-product attention and the helpers only it uses (fuse_attention.cc).
  void attention(int k);
  bool walk_to_scores(std::vector<int>& dead, int& mask, int& s);
  void emit_attention(int c, int q, int key, int value, int mask, double dropout, std::vector<int>& dead);
  int strip_scale(int t, std::vector<int>& dead);
  int strip_nan_guard(int p, std::vector<int>& dead);
  int transpose_via_3d(int kt, std::vector<int>& dead);
  int repeat_kv_source(int t, std::vector<int>& chain);
  bool broadcast_heads(int q, int key) const;
  bool carries_data(int t);
  int mask_as_run(int t);

  Graph& g_;
  int count_ = 0;
  std::vector<int> uses_;         // live uses of each tensor
  std::vector<int64_t> use_sum_;  // sum of the indices of the nodes using it
  std::vector<int> fused_into_;   // per node a rewrite killed: the fused node that replaced it
  bool relink_each_time_ = false;
  std::vector<int8_t> carries_data_;  // per tensor, made on first use (carries_data)
};

}  // namespace memest
