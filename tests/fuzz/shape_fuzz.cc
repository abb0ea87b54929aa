// A fuzz entry point over shape arithmetic: a text graph (frontends/text_reader.h)
// through the shape pass and the analysis, then estimates at a few values of the
// batch and of every other symbol, so Shape/Gather/Slice/Concat/Reshape chains over
// symbolic integer tensors (masks, position ids, pad tables, reshape targets) meet
// mutated attributes, contents and ranks. memest::Error is the expected answer to bad
// input; anything else escaping (another exception, a signal, a sanitizer report) is a
// finding. Built as a libFuzzer target (tests/fuzz/CMakeLists.txt) and, with
// replay_main.cc, as the replay driver ctest runs over tests/fuzz/shape_regressions/.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "estimator/analysis.h"
#include "estimator/error.h"
#include "estimator/shapes.h"
#include "frontends/text_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 1 << 16) return 0;  // graphs of a few dozen lines find what longer ones do
  const std::string text(reinterpret_cast<const char*>(data), size);
  memest::Graph g;
  try {
    g = memest::read_text_graph(text, "fuzz.txt");
  } catch (const memest::Error&) {
    return 0;
  }
  // The shape pass alone, on a copy: every rule sees the graph before fusion.
  try {
    memest::Graph shapes = g;
    memest::verify_and_sort(shapes);
    memest::infer_shapes(shapes);
    for (const auto& t : shapes.tensors) {
      if (!t.shape) continue;
      memest::Bindings b;
      for (const auto& d : *t.shape) {
        for (memest::SymbolId s : d.symbols()) b.set(s, 7);
      }
      for (const auto& d : *t.shape) d.eval(b);
    }
  } catch (const memest::Error&) {
    return 0;
  }
  // The whole analysis with the first non-batch symbol of the inputs left free.
  std::string free;
  for (int in : g.inputs) {
    const auto& s = g.tensors[in].shape;
    if (!s) continue;
    for (size_t k = 1; k < s->size() && free.empty(); ++k) {
      if (auto sym = (*s)[k].as_symbol()) free = memest::symbol_name(*sym);
    }
  }
  for (int which = 0; which < 2; ++which) {
    try {
      memest::AnalysisOptions opts;
      opts.free_dim = free;
      if (which == 1) {
        opts.train.optim = memest::Optim::Adam;
        opts.train.amp = memest::Amp::FP16;
        opts.train.loss = memest::Loss::Sum;
      }
      const memest::Analysis a = memest::analyze(g, opts);
      for (int64_t batch : {1, 5}) {
        for (int64_t v : {1, 3, 64}) memest::estimate(a, batch, free.empty() ? std::nullopt : std::optional<int64_t>(v));
      }
    } catch (const memest::Error&) {
      // Rejected with a message: what bad input should get.
    }
  }
  return 0;
}
