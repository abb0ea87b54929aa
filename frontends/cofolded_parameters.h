// Parameters the dynamo exporter's constant folder computed together into one value:
// the value stands for one of them, the others are put back (restore_cofolded_parameters).
#pragma once

#include <string_view>
#include <vector>

#include "estimator/ir.h"
#include "frontends/dynamo_repair.h"

namespace memest {

/// The exporter's optimizer folds whatever it can compute from initializers alone, and a
/// dynamo export's parameters are initializers: timm's ScaledStdConv2d standardizes its
/// weight by `(gain * scale).view(-1)` each forward, and where the weight is small the
/// whole standardized weight becomes one constant (`view_8` [64, 64, 1, 1], folded_from
/// conv1.gain and conv1.weight). That value has the weight's shape and stands for the
/// weight; the gain (one element per output channel) is in the file in no form, and
/// nf_regnet_b5 read 1,792 bytes under torch's count, test_nfnet 3,200.
///
/// The file says the missing size elsewhere: a sibling module whose same two parameters
/// were folded apart (the gain alone into `view_16` [64], the weight its own initializer
/// [64, 64, 3, 3]) shows the one's element count equal to one dimension of the other's
/// shape. Where every such sibling agrees on that dimension, a value folded from exactly
/// two listed parameters of one module, which no tensor and no other value holds, stands
/// for the one whose dimension it is; the other is put back as a parameter of that many
/// elements (laid out along that dimension), multiplied into the value before its readers
/// read it, as torch scales the standardized weight by the gain. Without a sibling to say
/// the size, nothing is put back. Returns how many parameters.
int restore_cofolded_parameters(Graph& g, const std::vector<std::string_view>& parameters, const ParameterReads& reads);

}  // namespace memest
