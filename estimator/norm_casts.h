// The casts a float32 export dropped (transformers' RMSNorm, timm's EvoNorm), put back.
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

/// `x.square().float()` as the legacy exporter writes it: Mul(x, x) that a float Cast alone
/// reads. aten::square is pow(x, 2), which autocast runs in float32 on a float copy of x
/// that its backward keeps (timm's FilterResponseNorm: `x.square().float().mean(...)`);
/// the Mul, a promoting op, ran in half. Such a Mul becomes Pow(x, 2); a hand-written
/// `(x * x).float()` is then taken high (the copy kept), not low. Returns how many.
int restore_squares(Graph& g);

/// `self.weight.view(v_shape).to(x_dtype)` as the legacy exporter writes it from a float32
/// trace: a Cast to float of a parameter (through views) that an elementwise op reads with
/// an activation x, in a module that also casts a statistic back to its input's dtype
/// (a CastLike there: restore_cast_backs). Under autocast the parameter follows x's half
/// dtype, and so does the product, where the parameter alone would promote it to float32
/// (timm's EvoNorm scales by every parameter so). Run after restore_cast_backs. Such a
/// Cast becomes CastLike(w, x). Returns how many.
int restore_parameter_casts(Graph& g);

/// The casts of a module whose class casts to its input's dtype (Node::casts_to_input,
/// ops/modules.cc: timm's EvoNorm), which a float32 dynamo export keeps none of: each
/// parameter operand of its elementwise ops becomes CastLike(w, x); a statistic of an
/// activation x (its mean, its deviation from that mean, its square) reads one Cast(x,
/// float) (`x.float()`, a copy the variance's backward keeps under autocast), and the
/// Sqrt that statistic reaches is cast back to x's dtype (`.sqrt().to(x_dtype)`). Runs
/// before the sort pass (it adds nodes); returns how many casts it put back.
int restore_module_casts(Graph& g);

}  // namespace memest
