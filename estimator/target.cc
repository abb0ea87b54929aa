// Target profiles. The default is the machine validate/ measures.
#include "estimator/target.h"

#include "estimator/error.h"

namespace memest {
namespace {

const Target kTargets[] = {
    {
        "h200-torch2.11",
        "NVIDIA H200, torch 2.11 + CUDA 13.0, cuDNN 9.19 (validate/results/h200-torch2.11.jsonl)",
        // 32 MiB: ../shared/spec/anchors.md; torch's default CUBLAS_WORKSPACE_CONFIG on sm90 (4096 KiB x 8).
        32ll << 20,
        // validate/results/traces-h200-torch2.11.jsonl: a second 32 MiB block appears at
        // the first matmul of it0/backward (no Python frame: the autograd thread).
        true,
        // The same traces: a 1 MiB block beside the workspace at the first nn.Linear forward
        // (absent in lstm_lm, whose only Linear runs as matmul + add).
        1ll << 20,
        512,
        true,
        // validate/results/kernels-h200-torch2.11.jsonl (`validate kernels`, rows "sum0"):
        // x.sum(0) of [M, N] allocates 8*M*N bytes for 256 <= N <= 4096 and M >= 2048, at
        // most 132 MiB (132 SMs); nothing at M <= 512 (the threshold between is taken at 1024).
        132ll << 20,
        1024,
        256,
    },
};

}  // namespace

const Target& find_target(const std::string& name) {
  if (name.empty()) return kTargets[0];
  for (const auto& t : kTargets) {
    if (t.name == name) return t;
  }
  throw Error("unknown --target '" + name + "' (known: h200-torch2.11)");
}

std::vector<const Target*> all_targets() {
  std::vector<const Target*> out;
  for (const auto& t : kTargets) out.push_back(&t);
  return out;
}

}  // namespace memest
