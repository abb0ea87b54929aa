// ONNX frontend: lowers a ModelProto to the IR, reading dimensions and dtypes only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "estimator/ir.h"

namespace memest {

/// Reads an ONNX file. Never touches external data (weights may be absent).
/// Throws Error naming the file for anything that is not a readable ONNX model.
Graph read_onnx_file(const std::string& path);

/// Same, from bytes already in memory (fuzzing, tests, the TorchScript helper's output).
Graph read_onnx_bytes(const std::string& bytes, const std::string& file);

/// After lowering a dynamo export: a float initializer that its graph signature lists
/// among `buffers` (BUFFER and CONSTANT_TENSOR targets), or does not list among
/// `parameters` (PARAMETER targets) and that no folded weight explains, is a buffer the
/// exporter lifted or folded (llama's inv_freq), not a weight with a gradient. The
/// reference reader, which reads the signature its own way, shares this rule.
void keep_exported_parameters(Graph& g, const std::vector<std::string_view>& parameters,
                              const std::vector<std::string_view>& buffers = {});

}  // namespace memest
