// Initializers of a legacy export (torch.onnx.export(dynamo=False)) that a linear layer
// takes as its input, not its weight: buffers fed through an MLP (keep_linear_inputs_as_buffers).
#pragma once

#include "estimator/ir.h"

namespace memest {

/// The legacy exporter writes every parameter and buffer as an initializer named after
/// its state_dict key and says which is which nowhere, so classify_initializers takes
/// every floating one (less BatchNorm statistics and literals) for a parameter. nn.Linear
/// becomes MatMul(x, Transpose(weight)) or Gemm(x, weight): the weight is the second
/// operand. torchvision's Swin-V2 runs its continuous position bias MLP on a buffer,
/// `cpb_mlp(relative_coords_table)`, so the table ([1, 15, 15, 2] per block) is the
/// first operand, and as a parameter sv_swin_v2_t read 21,600 bytes over torch's count.
/// An initializer that every reader takes as the first operand of a MatMul or Gemm whose
/// second is a parameter (directly or through one Transpose) is such a buffer: among the
/// 6,584 legacy files of the export matrices only those tables are read so; a learned
/// input (query tokens, latents) is normed, added or expanded before a projection reads
/// it. Returns how many initializers became buffers.
int keep_linear_inputs_as_buffers(Graph& g);

}  // namespace memest
