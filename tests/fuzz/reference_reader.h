// The reference ONNX reader (tests/fuzz/reference_reader.cc): protobuf's message
// classes and the lowering memest had before its wire-format reader.
#pragma once

#include <string>

#include "estimator/ir.h"

namespace memest::reference {

/// As memest::read_onnx_bytes, through libprotobuf's ModelProto.
Graph read_onnx_bytes(const std::string& bytes, const std::string& file);

}  // namespace memest::reference
