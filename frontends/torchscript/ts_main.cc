// memest-torchscript FILE SPEC...: lowers a TorchScript file's forward() to a
// shape-only ONNX model on stdout, for memest's ONNX frontend. One SPEC per
// input: per-sample dims without the batch and a dtype ("3x224x224:float32",
// "512:int64", "-:float32" for a scalar per sample). On failure: one line on
// stderr, exit status 2.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "ts_compat.h"
#include "ts_lower.h"
#include "ts_ops.h"

namespace {

constexpr const char* kUsage =
    "usage: memest-torchscript MODEL.pt SPEC...   (SPEC: 3x224x224[:float32], 512:int64, -:float32)\n"
    "       memest-torchscript --ops              (the aten -> ONNX table)\n";

int print_ops() {
  for (const auto* e : memest::ts::all_ops()) {
    std::printf("%-36s %-20s %s\n", e->name, *e->onnx ? e->onnx : "--", e->note);
  }
  std::printf("%-36s %-20s %s\n", "(any other aten op)", "org.pytorch.aten", "as-is; memest shapes it like input 0");
  std::printf("%-36s %-20s %s\n", "(an in-place op, relu_)", "inplace=1", "its out-of-place entry, marked");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--ops") return print_ops();
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  try {
    std::vector<memest::ts::InputSpec> specs;
    for (int i = 2; i < argc; ++i) specs.push_back(memest::ts::parse_spec(argv[i]));
    memest::ts::register_newer_ops();
    onnx::ModelProto model = memest::ts::lower_torchscript(argv[1], specs);
    std::string bytes;
    if (!model.SerializeToString(&bytes)) throw memest::ts::LowerError("the lowered model does not serialize");
    if (isatty(STDOUT_FILENO)) {
      std::fprintf(stderr, "memest-torchscript: not writing %zu bytes of protobuf to a terminal\n", bytes.size());
      return 2;
    }
    std::cout.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    std::cout.flush();
    return std::cout ? 0 : 2;
  } catch (const memest::ts::LowerError& e) {
    std::fprintf(stderr, "%s\n", e.what());
  } catch (const c10::Error& e) {
    std::string what = e.what_without_backtrace();
    std::fprintf(stderr, "libtorch: %s\n", what.substr(0, what.find('\n')).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
  }
  return 2;
}
