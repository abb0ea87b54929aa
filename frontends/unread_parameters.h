// Parameters a dynamo export's graph signature lists that no op of the exported forward
// reads: torch keeps them on the GPU, the file holds them in no form (warn_unread_parameters).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "estimator/ir.h"
#include "frontends/dynamo_repair.h"

namespace memest {

/// A parameter of a module the exported forward never ran, and the outermost such module
/// it lies in ("model.vision_model.encoder.layers.0.fc1.weight", "model.vision_model").
struct UnreadParameter {
  std::string_view name;
  std::string_view module;
};

/// The listed parameters (`parameters`, the signature's PARAMETER targets) that are in
/// the file in no form: no tensor of the name, no node's FX call takes them, no note of
/// the exporter's optimizer names them as folded into a value, and no node lies in their
/// module. A multimodal model whose forward runs on token ids alone (Mllama's bare model:
/// its vision tower, 75 MiB, beside a 16 MiB language model) lists every parameter, and
/// the optimizer drops the ones no call reads. A module that ran may read its parameters
/// under another name (a tied head's weight is the embedding's, an NF-Net's merged gains
/// are one constant), and the root's own may be folded (CLIP's logit_scale): neither counts;
/// nor does one whose path below the module that never ran is the tail of a name the file
/// holds or a call reads (a module reached by two paths, CoaT's shared `crpe1`; one tied to
/// another, T5's `shared` and `decoder.embed_tokens`), so a tower's parameters named like
/// one that ran (its `weight` straight under the tower) go unsaid: the count is a floor.
std::vector<UnreadParameter> unread_parameters(const Graph& g, const std::vector<std::string_view>& parameters,
                                               const ParameterReads& reads);

/// The modules those parameters lie in, with how many each holds, most first:
/// "model.vision_model (312)".
std::vector<std::string> unread_modules(const std::vector<UnreadParameter>& unread);

/// Warns (Graph::warn) when any listed parameter is unread: they sit on the GPU, parameter
/// bytes only (no gradient reaches them, so the optimizer keeps no state for them), and
/// the file does not hold their sizes. Returns how many.
size_t warn_unread_parameters(Graph& g, const std::vector<std::string_view>& parameters, const ParameterReads& reads);

}  // namespace memest
