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

}  // namespace memest
