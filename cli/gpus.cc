// GPU presets. Totals are what nvidia-smi reports for each card; the context
// reserve is the memory a CUDA context with cuBLAS and cuDNN loaded takes outside
// the caching allocator, which set_per_process_memory_fraction does not cover.
#include "cli/gpus.h"

#include "estimator/error.h"

namespace memest {

int64_t cuda_context_reserve() {
  // validate/results/context-h200-torch2.11.jsonl (torch 2.11 + CUDA 13, H200): memory the
  // process holds outside the caching allocator grows as kernels load, 526.8 MiB after
  // torch.cuda.init() and 766.8 MiB once a small Adam + autocast training step has run
  // (cuBLAS, cuDNN and their modules loaded); empty_cache() gives none of it back.
  return 767ll << 20;
}

const std::vector<GpuPreset>& all_gpus() {
  static const std::vector<GpuPreset> g = {
      {"t4", "NVIDIA T4 16GB", 15360},
      {"v100-16gb", "NVIDIA V100 16GB", 16384},
      {"v100-32gb", "NVIDIA V100 32GB", 32768},
      {"a10", "NVIDIA A10 24GB", 23028},
      {"l4", "NVIDIA L4 24GB", 23034},
      {"rtx3090", "NVIDIA GeForce RTX 3090 24GB", 24576},
      {"rtx4090", "NVIDIA GeForce RTX 4090 24GB", 24564},
      {"a100-40gb", "NVIDIA A100 40GB", 40960},
      {"a100-80gb", "NVIDIA A100 80GB", 81920},
      {"h100-80gb", "NVIDIA H100 80GB", 81559},
      {"h200", "NVIDIA H200 141GB", 143771},
      {"b200", "NVIDIA B200 180GB", 183359},
  };
  return g;
}

int64_t gpu_budget(const GpuPreset& g) { return (g.total_mib << 20) - cuda_context_reserve(); }

const GpuPreset& find_gpu(const std::string& name) {
  std::string known;
  for (const auto& g : all_gpus()) {
    if (name == g.name) return g;
    known += (known.empty() ? "" : ", ") + std::string(g.name);
  }
  throw Error("unknown --gpu '" + name + "' (known: " + known + ")");
}

}  // namespace memest
