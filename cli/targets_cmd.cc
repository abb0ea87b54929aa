// `memest targets`: the measured profiles --target picks (library constants of one GPU
// and torch version) and the cards --gpu knows (capacities only).
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/gpus.h"
#include "cli/units.h"
#include "estimator/target.h"

namespace memest {
namespace {

void print_json() {
  nlohmann::json j;
  j["targets"] = nlohmann::json::array();
  for (const Target* t : all_targets()) {
    j["targets"].push_back({{"name", t->name},
                            {"description", t->description},
                            {"cublas_workspace_bytes", t->cublas_workspace},
                            {"cublas_backward_workspace", t->cublas_backward_workspace},
                            {"cublaslt_workspace_bytes", t->cublaslt_workspace},
                            {"allocator_round_bytes", t->alloc_round},
                            {"fused_attention", t->fused_attention},
                            {"sm_count", t->sm_count},
                            {"threads_per_sm", t->threads_per_sm}});
  }
  j["gpus"] = nlohmann::json::array();
  for (const GpuPreset& g : all_gpus()) {
    j["gpus"].push_back({{"name", g.name},
                         {"title", g.title},
                         {"total_bytes", g.total_mib << 20},
                         {"budget_bytes", gpu_budget(g)}});
  }
  std::cout << j.dump(2) << "\n";
}

void print_table() {
  std::printf("Profiles (--target; the first is the default): constants measured on one GPU and torch\n\n");
  for (const Target* t : all_targets()) {
    std::printf("  %s\n    %s\n", t->name.c_str(), t->description.c_str());
    std::printf("    cuBLAS workspace %s%s, cuBLASLt %s, allocator rounding %s B, fused attention %s\n",
                format_bytes(t->cublas_workspace).c_str(), t->cublas_backward_workspace ? " (+1 for backward)" : "",
                format_bytes(t->cublaslt_workspace).c_str(), thousands(t->alloc_round).c_str(),
                t->fused_attention ? "yes" : "no");
  }
  std::printf("\nCards (--gpu): the budget is the card's memory less the CUDA context (%s);\n"
              "library constants stay the profile's\n\n",
              format_bytes(cuda_context_reserve()).c_str());
  std::printf("  %-12s %-28s %12s %12s\n", "name", "card", "memory", "budget");
  for (const GpuPreset& g : all_gpus()) {
    std::printf("  %-12s %-28s %12s %12s\n", g.name, g.title, format_bytes(g.total_mib << 20).c_str(),
                format_bytes(gpu_budget(g)).c_str());
  }
}

}  // namespace

std::function<int()> setup_targets(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  app.add_flag("--json", *json, "print one JSON object on stdout");
  return [json]() {
    if (*json) {
      print_json();
    } else {
      print_table();
    }
    return 0;
  };
}

}  // namespace memest
