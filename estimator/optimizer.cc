// The optimizer step's allocations, in the order torch makes them.
#include "estimator/optimizer.h"

namespace memest {

void optimizer_step(StepMemory& mem, const TrainConfig& cfg, bool first_step, const std::vector<Expr>& state_bytes,
                    bool& scaler_made) {
  int found_inf = -1;
  if (cfg.amp == Amp::FP16) {
    // GradScaler: _scale and _growth_tracker live from the first scale(); found_inf per step.
    if (!scaler_made) {
      scaler_made = true;
      mem.allocate(Expr(4), Category::OptimizerState, -1);
      mem.allocate(Expr(4), Category::OptimizerState, -1);
    }
    found_inf = mem.allocate(Expr(4), Category::Temporaries, -1);
  }
  const bool adam = cfg.optim == Optim::Adam || cfg.optim == Optim::AdamW;
  if (first_step) {
    for (const Expr& bytes : state_bytes) {
      if (adam) {
        mem.allocate(bytes, Category::OptimizerState, -1);  // exp_avg
        mem.allocate(bytes, Category::OptimizerState, -1);  // exp_avg_sq
      } else if (cfg.momentum != 0) {
        mem.allocate(bytes, Category::OptimizerState, -1);  // momentum_buffer = clone(grad)
      }
    }
  }
  if (adam && cfg.foreach) {
    // _multi_tensor_adam: exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sqs), one per parameter,
    // a Python list that goes when the function returns: CPython's list_dealloc drops its items
    // last first (traces8 resnet18 b2-fp32-adamw: fc's 2.0 MB goes first, layer3.0.conv1's last).
    std::vector<int> tmp;
    for (const Expr& bytes : state_bytes) tmp.push_back(mem.allocate(bytes, Category::Temporaries, -1));
    for (auto b = tmp.rbegin(); b != tmp.rend(); ++b) mem.release(*b);
  }
  if (found_inf >= 0) mem.release(found_inf);
}

}  // namespace memest
