// Schemas of ops added to torch after 1.13, so that libtorch 1.13 can compile the
// code of a TorchScript archive saved by torch 2.x. Each is declared only when
// this libtorch lacks it.
#include "ts_compat.h"

#include <torch/csrc/jit/frontend/function_schema_parser.h>
#include <torch/csrc/jit/runtime/operator.h>

namespace memest::ts {

void register_newer_ops() {
  static const char* const kSchemas[] = {
      // torch 2.0; `scale` from 2.1, `enable_gqa` from 2.5.
      "aten::scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, "
      "float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor",
  };
  for (const char* text : kSchemas) {
    auto schema = torch::jit::parseSchema(text);
    if (!torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(schema.name())).empty()) continue;
    torch::jit::registerOperator(torch::jit::Operator(
        text, [](torch::jit::Stack&) { TORCH_CHECK(false, "memest-torchscript declares this op but never runs it"); },
        c10::AliasAnalysisKind::FROM_SCHEMA));
  }
}

}  // namespace memest::ts
