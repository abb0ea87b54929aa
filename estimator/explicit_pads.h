// A pass: convolutions whose padding PyTorch cannot do inside the convolution get the
// explicit Pad the model ran before them.
#pragma once

#include "estimator/ir.h"

namespace memest {

/// PyTorch's convolutions pad each spatial axis by the same amount on both sides
/// (ConvNd's `padding`). An ONNX Conv whose `pads` differ between the two sides of an
/// axis therefore comes from a model that padded explicitly first: timm's Conv2dSame and
/// every `tf_` model (TensorFlow "SAME" padding: F.pad by (0, 1) before a stride-2
/// convolution), or `padding="same"` with an even total (aten's _convolution_same pads
/// the input with constant_pad_nd). The padded tensor is a real allocation, and it is
/// the tensor the convolution keeps for its weight's gradient, in place of its input.
/// torch's dynamo exporter folds that constant Pad into the Conv's `pads`; this pass
/// takes it back out: a constant-mode Pad node by the whole of each side's padding
/// (timm's F.pad; the convolution then pads nothing) before the Conv, one for the
/// convolutions that read the same input with the same pads. Returns how many
/// convolutions it split. Runs before sorting; relinks the graph.
int split_asymmetric_pads(Graph& g);

}  // namespace memest
