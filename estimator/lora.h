// LoRA adapters added to a graph that has none: what `memest advise` proposes for a
// model exported without peft, estimated as peft would train it.
#pragma once

#include <string>
#include <vector>

#include "estimator/ir.h"

namespace memest {

/// peft's LoraConfig as far as memory goes: rank r and the Linear layers it wraps.
struct LoraSpec {
  int64_t rank = 8;  ///< LoraConfig's default r
  /// Last component of a Linear's module path that gets adapters. The default is the
  /// union of peft's per-architecture defaults (TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING:
  /// q_proj/v_proj for LLaMA, Mistral, Qwen2, OPT, BART; query/value for BERT, ViT;
  /// q/v for T5; c_attn for GPT-2; query_key_value for BLOOM, Falcon, GPT-NeoX).
  std::vector<std::string> targets = {"q_proj", "v_proj", "query", "value", "q", "v", "c_attn", "query_key_value"};
};

/// The adapters' parameter names match this --train pattern (peft's `lora_A`, `lora_B`).
inline constexpr const char* kLoraTrainPattern = "*lora_*";

/// `g` with peft's LoRA on every Linear (MatMul or Gemm by a 2-D parameter) whose module
/// is a target: beside y = Linear(x), y + (x A^T) B^T * (alpha / r), with A [r, in] and
/// B [out, r] new parameters named `<module>.lora_A.default.weight` and
/// `<module>.lora_B.default.weight`; lora_dropout 0 (an Identity). Returns how many
/// Linear layers got adapters through `wrapped` (0: the graph is returned unchanged).
Graph with_lora(const Graph& g, const LoraSpec& spec, int* wrapped);

/// How many Linear layers with_lora would wrap, without copying the graph.
int lora_sites(const Graph& g, const LoraSpec& spec);

}  // namespace memest
