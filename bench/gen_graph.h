// Synthetic ONNX graphs for the benchmark: a deep stack of pre-LN transformer
// blocks, as the legacy exporter spells them (MatMul+Add linears, the erf GELU,
// the Mul-MatMul-Softmax-MatMul attention, Shape/Gather/Concat shape arithmetic
// feeding Reshape), with a symbolic batch and weights that have dims but no data.
#pragma once

#include <cstdint>
#include <string>

namespace memest::bench {

struct GenOptions {
  int64_t nodes = 10000;  ///< about this many nodes (whole blocks, never fewer)
  int64_t seq = 128;
  int64_t hidden = 256;
  int64_t heads = 4;
  int64_t ffn = 1024;
  int64_t vocab = 1000;
};

/// Nodes in one transformer block of the generated graph.
int64_t nodes_per_block();

/// The serialized ModelProto (opset 17, IR 8).
std::string generate_transformer(const GenOptions& o);

}  // namespace memest::bench
