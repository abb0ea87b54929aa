// memest's subcommands. Each is an options struct plus setup_x(CLI::App&) and run_x().
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace memest {

/// One subcommand: its name, one line of help, and how to set it up and run it.
struct Subcommand {
  const char* name;
  const char* help;
  /// One command line that runs as is from the repository root (`--help` shows it,
  /// and tests/cli/examples_test.py runs it).
  const char* example;
  /// Adds the subcommand's options to `app` and returns the function that runs it
  /// (returning the exit status) once parsing succeeded.
  std::function<std::function<int()>(CLI::App& app)> setup;
};

std::function<int()> setup_estimate(CLI::App& app);
std::function<int()> setup_sweep(CLI::App& app);
std::function<int()> setup_check(CLI::App& app);
std::function<int()> setup_ops(CLI::App& app);
std::function<int()> setup_advise(CLI::App& app);
std::function<int()> setup_targets(CLI::App& app);

/// The table of subcommands (`memest help` prints it). The estimate is the default.
const std::vector<Subcommand>& subcommands();
/// The subcommand whose name is nearest to `word` (one edit away, two for a word of
/// six letters or more), or null: "swep" -> sweep.
const Subcommand* nearest_subcommand(const std::string& word);

}  // namespace memest
