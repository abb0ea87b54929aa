// Target profiles. The default is the machine validate/ measures.
#include "estimator/target.h"

#include "estimator/error.h"

namespace memest {
namespace {

const Target kTargets[] = {
    {
        .name = "h200-torch2.11",
        .description = "NVIDIA H200, torch 2.11 + CUDA 13.0, cuDNN 9.19 (validate/results/h200-torch2.11.jsonl)",
        // 32 MiB: ../shared/spec/anchors.md; torch's default CUBLAS_WORKSPACE_CONFIG on sm90 (4096 KiB x 8).
        .cublas_workspace = 32ll << 20,
        // validate/results/traces-h200-torch2.11.jsonl: a second 32 MiB block appears at
        // the first matmul of it0/backward (no Python frame: the autograd thread).
        .cublas_backward_workspace = true,
        // The same traces: a 1 MiB block beside the workspace at the first nn.Linear forward
        // (absent in lstm_lm, whose only Linear runs as matmul + add).
        .cublaslt_workspace = 1ll << 20,
        .alloc_round = 512,
        // sm90 runs scaled_dot_product_attention as flash / memory-efficient attention.
        .fused_attention = true,
        // H200 (sm90): 132 SMs, 2048 resident threads each (cudaDeviceProp
        // multiProcessorCount, maxThreadsPerMultiProcessor; validate/results/
        // reduceprobe-h200-torch2.11.jsonl.xz records the SM count). With them the
        // reduction model reproduces kernels-h200's "sum0" rows (x.sum(0) of [M, N]: 8 M N
        // bytes for 256 <= N <= 4096 and M >= 1024, at most 132 MiB, none at M <= 512).
        .sm_count = 132,
        .threads_per_sm = 2048,
    },
};

}  // namespace

const Target& find_target(const std::string& name) {
  if (name.empty()) return kTargets[0];
  for (const auto& t : kTargets) {
    if (t.name == name) return t;
  }
  std::string known;
  for (const auto& t : kTargets) known += (known.empty() ? "" : ", ") + t.name;
  throw Error("unknown --target '" + name + "' (known: " + known + "; `memest targets` lists them)");
}

std::vector<const Target*> all_targets() {
  std::vector<const Target*> out;
  for (const auto& t : kTargets) out.push_back(&t);
  return out;
}

}  // namespace memest
