// A pass: matrix products whose operands the Python code cast to float32 ran with
// autocast off.
#pragma once

#include "estimator/ir.h"

namespace memest {

/// Code that wants a product in float32 under mixed precision casts its operands and
/// turns autocast off around it, since autocast would cast `.float()` operands straight
/// back to half: timm's EfficientViT LiteMLA._attn (`q, k, v = q.float(), k.float(),
/// v.float()` then `k.transpose(-1, -2) @ v` and `q @ kv` under
/// `torch.autocast(enabled=False)`), transformers' rotary embeddings
/// (`inv_freq.float() @ position_ids.float()`). A float32 trace keeps such a cast as a
/// Cast whose input is already float32, a no-op only written because the code asked for
/// it; the dynamo exporter drops it and marks the block instead (pystack.h hop_call).
/// This pass marks autocast off on each autocast-lowered op (matmul, linear, conv) with
/// at least two floating activation operands, every one of them such a cast, a cast
/// from an integer, or the output of an op it marked, through views. One operand cast
/// is no evidence: `probs.to(query.dtype) @ value` is a cast back to the run's half
/// dtype, a float32 no-op in the trace too. Runs after shapes (it reads dtypes);
/// returns how many ops it marked.
int mark_upcast_matmuls(Graph& g);

}  // namespace memest
