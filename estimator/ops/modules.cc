// What memest knows of whole modules, by class: a table, like the op tables. The
// dynamo exporter records each node's module classes (its "namespace" metadata);
// the frontends ask here.
#include <string_view>

#include "estimator/ops/registry.h"

namespace memest {
namespace {

struct ModuleRule {
  std::string_view class_name;  ///< how the qualified name ends (kAutocastOff) or starts (kCastsToInput)
  const char* why;
};

// Modules whose forward runs under torch.autocast(enabled=False): what they compute
// stays in the dtypes it is given (fp32 here), whatever the autocast around them.
const ModuleRule kAutocastOff[] = {
    {"RotaryEmbedding",
     "transformers' rotary embeddings (Llama, Mistral, Qwen2, Gemma, ...) make cos and sin in fp32 with "
     "autocast disabled (transformers PR 29285); so q * cos is fp32 under fp16 autocast (GPU trace of "
     "llama_hf, traces4-h200-torch2.11.jsonl)"},
};

// Custom torch.autograd.Functions memest knows by the statement that applies them (its
// file, its code): the fused op their traced forward becomes (fuse.cc custom_functions).
// Any other is a CustomFunction, which keeps its input and whose backward is not known.
struct FunctionRule {
  std::string_view file;      ///< the applying statement's file ends with this
  std::string_view call;      ///< its code contains this
  const char* op;
};
const FunctionRule kFunctions[] = {
    {"models/bloom/modeling_bloom.py", "GeLUFunction.apply(", "BloomGelu"},
};

}  // namespace

const char* custom_function_op(std::string_view where, std::string_view code) {
  const std::string_view file = where.substr(0, where.rfind(':'));
  for (const FunctionRule& r : kFunctions) {
    if (file.ends_with(r.file) && code.find(r.call) != std::string_view::npos) return r.op;
  }
  return "CustomFunction";
}

bool module_disables_autocast(std::string_view module_class) {
  for (const ModuleRule& r : kAutocastOff) {
    if (module_class.ends_with(r.class_name)) return true;
  }
  return false;
}

// Module classes whose forward keeps what its submodules return in local variables
// (`inputs_embeds = self.wte(input_ids)`) until it returns: transformers' code is
// written so. The GPU trace of gpt2_hf at batch 114 (gtrace-h200-torch2.11.jsonl) frees
// the token embeddings only when GPT2Model.forward returns, and that hole is where the
// backward's cuBLAS workspace lands. Hand-written models nest calls instead
// (`self.drop(self.attn(x))`), so no rule holds for every module.
constexpr std::string_view kKeepsLocals[] = {"transformers."};

bool module_keeps_locals(std::string_view module_class) {
  for (std::string_view prefix : kKeepsLocals) {
    if (module_class.starts_with(prefix)) return true;
  }
  return false;
}

// Module classes whose forward casts to its input's dtype what a float32 export cannot
// show: timm's EvoNorm layers (timm/layers/evo_norm.py; every EvoNorm2dB*/S* class)
// compute `x.float().var(...).add(eps).sqrt().to(x_dtype)` (group_std, instance_std,
// group_rms, instance_rms) and scale by `self.weight.view(v_shape).to(x_dtype)`; traced in
// float32 every cast is a no-op and the dynamo export keeps none. Without them a half
// activation times a float32 parameter promotes the rest of the norm to float32
// (seqtrace32c, st_resnetv2_50d_evos bf16: 25.7 MB where the GPU's blocks were 12.8).
// timm's FilterResponseNorm layers (timm/layers/filter_response_norm.py) do the same:
// `x.square().float().mean(...).add(eps).rsqrt().to(x.dtype)`, then
// `x * self.weight.view(v_shape).to(dtype=x_dtype) + self.bias...` (blind32's
// st_resnetv2_50d_frn bf16: +30% through the dynamo export, the affine ops in float32).
const ModuleRule kCastsToInput[] = {
    {"timm.layers.evo_norm.EvoNorm", "timm's EvoNorm: statistics of x.float() cast back, parameters .to(x_dtype)"},
    {"timm.layers.filter_response_norm.FilterResponseNorm",
     "timm's FilterResponseNorm: x.square().float() statistic cast back, parameters .to(x_dtype)"},
};

bool module_casts_to_input(std::string_view module_class) {
  for (const ModuleRule& r : kCastsToInput) {
    if (module_class.starts_with(r.class_name)) return true;
  }
  return false;
}

}  // namespace memest
