// Progress line. A ticker thread draws it, rather than the work itself, so that a
// single long step (analysing a 100k-node graph) still shows it is alive.
#include "cli/progress.h"

#include <cstdio>
#include <unistd.h>

namespace memest {

namespace {
constexpr auto kQuiet = std::chrono::seconds(1);        // shorter work prints nothing
constexpr auto kRedraw = std::chrono::milliseconds(200);
}  // namespace

Progress::Progress(std::string task) : task_(std::move(task)), start_(std::chrono::steady_clock::now()) {
  if (isatty(STDERR_FILENO)) thread_ = std::thread([this] { run(); });
}

Progress::~Progress() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Progress::update(std::string what) {
  if (!thread_.joinable()) return;
  std::lock_guard<std::mutex> lock(mu_);
  what_ = std::move(what);
}

void Progress::run() {
  std::unique_lock<std::mutex> lock(mu_);
  if (cv_.wait_until(lock, start_ + kQuiet, [this] { return stop_; })) return;
  std::string shown;
  while (!stop_) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::string line = "memest " + task_ + ": " + what_;
    if (line.size() > 72) line = line.substr(0, 71) + "~";  // one line of an 80-column terminal
    char secs[32];
    std::snprintf(secs, sizeof(secs), " (%.0f s)", s);
    line += secs;
    if (line != shown) {
      // \r and erase-to-end-of-line: redraw in place.
      std::fprintf(stderr, "\r\033[K%s", line.c_str());
      std::fflush(stderr);
      shown = line;
      drawn_ = true;
    }
    cv_.wait_for(lock, kRedraw, [this] { return stop_; });
  }
  if (drawn_) {
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
  }
}

}  // namespace memest
