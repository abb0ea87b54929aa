// memest's entry point: picks the subcommand, and is the only place that turns
// an Error into a message and an exit status.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/heap.h"
#include "cli/options.h"
#include "estimator/error.h"

namespace memest {

const std::vector<Subcommand>& subcommands() {
  static const std::vector<Subcommand> cmds = {
      {"estimate", "peak GPU memory of a training step (the default: memest MODEL ...)",
       "memest models/resnet50.onnx --batch 64 --optim adam --amp", setup_estimate},
      {"sweep", "largest batch (or --sweep dim) up to which every one fits a budget or a GPU; near the cap a larger one may fit above one that does not: it is named beside the answer, as a gamble",
       "memest sweep models/gpt_mini.onnx --gpu a100-80gb --dim seq=256 --margin 5%", setup_sweep},
      {"check", "will this batch fit? exit 0 fits, 1 does not, 2 error",
       "memest check models/resnet18.onnx --batch 256 --budget 24GiB", setup_check},
      {"advise", "what-ifs (AMP, checkpointing, accumulation, optimizer) ranked by peak",
       "memest advise models/resnet50.onnx --batch 128 --optim adam --gpu t4", setup_advise},
      {"ops", "the ops memest knows and what it models for each", "memest ops --family norm", setup_ops},
      {"targets", "the measured GPU + torch profiles (--target) and the cards --gpu knows", "memest targets",
       setup_targets},
  };
  return cmds;
}

namespace {
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}
}  // namespace

const Subcommand* nearest_subcommand(const std::string& word) {
  const Subcommand* best = nullptr;
  // One typo in a short word, two in a longer one: "nope" is not "ops".
  size_t best_d = word.size() >= 6 ? 3 : 2;
  for (const auto& c : subcommands()) {
    const size_t d = edit_distance(word, c.name);
    if (d < best_d) {
      best = &c;
      best_d = d;
    }
  }
  return best;
}

}  // namespace memest

namespace {

std::string usage() {
  std::string s =
      "memest: GPU memory of a PyTorch training step, from a graph file, without a GPU.\n\n"
      "Usage:\n"
      "  memest MODEL [--batch N] [--optim sgd|adam|adamw] [--momentum M] [--amp [fp16|bf16]]\n"
      "               [--loss ce|mse|sum] [--dim NAME=VALUE ...] [--input-shape SHAPE[:DTYPE] ...] [--json]\n"
      "  memest sweep MODEL --budget SIZE | --gpu NAME [--margin PCT] [same options]\n"
      "  memest check MODEL --batch N --budget SIZE | --gpu NAME [--margin PCT] [same options]\n"
      "  memest advise MODEL --batch N [--budget SIZE | --gpu NAME] [same options]\n"
      "  memest ops [--family NAME]\n"
      "  memest targets [--json]\n\n"
      "Subcommands:\n";
  for (const auto& c : memest::subcommands()) s += "  " + std::string(c.name) + std::string(10 - std::strlen(c.name), ' ') + c.help + "\n";
  s += "\nExamples (run from the repository root):\n";
  for (const auto& c : memest::subcommands()) s += "  " + std::string(c.example) + "\n";
  s += "  memest models/torchscript/tiny_mlp_torch211.pt --input-shape 32 --batch 32\n\n"
       "MODEL is an .onnx file (weights may be absent: only shapes are read) or a TorchScript .pt file.\n"
       "SIZE needs a unit: 24GiB, 24GB (10^9 bytes), 512MiB (24B for bytes). --margin defaults to 0%.\n"
       "`memest SUBCOMMAND --help` lists each subcommand's options.\n";
  return s;
}

// A first argument that names no file and looks like a word, not a path: a
// misspelt subcommand ("swep"), not a model.
bool looks_like_command(const std::string& arg) {
  if (arg.empty() || arg[0] == '-' || arg.find_first_of("./") != std::string::npos) return false;
  struct stat st;
  return stat(arg.c_str(), &st) != 0;
}

}  // namespace

int main(int argc, char** argv) {
  memest::huge_page_heap();
  std::vector<std::string> args = memest::normalize_args(argc, argv);
  if (args.size() < 2 || args[1] == "-h" || args[1] == "--help" || args[1] == "help") {
    std::cout << usage();
    return args.size() < 2 ? 2 : 0;
  }
  const memest::Subcommand* cmd = &memest::subcommands()[0];
  size_t first = 1;
  for (const auto& c : memest::subcommands()) {
    if (args[1] == c.name) {
      cmd = &c;
      first = 2;
    }
  }
  if (first == 1 && looks_like_command(args[1])) {
    const memest::Subcommand* near = memest::nearest_subcommand(args[1]);
    std::cerr << "memest: unknown command '" << args[1] << "'"
              << (near ? std::string("; did you mean '") + near->name + "'?" : " (no such command or file; see memest --help)") << "\n";
    return 2;
  }
  CLI::App app(cmd->help, std::string("memest") + (first == 2 ? std::string(" ") + cmd->name : ""));
  app.footer(std::string("Example: ") + cmd->example);
  std::function<int()> run = cmd->setup(app);
  std::vector<std::string> rest(args.begin() + static_cast<long>(first), args.end());
  std::reverse(rest.begin(), rest.end());  // CLI11 parses a reversed vector
  try {
    app.parse(rest);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    std::cerr << "memest: " << msg << " (see memest " << (first == 2 ? std::string(cmd->name) + " " : "") << "--help)\n";
    return 2;
  }
  try {
    const int rc = run();
    // Out without destructors: the analysis of a large graph would be freed node by
    // node for nothing (load_and_analyze keeps it for this).
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    std::_Exit(rc);
  } catch (const memest::Error& e) {
    std::cerr << "memest: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "memest: out of host memory while analysing the model\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "memest: internal error: " << e.what() << "\n";
    return 2;
  }
}
