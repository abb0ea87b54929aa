// What-ifs for a step that does not fit: shared by `memest advise` (the table) and
// `memest sweep` (its first answer when not even batch 1 fits).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/options.h"
#include "cli/progress.h"
#include "estimator/analysis.h"

namespace memest {

/// One change to the training configuration.
struct WhatIf {
  std::string name;   ///< "AMP bf16"
  std::string key;    ///< "amp_bf16", for JSON
  TrainConfig train;  ///< the configuration analysed
  int64_t steps = 1;  ///< gradient accumulation steps: estimated at batch / steps
  int64_t lora_rank = 0;  ///< > 0: peft's LoRA added to the graph first (estimator/lora.h)
};

/// A what-if's estimate.
struct Outcome {
  WhatIf what;
  int64_t micro_batch = 0;
  int64_t peak = 0;
  int64_t reserved = 0;
  int64_t max_micro_batch = -1;  ///< -1: no budget given, or the file fixes the batch
  std::string error;             ///< why this what-if could not be estimated
};

/// The current configuration ([0]) and every what-if that applies, estimated at
/// `batch` and, with a budget, searched for the largest batch as sweep searches;
/// ranked by peak, those that could not be estimated last. `now` gets the current
/// configuration's analysis. Throws Error when the current one cannot be estimated.
std::vector<Outcome> rank_what_ifs(const CommonOptions& o, int64_t batch, std::optional<int64_t> budget,
                                   Progress& progress, Analysis* now);

}  // namespace memest
