// What optimizer.step() allocates through the caching allocator (torch/optim/adam.py,
// sgd.py, torch/amp/grad_scaler.py), apart from the model: the simulator's last stage.
#pragma once

#include <vector>

#include "estimator/expr.h"
#include "estimator/parallel.h"
#include "estimator/simulate.h"

namespace memest {

/// One step: GradScaler's state and found_inf (fp16), the optimizer's state on the
/// first step (Adam's exp_avg and exp_avg_sq, SGD's momentum buffer), and foreach
/// Adam's temporary sqrt of every exp_avg_sq. `state_bytes`: one state tensor per
/// parameter that has a gradient, in first-gradient order. `scaler_made` is set once
/// GradScaler's persistent tensors exist.
void optimizer_step(StepMemory& mem, const TrainConfig& cfg, bool first_step, const std::vector<Expr>& state_bytes,
                    bool& scaler_made);

}  // namespace memest
