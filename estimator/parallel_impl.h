// What parallel.cc, ddp.cc and fsdp.cc share and nothing else needs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "estimator/parallel.h"

namespace memest {

/// A parameter's or buffer's dims, all constant; throws Error naming it otherwise.
std::vector<int64_t> constant_shape(const Tensor& t);
/// numel * element size of such a tensor (checked).
int64_t constant_bytes(const Tensor& t);

std::unique_ptr<ParallelModel> make_ddp(const Graph& g, const TrainConfig& cfg, StepMemory& mem,
                                        std::vector<std::string>& notes);
std::unique_ptr<ParallelModel> make_fsdp(const Graph& g, const TrainConfig& cfg, StepMemory& mem,
                                         std::vector<std::string>& notes);

}  // namespace memest
