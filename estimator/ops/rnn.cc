// Recurrent layers (LSTM, GRU, RNN), one layer per ONNX node, run by cuDNN in
// PyTorch. Besides its inputs and Y, cuDNN keeps a training reserve space.
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

// cuDNN's training reserve (cudnnGetRNNTrainingReserveSize), which autograd keeps
// as _cudnn_rnn's result3. Measured on an H200 (torch 2.11, cuDNN 9.19) with
// saved_tensors_hooks, for fp32 and fp16, one and two directions, several sizes:
// exactly PerY times the bytes of Y, plus 256 bytes; so LSTM 5, GRU 6, RNN 1.
// It is in the dtype the RNN runs in: the graph's, or fp16 under autocast.
template <int64_t PerY>
std::vector<SavedExtra> cudnn_reserve(const Graph& g, const Node& n) {
  const Shape* y = output_shape(g, n, 0);
  if (!y || n.outputs.empty()) return {};
  const DType t = g.tensors[n.outputs[0]].dtype;
  const int64_t size = dtype_size(t);
  if (size <= 0) return {};
  return {{product(*y) * Expr(PerY) + Expr(256 / size), t, "cuDNN RNN reserve", /*output_dtype=*/true}};
}

constexpr const char* kFamily = "rnn";

// Inputs: X, W, R, B, sequence_lens, initial_h[, initial_c, P]. cuDNN keeps X,
// the weights, the initial states and Y (derivatives.yaml: _cudnn_rnn), and
// autocast casts RNNs to fp16 (ATen/cudnn/AutocastRNN.cpp).
const OpInfo kOps[] = {
    {.op = "LSTM", .family = kFamily, .shape = recurrent, .autocast = Autocast::Lower,
     .saved_inputs = bits({0, 1, 2, 3, 5, 6}), .saved_outputs = bits({0}), .saved_extra = cudnn_reserve<5>,
     .grads = "AAAANAAA", .note = "cuDNN LSTM: keeps input, weights, states, Y and a reserve of 5x Y"},
    {.op = "GRU", .family = kFamily, .shape = recurrent, .autocast = Autocast::Lower,
     .saved_inputs = bits({0, 1, 2, 3, 5}), .saved_outputs = bits({0}), .saved_extra = cudnn_reserve<6>,
     .grads = "AAAANA", .note = "cuDNN GRU: keeps input, weights, state, Y and a reserve of 6x Y"},
    {.op = "RNN", .family = kFamily, .shape = recurrent, .autocast = Autocast::Lower,
     .saved_inputs = bits({0, 1, 2, 3, 5}), .saved_outputs = bits({0}), .saved_extra = cudnn_reserve<1>,
     .grads = "AAAANA", .note = "cuDNN tanh/relu RNN: keeps input, weights, state, Y and a reserve the size of Y"},
};

}  // namespace

OpTable rnn_ops() { return {kOps, sizeof(kOps) / sizeof(kOps[0])}; }

}  // namespace memest
