// Differential fuzz target: the wire-format ONNX reader against the reference
// reader (libprotobuf's message classes, tests/fuzz/reference_reader.cc). Both must
// accept the same bytes and build the same Graph, or throw the same memest::Error;
// any difference aborts with both answers on stderr. Built as a libFuzzer target
// and, with replay_main.cc, as a replay test over the regressions and the models.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "estimator/error.h"
#include "frontends/onnx_reader.h"
#include "tests/fuzz/graph_dump.h"
#include "tests/fuzz/reference_reader.h"

namespace {

template <typename Read>
std::string answer(Read read, const std::string& bytes) {
  try {
    return memest::testing::dump_graph(read(bytes, "fuzz.onnx"));
  } catch (const memest::Error& e) {
    return std::string("error: ") + e.what() + "\n";
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const std::string wire = answer(memest::read_onnx_bytes, bytes);
  const std::string reference = answer(memest::reference::read_onnx_bytes, bytes);
  if (wire != reference) {
    std::fprintf(stderr, "the readers disagree\n--- wire reader:\n%s--- reference reader:\n%s", wire.c_str(),
                 reference.c_str());
    std::abort();
  }
  return 0;
}
