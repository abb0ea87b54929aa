// Repairs of what torch's dynamo ONNX exporter (torch.onnx.export(dynamo=True), the
// default from torch 2.9) leaves out of the graph, from the metadata it leaves on nodes.
#pragma once

#include <span>
#include <unordered_map>
#include <string_view>
#include <vector>

#include "estimator/ir.h"

namespace memest {

/// The parameters each node reads, as the exporter's FX metadata names them: node k's FX
/// call takes `of(k)` (the graph signature's targets of the `%p_...` placeholders among
/// its arguments: `linear(%x, %p_fc_weight, %p_fc_bias)` gives fc.weight and fc.bias to
/// the MatMul and the Add it became). Unlike the initializers' names, which the
/// exporter's optimizer merges, folds and renames, these say which parameter each read
/// is. Empty for a file without that metadata; nothing for nodes memest added.
struct ParameterReads {
  std::vector<std::vector<std::string_view>> by_node;
  /// The same for the signature's buffers and constants (`%b_pos_encoding`): node k's call
  /// takes `buffers_of(k)`.
  std::vector<std::vector<std::string_view>> buffers_by_node;
  /// Node k's FX call's own name ("layer_norm_1"), and the values it takes that are no
  /// placeholder of the signature (the outputs of other calls: "%clone", "%getitem_5").
  std::vector<std::string_view> name_by_node;
  std::vector<std::vector<std::string_view>> values_by_node;
  /// What the exporter's optimizer folded into an initializer (tensor id -> the names of
  /// its metadata's "folded_from" list: "rope.freqs", "select", "val_7"), where it says.
  std::unordered_map<int, std::vector<std::string_view>> folded_from;
  bool empty() const { return by_node.empty(); }
  std::span<const std::string_view> of(int node) const {
    if (node < 0 || static_cast<size_t>(node) >= by_node.size()) return {};
    return by_node[static_cast<size_t>(node)];
  }
  std::span<const std::string_view> buffers_of(int node) const {
    if (node < 0 || static_cast<size_t>(node) >= buffers_by_node.size()) return {};
    return buffers_by_node[static_cast<size_t>(node)];
  }
};

/// The quoted strings of a Python list of strings, in order ("['a.b', 'c']" -> a.b, c).
std::vector<std::string_view> python_strings(std::string_view list);

/// The op a dynamo-exported node came from: the type of its "namespace" metadata's last
/// component (".../bn1: torch.nn.modules.batchnorm.BatchNorm2d/_native_batch_norm_legit_functional:
/// aten._native_batch_norm_legit_functional.default").
std::string_view namespace_op(std::string_view ns);

/// The layers a dropped BatchNorm is folded into: Conv, ConvTranspose, Gemm, MatMul.
bool may_hide_batch_norm(std::string_view op);

/// torch 2.11's exporter drops every BatchNorm that follows a Conv (1-3d), ConvTranspose
/// or Linear, in training mode as in eval mode, and leaves the layer (node `layer`, the
/// graph's last) with the BatchNorm's metadata and output. When `origin_op` says so,
/// appends the BatchNorm back after it (training mode unless the op is the
/// `_no_training` one), with parameters and running statistics named after its module
/// (as the graph signature lists them), puts the layer back in its own module (from its
/// weight's name), adds the running statistics' ids to `statistics`, and returns true.
/// resnet18 from such a file was 38% under without it.
bool restore_batch_norm(Graph& g, int layer, std::string_view origin_op, std::vector<int>& statistics);

/// The folded layer's Python stack when the BatchNorm's caller called the BatchNorm in a
/// statement of its own (`out = self.bn1(out)`): the caller's frames with that statement's
/// twin (the same names assigned), so the layer runs in a statement before the BatchNorm's.
void give_layer_its_statement(Graph& g, Node& layer, std::string_view bn_module);

/// A BatchNormalization the exporter kept (one that follows no Conv or Linear: after a
/// Concat, timm's BatchNormAct2d on a mixed block) comes from
/// aten._native_batch_norm_legit_functional, training mode, but carries no
/// training_mode attribute, so it read as inference mode: the graph was flagged as an
/// eval export (mixnet_s, levit_128s, coatnet_nano_rw_224, nf_resnet26). Sets
/// training_mode=1 when the node's aten op says training.
void mark_training_batch_norm(Node& bn, std::string_view origin_op);

/// The exporter writes a few nodes with no metadata at all (the Split of
/// `q, k, v = self.qkv(x).split(d, 2)`, Casts it inserts): no module path, no stack, as if
/// they ran at the top level, so the views a Split makes looked held until the whole
/// block returned (gpt_mini: 178 MiB a layer for too long; the GPU frees it when the
/// attention returns, gtrace). Such a node runs in the statement of the traced node before
/// it, at the depth that node shares with the traced node after it: it gets the previous
/// node's frames to one below that shared depth, and the module path the two share.
void place_untraced_nodes(Graph& g);


/// The exporter's optimizer drops a bias that is all zeros from the Gemm, Conv or
/// ConvTranspose that adds it (a fresh model's classifier: timm's head, torchvision's fc,
/// HF's pooler; timm's squeeze-excite and 1x1-conv MLPs, whose conv biases start at zero),
/// though the parameter still exists, gets a gradient and optimizer state. A bias the
/// graph signature lists as a parameter but no tensor holds, of a module whose layer
/// reads its weight without a bias input, is put back: [N] in the weight's dtype, N the
/// layer's output features (channels); so is one whose layer reads a bias the exporter
/// made when it folded a BatchNorm in, which it replaces. With `reads` (the FX
/// metadata), so is one whose layer's FX call takes it though the layer reads a weight
/// computed from its parameter (timm's ScaledStdConv2d standardizes its weight first).
/// Returns how many.
int restore_dropped_biases(Graph& g, const std::vector<std::string_view>& parameters, const ParameterReads& reads = {});

/// torchlib writes aten.group_norm(x, G, weight, bias) as InstanceNormalization of x
/// reshaped to [N, G, -1], with a scale of G ones and a bias of G zeros it makes itself,
/// then Mul by weight and Add of bias, both reshaped to [C, 1, ...]. In such a call the
/// InstanceNormalization's scale and bias are constants, not weights (as parameters they
/// read 32-64 bytes over on the random modules); the initializers the Mul and Add read
/// are the module's weight and bias when its FX call takes parameters, whatever their
/// size (a one-channel GroupNorm's are one element, which read as literal scalars).
void classify_group_norm_initializers(Graph& g, const ParameterReads& reads);


/// After lowering a dynamo export: a float initializer that its graph signature lists
/// among `buffers` (BUFFER and CONSTANT_TENSOR targets), or does not list among
/// `parameters` (PARAMETER targets) and that no folded weight explains, is a buffer the
/// exporter lifted or folded (llama's inv_freq), not a weight with a gradient. With
/// `reads` (the FX metadata), a folded weight explains an initializer only when a node
/// that reads it takes that weight in its FX call. The reference reader, which reads the
/// signature its own way, shares this rule.
void keep_exported_parameters(Graph& g, const std::vector<std::string_view>& parameters,
                              const std::vector<std::string_view>& buffers = {}, const ParameterReads& reads = {});

/// A Conv the exporter's rewriter folded a constant Pad into (its rule_name metadata names
/// FuseConvPad) gets its FX call's own padding as "call_pads", for the explicit-pads pass.
/// `rules`: the node's "pkg.onnxscript.rewriter.rule_name"; `fx_node`: its FX call.
void mark_folded_pad(Node& conv, std::string_view rules, std::string_view fx_node);

/// A Conv of timm's Conv2dSame family (the class of its own module, from the dynamo
/// exporter's `namespace`) with no padding in the file gets "same_pad_copy": pad_same's
/// F.pad by zeros clones the input (constant_pad_nd), a copy torch.export drops.
void mark_same_pad_copy(Node& conv, std::string_view ns);

/// `.contiguous()` of a permuted view, which the dynamo exporter drops (an Identity its
/// optimizer removes): a node whose FX call reads a `%clone_N` as its first argument that
/// no value of the file holds, while its ONNX input 0 is a Transpose's strided view, gets
/// that copy back (a memest Contiguous node after the Transpose). `fx_calls[k]`: node k's
/// "pkg.torch.onnx.fx_node". Returns how many copies; relinks the graph when any.
int restore_dropped_contiguous(Graph& g, const std::vector<std::string_view>& fx_calls);

/// A node inside one of torch.nn's upsampling modules (the class of its own module, from
/// the namespace) gets "upsample_module", for the fusion pass to fold the module's nodes
/// into the one interpolation PyTorch runs.
void mark_upsample_module(Node& node, std::string_view ns);

/// A node of F.rms_norm's decomposition (its stack trace ends in the call) gets
/// "from_rms_norm", for fuse.cc's rms_norm. `trace`: its "pkg.torch.onnx.stack_trace".
void mark_rms_norm(Node& node, std::string_view trace);

}  // namespace memest
