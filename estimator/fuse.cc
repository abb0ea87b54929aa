// Pattern fusion. Each rewrite keeps node order: the fused node takes the place
// of the pattern's last node and the others are marked dead. The attention
// pattern is in fuse_attention.cc, the normalisation ones in fuse_norms.cc.
#include "estimator/fuse.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "estimator/fuse_impl.h"
#include "estimator/ops/registry.h"

namespace memest {

// Whether every live reader of w (a Transpose of a weight) is a MatMul taking it as its
// second operand.
bool Fuser::shared_weight_view(int w) const {
  for (int c : consumers(w)) {
    const Node& n = g_.nodes[c];
    if (n.op != "MatMul" || n.inputs.size() != 2 || n.inputs[1] != w || n.inputs[0] == w) return false;
  }
  return true;
}

// MatMul(x, W^T) [+ Add(b)] where W is a parameter and b one or computed from them: F.linear.
void Fuser::linear(int k) {
  Node& mm = g_.nodes[k];
  if (mm.dead || mm.op != "MatMul" || mm.inputs.size() != 2) return;
  int w = mm.inputs[1];
  std::vector<int> dead = {k};
  int weight = -1;
  if (Node* tr = producer(w); tr && tr->op == "Transpose" && is_param(tr->inputs[0]) && shared_weight_view(w)) {
    // One transposed weight read by several products is one module called several
    // times (CoaT's parallel blocks call mlp2 on three scales; the dynamo exporter
    // transposes the weight once): each call is an F.linear of its own. The Transpose
    // goes with the last of them.
    weight = tr->inputs[0];
    if (only_consumer(w) == k) dead.push_back(T(w).producer);
  } else if (is_param(w)) {
    // A weight stored pre-transposed [in, out]; F.linear's saved bytes are the same.
    weight = w;
  }
  if (weight < 0 || !T(weight).shape || T(weight).shape->size() != 2) return;
  int out = mm.outputs[0];
  int last = k;
  std::vector<int> inputs = {mm.inputs[0], weight};
  int add = only_consumer(out);
  if (add >= 0 && g_.nodes[add].op == "Add") {
    const Node& a = g_.nodes[add];
    int other = a.inputs[0] == out ? a.inputs[1] : a.inputs[0];
    // A bias the code computes from parameters is still F.linear's (the legacy exporter
    // writes F.linear of a 3-D input as MatMul + Add whatever its bias): under autocast
    // the product and its bias run in half, not a float sum (blind31 sv_swin_v2_t legacy
    // bf16, an fp32 qkv per block: +7.6%).
    if (from_weights(other) && T(other).shape && T(other).shape->size() == 1 &&
        (*T(other).shape)[0] == (*T(weight).shape)[weight == w ? 1 : 0]) {
      inputs.push_back(other);
      dead.push_back(add);
      last = add;
    }
  }
  replace(last, "Linear", inputs, dead);
}

// BatchNormalization whose mean and variance inputs the graph computes from its own
// input: both exporters' spelling of batch_norm(training=True) without running
// statistics (F.batch_norm(w, None, None, training=True): the weight standardization of
// timm's StdConv2d/ScaledStdConv2d in NFNets, BiT ResNets and others). The legacy
// exporter writes training_mode=1 with ReduceMean/Sub/Mul/ReduceMean feeding the
// running-stat inputs; the default one an inference-mode node fed the same way. torch
// computes these statistics inside native_batch_norm and keeps only mean and invstd
// (BatchNormalization's saved extras), so the nodes that compute them exist only in the
// file: they are dropped (nothing they would allocate or save is counted) and the node
// becomes a training batch norm. Measured: eca_nfnet_l2 (sample seed 13, fp16) kept
// 2.36 MB more per 1536x384 convolution than the GPU, the fp32 Sub output x - mean that
// the spelled-out variance's Mul saves.
void Fuser::batch_stats(int k) {
  Node& bn = g_.nodes[k];
  if (bn.dead || bn.op != "BatchNormalization" || bn.inputs.size() < 5 || bn.inputs[0] < 0) return;
  static constexpr std::string_view kStatOps[] = {"ReduceMean", "ReduceSum", "ReduceSumSquare", "Sub", "Mul",
                                                  "Pow", "Div", "Add", "Sqrt", "Transpose", "Reshape", "Squeeze",
                                                  "Unsqueeze", "Cast", "Constant", "Identity"};
  std::vector<int> stats;  // nodes computing the statistics, each used by these alone
  std::vector<int> frontier = {bn.inputs[3], bn.inputs[4]};
  bool reduces = false, from_input = false;
  while (!frontier.empty()) {
    const int t = frontier.back();
    frontier.pop_back();
    if (t < 0) return;
    if (t == bn.inputs[0]) {
      from_input = true;
      continue;
    }
    const int p = T(t).producer;
    if (p < 0 || g_.nodes[p].dead) {
      if (T(t).kind == TensorKind::Parameter || T(t).kind == TensorKind::Buffer) return;  // real running stats
      continue;  // a constant (axes, exponent, epsilon)
    }
    if (std::find(stats.begin(), stats.end(), p) != stats.end()) continue;
    const Node& n = g_.nodes[p];
    if (std::find(std::begin(kStatOps), std::end(kStatOps), n.op) == std::end(kStatOps)) return;
    reduces = reduces || n.op.rfind("Reduce", 0) == 0;
    stats.push_back(p);
    for (int in : n.inputs) frontier.push_back(in);
    if (stats.size() > 16) return;
  }
  if (!reduces || !from_input) return;
  // Every output of a statistics node is read by statistics nodes or by the batch norm's
  // mean and variance slots, and nothing else.
  for (int p : stats) {
    for (int out : g_.nodes[p].outputs) {
      if (out < 0) continue;
      for (int c : consumers(out)) {
        const bool slot = c == k && (bn.inputs[3] == out || bn.inputs[4] == out) && bn.inputs[0] != out;
        if (!slot && std::find(stats.begin(), stats.end(), c) == stats.end()) return;
      }
    }
  }
  for (int p : stats) {
    unlink(p);
    g_.nodes[p].dead = true;
    fused_into_[p] = k;
  }
  unlink(k);
  bn.inputs[3] = bn.inputs[4] = -1;
  bn.attrs["training_mode"].i = 1;
  link(k);
  if (relink_each_time_) relink_all();
  ++count_;
}

// F.gelu(x) as the exporters write it: x * (1 + erf(x / sqrt(2))) * 0.5 (the legacy
// exporter's symbolic_opset9.gelu, half last) or x * (0.5 * (1 + erf)) (dynamo's order).
// Eager PyTorch runs it as one kernel that keeps x alone. The formula written in Python
// (ESM's gelu, `x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))`) runs op by op and keeps
// erf's input and both factors of the last product: its export halves x first, and in a
// dynamo export its Erf is an aten.erf call of its own; either stays apart (sample26's
// sh_esm_cls read 20.6% low in fp32 with it fused).
void Fuser::gelu(int k) {
  Node& erf = g_.nodes[k];
  if (erf.dead || erf.op != "Erf") return;
  if (erf.call >= 0 && !g_.calls[static_cast<size_t>(erf.call)].starts_with("aten.gelu")) return;
  std::vector<int> dead = {k};
  Node* div = producer(erf.inputs[0]);
  if (!div || (div->op != "Div" && div->op != "Mul") || only_consumer(erf.inputs[0]) < 0) return;
  int x = div->inputs[0];
  dead.push_back(T(erf.inputs[0]).producer);
  int add = only_consumer(erf.outputs[0]);
  if (add < 0 || g_.nodes[add].op != "Add") return;
  dead.push_back(add);
  int m1 = only_consumer(g_.nodes[add].outputs[0]);
  if (m1 < 0 || g_.nodes[m1].op != "Mul") return;
  dead.push_back(m1);
  int last = m1;
  const Node& mul1 = g_.nodes[m1];
  int other = mul1.inputs[0] == g_.nodes[add].outputs[0] ? mul1.inputs[1] : mul1.inputs[0];
  if (other != x && is_scalar_const(other)) {
    // x * (0.5 * (1 + erf)) (the dynamo exporter's order): the half comes first.
    const int m2 = only_consumer(mul1.outputs[0]);
    if (m2 < 0 || g_.nodes[m2].op != "Mul") return;
    const Node& mul2 = g_.nodes[m2];
    if ((mul2.inputs[0] == mul1.outputs[0] ? mul2.inputs[1] : mul2.inputs[0]) != x) return;
    dead.push_back(m2);
    last = m2;
  } else if (other != x) {
    return;  // (x * 0.5) * (1 + erf): the Python formula, op by op
  } else {
    int m2 = only_consumer(mul1.outputs[0]);
    if (m2 >= 0 && g_.nodes[m2].op == "Mul") {
      const Node& mul2 = g_.nodes[m2];
      int c = mul2.inputs[0] == mul1.outputs[0] ? mul2.inputs[1] : mul2.inputs[0];
      if (is_scalar_const(c)) {
        dead.push_back(m2);
        last = m2;
      }
    }
  }
  replace(last, "Gelu", {x}, dead);
}

// F.gelu(x, approximate="tanh") as the TorchScript exporter writes it below opset 20
// (symbolic_opset9.gelu): half * (x * (one + Tanh(beta * (x + kappa * (x * (x * x)))))),
// each Mul and Add with its operands in that order. Eager PyTorch runs it as one kernel
// that keeps x alone (timm's GELUTanh: test_convnext's legacy export read +44%, its blocks'
// activations counted twice). The same formula written in Python (HF's NewGELUActivation,
// `0.5 * x * (1.0 + torch.tanh(c * (x + 0.044715 * torch.pow(x, 3.0))))`) runs op by op and
// keeps its intermediates: its export has a Pow and the constants second, and stays apart.
void Fuser::gelu_tanh(int k) {
  Node& tanh = g_.nodes[k];
  if (tanh.dead || tanh.op != "Tanh" || tanh.inputs.empty()) return;
  std::vector<int> dead = {k};
  // The producer of tensor t when it is `op` with a scalar constant first and t has no
  // other reader; its other operand in `rest`.
  auto const_first = [&](int t, const char* op, int& rest) -> bool {
    Node* n = producer(t);
    if (!n || n->op != op || n->inputs.size() != 2 || only_consumer(t) < 0 || !is_scalar_const(n->inputs[0])) {
      return false;
    }
    rest = n->inputs[1];
    dead.push_back(T(t).producer);
    return true;
  };
  int sum = -1;
  if (!const_first(tanh.inputs[0], "Mul", sum)) return;  // beta * (x + ...)
  Node* add = producer(sum);
  if (!add || add->op != "Add" || add->inputs.size() != 2 || only_consumer(sum) < 0) return;
  dead.push_back(T(sum).producer);
  const int x = add->inputs[0];
  int cube = -1;
  if (!const_first(add->inputs[1], "Mul", cube)) return;  // kappa * x^3
  Node* c = producer(cube);
  if (!c || c->op != "Mul" || c->inputs.size() != 2 || c->inputs[0] != x || only_consumer(cube) < 0) return;
  dead.push_back(T(cube).producer);
  const int square = c->inputs[1];
  Node* sq = producer(square);
  if (!sq || sq->op != "Mul" || sq->inputs.size() != 2 || sq->inputs[0] != x || sq->inputs[1] != x ||
      only_consumer(square) < 0) {
    return;
  }
  dead.push_back(T(square).producer);
  // one + tanh, x * that, half * that.
  const int a1 = only_consumer(tanh.outputs[0]);
  if (a1 < 0 || g_.nodes[a1].op != "Add" || g_.nodes[a1].inputs.size() != 2 ||
      !is_scalar_const(g_.nodes[a1].inputs[0]) || g_.nodes[a1].inputs[1] != tanh.outputs[0]) {
    return;
  }
  dead.push_back(a1);
  const int m4 = only_consumer(g_.nodes[a1].outputs[0]);
  if (m4 < 0 || g_.nodes[m4].op != "Mul" || g_.nodes[m4].inputs.size() != 2 || g_.nodes[m4].inputs[0] != x) return;
  dead.push_back(m4);
  const int m5 = only_consumer(g_.nodes[m4].outputs[0]);
  if (m5 < 0 || g_.nodes[m5].op != "Mul" || g_.nodes[m5].inputs.size() != 2 || !is_scalar_const(g_.nodes[m5].inputs[0]) ||
      g_.nodes[m5].inputs[1] != g_.nodes[m4].outputs[0]) {
    return;
  }
  dead.push_back(m5);
  replace(m5, "Gelu", {x}, dead);
}

// The TorchScript exporter reorders an RNN weight's gate blocks (PyTorch's i,f,g,o
// to ONNX's i,o,f,c) with Slices of the parameter and a Concat of them. PyTorch
// copies nothing: cuDNN reads the parameter (lstm_lm fp32 was 2% over, the two
// 4 MiB copies of each layer held until its backward). A Concat of slices along
// axis 0 that together cover one parameter, each read by the Concat alone, is that
// parameter.
void Fuser::weight_reorder(int k) {
  Node& cat = g_.nodes[k];
  if (cat.dead || cat.op != "Concat" || cat.attr_int("axis", 0) != 0 || cat.inputs.size() < 2) return;
  int param = -1;
  std::vector<int> dead = {k};
  Expr rows(0);
  for (int in : cat.inputs) {
    Node* sl = producer(in);
    if (!sl || sl->op != "Slice" || sl->inputs.empty() || only_consumer(in) != k) return;
    const int src = sl->inputs[0];
    if (src < 0 || T(src).kind != TensorKind::Parameter || (param >= 0 && src != param)) return;
    param = src;
    if (sl->inputs.size() > 3 && sl->inputs[3] >= 0) {  // axes: 0 only
      const auto& axes = T(sl->inputs[3]).value;
      if (!axes || axes->size() != 1 || !(*axes)[0].is_zero()) return;
    }
    if (!T(in).shape || T(in).shape->empty()) return;
    rows = rows + T(in).shape->front();
    dead.push_back(T(in).producer);
  }
  const auto& ps = T(param).shape;
  const auto& cs = T(cat.outputs[0]).shape;
  if (!ps || !cs || ps->empty() || !(rows == ps->front()) || *ps != *cs) return;
  replace(k, "Identity", {param}, dead);
  g_.nodes[k].domain.clear();  // ONNX's own Identity: a view
  g_.nodes[k].info = find_op("", "Identity");
}

// One aten op that the dynamo exporter wrote as several nodes, all named after its
// FX node in their namespace (Node::call): GELU's tanh form becomes Mul, Pow, Add,
// Tanh... which eager PyTorch runs as one kernel saving only x. The nodes of the call
// must read one activation (and scalar constants) and hand one tensor on.
void Fuser::aten_call(const std::vector<int>& nodes, const char* op, bool initializers_aside) {
  std::vector<int> made;
  for (int k : nodes) {
    for (int o : g_.nodes[k].outputs) {
      if (o >= 0) made.push_back(o);
    }
  }
  auto inside = [&](int t) { return std::find(made.begin(), made.end(), t) != made.end(); };
  int x = -1, y = -1;
  for (int k : nodes) {
    for (int in : g_.nodes[k].inputs) {
      if (in < 0 || inside(in) || is_scalar_const(in)) continue;
      if (initializers_aside && T(in).producer < 0 && T(in).kind != TensorKind::Input) continue;
      if (x >= 0 && in != x) return;
      x = in;
    }
  }
  for (int t : made) {
    bool outside = T(t).graph_output;
    for (int c : consumers(t)) outside |= std::find(nodes.begin(), nodes.end(), c) == nodes.end();
    if (!outside) continue;
    if (y >= 0 && t != y) return;
    y = t;
  }
  const int last = nodes.back();
  if (x < 0 || y < 0 || g_.nodes[last].outputs.empty() || g_.nodes[last].outputs[0] != y) return;
  replace(last, op, {x}, nodes);
}

// A custom torch.autograd.Function's forward, which dynamo traces through (its math in
// the export, the statement `SomeFunction.apply(x)` in the stack of every node of it):
// autograd records the Function as one node whose forward ran without recording, keeping
// what ctx.save_for_backward names, taken to be its input (transformers' BloomGelu:
// GeLUFunction saves `input` and recomputes tanh in backward; memest kept every
// intermediate of the tanh formula: sh_bloom_cls fp32 +32%). One node per call (the
// frame's statement and instance), when one tensor enters it and one leaves.
void Fuser::custom_functions() {
  const PySource& py = g_.python;
  if (py.empty()) return;
  std::vector<std::pair<PyFrame, std::vector<int>>> calls;
  for (size_t k = 0; k < g_.nodes.size(); ++k) {
    const Node& n = g_.nodes[k];
    if (n.dead || n.py_stack < 0) continue;
    const std::vector<PyFrame>& stack = py.stacks[static_cast<size_t>(n.py_stack)];
    for (size_t i = 0; i + 1 < stack.size(); ++i) {  // a frame below it: inside the call
      const std::string& code = py.statements[static_cast<size_t>(stack[i].statement)].code;
      if (code.find(".apply(") == std::string::npos) continue;
      auto same = [&](const auto& c) { return c.first.statement == stack[i].statement && c.first.instance == stack[i].instance; };
      auto it = std::find_if(calls.begin(), calls.end(), same);
      if (it == calls.end()) it = calls.insert(calls.end(), {stack[i], {}});
      it->second.push_back(static_cast<int>(k));
      break;
    }
  }
  std::vector<int> warned;  // statements a warning named
  for (const auto& [frame, nodes] : calls) {
    const PyStatement& s = py.statements[static_cast<size_t>(frame.statement)];
    const char* op = custom_function_op(s.where, s.code);
    const int before = count_;
    aten_call(nodes, op, true);
    if (count_ == before || std::string_view(op) != "CustomFunction") continue;
    if (std::find(warned.begin(), warned.end(), frame.statement) != warned.end()) continue;
    warned.push_back(frame.statement);
    g_.warn("a custom autograd.Function (`" + s.code + "`, " + s.where +
            ") is taken to keep its input for backward, as ctx.save_for_backward(input) does; what its backward "
            "allocates is not known");
  }
}

// The reduced axes of a ReduceMean (an attribute up to opset 17, input 1 from 18),
// normalised and sorted; empty when unknown, or when `kept` asks for a node that keeps
// its dims and it does not.
std::vector<int64_t> Fuser::mean_axes(const Node& n, size_t rank, bool kept) const {
  if (n.op != "ReduceMean" || (kept && n.attr_int("keepdims", 1) == 0)) return {};
  std::vector<int64_t> axes;
  if (n.attr("axes")) {
    axes = n.attr_ints("axes");
  } else if (n.has_input(1) && T(n.inputs[1]).value) {
    for (const auto& e : *T(n.inputs[1]).value) {
      auto c = e.as_const();
      if (!c) return {};
      axes.push_back(*c);
    }
  }
  for (auto& a : axes) {
    if (a < 0) a += static_cast<int64_t>(rank);
    if (a < 0 || a >= static_cast<int64_t>(rank)) return {};
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

// The single constant held by tensor t, when it is one.
std::optional<double> Fuser::scalar_value(int t) const {
  if (t < 0) return std::nullopt;
  const Tensor& ten = T(t);
  if (ten.fvalue && ten.fvalue->size() == 1) return (*ten.fvalue)[0];
  if (ten.value && ten.value->size() == 1) {
    if (auto c = (*ten.value)[0].as_const()) return static_cast<double>(*c);
  }
  return std::nullopt;
}

// The node reading tensor t once, when it is the only one and has this op; -1 otherwise.
int Fuser::only_op(int t, const char* op) const {
  const int c = only_consumer(t);
  return c >= 0 && g_.nodes[c].op == op ? c : -1;
}

// The operand of a binary node other than t.
int Fuser::other_input(const Node& n, int t) { return n.inputs[0] == t ? n.inputs[1] : n.inputs[0]; }

// ScatterND whose indices come from shapes alone (Shape, Range, Expand, ... of no tensor's
// data): the legacy exporter's spelling of a slice assignment, attn[:, :, 1:, 1:] += rel
// (mvitv2's relative position bias: int64 indices 8x the fp32 scores, kept for backward,
// +86%). PyTorch writes through a view: no index tensor exists, nothing is saved, and the
// nodes that built the indices for this node alone go with them.
void Fuser::slice_assign(int k) {
  Node& n = g_.nodes[k];
  if (n.dead || n.inputs.size() != 3 || n.attr_string("reduction", "none") != "none") return;
  std::vector<int> chain;
  if (!from_shapes(n.inputs[1], chain, 0)) return;
  // Keep a chain node that something outside the chain still reads.
  std::vector<int> dead;
  for (bool changed = true; changed;) {
    changed = false;
    for (int c : chain) {
      if (std::find(dead.begin(), dead.end(), c) != dead.end()) continue;
      bool only_chain = true;
      for (int out : g_.nodes[c].outputs) {
        if (out < 0) continue;
        only_chain = only_chain && !T(out).graph_output;
        for (int r : consumers(out)) {
          only_chain = only_chain && (r == k || std::find(dead.begin(), dead.end(), r) != dead.end());
        }
      }
      if (only_chain) {
        dead.push_back(c);
        changed = true;
      }
    }
  }
  replace(k, "SliceAssign", {n.inputs[0], n.inputs[2]}, dead);
}

// Concat(x[-p:], x, x[:q]) along one axis, a Slice of x on each side: the legacy
// exporter's F.pad(mode="circular") (symbolic_opset11's circular pad), which torch runs as
// _pad_circular, one new tensor filled by slice copies (PadCircular, whose backward holds
// a copy of the padded gradient). The dynamo exporter writes Pad(mode=wrap) instead, one
// node for every padded dim, where the legacy one chains a Concat per dim.
void Fuser::circular_pad(int k) {
  const Node& cat = g_.nodes[k];
  if (cat.dead || cat.inputs.size() != 3 || cat.outputs.empty()) return;
  const int x = cat.inputs[1];
  if (x < 0 || !T(x).shape) return;
  const int64_t rank = static_cast<int64_t>(T(x).shape->size());
  int64_t axis = cat.attr_int("axis", 0);
  if (axis < 0) axis += rank;
  // Slice k of x along `axis` from `start`, read by the Concat alone.
  auto slice_of_x = [&](int t, bool leading) {
    const Node* sl = producer(t);
    if (!sl || sl->op != "Slice" || sl->inputs.size() < 4 || sl->inputs[0] != x || only_consumer(t) != k) return false;
    const auto& starts = T(sl->inputs[1]).value;
    const auto& axes = T(sl->inputs[3]).value;
    if (!starts || !axes || starts->size() != 1 || axes->size() != 1) return false;
    auto a = axes->front().as_const(), st = starts->front().as_const();
    if (!a || !st) return false;
    if (*a < 0) *a += rank;
    // x[-p:] before x, x[:q] after it
    return *a == axis && (leading ? *st < 0 : *st == 0);
  };
  if (!slice_of_x(cat.inputs[0], true) || !slice_of_x(cat.inputs[2], false)) return;
  std::vector<int> dead = {T(cat.inputs[0]).producer, T(cat.inputs[2]).producer, k};
  // One Concat per padded dim, each reading the last: one _pad_circular of them all. x
  // read by this dim's two Slices and Concat alone is the last dim's pad, merged here.
  const int inner = T(x).producer;
  if (inner >= 0 && !g_.nodes[inner].dead && g_.nodes[inner].op == "PadCircular" && consumers(x).size() == 3) {
    dead.push_back(inner);
    replace(k, "PadCircular", {g_.nodes[inner].inputs[0]}, dead);
  } else {
    replace(k, "PadCircular", {x}, dead);
  }
}

// Whether tensor t is computed from shapes and constants alone; the nodes found are
// added to `chain`.
bool Fuser::from_shapes(int t, std::vector<int>& chain, int depth) {
  static constexpr std::string_view kIndexOps[] = {
      "Range", "Expand", "Unsqueeze", "Squeeze", "Concat", "Reshape", "Cast", "Add", "Sub", "Mul", "Div",
      "Gather", "Slice", "Transpose", "ConstantOfShape", "Tile", "Equal", "Where", "Not", "Less", "Greater",
      "Mod", "Neg", "Flatten", "Identity", "Constant", "Shape"};
  if (t < 0 || depth > 64 || chain.size() > 256) return false;
  if (T(t).kind == TensorKind::Constant) return true;
  // Contents the shape pass knew are made from shapes too; their nodes go when unused.
  const bool known = T(t).value.has_value();
  Node* p = producer(t);
  if (!p || T(t).kind != TensorKind::Activation || is_floating(T(t).dtype)) return known;
  if (std::find(std::begin(kIndexOps), std::end(kIndexOps), p->op) == std::end(kIndexOps)) return known;
  const int pk = T(t).producer;
  if (std::find(chain.begin(), chain.end(), pk) != chain.end()) return true;
  chain.push_back(pk);
  if (p->op == "Shape") return true;  // reads its input's shape only
  for (int in : p->inputs) {
    if (in >= 0 && !from_shapes(in, chain, depth + 1)) return false;
  }
  return true;
}

// x * sigmoid(x).
void Fuser::silu(int k) {
  Node& sg = g_.nodes[k];
  if (sg.dead || sg.op != "Sigmoid") return;
  int x = sg.inputs[0];
  int m = only_consumer(sg.outputs[0]);
  if (m < 0 || g_.nodes[m].op != "Mul") return;
  const Node& mul = g_.nodes[m];
  if (mul.inputs[0] != x && mul.inputs[1] != x) return;
  replace(m, "Silu", {x}, {k, m});
}

// x * tanh(softplus(x)): F.mish as the TorchScript exporter writes it below opset 18
// (symbolic_opset9.mish), one kernel in eager PyTorch that keeps x alone. The same
// formula written in Python would keep its intermediates; as with SiLU above, the module
// (torch.nn.Mish, what timm's create_act_layer("mish") returns) is taken as the common
// case. Measured: the random models' nn.Mish from legacy exports read +72% to +117%
// (rnd11_56, rnd6_57, rnd13_70, rnd15_66, rnd17_79), their dynamo exports (ONNX Mish) exact.
void Fuser::mish(int k) {
  Node& sp = g_.nodes[k];
  if (sp.dead || sp.op != "Softplus" || sp.inputs.empty() || sp.outputs.empty()) return;
  const int x = sp.inputs[0];
  const int t = only_consumer(sp.outputs[0]);
  if (t < 0 || g_.nodes[t].op != "Tanh" || g_.nodes[t].outputs.empty()) return;
  const int m = only_consumer(g_.nodes[t].outputs[0]);
  if (m < 0 || g_.nodes[m].op != "Mul") return;
  const Node& mul = g_.nodes[m];
  if (mul.inputs.size() != 2 || (mul.inputs[0] != x && mul.inputs[1] != x)) return;
  replace(m, "Mish", {x}, {k, t, m});
  // ONNX's own Mish (opset 18), the entry the dynamo exporter's Mish reads: without it the
  // fused node had no OpInfo, so no elementwise layout (seqtrace34 rnd38_187 legacy: the
  // SE gate's sum over a channels-innermost map took no reduction buffer; dynamo exact).
  g_.nodes[m].domain = "";
  g_.nodes[m].info = find_op("", "Mish");
}

int fuse_patterns(Graph& g, const FuseOptions& opts) {
  Fuser f(g);
  // Each pattern starts at one op, and rewrites never make such an op: the nodes
  // each pass visits are found in one walk over the graph (a walk per pass read
  // every Node four times, a cache miss each on a large graph).
  std::vector<int> erf, tanh, softplus, sigmoid, softmax, matmul, concat, instance_norm, mean, scatter, batch_norm, sqrt;
  std::vector<int> upsample;  // nodes of torch.nn's upsampling modules (the reader marks them)
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (n.dead) continue;
    if (n.op == "Erf") erf.push_back(static_cast<int>(k));
    if (n.op == "Tanh") tanh.push_back(static_cast<int>(k));
    if (n.op == "Softplus") softplus.push_back(static_cast<int>(k));
    if (n.op == "Sigmoid") sigmoid.push_back(static_cast<int>(k));
    if (n.op == "Softmax") softmax.push_back(static_cast<int>(k));
    if (n.op == "MatMul") matmul.push_back(static_cast<int>(k));
    if (n.op == "Concat") concat.push_back(static_cast<int>(k));
    if (n.op == "InstanceNormalization") instance_norm.push_back(static_cast<int>(k));
    if (n.op == "ReduceMean") mean.push_back(static_cast<int>(k));
    if (n.op == "ScatterND") scatter.push_back(static_cast<int>(k));
    if (n.op == "BatchNormalization") batch_norm.push_back(static_cast<int>(k));
    if (n.op == "Sqrt") sqrt.push_back(static_cast<int>(k));
    if (n.attr_int("upsample_module", 0) == 1) upsample.push_back(static_cast<int>(k));
  }
  for (int k : batch_norm) f.batch_stats(k);
  for (int k : scatter) f.slice_assign(k);
  for (int k : concat) f.weight_reorder(k);
  for (int k : concat) f.circular_pad(k);
  // Whole aten calls first: they cover spellings the patterns below do not.
  if (!g.calls.empty()) {
    std::vector<std::vector<int>> by_call(g.calls.size());
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      const Node& n = g.nodes[k];
      if (!n.dead && n.call >= 0 && g.calls[static_cast<size_t>(n.call)] == "aten.gelu.default") {
        by_call[static_cast<size_t>(n.call)].push_back(static_cast<int>(k));
      }
    }
    for (const auto& nodes : by_call) {
      if (nodes.size() > 1) f.aten_call(nodes, "Gelu");
    }
  }
  f.custom_functions();
  // torch.nn's upsampling modules as the one interpolation they run (the dynamo exporter
  // writes linear modes as gathers and a lerp: rnd37_70, a 1-D net, +48.9% where its
  // legacy export, a Resize, was exact; seqtrace33b). A run of the module's nodes, its
  // index and weight tables (initializers) aside, folds when one tensor enters it and one
  // leaves.
  {
    std::vector<int> run;
    auto flush = [&] {
      if (run.size() > 1) f.aten_call(run, "Interpolate", true);
      run.clear();
    };
    for (int k : upsample) {
      const Node& n = g.nodes[k];
      if (n.dead) continue;
      if (!run.empty() && g.nodes[run.back()].module != n.module) flush();
      run.push_back(k);
    }
    flush();
  }
  for (int k : mean) f.rms_norm(k);
  for (int k : mean) f.layer_norm(k);
  for (int k : mean) f.variance(k);
  for (int k : sqrt) f.rsqrt(k);
  for (int k : erf) f.gelu(k);
  for (int k : tanh) f.gelu_tanh(k);
  for (int k : sigmoid) f.silu(k);
  for (int k : softplus) f.mish(k);
  for (int k : instance_norm) f.group_norm(k);
  if (opts.attention) {
    for (int k : softmax) f.attention(k);
  }
  for (int k : matmul) f.linear(k);
  // Consumer lists as Graph::relink() builds them (untouched when nothing was fused;
  // already current when every rewrite relinked). A full relink is a tight loop,
  // cheaper than rebuilding the lists of the tensors rewrites read one by one.
  if (f.count_ > 0 && !f.relink_each_time_) g.relink();
  return f.count_;
}

}  // namespace memest
