// Shared option parsing and the load -> analyze step.
#include "cli/options.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "estimator/error.h"
#include "frontends/load.h"

namespace memest {

void add_common_options(CLI::App& app, CommonOptions& o, bool batch_option) {
  app.add_option("model", o.model, "ONNX (.onnx) or TorchScript (.pt) model file")->required();
  if (batch_option) {
    app.add_option("--batch,-b", o.batch, "batch size: the leading dim of every input whose first dim is symbolic")
        ->capture_default_str();
  }
  // Choices are checked by analysis_options(), which says what each flag takes.
  app.add_option("--optim", o.optim, "optimizer: sgd, adam or adamw (torch defaults, foreach on CUDA)")
      ->capture_default_str();
  app.add_option("--momentum", o.momentum, "SGD momentum (0.9 adds a momentum buffer per parameter)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--amp", o.amp, "mixed precision: --amp or --amp fp16, --amp bf16 (default: fp32 training)");
  app.add_option("--loss", o.loss, "loss: ce (cross-entropy), mse, or sum")->capture_default_str();
  app.add_option("--dim", o.dims, "fix a symbolic dimension, NAME=VALUE (repeatable), e.g. --dim seq=512");
  app.add_option("--input-shape", o.input_shapes,
                 "TorchScript only, once per input: per-sample shape[:dtype], e.g. 3x224x224 or 512:int64");
  app.add_option("--attention", o.attention,
                 "attention kernels: fused (PyTorch 2's scaled_dot_product_attention) or eager (explicit TxT matrix). "
                 "nn.MultiheadAttention called with need_weights=True (its default) computes the TxT weights "
                 "explicitly in training: estimate such a model with eager")
      ->capture_default_str();
  app.add_option("--checkpoint", o.checkpoint,
                 "activation checkpointing, as torch.utils.checkpoint(use_reentrant=False): none, blocks (each "
                 "repeated block: a residual stage's block, a transformer layer), or sqrt (sqrt(n) segments)")
      ->capture_default_str();
  app.add_option("--train", o.train,
                 "fine-tuning: only parameters matching PATTERN train (repeatable); a glob (* matches dots too, "
                 "'*lora_*') or a dotted prefix ('fc' matches fc.weight, fc.bias)");
  app.add_option("--freeze", o.freeze, "fine-tuning: parameters matching PATTERN are frozen, the rest train (repeatable)")
      ->excludes(app.get_option("--train"));
  app.add_option("--grad-accum", o.grad_accum,
                 "gradient accumulation: K forward/backward passes of --batch samples per optimizer step (loss / K)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  // Range checks are done by analysis_options(), with a line that names the flag.
  auto* ddp = app.add_option("--ddp", o.ddp,
                             "data parallel: one rank of DistributedDataParallel over N ranks (bucket_cap_mb=25); "
                             "--batch is the batch of one rank");
  app.add_flag("--bucket-view", o.bucket_view, "with --ddp: gradient_as_bucket_view=True (.grad are bucket views)")
      ->needs(ddp);
  app.add_option("--fsdp", o.fsdp,
                 "fully sharded: one rank of FSDP2 (fully_shard on every repeated block and the root) over N ranks")
      ->excludes(ddp);
  app.add_option("--target", o.target, "GPU + torch profile for library constants (default h200-torch2.11)");
  app.add_flag("--json", o.json, "print one JSON object on stdout");
}

namespace {

// Throws "--amp takes fp16 or bf16, not fp8" unless `value` is one of `allowed`;
// `hidden` values are accepted without being offered ("none", --amp's absence).
void check_choice(const char* flag, const std::string& value, std::initializer_list<const char*> allowed,
                  std::initializer_list<const char*> hidden = {}) {
  std::string list;
  size_t i = 0;
  for (const char* a : allowed) {
    if (value == a) return;
    list += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + std::string(a);
    ++i;
  }
  for (const char* h : hidden) {
    if (value == h) return;
  }
  throw Error(std::string(flag) + " takes " + list + ", not " + (value.empty() ? "nothing" : value));
}

}  // namespace

AnalysisOptions analysis_options(const CommonOptions& o, const std::string& free_dim) {
  check_choice("--optim", o.optim, {"sgd", "adam", "adamw"});
  check_choice("--amp", o.amp, {"fp16", "bf16"}, {"none"});
  check_choice("--loss", o.loss, {"ce", "mse", "sum"});
  check_choice("--attention", o.attention, {"fused", "eager"});
  check_choice("--checkpoint", o.checkpoint, {"none", "blocks", "sqrt"});
  AnalysisOptions ao;
  for (const auto& d : o.dims) {
    auto eq = d.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == d.size()) {
      throw Error("--dim '" + d + "' must look like NAME=VALUE, e.g. --dim seq=512");
    }
    const std::string value = d.substr(eq + 1);
    if (value.find_first_not_of("0123456789") != std::string::npos || value.size() > 15) {
      throw Error("--dim '" + d + "': VALUE must be a positive integer");
    }
    ao.dims[d.substr(0, eq)] = std::stoll(value);
  }
  ao.free_dim = free_dim;
  TrainConfig& t = ao.train;
  t.optim = o.optim == "adam" ? Optim::Adam : o.optim == "adamw" ? Optim::AdamW : Optim::SGD;
  t.momentum = o.momentum;
  t.amp = o.amp == "fp16" ? Amp::FP16 : o.amp == "bf16" ? Amp::BF16 : Amp::None;
  t.loss = o.loss == "mse" ? Loss::MSE : o.loss == "sum" ? Loss::Sum : Loss::CE;
  t.attention = o.attention == "eager" ? Attention::Eager : Attention::Fused;
  t.checkpoint = o.checkpoint == "blocks" ? Checkpoint::Blocks : o.checkpoint == "sqrt" ? Checkpoint::Sqrt
                                                                                        : Checkpoint::None;
  t.target = &find_target(o.target);
  t.train = o.train;
  t.freeze = o.freeze;
  t.grad_accum = o.grad_accum;
  if (o.ddp || o.fsdp) {
    const char* flag = o.ddp ? "--ddp" : "--fsdp";
    const int n = o.ddp ? *o.ddp : *o.fsdp;
    if (n < 1 || n > 65536) throw Error(std::string(flag) + " takes a world size from 1 to 65536, not " + std::to_string(n));
    t.parallel = o.ddp ? Parallel::DDP : Parallel::FSDP;
    t.world_size = n;
  }
  t.bucket_view = o.bucket_view;
  return ao;
}

Graph load_graph(const CommonOptions& o) {
  std::vector<InputSpec> specs;
  for (const auto& s : o.input_shapes) specs.push_back(parse_input_shape(s));
  return load_model(o.model, specs);
}

const Analysis& load_and_analyze(const CommonOptions& o, const std::string& free_dim) {
  // Options first: a bad --dim is reported before the model is read.
  AnalysisOptions ao = analysis_options(o, free_dim);
  static std::vector<std::unique_ptr<Analysis>> kept;  // never destroyed: see main()
  kept.push_back(std::make_unique<Analysis>(analyze(load_graph(o), ao)));
  return *kept.back();
}

std::optional<int64_t> fixed_batch(const Analysis& a) {
  const std::vector<SymbolId> syms = a.accounting.input_bytes.symbols();
  if (std::find(syms.begin(), syms.end(), a.batch) != syms.end()) return std::nullopt;
  for (int in : a.graph.inputs) {
    const Tensor& t = a.graph.tensors[in];
    if (t.kind != TensorKind::Input || !t.shape || t.shape->empty()) continue;
    if (auto lead = (*t.shape)[0].as_const()) return *lead;
  }
  return 0;
}

void require_free_batch(const Analysis& a, const std::string& command, std::optional<int64_t> asked) {
  const std::optional<int64_t> fixed = fixed_batch(a);
  if (!fixed || (asked && *asked == *fixed)) return;
  throw Error(a.graph.file, "",
              "no input has a symbolic batch dimension (exported without dynamic axes), so the file fixes the batch" +
                  (*fixed > 0 ? " at " + std::to_string(*fixed) : std::string()) + " and `" + command + "` " +
                  (asked ? "cannot answer for batch " + std::to_string(*asked) : std::string("cannot vary it")) +
                  "; re-export with dynamic_axes={'input': {0: 'batch'}} (torch.onnx.export, "
                  "dynamo=False) or dynamic_shapes=({0: torch.export.Dim('batch')},) (dynamo=True)");
}

std::vector<std::string> normalize_args(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] != "--amp") continue;
    // A word after --amp is its value (a wrong one, fp8, is then named as such); a
    // path or a flag is not.
    const bool has_value = i + 1 < args.size() && !args[i + 1].empty() && args[i + 1][0] != '-' &&
                           args[i + 1].find_first_of("./") == std::string::npos;
    if (!has_value) args[i] = "--amp=fp16";
  }
  return args;
}

}  // namespace memest
