// The casts of transformers' RMSNorm, put back where a float32 export dropped them.
#pragma once

#include "estimator/ir.h"

namespace memest {

/// transformers' RMSNorm (LlamaRMSNorm and its copies: Qwen3's, OLMo2's q_norm and
/// k_norm, ...) upcasts its input, normalises in float32 and casts the result back to the
/// input's dtype, before the weight's multiply (`self.weight * x.to(input_dtype)`) or
/// after it (`(self.weight * x).to(input_dtype)`). Exported in float32 both casts are
/// no-ops and vanish. Where the dynamo exporter's stack trace shows the weight's
/// statement casting back (`.to(`), puts back one Cast(x, float) that the Pow and the
/// Mul read and a CastLike(., x) of the normalised rows or of the product. Under autocast
/// a half input is then copied once, not kept for the Mul's backward, and the product
/// runs in the dtype the code casts it to; in float32 both casts are their input
/// (Cast's view_when_dtype_kept). Runs before the sort pass (it appends nodes);
/// returns how many norms it changed.
int restore_norm_casts(Graph& g);

/// `y.to(x.dtype)` after `x.float()` as the legacy exporter writes it from a float32 trace:
/// a second Cast to float of a value that is float only through an earlier Cast to float of
/// an activation x (a few single-activation ops between). In float32 it is a no-op; under
/// autocast it casts back to x's half dtype (timm's EvoNorm group_std: `x.float().var(...)
/// .add(eps).sqrt().to(x_dtype)`, whose expanded copy the GPU holds in bf16). Such a Cast
/// becomes CastLike(y, x). Returns how many.
int restore_cast_backs(Graph& g);

}  // namespace memest
