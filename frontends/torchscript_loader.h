// TorchScript frontend. libtorch takes 0.3-0.5 s just to start, so memest itself
// never links it: a helper program, memest-torchscript, loads the file and writes
// the lowered graph as an ONNX-format protobuf (shape-only) on stdout.
#pragma once

#include <string>
#include <vector>

#include "estimator/ir.h"
#include "frontends/load.h"

namespace memest {

/// Runs memest-torchscript (next to the running binary, or $MEMEST_TORCHSCRIPT) and
/// reads its output with the ONNX frontend. Throws Error naming the file.
Graph load_torchscript(const std::string& path, const std::vector<InputSpec>& inputs);

}  // namespace memest
