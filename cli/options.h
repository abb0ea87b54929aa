// Options every estimating subcommand shares (protocol.md's command-line contract).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "estimator/analysis.h"

namespace memest {

struct CommonOptions {
  std::string model;
  int64_t batch = 1;
  std::string optim = "sgd";
  double momentum = 0;
  std::string amp = "none";
  std::string loss = "ce";
  std::vector<std::string> dims;          ///< NAME=VALUE
  std::vector<std::string> input_shapes;  ///< TorchScript per-sample shapes
  std::string attention = "fused";
  std::string checkpoint = "none";
  std::string target;
  std::vector<std::string> train, freeze;  ///< --train / --freeze PATTERN (fine-tuning)
  int grad_accum = 1;                      ///< --grad-accum K
  int64_t lora_rank = 0;                   ///< --lora R: peft LoRA added to a graph without it (0: none)
  std::vector<std::string> lora_targets;   ///< --lora-targets NAME: the Linear layers it wraps
  std::optional<int> ddp, fsdp;             ///< --ddp N / --fsdp N: the world size
  bool bucket_view = false;                ///< --bucket-view (with --ddp)
  bool json = false;
};

/// Adds MODEL and the shared flags to a CLI11 app.
void add_common_options(CLI::App& app, CommonOptions& o, bool batch_option = true);

/// The analysis options these flags ask for. Throws Error on a malformed --dim.
AnalysisOptions analysis_options(const CommonOptions& o, const std::string& free_dim = "");
/// Reads the model file (advise analyses one graph under several configurations),
/// with LoRA adapters added when --lora asks. Throws Error.
Graph load_graph(const CommonOptions& o);
/// Loads the model and runs the analysis for these options. Throws Error.
/// The analysis lives until the process ends: main() ends with _Exit, because tearing
/// a large graph down node by node takes a tenth of a whole run.
const Analysis& load_and_analyze(const CommonOptions& o, const std::string& free_dim = "");

/// The batch the file fixes, when no graph input's leading dim is symbolic (an ONNX
/// export without dynamic_axes); nullopt when --batch sets it. 0 when the file fixes
/// it but no input says at what.
std::optional<int64_t> fixed_batch(const Analysis& a);
/// Throws Error naming the file, the fixed batch and the re-export advice when the
/// file fixes the batch and `asked` (the batch a subcommand would vary or check) is
/// not that one: `command` ("sweep", "check") cannot answer for it.
void require_free_batch(const Analysis& a, const std::string& command, std::optional<int64_t> asked = std::nullopt);

/// argv with `--amp` given no value rewritten to `--amp=fp16`.
std::vector<std::string> normalize_args(int argc, char** argv);

}  // namespace memest
