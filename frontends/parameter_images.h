// One parameter the dynamo exporter's constant folder computed into several values: one
// value stands for it, the others' readers read that one (merge_parameter_images).
#pragma once

#include <string_view>
#include <vector>

#include "estimator/ir.h"
#include "frontends/dynamo_repair.h"

namespace memest {

/// The exporter's optimizer folds whatever it computes from initializers alone, and a
/// dynamo export's parameters are initializers. timm's ConViT gates each attention by
/// `sigmoid(gating_param)` and `1 - sigmoid(gating_param)`: both are folded (`sigmoid_1`
/// and `sub_20`, [1, 4, 1, 1] each, folded_from gating_param), the parameter itself is in
/// the file in no form, and as two parameters they read twice its bytes (convit_tiny
/// +160 bytes over torch's count, convit_small +360).
///
/// Values the optimizer folded from exactly one listed parameter with no tensor of its
/// own, from no listed buffer, and through nothing but elementwise and layout calls
/// (sigmoid, sub, view: each value an image of the parameter, element for element), are
/// images of that parameter when they have one shape and dtype: the parameter has their
/// element count. The first (by tensor id) stands for the parameter; the others' readers
/// read it in their place, so the gradient reaches one tensor of the parameter's size, as
/// in torch it reaches the one parameter (the images torch computes each step, a few
/// elements, go uncounted). Values of different shapes, or folded through any other call
/// (a slice, a chunk: parts of the parameter, not images), are left as they are. Runs
/// before split_deduplicated_initializers, which then gives each module its own copy.
/// Returns how many values' readers were moved.
int merge_parameter_images(Graph& g, const std::vector<std::string_view>& parameters,
                           const std::vector<std::string_view>& buffers, const ParameterReads& reads);

}  // namespace memest
