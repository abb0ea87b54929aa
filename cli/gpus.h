// --gpu presets: the memory PyTorch may take on common cards.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace memest {

struct GpuPreset {
  const char* name;        ///< "a100-80gb"
  const char* title;       ///< "NVIDIA A100 80GB"
  int64_t total_mib;       ///< memory the driver reports (nvidia-smi "Total")
};

/// Budget for a card: its memory minus the CUDA context and driver reserve.
int64_t gpu_budget(const GpuPreset& g);
/// Bytes the CUDA context takes outside the caching allocator (documented in gpus.cc).
int64_t cuda_context_reserve();
/// The preset named `name`; throws Error listing the known names.
const GpuPreset& find_gpu(const std::string& name);
const std::vector<GpuPreset>& all_gpus();

}  // namespace memest
