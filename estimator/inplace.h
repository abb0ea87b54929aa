// The in-place policy: when an activation overwrites its input instead of allocating, and
// when an arithmetic op was written as an augmented assignment (x += y).
#pragma once

#include <span>

#include "estimator/ir.h"
#include "estimator/ops/op_info.h"
#include "estimator/simulate_facts.h"

namespace memest {

/// Whether node `n` (op `info`) writes its output over its input 0, in the same dtype:
/// `x += y` (updates_in_place), or an in-place activation (OpInfo::inplace, or
/// inplace_when_owned inside the norm module that made its input) whose input only it
/// reads, made by an op that never reads its own output (OpInfo::overwritable_output). A frontend that knows (TorchScript's relu_) says
/// so with the attribute inplace=1. `eff` are the inputs as the op sees them, `out` the
/// output's run dtype, `facts` and `infos` the simulator's per-tensor facts and per-node ops.
bool runs_in_place(const Graph& g, const Node& n, const OpInfo* info, std::span<const EffectiveInput> eff, DType out,
                   std::span<const TensorFacts> facts, std::span<const OpInfo* const> infos);

/// Whether node `n` is `x += y` or `x -= y` (written_in_place) with x's shape: add_ and
/// sub_ write into x's block, and their gradients read neither operand.
bool updates_in_place(const Graph& g, const Node& n, const OpInfo* info);

/// Whether node `n` is the op of a Python augmented assignment that updates its input 0
/// (OpInfo::augmented: `x += y` for Add), as a dynamo export's stack trace shows: its
/// innermost frame runs "x += ..." and no consumer of its output belongs to the same
/// statement (`x += self.gamma * y`: the Mul is not the update, the Add is). Such an op
/// keeps x's dtype. False without a stack trace (legacy exports, other frontends).
bool written_in_place(const Graph& g, const Node& n, const OpInfo* info);

/// Whether node `n`, in a file without stack traces (a legacy export), reads as a residual
/// block's `x += shortcut` between its last norm and its activation (torchvision's
/// BasicBlock and Bottleneck, timm's: `x = self.bn2(x); x += shortcut; x = self.act2(x)`):
/// an Add (OpInfo::augmented '+') whose input 0 is the output of a batch norm (a norm with
/// OpInfo::overwritable_output; not Dropout) inside the Add's module, read by nothing else,
/// in the output's shape, and whose output only an activation inside the module reads.
/// add_ keeps the norm output's dtype where `x + shortcut` takes the wider one (an fp32
/// shortcut under autocast: HRNet's fuse sums, upsampled in fp32). In the dynamo exports of
/// the corpus and the samples (975 files), where stack traces say which it is, all 5,370
/// such Adds read by an activation are `+=` and none of the 5,406 read by anything else
/// (timm's inverted residuals: `x = self.drop_path(x) + shortcut`, then a Conv or an Add).
bool guessed_residual_update(const Graph& g, const Node& n, const OpInfo* info, std::span<const TensorFacts> facts,
                             std::span<const OpInfo* const> infos);

}  // namespace memest
