// The order of a training step's requests, as the GPU traces show it: the optimizer's
// state and zero_grad in parameter order, gradients handed on once their node returns,
// a Concat's gradients as views. Each expected sequence is derived by hand.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "estimator/analysis.h"
#include "frontends/text_reader.h"
#include "tests/simulate_test_util.h"

using namespace memest;
using namespace memest::testing;

TEST_CASE("Adam makes its state, its sqrt temporaries and zero_grad frees gradients in parameter order") {
  // torch.optim walks model.parameters(): fc1.weight, fc1.bias, fc2.weight, fc2.bias here
  // (first use), while backward makes fc2's gradients first. The foreach sqrt list dies
  // last item first. Sizes at batch 32, in bytes before rounding: fc1.weight 32,768,
  // fc1.bias 512, fc2.weight 5,120, fc2.bias 40.
  TrainConfig cfg;
  cfg.optim = Optim::Adam;
  const Analysis a = analyze_text(kMlp, cfg);
  const Estimate e = estimate(a, 32);
  std::vector<int64_t> states, sqrt_alloc, sqrt_free, grads_freed;
  for (const Event& ev : a.program.events) {
    const Block& b = a.program.blocks[ev.block];
    const int64_t bytes = b.bytes.eval(e.bindings);
    if (ev.iter == 0 && ev.phase == Phase::Optimizer && b.category == Category::OptimizerState) {
      states.push_back(bytes);
    } else if (ev.iter == 0 && ev.phase == Phase::Optimizer && b.category == Category::Temporaries) {
      (ev.kind == Event::Alloc ? sqrt_alloc : sqrt_free).push_back(bytes);
    } else if (ev.iter == 1 && ev.phase == Phase::ZeroGrad && ev.kind == Event::Free) {
      grads_freed.push_back(bytes);
    }
  }
  CHECK(states == std::vector<int64_t>{32768, 32768, 512, 512, 5120, 5120, 40, 40});  // exp_avg, exp_avg_sq
  CHECK(sqrt_alloc == std::vector<int64_t>{32768, 512, 5120, 40});
  CHECK(sqrt_free == std::vector<int64_t>{40, 5120, 512, 32768});
  CHECK(grads_freed == std::vector<int64_t>{32768, 512, 5120, 40});
}

TEST_CASE("a node's input gradients are added into their buffers after the node returns") {
  // out = fc(x) + x. AddBackward0 hands one gradient tensor to both operands, so x's buffer
  // holds out's gradient while fc's backward runs. The engine adds fc's gradient for x into
  // it only once fc has returned, let its incoming gradient (that same tensor) go and
  // dropped what it saved: x's buffer is then the tensor's one holder, the add is in place,
  // and no sum is made. Added at once, while fc still held it, it was a new [batch, 64] sum.
  const char* text = R"(
opset 17
input x0 float32 batch,64
param fc0.weight float32 64,64
param fc.weight float32 64,64
node MatMul x0 fc0.weight -> x @fc0
node MatMul x fc.weight -> h @fc
node Add h x -> out @blk
output out
)";
  TrainConfig cfg;
  cfg.loss = Loss::Sum;
  const Analysis a = analyze_text(text, cfg);
  const Estimate e = estimate(a, 8);
  const std::vector<std::string> order = event_order(a, e, Phase::Backward);
  // The loss's scalar seed; sum's gradient, out's [8, 64] fp32 = 2,048 B, which Add hands
  // to h and x; fc (mm: the weight's gradient first, 64 x 64 x 4 = 16,384 B, with the
  // autograd thread's cuBLAS workspace after it, then x's 2,048 B); fc's saved x goes; x's
  // new gradient goes, added in place; fc0's weight gradient; out's gradient goes last.
  const std::vector<std::string> want = {
      "A temporaries 4 -",     "A temporaries 2048 loss", "F temporaries 4 -",      "A gradients 16384 fc",
      "A workspace 33554432 fc", "A temporaries 2048 fc", "F activations 2048 fc0", "F temporaries 2048 fc",
      "A gradients 16384 fc0", "F temporaries 2048 loss"};
  CHECK(order == want);
}

