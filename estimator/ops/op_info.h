// What memest knows about one op: its shape rule, what autograd saves, its dtype
// under autocast, its view behaviour, and the memory its backward allocates.
// Each op family (ops/conv.cc, ops/elementwise.cc, ...) holds a table of these.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "estimator/error.h"
#include "estimator/ir.h"

namespace memest {

/// What a shape rule sees: one node of a graph, its inputs, its attributes.
class ShapeContext {
 public:
  ShapeContext(Graph& g, Node& n) : g_(g), n_(n) {}

  const Node& node() const { return n_; }
  int64_t opset() const { return g_.opset; }
  size_t num_inputs() const { return n_.inputs.size(); }
  size_t num_outputs() const { return n_.outputs.size(); }
  bool has_input(size_t i) const { return n_.has_input(i); }
  /// The graph, for rules that look past an input to the node that made it.
  const Graph& graph() const { return g_; }
  /// The i-th input; throws Error when absent.
  const Tensor& input(size_t i) const;
  /// Shape of input i; throws Error when unknown (the driver checks before calling).
  const Shape& in_shape(size_t i) const;
  DType in_dtype(size_t i) const { return input(i).dtype; }
  /// Known integer contents of input i (a shape tensor), or nullptr.
  const std::vector<Expr>* in_value(size_t i) const;
  /// Known float contents of input i (a small float constant), or nullptr.
  const std::vector<double>* in_fvalue(size_t i) const;
  /// Records float contents of output i (Constant nodes).
  void set_fvalue(size_t i, std::vector<double> v);
  size_t rank(size_t i) const { return in_shape(i).size(); }

  /// Sets output i's dtype and shape (ignored when the output is omitted).
  void set_output(size_t i, DType t, Shape s);
  /// Records the integer contents of output i (shape arithmetic folding).
  void set_value(size_t i, std::vector<Expr> v);
  /// Throws Error naming this node.
  [[noreturn]] void fail(const std::string& what) const;
  /// Records an assumption (shown to the user) without failing.
  void warn(const std::string& what) const;

  int64_t attr_int(const char* k, int64_t d) const { return n_.attr_int(k, d); }
  double attr_float(const char* k, double d) const { return n_.attr_float(k, d); }
  std::string attr_string(const char* k, const std::string& d) const { return n_.attr_string(k, d); }
  std::vector<int64_t> attr_ints(const char* k, std::vector<int64_t> d = {}) const {
    return n_.attr_ints(k, std::move(d));
  }
  bool has_attr(const char* k) const { return n_.attr(k) != nullptr; }

