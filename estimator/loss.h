// The loss of protocol.md, appended to the model's output as nodes of module "loss".
#pragma once

#include "estimator/ir.h"
#include "estimator/simulate.h"

namespace memest {

/// Adds the target input `y` (when the loss has one) and the loss nodes after the
/// model's first output. CE: [B,C] with y int64 [B]; [B,T,V] with y [B,T]; [B,C,H,W]
/// with y [B,H,W]. MSE: y shaped like the output. Sum: out.float().sum().
/// The graph's links must be current; the new nodes are linked in.
void append_loss(Graph& g, Loss loss);

}  // namespace memest
