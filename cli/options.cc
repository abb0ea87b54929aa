// Shared option parsing and the load -> analyze step.
#include "cli/options.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "cli/heap.h"
#include "estimator/error.h"
#include "estimator/lora.h"
#include "estimator/spellings.h"
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
  app.add_option("--lora", o.lora_rank,
                 "estimate as if peft's LoRA (rank R, lora_dropout 0) wrapped the graph's attention projections, "
                 "for a model exported without peft; only the adapters train unless --train/--freeze say otherwise")
      ->check(CLI::Range(int64_t{1}, int64_t{65536}));
  app.add_option("--lora-targets", o.lora_targets,
                 "with --lora: the Linear layers it wraps, by the last part of their module path (default: peft's "
                 "defaults, q_proj v_proj query value q v c_attn query_key_value)")
      ->needs(app.get_option("--lora"));
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

// The value of `flag` spelled `value`, by the enum's one table of spellings; throws
// "--amp takes fp16 or bf16, not fp8". `first` skips spellings that are accepted but
// not offered ("none": --amp's absence).
template <class E, size_t N>
E parse_choice(const char* flag, const std::string& value, const Spelling<E> (&table)[N], size_t first = 0) {
  if (auto v = parse_spelling(table, value)) return *v;
  throw Error(std::string(flag) + " takes " + spellings_list(table, first) + ", not " +
              (value.empty() ? "nothing" : value));
}

}  // namespace

AnalysisOptions analysis_options(const CommonOptions& o, const std::string& free_dim) {
  TrainConfig t;
  t.optim = parse_choice("--optim", o.optim, kOptimSpellings);
  t.amp = parse_choice("--amp", o.amp, kAmpSpellings, 1);
  t.loss = parse_choice("--loss", o.loss, kLossSpellings);
  t.attention = parse_choice("--attention", o.attention, kAttentionSpellings);
  t.checkpoint = parse_choice("--checkpoint", o.checkpoint, kCheckpointSpellings);
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
  t.momentum = o.momentum;
  t.target = &find_target(o.target);
  t.train = o.train;
  t.freeze = o.freeze;
  t.grad_accum = o.grad_accum;
  if (o.lora_rank > 0 && t.train.empty() && t.freeze.empty()) t.train = {kLoraTrainPattern};
  if (o.ddp || o.fsdp) {
    const char* flag = o.ddp ? "--ddp" : "--fsdp";
    const int n = o.ddp ? *o.ddp : *o.fsdp;
    if (n < 1 || n > 65536) throw Error(std::string(flag) + " takes a world size from 1 to 65536, not " + std::to_string(n));
    t.parallel = o.ddp ? Parallel::DDP : Parallel::FSDP;
    t.world_size = n;
  }
  t.bucket_view = o.bucket_view;
  ao.train = std::move(t);
  return ao;
}

Graph load_graph(const CommonOptions& o) {
  std::vector<InputSpec> specs;
  for (const auto& s : o.input_shapes) specs.push_back(parse_input_shape(s));
  Graph g = load_model(o.model, specs);
  if (o.lora_rank == 0) return g;
  LoraSpec spec;
  spec.rank = o.lora_rank;
  if (!o.lora_targets.empty()) spec.targets = o.lora_targets;
  int wrapped = 0;
  Graph out = with_lora(g, spec, &wrapped);
  if (wrapped == 0) {
    std::string names;
    for (const auto& t : spec.targets) names += (names.empty() ? "" : " ") + t;
    throw Error(o.model, "", "--lora: no Linear layer's module path ends in one of: " + names +
                                 "; name the layers to wrap with --lora-targets (e.g. --lora-targets c_fc c_proj)");
  }
  return out;
}

const Analysis& load_and_analyze(const CommonOptions& o, const std::string& free_dim) {
  // Options first: a bad --dim is reported before the model is read.
  AnalysisOptions ao = analysis_options(o, free_dim);
  static std::vector<std::unique_ptr<Analysis>> kept;  // never destroyed: see main()
  reserve_heap_for(o.model);
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
