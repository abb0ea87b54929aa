// Pattern fusion of scaled_dot_product_attention: MatMul, Softmax, MatMul as the
// exporters spell it, rewritten into one Attention node.
#include <cstdint>
#include <vector>

#include "estimator/fuse_impl.h"
#include "estimator/ops/registry.h"

namespace memest {

// Walks back through multiplications by scalars (the exporter's scale on q and k).
int Fuser::strip_scale(int t, std::vector<int>& dead) {
  for (int guard = 0; guard < 4; ++guard) {
    Node* p = producer(t);
    if (!p || (p->op != "Mul" && p->op != "Div") || only_consumer(t) < 0) return t;
    int a = p->inputs[0], b = p->inputs[1];
    if (is_scalar_const(b)) {
      dead.push_back(T(t).producer);
      t = a;
    } else if (p->op == "Mul" && is_scalar_const(a)) {
      dead.push_back(T(t).producer);
      t = b;
    } else {
      return t;
    }
  }
  return t;
}

// Where(IsNaN(p), 0, p): the exporter's guard for fully masked rows; part of the kernel.
int Fuser::strip_nan_guard(int p, std::vector<int>& dead) {
  const Tensor& t = T(p);
  if (t.graph_output || uses_[p] != 2) return p;
  int isnan = -1, where = -1;
  for (int c : consumers(p)) {
    if (g_.nodes[c].op == "IsNaN") isnan = c;
    if (g_.nodes[c].op == "Where") where = c;
  }
  if (isnan < 0 || where < 0) return p;
  const Node& w = g_.nodes[where];
  if (w.inputs.size() != 3 || w.inputs[0] != g_.nodes[isnan].outputs[0] || w.inputs[2] != p) return p;
  if (only_consumer(g_.nodes[isnan].outputs[0]) != where) return p;
  dead.push_back(isnan);
  dead.push_back(where);
  return w.outputs[0];
}

// torch.onnx's dynamo exporter spells k.transpose(-2, -1) as a reshape to 3-D, a
// transpose of the last two dims and a reshape back. Inside the fused kernel that is
// no op at all; left outside, the first reshape (of a permuted k) copies k, which
// attention then keeps: gpt2_hf was 1-4% over, one k per layer. Returns k, or kt
// when the chain is not there.
int Fuser::transpose_via_3d(int kt, std::vector<int>& dead) {
  Node* back = producer(kt);
  if (!back || back->op != "Reshape" || only_consumer(kt) < 0) return kt;
  const int swapped = back->inputs[0];
  Node* tr = producer(swapped);
  if (!tr || tr->op != "Transpose" || only_consumer(swapped) < 0) return kt;
  const std::vector<int64_t> perm = tr->attr_ints("perm");
  if (perm != std::vector<int64_t>{0, 2, 1}) return kt;
  const int flat = tr->inputs[0];
  Node* to3d = producer(flat);
  if (!to3d || to3d->op != "Reshape" || only_consumer(flat) < 0) return kt;
  dead.push_back(T(kt).producer);
  dead.push_back(T(swapped).producer);
  dead.push_back(T(flat).producer);
  return to3d->inputs[0];
}

// transformers' repeat_kv (grouped-query attention: k and v have fewer heads than q):
// x[:, :, None].expand(B, Hkv, n, T, D).reshape(B, Hkv * n, T, D), spelled Unsqueeze
// (or Reshape), Expand, Reshape. Run eagerly with no attention mask, transformers
// skips it and passes enable_gqa=True instead (sdpa_attention_forward); the exporter
// traced it with its explicit causal mask. Returns x, or -1 when t is not such a
// repeat; `chain` gets its three nodes.
int Fuser::repeat_kv_source(int t, std::vector<int>& chain) {
  Node* rs = producer(t);
  if (!rs || rs->op != "Reshape" || !read_once(t)) return -1;
  const int e = rs->inputs[0];
  Node* ex = producer(e);
  if (!ex || ex->op != "Expand" || !read_once(e)) return -1;
  const int u = ex->inputs[0];
  Node* un = producer(u);
  if (!un || (un->op != "Unsqueeze" && un->op != "Reshape") || !read_once(u)) return -1;
  const int x = un->inputs[0];
  const auto &xs = T(x).shape, &us = T(u).shape, &es = T(e).shape, &ts = T(t).shape;
  if (!xs || !us || !es || !ts || xs->size() != 4 || us->size() != 5 || es->size() != 5 || ts->size() != 4) return -1;
  // [B, Hkv, 1, T, D] expanded on dim 2 only, then merged into [B, Hkv * n, T, D].
  const Expr one(1);
  if ((*us)[2] != one || (*es)[2] == one || (*xs)[1] != (*us)[1] || (*xs)[2] != (*us)[3] || (*xs)[3] != (*us)[4]) return -1;
  for (int d : {0, 1, 3, 4}) {
    if ((*es)[d] != (*us)[d]) return -1;
  }
  if ((*ts)[2] != (*xs)[2] || (*ts)[3] != (*xs)[3] || (*ts)[1] != (*es)[1] * (*es)[2]) return -1;
  // torch.repeat_interleave exports the same way, and its copies are real: SDPA keeps
  // them (traces28 rnd18_66: two [B, H, T, D] copies a layer, -3.5% when dropped). The
  // dynamo exporter names the call; a legacy export cannot tell, and stays transformers'.
  for (const Node* c : {rs, ex, un}) {
    if (c->call >= 0 && g_.calls[static_cast<size_t>(c->call)].starts_with("aten.repeat_interleave")) return -1;
  }
  chain.insert(chain.end(), {T(t).producer, T(e).producer, T(u).producer});
  return x;
}

// Whether k has fewer heads than q (dim -3), not by a repeat the graph shows.
bool Fuser::broadcast_heads(int q, int key) const {
  const auto &qs = T(q).shape, &ks = T(key).shape;
  if (!qs || !ks || qs->size() < 3 || ks->size() != qs->size()) return false;
  const Expr &hq = (*qs)[qs->size() - 3], &hk = (*ks)[ks->size() - 3];
  return hq != hk && hk == Expr(1);
}

// Whether tensor t's values follow from a graph input's or a parameter's values, not
// from shapes and constants alone. A mask that does not is the same all-ones or causal
// mask whatever the batch holds, which the exporter traced but transformers drop at run
// time (_prepare_4d_attention_mask_for_sdpa returns None for an all-ones mask, a causal
// one becomes is_causal): scaled_dot_product_attention never sees it. One pass over the
// sorted nodes, on first use.
bool Fuser::carries_data(int t) {
  if (carries_data_.empty()) {
    carries_data_.assign(g_.tensors.size(), 0);
    for (size_t i = 0; i < g_.tensors.size(); ++i) {
      const TensorKind kind = g_.tensors[i].kind;
      carries_data_[i] = kind == TensorKind::Input || kind == TensorKind::Parameter;
    }
    for (const Node& n : g_.nodes) {
      if (n.dead || n.op == "Shape" || n.op == "Size") continue;
      int8_t any = 0;
      for (int in : n.inputs) any |= in >= 0 && carries_data_[in];
      for (int out : n.outputs) {
        if (out >= 0) carries_data_[out] |= any;
      }
    }
  }
  return t >= 0 && static_cast<size_t>(t) < carries_data_.size() && carries_data_[t];
}

// The mask the call sees at run time: a traced all-ones or causal mask added to a bias
// that carries data (BEiT's relative position bias plus transformers' extended mask,
// [batch, heads, T, T] in the graph) is the bias alone at run time ([1, heads, T, T]).
int Fuser::mask_as_run(int t) {
  for (int guard = 0; guard < 8; ++guard) {
    const Node* p = producer(t);
    if (!p || p->op != "Add" || p->inputs.size() != 2) break;
    const bool a = carries_data(p->inputs[0]), b = carries_data(p->inputs[1]);
    if (a == b) break;
    t = a ? p->inputs[0] : p->inputs[1];
  }
  return t;
}

// MatMul(q, k^T) -> [scale] -> [mask] -> Softmax -> [NaN guard] [Dropout] -> MatMul(., v).
// Back from the softmax to the scores' MatMul through scaling, an additive or Where mask
// (its tensor into `mask`) and casts, each step's node into `dead`; false when the chain
// is anything else. `s` ends at the MatMul's output.
bool Fuser::walk_to_scores(std::vector<int>& dead, int& mask, int& s) {
  for (int guard = 0; guard < 6; ++guard) {
    Node* p = producer(s);
    if (!p || only_consumer(s) < 0) return false;
    if (p->op == "MatMul") return true;
    int pi = T(s).producer;
    if ((p->op == "Mul" || p->op == "Div") && is_scalar_const(p->inputs[1])) {
      s = p->inputs[0];
    } else if (p->op == "Mul" && is_scalar_const(p->inputs[0])) {
      s = p->inputs[1];
    } else if (p->op == "Add") {
      // The additive mask is whichever operand does not lead back to the scores' MatMul.
      Node* a = producer(p->inputs[0]);
      bool first_is_scores = a && (a->op == "MatMul" || a->op == "Mul" || a->op == "Div");
      mask = first_is_scores ? p->inputs[1] : p->inputs[0];
      s = first_is_scores ? p->inputs[0] : p->inputs[1];
    } else if (p->op == "Where") {
      mask = p->inputs[0];
      s = p->inputs[1];
    } else if (p->op == "Cast") {
      s = p->inputs[0];
    } else {
      return false;
    }
    dead.push_back(pi);
  }
  return true;
}

// The Attention node that replaces the chain ending in node c (the MatMul with v): q, k
// and v (unrepeated when grouped), the mask, the dropout rate, and what the backend
// choice needs to know (a kept mask, GQA, heads broadcast by the call).
void Fuser::emit_attention(int c, int q, int key, int value, int mask, double dropout, std::vector<int>& dead) {
  // Grouped k and v: the kernel takes them unrepeated (enable_gqa).
  std::vector<int> repeats;
  const int k_src = repeat_kv_source(key, repeats), v_src = repeat_kv_source(value, repeats);
  const bool gqa = k_src >= 0 && v_src >= 0;
  if (gqa) {
    dead.insert(dead.end(), repeats.begin(), repeats.end());
    key = k_src;
    value = v_src;
  }
  std::vector<int> inputs = {q, key, value};
  const int run_mask = mask >= 0 ? mask_as_run(mask) : -1;
  const bool mask_kept = run_mask >= 0 && carries_data(run_mask);
  if (mask >= 0) inputs.push_back(mask_kept ? run_mask : mask);
  int last = c;
  replace(last, "Attention", inputs, dead);
  Attribute ratio;
  ratio.kind = Attribute::Float;
  ratio.f = dropout;
  g_.nodes[last].attrs["dropout"] = ratio;
  if (mask_kept) {
    Attribute kept;
    kept.i = 1;
    g_.nodes[last].attrs["mask_kept"] = kept;
  }
  if (gqa) {
    Attribute grouped;
    grouped.i = 1;
    g_.nodes[last].attrs["gqa"] = grouped;
  } else if (broadcast_heads(q, key)) {
    // Multi-query k and v of one head, broadcast by the call (Falcon's
    // F.scaled_dot_product_attention without enable_gqa): flash and the
    // memory-efficient kernel need equal heads, so math runs, in every dtype.
    Attribute b;
    b.i = 1;
    g_.nodes[last].attrs["broadcast_heads"] = b;
  }
}

void Fuser::attention(int k) {
  Node& sm = g_.nodes[k];
  if (sm.dead || sm.op != "Softmax") return;
  std::vector<int> dead = {k};
  int mask = -1;
  int s = sm.inputs[0];
  if (!walk_to_scores(dead, mask, s)) return;
  Node* m1 = producer(s);
  if (!m1 || m1->op != "MatMul" || only_consumer(s) < 0) return;
  dead.push_back(T(s).producer);
  // The exporters spell scaled_dot_product_attention with the scale split over both
  // operands (q * sqrt(s), k^T * sqrt(s)); attention written out by hand scales the
  // scores (or one operand) and really keeps the T x T matrix, so it is left as is.
  const size_t before_q = dead.size();
  int q = strip_scale(m1->inputs[0], dead);
  const size_t before_k = dead.size();
  int kt = strip_scale(m1->inputs[1], dead);
  const bool from_sdpa = sm.attr_int("from_sdpa", 0) == 1;  // the reader saw the call (fx_node.h)
  if (!from_sdpa && (dead.size() == before_k || before_k == before_q)) return;
  int key = kt;
  if (Node* tr = producer(kt); tr && tr->op == "Transpose" && only_consumer(kt) >= 0) {
    dead.push_back(T(kt).producer);
    key = tr->inputs[0];
  } else {
    key = transpose_via_3d(kt, dead);
  }
  // Forward: [NaN guard] [Dropout] [Cast] then the MatMul with v.
  int p = sm.outputs[0];
  double dropout = sm.attr_float("sdpa_dropout_p", 0);  // kept by the reader (fx_node.h)
  p = strip_nan_guard(p, dead);
  for (int guard = 0; guard < 3; ++guard) {
    int c = only_consumer(p);
    if (c < 0) return;
    Node& cn = g_.nodes[c];
    if (cn.op == "MatMul" && cn.inputs[0] == p) {
      dead.push_back(c);
      emit_attention(c, q, key, cn.inputs[1], mask, dropout, dead);
      return;
    }
    if (cn.op == "Dropout" || cn.op == "Cast" || cn.op == "Identity") {
      // Only the math backend's memory depends on it; 0.5: active, rate not in the graph.
      // The legacy exporter's scaled_dot_product_attention (symbolic_opset14) writes
      // Dropout(p) without training_mode, and only when dropout_p != 0: inference by
      // ONNX's letter, the call's dropout_p in fact (t5_lora: 0.1, as sdpa-choice saw).
      const bool sdpa_dropout = cn.op == "Dropout" && !cn.has_input(2) && cn.outputs.size() == 1;
      if (cn.op == "Dropout" && (dropout_active(g_, cn) || sdpa_dropout)) {
        dropout = dropout_ratio(g_, cn).value_or(0.5);
      }
      dead.push_back(c);
      p = cn.outputs[0];
      continue;
    }
    return;
  }
}

}  // namespace memest
