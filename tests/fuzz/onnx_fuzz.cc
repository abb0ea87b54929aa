// The fuzz entry point: ONNX bytes through the reader, the analysis under a few
// training configurations, estimates at a few batch sizes and a capped replay. memest::Error is
// the expected answer to bad input; anything else escaping (another exception, a
// signal, a sanitizer report) is a finding. Built as a libFuzzer target
// (tests/fuzz/CMakeLists.txt) and, with replay_main.cc, as a plain replay driver
// that ctest runs over tests/fuzz/regressions/.
#include <cstddef>
#include <cstdint>
#include <string>

#include "estimator/analysis.h"
#include "estimator/error.h"
#include "frontends/onnx_reader.h"

namespace {

memest::TrainConfig config(int which) {
  memest::TrainConfig t;
  switch (which) {
    case 0: break;  // the defaults: SGD, fp32, cross-entropy
    case 1:
      t.optim = memest::Optim::Adam;
      t.amp = memest::Amp::FP16;
      t.loss = memest::Loss::Sum;
      t.attention = memest::Attention::Eager;
      break;
    default:
      t.optim = memest::Optim::AdamW;
      t.amp = memest::Amp::BF16;
      t.loss = memest::Loss::MSE;
      t.checkpoint = memest::Checkpoint::Blocks;
      break;
  }
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  memest::Graph g;
  try {
    g = memest::read_onnx_bytes(bytes, "fuzz.onnx");
  } catch (const memest::Error&) {
    return 0;
  }
  for (int which = 0; which < 3; ++which) {
    try {
      memest::AnalysisOptions opts;
      opts.train = config(which);
      const memest::Analysis a = memest::analyze(g, opts);
      for (int64_t batch : {1, 3, 64}) memest::estimate(a, batch);
      memest::fits_budget(a, 5, int64_t{1} << 30);  // a sweep probe: the allocator under a cap
    } catch (const memest::Error&) {
      // Rejected with a message: what bad input should get.
    }
  }
  return 0;
}
