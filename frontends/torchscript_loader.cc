// Spawns the TorchScript helper and reads its protobuf from a pipe.
#include "frontends/torchscript_loader.h"

#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "estimator/error.h"
#include "frontends/onnx_reader.h"

extern char** environ;

namespace memest {
namespace {

std::string helper_path() {
  if (const char* env = std::getenv("MEMEST_TORCHSCRIPT")) return env;
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "memest-torchscript";
  std::string self(buf, static_cast<size_t>(n));
  auto slash = self.rfind('/');
  std::string dir = slash == std::string::npos ? "." : self.substr(0, slash);
  for (const char* rel : {"/memest-torchscript", "/frontends/torchscript/memest-torchscript"}) {
    struct stat st;
    if (stat((dir + rel).c_str(), &st) == 0) return dir + rel;
  }
  return "memest-torchscript";
}

std::string spec_arg(const InputSpec& s) {
  std::string out;
  for (size_t i = 0; i < s.dims.size(); ++i) out += (i ? "x" : "") + std::to_string(s.dims[i]);
  if (out.empty()) out = "-";
  return out + ":" + dtype_name(s.dtype);
}

}  // namespace

Graph load_torchscript(const std::string& path, const std::vector<InputSpec>& inputs) {
  if (inputs.empty()) {
    throw Error(path, "", "a TorchScript file needs --input-shape for each input (per sample, e.g. 3x224x224)");
  }
  const std::string helper = helper_path();
  std::vector<std::string> args = {helper, path};
  for (const auto& s : inputs) args.push_back(spec_arg(s));
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int out[2], err[2];
  if (pipe(out) != 0 || pipe(err) != 0) throw Error(path, "", "cannot create a pipe for the TorchScript helper");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  posix_spawn_file_actions_addclose(&fa, err[0]);
  pid_t pid;
  int rc = posix_spawnp(&pid, helper.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  close(err[1]);
  if (rc != 0) {
    close(out[0]);
    close(err[0]);
    throw Error(path, "", "cannot run the TorchScript helper '" + helper +
                              "' (build with libtorch-dev installed, or set MEMEST_TORCHSCRIPT)");
  }
  // Read stdout fully, then stderr (the helper writes little there).
  std::string bytes, message;
  char buf[65536];
  for (ssize_t n; (n = read(out[0], buf, sizeof(buf))) > 0;) bytes.append(buf, static_cast<size_t>(n));
  for (ssize_t n; (n = read(err[0], buf, sizeof(buf))) > 0;) message.append(buf, static_cast<size_t>(n));
  close(out[0]);
  close(err[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) message.pop_back();
    auto nl = message.rfind('\n');
    std::string last = nl == std::string::npos ? message : message.substr(nl + 1);
    throw Error(path, "", last.empty() ? "the TorchScript helper failed" : last);
  }
  return read_onnx_bytes(bytes, path);
}

}  // namespace memest