 private:
  Graph& g_;
  Node& n_;
};

using ShapeFn = void (*)(ShapeContext&);

/// How autocast (torch.autocast on CUDA) treats the op; see aten/src/ATen/autocast_mode.cpp.
enum class Autocast : uint8_t {
  Keep,     ///< runs in its input's dtype (relu, pooling, batch_norm, views)
  Lower,    ///< fp16/bf16 list: float inputs are cast down (conv, matmul, linear)
  Fp32,     ///< fp32 list: inputs cast up, output fp32 (layer_norm, losses)
  Widen,    ///< fp32 list, but the CUDA kernel reads half and writes float (reductions'
            ///< TensorIterator): no cast copy, gradient in the input's dtype
  /// Widen for fp16 only, Fp32 for bf16: softmax and log_softmax take the half_to_float
  /// kernel for a Half input alone (SoftMax.cpp); any other input is converted first.
  WidenHalf,
  Promote,  ///< widest float dtype among inputs (add, mul, cat)
  Like,     ///< input 1's dtype as it runs (CastLike: x.to(y.dtype), type_as)
  None,     ///< output dtype is not floating or is fixed by the op (shape ops, casts)
};
const char* autocast_name(Autocast a);

/// How an op's output is laid out in memory, which decides whether a later
/// reshape can be a view or must copy (torch's reshape copies non-viewable input).
enum class Layout : uint8_t {
  Fresh,      ///< a new, contiguous tensor (or, for views, the input's layout)
  Permute,    ///< a view whose dims are the input's permuted by `perm` (Transpose)
  Reshape,    ///< a view when the input is contiguous, else a contiguous copy
  UnitDims,   ///< squeeze/unsqueeze: always a view; the strides follow (reshape's rule)
  /// expand: a view whose broadcast dims have stride 0, so a reshape that merges one
  /// copies (repeat_interleave's unsqueeze-expand-reshape of k and v).
  Broadcast,
  HeadsMajor, ///< [B, H, T, D] stored as [B, T, H, D] (flash/memory-efficient attention output)
  /// ONNX's recurrent Y, [seq, dirs, batch, hidden], stored as the [seq, batch, dirs *
  /// hidden] that cuDNN writes and PyTorch returns; the other outputs are contiguous.
  Recurrent,
  /// TensorIterator's: the memory order of the first input of the output's shape (a
  /// broadcast operand has no say); a channels-last x stays so through x * scale + y.
  Elementwise,
  /// A view of part of the input (split, unbind, slice): the input's strides, each dim
  /// cut to fewer elements. Known when every cut dim is left with one element or is the
  /// outermost in memory (merging it with a neighbour stays a view); else unknown.
  Narrow,
  /// select (x[:, 0]): Narrow's rule for the picked dim cut to one element, which then
  /// goes; where it was not the outermost in memory, its place is a hole.
  Select,
  /// The output takes its input's suggested memory format: channels-last when a 4-D
  /// input is, else contiguous (cuDNN's convolutions; max/avg pooling and upsampling,
  /// whose CUDA kernels allocate in input.suggest_memory_format()).
  Conv,
  /// Conv's rule for a 4-D input only: avg_pool3d's meta allocates its output contiguous
  /// whatever the input's format (AveragePool3d.cpp).
  Conv2d,
};

/// What the dispatcher sees of a node's inputs when it picks a kernel (OpInfo::variant).
struct Dispatch {
  DType run;  ///< the dtype input 0 runs in, after autocast
  /// Memory layout per tensor (see Layout; {} contiguous), or nullptr when unknown.
  const std::vector<std::vector<int8_t>>* layouts = nullptr;
  /// Whether input i of n is stored with its last dim innermost (stride(-1) == 1);
  /// true when absent or unknown.
  bool last_dim_contiguous(const Graph& g, const Node& n, size_t i) const;
};

/// A tensor an op saves for backward beyond its inputs and outputs (a dropout
/// mask, max-pool indices, batch-norm statistics, attention's logsumexp).
struct SavedExtra {
  Expr numel;
  DType dtype;
  const char* what;
  /// In the dtype output 0 runs in (half under autocast) rather than `dtype`.
  bool output_dtype = false;
};
using ExtraFn = std::vector<SavedExtra> (*)(const Graph&, const Node&);

/// Transient bytes (cuDNN workspace, a reduction buffer) held during one call, given
/// the dtype the op runs in (after autocast), whether input 0 needs a gradient (cuDNN
/// picks other engines for a weight-only backward) and whether input 0 is channels-last
/// (cuDNN runs NHWC, with engines of its own).
/// Its bytes, or, where the library picks its algorithm by size (cuDNN's heuristics),
/// those bytes up to `switch_above` and `above` past it: the choice is made when the
/// program is evaluated for concrete dims, since the batch stays symbolic until then.
struct Workspace {
  Workspace(Expr b) : bytes(std::move(b)) {}  // NOLINT: implicit, so a hook returns bytes alone
  Workspace(Expr b, int64_t switch_at, Expr past) : bytes(std::move(b)), switch_above(switch_at), above(std::move(past)) {}
  Expr bytes;
  int64_t switch_above = 0;  ///< 0: no switch
  Expr above;
};
using WorkspaceFn = Workspace (*)(const Graph&, const Node&, DType run, bool input_grad, bool channels_last);

/// The dims a CUDA TensorIterator reduction reduces, in [0, rank), or nullopt when unknown.
using ReducedAxesFn = std::optional<std::vector<int64_t>> (*)(const Graph&, const Node&);

/// The node that starts the call node n belongs to, when several nodes are one library call
/// (an exported multi-layer nn.LSTM); -1 when n starts it or stands alone.
using CallStartFn = int (*)(const Graph&, const Node&);

/// Everything memest knows about one op. One entry per op, in its family's table.
struct OpInfo {
  const char* op = "";             ///< ONNX op type ("Conv") or memest's own ("Attention")
  const char* family = "";         ///< "conv", "elementwise", ...
  ShapeFn shape = nullptr;
  Autocast autocast = Autocast::Keep;
  uint32_t saved_inputs = 0;       ///< bit i set: input i is kept for backward
  uint32_t saved_outputs = 0;      ///< bit i set: output i is kept for backward
  /// Bit i set: input i is kept only when some *other* input needs a gradient
  /// (autograd saves a mul's `other` only for `self`'s gradient). Conv, MatMul and
  /// Mul save each operand for the other's gradient, so the first layer, whose
  /// input needs no gradient, does not keep its weight.
  uint32_t saved_if_other = 0;
  ExtraFn saved_extra = nullptr;   ///< other tensors kept for backward
  /// The saved extras are allocated before the outputs, not after: native_dropout's
  /// CUDA kernel makes its mask (empty_like, bool) before its output (Dropout.cu;
  /// GPU traces of gpt_mini: the 1-byte mask, then the output).
  bool extras_first = false;
  /// The saved extras are made even when nothing needs a gradient, and then freed as
  /// the op returns: CUDA's max_pool2d is max_pool2d_with_indices, whose int64 indices
  /// exist whatever autograd wants (traces15 rnd7_11: an up-sample then a max pool ahead
  /// of every parameter, its indices allocated beside the output in it1's forward).
  bool extras_without_grad = false;
  /// Memory a (graph) output keeps alive for as long as the output lives, beyond its own
  /// bytes; measured for mse_loss (see fused.cc).
  ExtraFn output_keeps = nullptr;
  /// Per input: 'A' backward allocates a new gradient, 'V' the output's
  /// gradient passes through as a view (no allocation), 'N' no gradient.
  /// The last letter repeats for further inputs; "" means not differentiable.
  const char* grads = "";
  /// With exactly two inputs, backward makes input 1's gradient before input 0's. F.linear
  /// without a bias runs mm, and MmBackward0 computes mat2's (the weight's) gradient
  /// first; with a bias it runs addmm, whose backward starts with mat1's (the input's).
  /// GPU traces of gpt_mini and gpt2_hf: the LM head's weight gradient, the backward
  /// thread's cuBLAS workspace, then the input's; every biased layer the other way.
  bool second_grad_first = false;
  bool view = false;               ///< output 0 aliases input 0 (no allocation)
  /// A cast returns its input when the dtype does not change (Tensor.to returns self):
  /// output 0 aliases input 0 then, and its gradient passes through.
  bool view_when_dtype_kept = false;
  /// x.contiguous() returns its input when that is contiguous already
  /// (TensorBase::contiguous): output 0 aliases input 0 then, else it is a fresh copy.
  bool view_when_contiguous = false;
  Layout layout = Layout::Fresh;   ///< output layout (see Layout)
  /// Inputs of rank >= 3 that are not contiguous are copied first (batched matmul
  /// folds batch dims with reshape), and the copy is what backward keeps.
  bool contiguous_inputs = false;
  /// torch.matmul's batched path (expand, reshape to [batch, rows, cols], bmm): a strided
  /// operand whose reshape is a view goes to cuBLAS as it is (simulate.cc bmm_operand);
  /// without it every strided operand of rank >= 3 is copied (einsum's permutes).
  bool bmm_operands = false;
  /// torch.einsum's pairwise contraction (Linear.cpp sumproduct_pair): each operand is
  /// permuted to [batch, kept, summed] labels and reshaped to 3-D for bmm; an operand
  /// whose reshape cannot be a view is copied, contiguous or not (einsum_reshape_copies).
  bool einsum_operands = false;
  /// Runs on cuBLAS: the first call on a thread creates that thread's workspace; with
  /// a bias input (addmm's epilogue) cuBLASLt's workspace too.
  bool cublas = false;
  /// The gradient of an input broadcast over the output's leading dims (a bias) is the
  /// output's gradient summed over them (sum_to_size): a column reduction that may
  /// stage partial sums in a scratch buffer (estimator/reduce_kernel.h).
  bool sums_broadcast_grads = false;
  /// An 'A' gradient of a broadcast input is made at the output's full shape (mul's
  /// grad * other) and summed to the input's shape by autograd's engine once the node's
  /// backward has returned (engine.cpp validate_outputs -> reduce_grad): the full-size
  /// product lives until all of the node's gradients are made. GPU phases of rnd5_21
  /// (squeeze-excitation's x * scale): one full tensor more at the backward peak.
  bool full_broadcast_grads = false;
  /// Full-size intermediates its derivatives.yaml formula builds for input 0's gradient
  /// before the gradient itself. They are C++ temporaries of one full expression, so all
  /// live until the gradient is made, then go in reverse order. erf: `2.0 / sqrt(M_PI) *
  /// exp(-(self.pow(2))) * grad` makes pow, neg, exp and the scaled exp, then the product
  /// (seqtrace26 sh_esm_cls: five 8 MiB blocks at once in each ErfBackward0).
  uint8_t grad_temporaries = 0;
  /// The Python augmented assignment this op is written as ('+' for Add: `x += y`), which
  /// runs in place on x and so keeps x's dtype where `x + y` would promote: timm's
  /// `x += shortcut` adds an fp32 shortcut into a bf16 batch norm output under autocast
  /// and stays bf16 (traces31 st_hrnet_w18: 1.8 MB blocks where memest had 3.6 MB). Only a
  /// dynamo export's stack trace tells `x += y` from `x = x + y`; 0: no such spelling.
  char augmented = 0;
  /// An activation that CNN code runs in place (torchvision's nn.ReLU(inplace=True)):
  /// it overwrites its input instead of allocating, when that input comes from an op
  /// with `overwritable_output` (or the node has inplace=1) and nothing else reads it.
  /// Measured: torchvision's in-place ReLU6 and Hardswish (Clip, HardSwish) keep
  /// their input apart all the same (mobilenet_v2 was 29% under when treated so).
  bool inplace = false;
  /// As `inplace`, but only for an activation owned by the norm module that made its input: a
  /// norm layer with its activation inside (timm's BatchNormAct2d and GroupNormAct build
  /// `self.act` with inplace=True and apply it to the norm's output, so module `x.bn.act`
  /// reads `x.bn`'s output). Elsewhere nothing in an export tells nn.LeakyReLU(inplace=True)
  /// from the default, and the costlier, out-of-place case is counted. GPU trace of timm's
  /// cspdarknet53 (traces15): no allocation for any BatchNormAct2d's LeakyReLU. Not after an
  /// Add: timm's bottleneck `act3` (create_act_layer(act_layer), inplace left False) is a
  /// child of the block that runs the residual add (cspresnet50 was 8.6% under so).
  bool inplace_when_owned = false;
  /// Its backward never reads its output, so an in-place activation may overwrite it
  /// (convolution, batch norm: the conv-bn-relu block; an Add: a residual block's
  /// `out += identity; out = self.relu(out)`, where the GPU allocates for neither:
  /// traces7 regnet_y_400mf, traces9 resnext50_32x4d).
  bool overwritable_output = false;
  WorkspaceFn fwd_workspace = nullptr;
  /// A CUDA reduction (Reduce.cuh: sum, mean, norm, prod; an exporter's GlobalAveragePool,
  /// which PyTorch runs as a mean): the dims it reduces. Where the launch spreads each
  /// output over several blocks, their partial results go through a global buffer held
  /// during the call (estimator/reduce_kernel.h): a mean over the spatial dims of a
  /// channels-last map took 132 MiB beside its 75 MB input (traces21 rnd15_27).
  ReducedAxesFn reduced_axes = nullptr;
  /// Its backward allocates the input's gradient contiguous whatever the input's layout
  /// (reflection and replication padding: zeros_like(input, contiguous)), so the
  /// elementwise backward before it runs contiguous too (traces28 rnd6_89: an SE gate's
  /// sum_to_size on a channels-last map before a reflect pad took no buffer).
  bool input_grad_contiguous = false;
  /// Its CUDA backward reads the output's gradient in the memory format it gave the
  /// output (DilatedMaxPool2d.cu, DilatedMaxPool3d.cu, AveragePool2d.cu:
  /// gradOutput_.contiguous(input.suggest_memory_format()); avg_pool3d: contiguous): a
  /// gradient laid out otherwise is copied, and the copy is held for the call.
  bool grad_in_input_format = false;
  /// Its inputs' gradients are narrow views of the output's gradient (CatBackward0:
  /// grad.narrow along the concat dim), not copies; strided unless they split dim 0.
  bool narrows_grads = false;
  /// Its CUDA backward reads the output's gradient contiguous and copies one that is not
  /// (cuDNN convolution: grad_output.contiguous(memory_format); cudnn_batch_norm_backward;
  /// host_softmax_backward: grad_.contiguous()): a narrowed gradient from a Concat is
  /// copied at the call's start and freed as it returns.
  bool contiguous_grad_out = false;
  /// A convolution: a 1-D layer is run as 2-D after `input.contiguous()` (Convolution.cpp,
  /// forward and backward), so a strided rank-3 input is copied, and in backward a
  /// strided gradient too (simulate.cc strided_1d_conv_input, conv_1d_backward_copies).
  bool contiguous_1d = false;
  /// The gradient of input 2 (a convolution's bias) is the output's gradient summed over
  /// every dim but dim 1, by that CUDA reduction, with its buffer (after the other
  /// gradients and the backward workspace).
  bool bias_grad_is_reduction = false;
  /// The forward workspace is taken before the saved extras and freed after them
  /// (cuDNN's RNN: workspace, reserve, workspace freed); else after both.
  bool workspace_first = false;
  /// Scratch of the input's gradient computation, allocated and freed right after
  /// that gradient (cuDNN's dgrad call; `input_grad` is true).
  WorkspaceFn bwd_data_workspace = nullptr;
  /// Scratch of the rest of backward (cuDNN's wgrad), after the other gradients.
  WorkspaceFn bwd_workspace = nullptr;
  /// Where the library's choice cannot be predicted from shapes (cuDNN's split-K depth for
  /// 3-D weight gradients): what the backward call may take at most, by a probed envelope.
  /// The estimate keeps bwd_workspace; the excess over it is reported beside the peak.
  WorkspaceFn bwd_workspace_bound = nullptr;
  /// The scratch is an ordinary temporary (softmax's grad * result, layer norm's
  /// contiguous copies), not a cuDNN workspace: running out of memory there fails the
  /// step, where cuDNN, refused a workspace, tries its next algorithm. It is computed from
  /// the output and its gradient, so bwd_data_workspace gets the output's dtype (fp32
  /// under autocast's softmax of half input).
  bool scratch_is_temporary = false;
  /// The entry PyTorch's dispatch picks instead of this one for this node, once the
  /// dtype it runs in is known (scaled_dot_product_attention's backends; dropout with
  /// p = 0, which returns its input); nullptr, or returning nullptr, keeps this one.
  const OpInfo* (*variant)(const Graph& g, const Node& n, const Dispatch& d) = nullptr;
  const char* domain = "";         ///< "" (ONNX default) or "memest"
  /// One library call written as several nodes (an exported nn.LSTM of L layers, each
  /// layer a node): its backward is one call too (CudnnRnnBackward0), which runs when
  /// autograd reaches the call and frees what every layer saved only as it returns. The
  /// inner layers' saved tensors are held until the starting node's backward is done.
  CallStartFn call_start = nullptr;
  const char* note = "";           ///< one line for `memest ops`

  /// The gradient letter for input i ('N' when not differentiable).
  char grad_of(size_t i) const;
  bool saves_input(size_t i) const { return i < 32 && (saved_inputs >> i) & 1u; }
  bool saves_output(size_t i) const { return i < 32 && (saved_outputs >> i) & 1u; }
};

/// Bitmask helper for saved_inputs / saved_outputs: bits({0, 1}).
constexpr uint32_t bits(std::initializer_list<int> idx) {
  uint32_t m = 0;
  for (int i : idx) m |= 1u << i;
  return m;
}

}  // namespace memest