TEST_CASE("a Concat's input gradients are narrow views; a kernel that reads them contiguous copies first") {
  // c = cat([softmax(x0 @ wa), x0 @ wb], dim=1). CatBackward0 hands each input
  // grad.narrow(1, ...) of c's gradient: no allocation, and c's gradient lives until both
  // views are used. mm reads a strided gradient as it is (a leading dimension); softmax's
  // backward copies it contiguous first (host_softmax_backward: grad_.contiguous()).
  const char* text = R"(
opset 17
input x0 float32 batch,64
param wa float32 64,64
param wb float32 64,64
param w2 float32 128,16
node MatMul x0 wa -> h @fa
node Softmax h -> a axis=-1 @sm
node MatMul x0 wb -> b @fb
node Concat a b -> c axis=1 @cat
node MatMul c w2 -> out @fc
output out
)";
  TrainConfig cfg;
  cfg.loss = Loss::Sum;
  const Analysis a = analyze_text(text, cfg);
  const Estimate e = estimate(a, 8);
  const std::vector<std::string> order = event_order(a, e, Phase::Backward);
  // At batch 8: c's gradient [8, 128] fp32 = 4,096 B; a's and b's parts [8, 64] = 2,048 B.
  const std::vector<std::string> want = {
      "A temporaries 4 -", "A temporaries 512 loss", "F temporaries 4 -",
      "A gradients 8192 fc", "A workspace 33554432 fc", "A temporaries 4096 fc",  // w2's, then c's gradient
      "F temporaries 512 loss", "F activations 4096 cat",                           // fc's incoming; c, saved
      "A gradients 16384 fb",                                                        // wb's, from a view: no copy
      "A temporaries 2048 sm",                                                       // the contiguous copy
      "A temporaries 2048 sm", "A temporaries 2048 sm", "F temporaries 2048 sm",     // h's; grad * result
      "F temporaries 2048 sm",                                                       // the copy goes
      "F temporaries 4096 fc",                                                       // c's gradient, views done
      "F activations 2048 sm", "A gradients 16384 fa", "F temporaries 2048 sm"};
  CHECK(order == want);
}

TEST_CASE("ErfBackward0 holds its formula's four temporaries until the gradient is made") {
  // derivatives.yaml: erf's gradient is `2.0 / sqrt(M_PI) * exp(-(self.pow(2))) * grad`:
  // pow, neg, exp and the scaled exp are C++ temporaries of one full expression, made in
  // that order and freed after the product (the gradient), last made first. At batch 8
  // each is 8 x 64 x 4 B = 2,048 B (seqtrace26 sh_esm_cls: five 8 MiB blocks at once).
  const char* text = R"(
opset 17
input x0 float32 batch,64
param g float32 64
node Mul x0 g -> x @scale
node Erf x -> y @erf
output y
)";
  TrainConfig cfg;
  cfg.loss = Loss::Sum;
  const Analysis a = analyze_text(text, cfg);
  const Estimate e = estimate(a, 8);
  std::vector<std::string> erf;
  for (const std::string& s : event_order(a, e, Phase::Backward)) {
    if (s.ends_with(" erf")) erf.push_back(s);
  }
  CHECK(erf == std::vector<std::string>{"A temporaries 2048 erf", "A temporaries 2048 erf", "A temporaries 2048 erf",
                                        "A temporaries 2048 erf", "A temporaries 2048 erf", "F temporaries 2048 erf",
                                        "F temporaries 2048 erf", "F temporaries 2048 erf", "F temporaries 2048 erf",
                                        // the gradient itself, once the Mul's backward has read it
                                        "F temporaries 2048 erf"});
}
