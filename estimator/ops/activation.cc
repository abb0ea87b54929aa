// Activations: pointwise nonlinearities and the softmax family. Shapes follow
// the input; what backward keeps follows derivatives.yaml (result or input).
#include "estimator/ops/registry.h"
#include "estimator/ops/shape_util.h"

namespace memest {
namespace {

void same(ShapeContext& ctx) { ctx.set_output(0, ctx.in_dtype(0), ctx.in_shape(0)); }

// The slope broadcasts to the input (unidirectionally), so the output is the input's shape.
void prelu(ShapeContext& ctx) {
  const Shape& x = ctx.in_shape(0);
  if (broadcast(ctx, x, ctx.in_shape(1)) != x) {
    ctx.fail("slope " + shape_str(ctx.in_shape(1)) + " does not broadcast to " + shape_str(x));
  }
  same(ctx);
}

// The reduction axis only has to exist; opset < 13's flattening does not change the shape.
void softmax(ShapeContext& ctx) {
  const int64_t dflt = ctx.opset() < 13 ? 1 : -1;
  if (ctx.rank(0) > 0) norm_axis(ctx, ctx.attr_int("axis", dflt), ctx.rank(0));
  same(ctx);
}

// softmax's CUDA backward (softmax_backward_cuda_out, SoftMax.cu) computes grad * output
// into a temporary of the output's size and dtype (`run`: fp32 under autocast, whose
// softmax writes float from half), after allocating the input's gradient, and frees it
// before returning (recorded with C++ stacks on the H200: grad_input, then mul's
// temporary, freed inside _softmax_backward_data). log_softmax's has no such temporary.
Workspace softmax_backward_product(const Graph& g, const Node& n, DType run, bool, bool) {
  return output_bytes(g, n, 0, run);
}

// softsign is x / (1 + |x|) in torch: the division keeps its input-sized denominator.
std::vector<SavedExtra> softsign_denominator(const Graph& g, const Node& n) {
  const Shape* x = input_shape(g, n, 0);
  if (!x) return {};
  return {{product(*x), g.tensors[n.inputs[0]].dtype, "softsign 1 + |x|"}};
}

constexpr const char* kFamily = "activation";

// Every pointwise activation is a TensorIterator kernel: its output takes the input's
// memory order (a channels-last map stays channels-last), Layout::Elementwise. Softmax,
// log_softmax and hardmax are not: host_softmax runs on input.contiguous() and returns a
// contiguous result (CaiT's talking heads permute it again before proj_w: strided, so
// F.linear copies it, and keeps the copy: sample12 st_cait_xxs36_224).
const OpInfo kOps[] = {
    {.op = "Relu", .family = kFamily, .shape = same, .saved_outputs = bits({0}), .grads = "A", .layout = Layout::Elementwise, .inplace = true,
     .note = "threshold_backward reads the result; in place after conv/batch norm"},
    // nn.LeakyReLU(inplace=True) keeps its result, the default keeps its input beside the
    // result the next layer reads, and no export says which ran (the dynamo exporter
    // functionalizes leaky_relu_ too). The costlier is counted (rnd5_14, LeakyReLU(0.1) after
    // a batch norm, was 16.5% under, one activation short), except inside a norm layer that
    // owns its activation (timm's norm_act layers build it with inplace=True).
    {.op = "LeakyRelu", .family = kFamily, .shape = same, .saved_inputs = bits({0}), .grads = "A", .layout = Layout::Elementwise,
     .inplace_when_owned = true,
     .note = "backward reads the input's sign; in place only as a norm layer's own activation"},
    {.op = "PRelu", .family = kFamily, .shape = prelu, .autocast = Autocast::Lower, .saved_inputs = bits({0, 1}),
     .grads = "AA", .layout = Layout::Elementwise, .note = "keeps input and slope; on autocast's lower-precision list"},
    {.op = "Elu", .family = kFamily, .shape = same, .saved_inputs = bits({0}), .grads = "A", .layout = Layout::Elementwise,
     .note = "elu_backward reads the input"},
    {.op = "Selu", .family = kFamily, .shape = same, .saved_inputs = bits({0}), .grads = "A", .layout = Layout::Elementwise,
     .note = "runs as elu with scale"},
    {.op = "Celu", .family = kFamily, .shape = same, .saved_inputs = bits({0}), .grads = "A", .layout = Layout::Elementwise,
     .note = "runs as elu with input_scale"},
    {.op = "Sigmoid", .family = kFamily, .shape = same, .saved_outputs = bits({0}), .grads = "A", .layout = Layout::Elementwise,
     .note = "backward reads the result"},
    {.op = "HardSigmoid", .family = kFamily, .shape = same, .saved_inputs = bits({0}), .grads = "A", .layout = Layout::Elementwise,
     .note = "backward reads the input for its linear range"},
    {.op = "HardSwish", .family = kFamily, .shape = same, .saved_inputs = bits({0}), .grads = "A", .layout = Layout::Elementwise,
     .note = "backward reads the input"},
    {.op = "Tanh", .family = kFamily, .shape = same, .saved_outputs = bits({0}), .grads = "A", .layout = Layout::Elementwise,
     .note = "backward reads the result"},
    {.op = "Softplus", .family = kFamily, .shape = same, .autocast = Autocast::Fp32, .saved_inputs = bits({0}),
     .grads = "A", .layout = Layout::Elementwise, .note = "backward reads the input; autocast runs it in fp32"},
    {.op = "Softsign", .family = kFamily, .shape = same, .saved_inputs = bits({0}), .saved_extra = softsign_denominator,
     .grads = "A", .layout = Layout::Elementwise, .note = "x / (1 + |x|): keeps the input and the denominator"},
    {.op = "Gelu", .family = kFamily, .shape = same, .saved_inputs = bits({0}), .grads = "A", .layout = Layout::Elementwise,
     .note = "backward reads the input (opset 20)"},
    {.op = "Mish", .family = kFamily, .shape = same, .saved_inputs = bits({0}), .grads = "A", .layout = Layout::Elementwise,
     .note = "backward reads the input"},
    {.op = "ThresholdedRelu", .family = kFamily, .shape = same, .saved_inputs = bits({0}), .grads = "A", .layout = Layout::Elementwise,
     .note = "threshold(); backward masks by the input"},
    {.op = "Shrink", .family = kFamily, .shape = same, .saved_inputs = bits({0}), .grads = "A", .layout = Layout::Elementwise,
     .note = "backward masks by the input"},
    {.op = "Softmax", .family = kFamily, .shape = softmax, .autocast = Autocast::WidenHalf, .saved_outputs = bits({0}),
     .grads = "A", .contiguous_grad_out = true, .bwd_data_workspace = softmax_backward_product,
     .scratch_is_temporary = true,
     .note = "backward reads the result and takes a grad * result temporary; autocast runs it in fp32"},
    {.op = "LogSoftmax", .family = kFamily, .shape = softmax, .autocast = Autocast::WidenHalf, .saved_outputs = bits({0}),
     .grads = "A", .note = "backward reads the result; autocast runs it in fp32"},
    {.op = "Hardmax", .family = kFamily, .shape = softmax, .autocast = Autocast::None,
     .note = "one-hot of the argmax: no gradient"},
};

}  // namespace

OpTable activation_ops() { return {kOps, sizeof(kOps) / sizeof(kOps[0])}; }

}  // namespace memest
