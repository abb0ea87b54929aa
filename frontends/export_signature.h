// What an ONNX file says about its initializers beside the graph: the dynamo exporter's
// graph signature (which initializers are parameters, buffers or lifted constants, and
// which each node's FX call takes) and the TorchScript helper's list of buffers.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/dynamo_repair.h"
#include "frontends/onnx_views.h"

namespace memest {

/// The targets the dynamo exporter's graph signature lists as `kind` (PARAMETER, BUFFER,
/// CONSTANT_TENSOR), or nullopt when the file has no signature.
std::optional<std::vector<std::string_view>> exported_targets(const onnx_views::ModelView& model,
                                                              std::string_view kind);

/// Per node, the parameters (and buffers and constants) its FX call takes, by the
/// signature's placeholder names (fx_calls[k]: node k's "pkg.torch.onnx.fx_node").
ParameterReads parameter_reads(const onnx_views::ModelView& model, const std::vector<std::string_view>& fx_calls);

/// The initializers the TorchScript helper lists as buffers ("memest.buffers").
std::vector<std::string> declared_buffers(const onnx_views::ModelView& model);

}  // namespace memest
