// Picks the frontend for a model file: ONNX, or TorchScript through the helper program.
#pragma once

#include <string>
#include <vector>

#include "estimator/ir.h"

namespace memest {

/// Per-input sample shape for TorchScript (`--input-shape 3x224x224[:dtype]`).
struct InputSpec {
  std::vector<int64_t> dims;  ///< without the batch
  DType dtype = DType::F32;
};

/// Parses "3x224x224", "512:int64", "-" (a scalar per sample); throws Error.
InputSpec parse_input_shape(const std::string& text);

/// Loads MODEL (.onnx, or .pt/.pth/.ts TorchScript). Throws Error naming the file.
/// Whether the file's name says TorchScript (.pt, .pth, .ts, .jit, .torchscript).
bool torchscript_name(const std::string& path);

Graph load_model(const std::string& path, const std::vector<InputSpec>& inputs);

}  // namespace memest
