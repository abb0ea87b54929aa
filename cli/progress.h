// A status line on stderr for long work (sweeps and advice over big graphs).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace memest {

/// Shows "memest TASK: WHAT (N s)" on stderr, redrawn in place, once the work has
/// run for a second. Silent when stderr is not a terminal, so pipes, logs and
/// quick runs see nothing. The line is erased when the Progress is destroyed.
class Progress {
 public:
  explicit Progress(std::string task);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// Replaces what the line says is being done now. Cheap: callers may update per step.
  void update(std::string what);

 private:
  void run();

  std::string task_;
  std::string what_;
  std::chrono::steady_clock::time_point start_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool drawn_ = false;
  std::thread thread_;  // only when stderr is a terminal
};

}  // namespace memest
