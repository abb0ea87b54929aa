// The fusion pass: rewrites node patterns that PyTorch runs as one op, so that
// what autograd saves follows the op PyTorch ran, not the exporter's spelling.
#pragma once

#include "estimator/ir.h"

namespace memest {

struct FuseOptions {
  bool attention = true;  ///< MatMul-Softmax-MatMul as scaled_dot_product_attention
};

/// Runs after infer_shapes, on the links verify_and_sort() made (the shape pass keeps
/// them), and leaves them as Graph::relink() would. Rewrites: MatMul(+Transpose of a weight)+Add(bias) -> Linear;
/// the attention pattern -> Attention; the erf GELU -> Gelu; x*sigmoid(x) -> Silu;
/// layer_norm spelled out below opset 17 -> LayerNormalization.
/// Returns how many patterns were rewritten.
int fuse_patterns(Graph& g, const FuseOptions& opts = {});

}  // namespace memest
