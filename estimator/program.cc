// The program's vocabulary: memory categories and phases by name, and the caching
// allocator's rounding of a request (declared in simulate.h).
#include "estimator/error.h"
#include "estimator/simulate.h"

namespace memest {

const char* category_key(Category c) {
  static const char* const k[] = {"parameters", "buffers", "inputs", "gradients", "optimizer_state",
                                  "activations", "temporaries", "autocast_cache", "workspace"};
  return k[static_cast<size_t>(c)];
}

const char* category_title(Category c) {
  static const char* const k[] = {"Parameters", "Buffers", "Inputs", "Gradients", "Optimizer state",
                                  "Activations", "Temporaries", "Autocast cache", "Workspace"};
  return k[static_cast<size_t>(c)];
}

const char* phase_name(Phase p) {
  static const char* const k[] = {"setup", "zero_grad", "forward", "backward", "optimizer"};
  return k[static_cast<size_t>(p)];
}

int64_t round_alloc(int64_t bytes, int64_t round) {
  if (bytes <= 0) return 0;
  if (bytes < round) return round;
  return checked_mul((bytes + round - 1) / round, round);
}

}  // namespace memest
