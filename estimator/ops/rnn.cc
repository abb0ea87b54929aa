// Recurrent layers (LSTM, GRU, RNN), one layer per ONNX node, run by cuDNN in
// PyTorch. Besides its inputs and Y, cuDNN keeps a training reserve space.
#include <cmath>

#include "estimator/ops/registry.h"
#include "estimator/ops/shape_util.h"

namespace memest {
namespace {

// X is [seq, batch, input] (layout 0) or [batch, seq, input] (layout 1).
// Y is [seq, dirs, batch, hidden] or [batch, seq, dirs, hidden]; Y_h and Y_c
// are [dirs, batch, hidden] or [batch, dirs, hidden].
void recurrent(ShapeContext& ctx) {
  const Shape& x = ctx.in_shape(0);
  if (x.size() != 3) ctx.fail("X must be [seq, batch, input], got " + shape_str(x));
  const std::string dir = ctx.attr_string("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional") ctx.fail("unknown direction '" + dir + "'");
  const Expr dirs(dir == "bidirectional" ? 2 : 1);
  Expr hidden;
  if (ctx.has_attr("hidden_size")) {
    hidden = Expr(ctx.attr_int("hidden_size", 0));
  } else {
    const Shape& r = ctx.in_shape(2);  // R: [dirs, gates*hidden, hidden]
    if (r.size() != 3) ctx.fail("R must be [dirs, gates*hidden, hidden], got " + shape_str(r));
    hidden = r[2];
  }
  const bool batch_first = ctx.attr_int("layout", 0) != 0;
  const Expr& seq = x[batch_first ? 1 : 0];
  const Expr& batch = x[batch_first ? 0 : 1];
  const DType t = ctx.in_dtype(0);
  ctx.set_output(0, t, batch_first ? Shape{batch, seq, dirs, hidden} : Shape{seq, dirs, batch, hidden});
  const Shape state = batch_first ? Shape{batch, dirs, hidden} : Shape{dirs, batch, hidden};
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_output(i, t, state);
}

// An nn.LSTM of L layers is one cuDNN call, which the exporters write as L nodes of one
// module, each layer's Y (through Squeeze, Transpose, Reshape) the next one's X.
bool passes_through(const Node& n) {
  return n.op == "Squeeze" || n.op == "Unsqueeze" || n.op == "Transpose" || n.op == "Reshape" || n.op == "Identity";
}

// The RNN node of the same op and module whose Y, through view ops read only along the
// way, is this node's X; -1 when none (this node starts a call).
int previous_layer(const Graph& g, const Node& n) {
  int t = n.inputs.empty() ? -1 : n.inputs[0];
  for (int hops = 0; t >= 0 && hops < 8; ++hops) {
    const Tensor& ten = g.tensors[t];
    if (ten.producer < 0 || ten.consumers.size() != 1) return -1;
    const Node& p = g.nodes[ten.producer];
    if (p.op == n.op && p.module == n.module && !p.outputs.empty() && p.outputs[0] == t) return ten.producer;
    if (!passes_through(p) || p.inputs.empty()) return -1;
    t = p.inputs[0];
  }
  return -1;
}

// The number of layers of the call node n starts, or 0 when n is an inner layer.
int64_t call_layers(const Graph& g, const Node& n) {
  if (previous_layer(g, n) >= 0) return 0;
  int64_t layers = 1;
  int t = n.outputs.empty() ? -1 : n.outputs[0];
  for (int hops = 0; t >= 0 && hops < 64; ++hops) {
    const Tensor& ten = g.tensors[t];
    if (ten.consumers.size() != 1) break;
    const Node& c = g.nodes[ten.consumers[0]];
    if (c.op == n.op && c.module == n.module && !c.inputs.empty() && c.inputs[0] == t) {
      ++layers;
      t = c.outputs.empty() ? -1 : c.outputs[0];
    } else if (passes_through(c) && !c.outputs.empty()) {
      t = c.outputs[0];
    } else {
      break;
    }
  }
  return layers;
}

// cuDNN's training reserve (cudnnGetRNNTrainingReserveSize), which autograd keeps
// as _cudnn_rnn's result3. Measured on an H200 (torch 2.11, cuDNN 9.19) with
// saved_tensors_hooks, for fp32 and fp16, one and two directions, several sizes:
// exactly PerY times the bytes of Y, plus 256 bytes; so LSTM 5, GRU 6, RNN 1 for one
// layer. For L layers in one call (kernels-rnn-h200-torch2.11.jsonl, 1 to 3 layers):
// (PerY+1)L - 1 times Y, the inner layers' outputs included; memest keeps those as the
// next layer's saved X, so the first node holds PerY * L times Y and the others none.
// It is in the dtype the RNN runs in: the graph's, or fp16 under autocast.
template <int64_t PerY>
std::vector<SavedExtra> cudnn_reserve(const Graph& g, const Node& n) {
  const Shape* y = output_shape(g, n, 0);
  if (!y || n.outputs.empty()) return {};
  const DType t = g.tensors[n.outputs[0]].dtype;
  const int64_t size = dtype_size(t);
  const int64_t layers = call_layers(g, n);
  if (size <= 0 || layers == 0) return {};
  return {{product(*y) * Expr(PerY * layers) + Expr(256 / size), t, "cuDNN RNN reserve", /*output_dtype=*/true}};
}

// cuDNN's workspace for the call (forward, and twice in backward: data then weights),
// a transient of L (a0 + a1 H) MiB + m Y. Fitted to the 72 probes of
// kernels-rnn-h200-torch2.11.jsonl (LSTM and GRU, 1-3 layers, hidden 256 and 512,
// batch x seq 1,024 to 8,192, fp32 and fp16): within 1% of every one. A one-layer
// call runs other kernels than a stacked one (fp16 LSTM: 22 Y against 6 Y).
struct WorkspaceFit {
  const char* op;
  bool half;
  bool stacked;
  double a0_mib, a1_mib_per_hidden, per_y;
};
constexpr WorkspaceFit kWorkspace[] = {
    {"LSTM", false, false, 4.0005, 0.023745, 6.0744}, {"LSTM", false, true, 4.0002, 0.023850, 6.1553},
    {"LSTM", true, false, 6.0005, 0.011830, 22.0541}, {"LSTM", true, true, 6.0002, 0.011925, 6.1553},
    {"GRU", false, false, 5.0005, 0.017718, 6.0338},  {"GRU", false, true, 5.0002, 0.018194, 5.2570},
    {"GRU", true, false, 6.5005, 0.008859, 6.0338},   {"GRU", true, true, 6.5002, 0.009097, 5.2571},
};

Expr cudnn_workspace(const Graph& g, const Node& n, DType run, bool, bool) {
  const Shape* y = output_shape(g, n, 0);
  const int64_t layers = y ? call_layers(g, n) : 0;
  if (layers == 0 || y->empty()) return Expr(0);
  const auto hidden = y->back().as_const();
  if (!hidden) return Expr(0);
  const bool half = dtype_size(run) == 2;
  for (const WorkspaceFit& f : kWorkspace) {
    if (n.op != f.op || f.half != half || f.stacked != (layers > 1)) continue;
    const double fixed = static_cast<double>(layers) * (f.a0_mib + f.a1_mib_per_hidden * static_cast<double>(*hidden));
    const int64_t fixed_bytes = static_cast<int64_t>(fixed * 1048576.0);
    // m Y as whole bytes per element of Y (rounding moves it by under 2%).
    const int64_t per_element = std::llround(f.per_y * static_cast<double>(dtype_size(run)));
    return Expr(fixed_bytes) + product(*y) * Expr(per_element);
  }
  return Expr(0);  // a tanh/relu RNN: not probed
}

constexpr const char* kFamily = "rnn";

// Inputs: X, W, R, B, sequence_lens, initial_h[, initial_c, P]. cuDNN keeps X,
// the weights, the initial states and Y (derivatives.yaml: _cudnn_rnn), and
// autocast casts RNNs to fp16 (ATen/cudnn/AutocastRNN.cpp).
const OpInfo kOps[] = {
    {.op = "LSTM", .family = kFamily, .shape = recurrent, .autocast = Autocast::Lower,
     .saved_inputs = bits({0, 1, 2, 3, 5, 6}), .saved_outputs = bits({0}), .saved_extra = cudnn_reserve<5>,
     .grads = "AAAANAAA", .fwd_workspace = cudnn_workspace, .workspace_first = true,
     .bwd_data_workspace = cudnn_workspace,
     .bwd_workspace = cudnn_workspace, .note = "cuDNN LSTM: keeps input, weights, states, Y and a reserve of 5x Y"},
    {.op = "GRU", .family = kFamily, .shape = recurrent, .autocast = Autocast::Lower,
     .saved_inputs = bits({0, 1, 2, 3, 5}), .saved_outputs = bits({0}), .saved_extra = cudnn_reserve<6>,
     .grads = "AAAANA", .fwd_workspace = cudnn_workspace, .workspace_first = true,
     .bwd_data_workspace = cudnn_workspace,
     .bwd_workspace = cudnn_workspace, .note = "cuDNN GRU: keeps input, weights, state, Y and a reserve of 6x Y"},
    {.op = "RNN", .family = kFamily, .shape = recurrent, .autocast = Autocast::Lower,
     .saved_inputs = bits({0, 1, 2, 3, 5}), .saved_outputs = bits({0}), .saved_extra = cudnn_reserve<1>,
     .grads = "AAAANA", .note = "cuDNN tanh/relu RNN: keeps input, weights, state, Y and a reserve the size of Y"},
};

}  // namespace

OpTable rnn_ops() { return {kOps, sizeof(kOps) / sizeof(kOps[0])}; }

}  // namespace memest
