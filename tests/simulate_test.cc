// Simulator tests: tiny graphs whose byte timeline is derived by hand below.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>

#include "estimator/allocator.h"
#include "estimator/analysis.h"
#include "frontends/text_reader.h"
#include "tests/simulate_test_util.h"

using namespace memest;
using namespace memest::testing;

namespace {

int64_t sum(const std::array<int64_t, kCategoryCount>& c) { return std::accumulate(c.begin(), c.end(), int64_t{0}); }
int64_t comp(const PeakResult& p, Category c) { return p.components[static_cast<size_t>(c)]; }

}  // namespace

TEST_CASE("Linear-ReLU-Linear with Adam: the peak is the optimizer step, term by term") {
  TrainConfig cfg;
  cfg.optim = Optim::Adam;
  Analysis a = analyze_text(kMlp, cfg);
  Estimate e = estimate(a, 32);
  // Every allocation rounds up to 512 bytes.
  const int64_t P = 32768 + 512 + 5120 + 512;  // fc1.weight 128x64, fc1.bias, fc2.weight 10x128, fc2.bias (40 B -> 512)
  const int64_t I = 32 * 64 * 4 + 512;         // x, and y: int64 [32] (256 B -> 512)
  // cuBLAS workspace of the main thread (first Linear), cuBLASLt's for addmm's bias
  // epilogue (1 MiB), and the autograd thread's own cuBLAS workspace (first Linear backward).
  const int64_t W = (32ll << 20) + (1ll << 20) + (32ll << 20);
  const int64_t out = 1536;                    // [32, 10] float32 = 1280 B, kept by `out` across iterations
  const int64_t loss = 512;                    // the loss scalar, kept by `loss`
  const int64_t G = P;                         // .grad of each parameter, fp32
  const int64_t S = 2 * P;                     // exp_avg and exp_avg_sq
  const int64_t T = P;                         // _foreach_sqrt(exp_avg_sq): one temporary per parameter
  CHECK(e.peak.peak_bytes == P + I + W + out + loss + G + S + T);
  CHECK(e.peak.phase == Phase::Optimizer);
  CHECK(e.peak.iter == 0);
  CHECK(comp(e.peak, Category::Parameters) == P);
  CHECK(comp(e.peak, Category::Inputs) == I);
  CHECK(comp(e.peak, Category::Workspace) == W);
  CHECK(comp(e.peak, Category::Activations) == out + loss);
  CHECK(comp(e.peak, Category::Gradients) == G);
  CHECK(comp(e.peak, Category::OptimizerState) == S);
  CHECK(comp(e.peak, Category::Temporaries) == T);
  CHECK(sum(e.peak.components) == e.peak.peak_bytes);
  CHECK(a.accounting.parameter_bytes == (128 * 64 + 128 + 10 * 128 + 10) * 4);
  CHECK(a.accounting.parameter_count == 128 * 64 + 128 + 10 * 128 + 10);
}

TEST_CASE("Linear-ReLU-Linear with plain SGD at a large batch: the peak is in backward") {
  TrainConfig cfg;
  Analysis a = analyze_text(kMlp, cfg);
  const int64_t B = 4096;
  Estimate e = estimate(a, B);
  const int64_t P = 32768 + 512 + 5120 + 512;
  const int64_t I = B * 64 * 4 + B * 8;
  const int64_t W = (32ll << 20) + (1ll << 20) + (32ll << 20);  // as above: all three exist by relu's backward
  const int64_t act = B * 128 * 4;           // h, r, and their gradients are each [B, 128] float32
  const int64_t out = B * 10 * 4;            // out, log_softmax's result, and gradients of each
  // Iteration 1, in fc1's backward: grad h (from relu) is alive beside out and loss (held
  // by the loop's variables) and fc2's parameter gradients; fc1's weight and bias
  // gradients are made, and the bias's is a column sum of grad h, [4096, 128], whose
  // launch stages 8 B x 4096 x 128 = 4 MiB of fp32 partials (Reduce.cuh; kernels-h200
  // rows "sum0"). log_softmax's result, r and grad r are gone:
  //   P + I + W + out + loss + grad_h + grad fc2.weight + grad fc2.bias
  //     + grad fc1.weight + grad fc1.bias + partials
  // (relu's backward, r + grad_r + grad_h, is 33,280 B lower.)
  const int64_t expected = P + I + W + out + 512 + act + 5120 + 512 + 32768 + 512 + 8 * B * 128;
  CHECK(e.peak.peak_bytes == expected);
  CHECK(e.peak.phase == Phase::Backward);
  CHECK(sum(e.peak.components) == e.peak.peak_bytes);
}

TEST_CASE("fp16 autocast keeps half-precision weight copies and casts gradients back") {
  TrainConfig cfg;
  cfg.amp = Amp::FP16;
  Analysis a = analyze_text(kMlp, cfg);
  Estimate e = estimate(a, 32);
  CHECK(sum(e.peak.components) == e.peak.peak_bytes);
  // fc1's weight cache is not saved (its input x needs no gradient), fc2's is.
  Estimate big = estimate(a, 1 << 16);
  CHECK(big.peak.peak_bytes > e.peak.peak_bytes);
}

TEST_CASE("an evaluated program answers any batch without re-analysis and grows with it") {
  TrainConfig cfg;
  cfg.optim = Optim::SGD;
  cfg.momentum = 0.9;
  Analysis a = analyze_text(kMlp, cfg);
  int64_t prev = 0;
  for (int64_t b : {1, 8, 64, 512, 4096}) {
    Estimate e = estimate(a, b);
    CHECK(e.peak.peak_bytes > prev);
    CHECK(e.reserved_bytes >= e.peak.peak_bytes);
    // The replay follows the requests too: its peak is evaluate()'s.
    CHECK(e.requested_peak == evaluate(a.program, e.bindings).peak_bytes);
    prev = e.peak.peak_bytes;
  }
}

TEST_CASE("a broadcast bias's gradient is a column sum that stages partials in scratch at long columns") {
  // One Linear [M, N] with a bias; backward sums the output's gradient over M rows, a
  // Reduce.cuh reduction whose global buffer the launch model sizes. Measured on the H200
  // (validate/results/kernels-h200-torch2.11.jsonl, rows "sum0"): 8 B x M x N for 256 <= N
  // <= 4096 and M >= 1024, at most 132 MiB, none at M <= 512; and at N = 192 too
  // (traces37 rnd14_85: 8 x 8,192 x 192 = 12,582,912 B).
  auto scratch = [](int64_t n, int64_t batch) {
    const std::string text = "opset 17\ninput x float32 batch,512\nparam fc.weight float32 " + std::to_string(n) +
                             ",512\nparam fc.bias float32 " + std::to_string(n) +
                             "\nnode memest::Linear x fc.weight fc.bias -> out @fc\noutput out\n";
    TrainConfig cfg;
    cfg.loss = Loss::Sum;
    Analysis a = analyze_text(text.c_str(), cfg);
    const Bindings b = bind_dims(a, batch);
    const std::vector<int64_t> size = block_sizes(a.program, b, 512);
    int64_t found = 0;
    for (size_t i = 0; i < a.program.blocks.size(); ++i) {
      const Block& blk = a.program.blocks[i];
      const bool reduction = blk.bounded && a.program.bound_of(static_cast<int>(i)).reduce.has_value();
      if (reduction && blk.node >= 0 && a.graph.nodes[blk.node].module == "fc") found = std::max(found, size[i]);
    }
    return found;
  };
  CHECK(scratch(512, 512) == 0);                 // 512 rows: one block per column, no staging
  CHECK(scratch(512, 1024) == 8 * 1024 * 512);   // 4 MiB
  CHECK(scratch(512, 4096) == 8 * 4096 * 512);   // 16 MiB, as measured for x.sum(0) of [4096, 512]
  CHECK(scratch(512, 65536) == 132ll << 20);     // 256 MiB by 8 M N; the grid bounds it at 132 MiB
  CHECK(scratch(192, 8192) == 12'582'912);       // rnd14_85's FFN down-projection
}

TEST_CASE("mse_loss keeps an fp32 buffer of its input's size for as long as the loss is held") {
  // GPU traces (conv_autoencoder): one such block per live loss, alive through backward.
  const char* text = R"(
opset 17
input x float32 batch,64
param fc.weight float32 32,64
param fc.bias float32 32
node memest::Linear x fc.weight fc.bias -> out @fc
output out
)";
  TrainConfig cfg;
  cfg.loss = Loss::MSE;
  cfg.amp = Amp::FP16;  // the output is half; the kept buffer is fp32 all the same
  Analysis a = analyze_text(text, cfg);
  const Bindings b = bind_dims(a, 16);
  const std::vector<int64_t> size = block_sizes(a.program, b, 512);
  const int64_t want = 16 * 32 * 4;  // [16, 32] fp32 = 2048 B
  // Blocks of that size the loss allocates in forward: its fp32 cast copy of the half
  // output (freed after its backward) and the kept buffer (freed only when the next
  // iteration's forward replaces the loss).
  std::vector<int> alloc_iter(a.program.blocks.size(), -1);
  int kept = 0, kept_alive_at_end = 0;
  for (const Event& e : a.program.events) {
    const Block& blk = a.program.blocks[e.block];
    const bool mse = blk.node >= 0 && a.graph.nodes[blk.node].op == "MseLoss" && size[e.block] == want;
    if (!mse) continue;
    if (e.kind == Event::Alloc && e.phase == Phase::Forward) alloc_iter[e.block] = e.iter;
    if (e.kind == Event::Free && alloc_iter[e.block] >= 0 && e.iter == alloc_iter[e.block] + 1 &&
        e.phase == Phase::Forward) {
      ++kept;
    }
  }
  for (size_t i = 0; i < alloc_iter.size(); ++i) {
    if (alloc_iter[i] != 2 || a.program.blocks[i].category != Category::Activations) continue;
    bool freed = false;
    for (const Event& e : a.program.events) freed |= e.block == static_cast<int>(i) && e.kind == Event::Free;
    kept_alive_at_end += freed ? 0 : 1;
  }
  CHECK(kept == 2);               // iterations 0 and 1: freed in the next forward
  CHECK(kept_alive_at_end >= 1);  // iteration 2's is still held by the loss at the end
}

TEST_CASE("checkpoint blocks are indexed containers, not the layers of a Sequential") {
  Graph seq = read_text_graph(R"(
opset 17
input x float32 batch,8
param w0 float32 8,8
param w1 float32 8,8
node MatMul x w0 -> a @net.0
node Relu a -> b @net.1
node MatMul b w1 -> c @net.2
output c
)");
  CHECK(checkpoint_segments(seq, Checkpoint::Blocks).empty());
  Graph blocks = read_text_graph(R"(
opset 17
input x float32 batch,8
param w0 float32 8,8
param w1 float32 8,8
node MatMul x w0 -> a @blocks.0.fc
node Add a x -> b @blocks.0
node MatMul b w1 -> c @blocks.1.fc
node Add c b -> d @blocks.1
output d
)");
  const auto segs = checkpoint_segments(blocks, Checkpoint::Blocks);
  REQUIRE(segs.size() == 2);
  CHECK(segs[0].module == "blocks.0");
  CHECK(segs[0].first == 0);
  CHECK(segs[0].last == 1);  // the residual Add, in blocks.0 itself, belongs to the block
  CHECK(segs[1].module == "blocks.1");
}

TEST_CASE("cuDNN's RNN reserve is kept in the dtype the RNN runs in: half under fp16 autocast") {
  // Measured reserve: 5x Y's bytes plus 256 bytes (estimator/ops/rnn.cc). Y is
  // [seq 16, 1, batch, 64]; at batch 8 that is 8192 elements.
  const char* text = R"(
opset 17
input x float32 16,batch,32
param w float32 1,256,32
param r float32 1,256,64
node LSTM x w r -> y @lstm
output y
)";
  auto reserve = [&](Amp amp) {
    TrainConfig cfg;
    cfg.loss = Loss::Sum;
    cfg.amp = amp;
    Analysis a = analyze_text(text, cfg);
    const std::vector<int64_t> size = block_sizes(a.program, bind_dims(a, 8), 512);
    const auto& saved = a.program.saved_by_node;
    int64_t best = 0;
    for (const auto& blocks : saved) {
      for (int b : blocks) best = std::max(best, size[b]);
    }
    return best;  // the reserve is the largest block the LSTM keeps
  };
  CHECK(reserve(Amp::None) == round_alloc(5 * 8192 * 4 + 256));  // 164096 B -> 164352
  CHECK(reserve(Amp::FP16) == round_alloc(5 * 8192 * 2 + 256));  // 82176 B -> 82432
}

TEST_CASE("the committed peak leaves out refusable workspaces and bounds a capped replay from below") {
  // A (1000 B) lives across a cuDNN-style workspace W (5000 B, may fail) and B (600 B).
  Program p;
  p.blocks.push_back({.bytes = Expr(1000), .node = 0, .category = Category::Activations});
  p.blocks.push_back({.bytes = Expr(5000), .node = 0, .category = Category::Workspace, .may_fail = true});
  p.blocks.push_back({.bytes = Expr(600), .node = 1, .category = Category::Activations});
  const auto ev = [](Event::Kind k, int b) { return Event{k, Phase::Forward, 0, b}; };
  p.events = {ev(Event::Alloc, 0), ev(Event::Alloc, 1), ev(Event::Free, 1), ev(Event::Alloc, 2),
              ev(Event::Free, 0),  ev(Event::Free, 2)};
  const Bindings none;
  // Rounded to 512 B: A 1024, W 5120, B 1024. All blocks peak at A + W; the committed ones at A + B.
  CHECK(evaluate(p, none).peak_bytes == 1024 + 5120);
  CHECK(committed_peak(p, none) == 1024 + 1024);
}

TEST_CASE("the committed peak's blocks: their bytes at other dims bound its peak there from below") {
  // A (1000 * n B) lives across W (5000 B, may fail) and B (600 * n B); C (3000 B) comes
  // after A is freed. At n = 1 (rounded: A 1024, B 1024, C 3072) the committed peak is C
  // + B = 4096, reached when C comes: its blocks are B and C. At n = 4 (A 4096, B 2560)
  // the peak is A + B = 6656, and B + C there 5632, under it.
  Program p;
  const Expr n = Expr::symbol("n");
  p.blocks.push_back({.bytes = n * Expr(1000), .node = 0, .category = Category::Activations});
  p.blocks.push_back({.bytes = Expr(5000), .node = 0, .category = Category::Workspace, .may_fail = true});
  p.blocks.push_back({.bytes = n * Expr(600), .node = 1, .category = Category::Activations});
  p.blocks.push_back({.bytes = Expr(3000), .node = 2, .category = Category::Activations});
  const auto ev = [](Event::Kind k, int b) { return Event{k, Phase::Forward, 0, b}; };
  p.events = {ev(Event::Alloc, 0), ev(Event::Alloc, 1), ev(Event::Free, 1), ev(Event::Alloc, 2),
              ev(Event::Free, 0),  ev(Event::Alloc, 3), ev(Event::Free, 2), ev(Event::Free, 3)};
  Bindings one, four;
  one.set("n", 1);
  four.set("n", 4);
  CHECK(committed_peak(p, one) == 4096);
  const std::vector<int> blocks = committed_peak_blocks(p, block_sizes(p, one));
  CHECK(blocks == std::vector<int>{2, 3});
  CHECK(blocks_bytes(p, blocks, one) == 4096);
  CHECK(committed_peak(p, four) == 6656);
  CHECK(blocks_bytes(p, blocks, four) == 5632);
  CHECK(committed_peak_blocks(p, block_sizes(p, four)) == std::vector<int>{0, 2});
}

TEST_CASE("a probe's replay stops once the requests still to come cannot reach the cap") {
  // X and then Y, 3 MiB each: each could take a 20 MiB segment, but Y reuses X's.
  Program p;
  p.blocks.push_back({.bytes = Expr(3 << 20), .node = 0, .category = Category::Activations});
  p.blocks.push_back({.bytes = Expr(3 << 20), .node = 1, .category = Category::Activations});
  const auto ev = [](Event::Kind k, int b) { return Event{k, Phase::Forward, 0, b}; };
  p.events = {ev(Event::Alloc, 0), ev(Event::Free, 0), ev(Event::Alloc, 1), ev(Event::Free, 1)};
  const std::vector<int64_t> size = block_sizes(p, Bindings{});
  const int64_t mib = 1 << 20;
  // Two segments' worth of room: decided before the first request.
  CHECK(probe_allocator(p, size, 40 * mib).fits_for_certain);
  CHECK(probe_allocator(p, size, 40 * mib).peak_reserved == 0);
  // Room for one: decided once Y is served from the cache, as the full replay finds.
  const AllocatorResult one = probe_allocator(p, size, 39 * mib);
  CHECK(one.fits_for_certain);
  CHECK(one.peak_reserved == 20 * mib);
  CHECK_FALSE(replay_allocator(p, size, 39 * mib, false).out_of_memory);
  // No room: the first request fails, as it does in the full replay.
  const AllocatorResult none = probe_allocator(p, size, 19 * mib);
  CHECK(none.out_of_memory);
  CHECK_FALSE(none.fits_for_certain);
  CHECK(replay_allocator(p, size, 19 * mib, false).out_of_memory);
}

TEST_CASE("a batch probe answers what estimating and replaying under the cap answer") {
  TrainConfig cfg;
  cfg.optim = Optim::Adam;
  Analysis a = analyze_text(kMlp, cfg);
  for (int64_t batch : {1, 64, 4096, 65536}) {
    const Estimate e = estimate(a, batch);
    for (int64_t budget : {e.peak.peak_bytes - 1, e.peak.peak_bytes, e.reserved_bytes - 1, e.reserved_bytes,
                           e.reserved_bytes / 2, e.reserved_bytes * 2}) {
      const AllocatorResult capped = replay_allocator(a.program, e.bindings, a.train.target->alloc_round, budget);
      const bool slow = !capped.out_of_memory && e.peak.peak_bytes <= budget;
      CHECK_MESSAGE(fits_budget(a, batch, budget) == slow, "batch ", batch, " budget ", budget);
    }
  }
}

TEST_CASE("a probe that hands on the refused batch's peak blocks answers as one that does not") {
  TrainConfig cfg;
  cfg.optim = Optim::Adam;
  Analysis a = analyze_text(kMlp, cfg);
  const int64_t budget = estimate(a, 4096).reserved_bytes;
  ProbeMemo memo;
  for (int64_t batch = 1 << 16; batch >= 1; batch /= 2) {  // a search's way down from far over
    const BudgetProbe with = probe_budget(a, batch, budget, std::nullopt, &memo);
    const BudgetProbe without = probe_budget(a, batch, budget);
    CHECK_MESSAGE(with.fits == without.fits, "batch ", batch);
    CHECK_MESSAGE(with.released == without.released, "batch ", batch);
    CHECK_MESSAGE(with.capped_reserved == without.capped_reserved, "batch ", batch);
  }
  CHECK_FALSE(memo.peak_blocks.empty());  // the first, 65536, was refused by its requests' peak
}

TEST_CASE("max pooling makes its int64 indices even when nothing needs a gradient") {
  // CUDA's max_pool2d is max_pool2d_with_indices: a pool ahead of every parameter still
  // allocates [batch, 1, 4, 4] int64 indices (128 B a sample) beside its output, freed as it
  // returns (traces15 rnd7_11). Behind a convolution the indices are kept for backward.
  const char* text = R"(
opset 17
input x float32 batch,1,8,8
param fc.weight float32 4,16
node MaxPool x -> y kernel_shape=2,2 strides=2,2 @pool
node Flatten y -> f @flat
node memest::Linear f fc.weight -> l @fc
output l
)";
  TrainConfig cfg;
  cfg.loss = Loss::Sum;
  const Analysis a = analyze_text(text, cfg);
  const Bindings b = bind_dims(a, 8);
  int temporaries = 0, kept = 0;
  for (const Block& blk : a.program.blocks) {
    if (blk.node < 0 || a.graph.nodes[blk.node].module != "pool") continue;
    if (blk.category == Category::Temporaries) {
      ++temporaries;
      CHECK(blk.bytes.eval(b) == 8 * 128);
    } else if (blk.bytes.eval(b) == 8 * 128) {
      ++kept;
    }
  }
  CHECK(temporaries == 3);  // one per iteration
  CHECK(kept == 0);
}

TEST_CASE("softmax's backward temporary is a temporary, not a workspace cuDNN may do without") {
  // grad * result, after the input's gradient, freed at once; running out of memory
  // there fails the step (may_fail is for cuDNN's workspace requests only).
  // The first iteration's backward allocations of the softmax, for inputs [batch, 4, n].
  auto softmax_backward = [](int n, Amp amp) {
    const std::string w = std::to_string(n);
    const std::string text = "opset 17\ninput x float32 batch,4," + w + "\nparam w float32 " + w + "," + w +
                             "\nnode memest::Linear x w -> h @fc\nnode Softmax h -> y axis=-1 @sm\noutput y\n";
    TrainConfig cfg;
    cfg.loss = Loss::Sum;
    cfg.amp = amp;
    const Analysis a = analyze_text(text.c_str(), cfg);
    const Estimate e = estimate(a, 2);
    std::vector<std::pair<int64_t, Block>> out;
    for (const Event& ev : a.program.events) {
      const Block& b = a.program.blocks[ev.block];
      if (ev.kind == Event::Alloc && ev.iter == 0 && ev.phase == Phase::Backward && b.node >= 0 &&
          a.graph.nodes[b.node].module == "sm") {
        out.emplace_back(b.bytes.eval(e.bindings), b);
      }
    }
    return out;
  };
  // The input's gradient, then the temporary: both [2, 4, 16] fp32, 512 B.
  const auto fp32 = softmax_backward(16, Amp::None);
  REQUIRE(fp32.size() == 2);
  for (const auto& [bytes, b] : fp32) {
    CHECK(bytes == 2 * 4 * 16 * 4);
    CHECK(b.category == Category::Temporaries);
    CHECK_FALSE(b.may_fail);
  }
  // Under fp16 autocast softmax reads half and writes float: the input's gradient is
  // half, the temporary (from the float result and its gradient) float.
  const auto fp16 = softmax_backward(256, Amp::FP16);
  REQUIRE(fp16.size() == 2);
  CHECK(fp16[0].first == 2 * 4 * 256 * 2);
  CHECK(fp16[1].first == 2 * 4 * 256 * 4);
  // Under bf16 there is no half_to_float kernel (SoftMax.cpp takes it for Half alone): the
  // input is converted to float first, so the input's gradient and the temporary are
  // float, and ToCopyBackward0 then casts the gradient to bf16 (op-probe softmax-bf16-1024:
  // +256 MiB, +256 MiB, then +128 MiB once the incoming float gradient is freed).
  const auto bf16 = softmax_backward(256, Amp::BF16);
  REQUIRE(bf16.size() == 3);
  CHECK(bf16[0].first == 2 * 4 * 256 * 4);
  CHECK(bf16[1].first == 2 * 4 * 256 * 4);
  CHECK(bf16[2].first == 2 * 4 * 256 * 2);
}

TEST_CASE("native_dropout makes its bool mask before its output") {
  // Dropout.cu: mask = empty_like(self, bool), then ret = empty_like(self). The order
  // decides which cached block each lands in (gpt_mini's GPU traces show mask first).
  const char* text = R"(
opset 17
input x float32 batch,64
param fc.weight float32 64,64
const ratio float32 - = 0.1
const training bool - = 1
node memest::Linear x fc.weight -> h @fc
node Dropout h ratio training -> y mask @drop
output y
)";
  TrainConfig cfg;
  cfg.loss = Loss::Sum;
  Analysis a = analyze_text(text, cfg);
  const Estimate e = estimate(a, 2);
  std::vector<int64_t> dropout_blocks;  // the first forward's, in allocation order
  for (const Event& ev : a.program.events) {
    const Block& b = a.program.blocks[ev.block];
    if (ev.kind == Event::Alloc && ev.iter == 0 && ev.phase == Phase::Forward && b.node >= 0 &&
        a.graph.nodes[b.node].module == "drop") {
      dropout_blocks.push_back(b.bytes.eval(e.bindings));
    }
  }
  // [2, 64]: the mask 128 bytes of bool, then the output 512 bytes of fp32.
  CHECK(dropout_blocks == std::vector<int64_t>{128, 512});
}

TEST_CASE("F.linear without a bias (mm) makes the weight's gradient first; with one (addmm), the input's") {
  // MmBackward0 computes mat2's gradient before mat1's; AddmmBackward0 starts with mat1.
  const char* text = R"(
opset 17
input x float32 batch,64
param a.weight float32 32,64
param a.bias float32 32
param c.weight float32 32,32
param c.bias float32 32
param b.weight float32 16,32
node memest::Linear x a.weight a.bias -> h @a
node Relu h -> r @act
node memest::Linear r c.weight c.bias -> h2 @c
node Relu h2 -> r2 @act2
node memest::Linear r2 b.weight -> y @b
output y
)";
  TrainConfig cfg;
  cfg.loss = Loss::Sum;
  Analysis a = analyze_text(text, cfg);
  const Estimate e = estimate(a, 4);
  auto gradients_of = [&](const char* module) {
    std::vector<int64_t> bytes;  // the first backward's gradients by that layer, in order (no scratch)
    for (const Event& ev : a.program.events) {
      const Block& b = a.program.blocks[ev.block];
      if (ev.kind == Event::Alloc && ev.iter == 0 && ev.phase == Phase::Backward && b.node >= 0 &&
          a.graph.nodes[b.node].module == module && b.category != Category::Workspace && !b.bounded) {
        bytes.push_back(b.bytes.eval(e.bindings));
      }
    }
    return bytes;
  };
  // b: weight [16, 32] fp32 = 2048 B, then the input's [4, 32] = 512 B.
  CHECK(gradients_of("b") == std::vector<int64_t>{2048, 512});
  // c: the input's [4, 32] = 512 B, the weight [32, 32] = 4096 B, then the bias 128 B.
  CHECK(gradients_of("c") == std::vector<int64_t>{512, 4096, 128});
}

TEST_CASE("a module's argument stays allocated until the module returns") {
  // h goes into `body`; its last use is body's first op (Mul by a constant saves
  // nothing of h). body's caller holds h until body.fc has run: h's free comes after
  // body.fc's output is made. Without the call (the same ops at top level), it goes
  // right after the Mul.
  auto order = [](const char* scale, const char* act, const char* fc) {
    const std::string text = std::string(R"(
opset 17
input x float32 batch,64
param stem.weight float32 64,64
const two float32 - = 2
node memest::Linear x stem.weight -> h @stem
node Mul h two -> m @)") + scale + R"(
node Relu m -> r @)" + act + R"(
node Relu r -> y @)" + fc + R"(
output y
)";
    TrainConfig cfg;
    cfg.loss = Loss::Sum;
    Analysis a = analyze(read_text_graph(text), AnalysisOptions{.train = cfg});
    int h_block = -1;
    size_t h_free = 0, fc_alloc = 0;
    for (size_t i = 0; i < a.program.events.size(); ++i) {
      const Event& ev = a.program.events[i];
      const Block& b = a.program.blocks[ev.block];
      if (ev.iter != 0 || ev.phase != Phase::Forward || b.node < 0) continue;
      const std::string& module = a.graph.nodes[b.node].module;
      if (ev.kind == Event::Alloc && module == "stem" && b.category == Category::Activations) h_block = ev.block;
      if (ev.kind == Event::Free && ev.block == h_block) h_free = i;
      if (ev.kind == Event::Alloc && module == fc) fc_alloc = i;
    }
    REQUIRE(h_block >= 0);
    REQUIRE(h_free > 0);
    return h_free > fc_alloc;
  };
  CHECK(order("body.scale", "body.act", "body.fc"));
  CHECK_FALSE(order("scale", "act", "fc"));
}

TEST_CASE("channels-last survives a broadcast multiply and an add, and reaches the convolution") {
  // ConvNeXt: x.permute(0, 3, 1, 2) is channels-last; layer_scale * x (a [C, 1, 1]
  // operand has no say in TensorIterator's output strides) and + x stay so, and the next
  // depthwise conv runs cuDNN in NHWC: its weight gradient's workspace is the
  // channels-last row's, 9938944 + 9633792 B a sample (48 B a sample contiguous).
  // Batch 2: 29206528 B.
  auto workspaces = [](const char* scaled) {
    const std::string text = std::string(R"(
opset 17
input x float32 batch,56,56,96
param gamma float32 96,1,1
param w float32 96,1,7,7
node Transpose x -> xt perm=0,3,1,2 @block
node Mul gamma xt -> m @block
node Add )") + scaled + R"( xt -> s @block
node Conv s w -> y kernel_shape=7,7 pads=3,3,3,3 group=96 @next
output y
)";
    TrainConfig cfg;
    cfg.loss = Loss::Sum;
    Analysis a = analyze(read_text_graph(text), AnalysisOptions{.train = cfg});
    const Estimate e = estimate(a, 2);
    std::vector<int64_t> bytes;
    for (const Event& ev : a.program.events) {
      const Block& b = a.program.blocks[ev.block];
      if (ev.kind == Event::Alloc && ev.iter == 0 && b.category == Category::Workspace && b.node >= 0 &&
          a.graph.nodes[b.node].module == "next") {
        bytes.push_back(b.bytes.eval(e.bindings));
      }
    }
    return bytes;
  };
  const std::vector<int64_t> cl = workspaces("m");
  CHECK(std::find(cl.begin(), cl.end(), int64_t{29206528}) != cl.end());
  // The same conv on a contiguous input takes the contiguous rows.
  const std::string plain = R"(
opset 17
input x float32 batch,96,56,56
param w float32 96,1,7,7
node Conv x w -> y kernel_shape=7,7 pads=3,3,3,3 group=96 @next
output y
)";
  TrainConfig cfg;
  cfg.loss = Loss::Sum;
  Analysis p = analyze(read_text_graph(plain), AnalysisOptions{.train = cfg});
  const Estimate e = estimate(p, 2);
  for (const Event& ev : p.program.events) {
    const Block& b = p.program.blocks[ev.block];
    if (b.category == Category::Workspace && b.node >= 0 && p.graph.nodes[b.node].op == "Conv") {
      CHECK(b.bytes.eval(e.bindings) != 19888768);
    }
  }
}

TEST_CASE("dropout with p = 0 in training returns its input: no copy, no mask") {
  // at::dropout's _dropout_impl returns `input` when p == 0 (torchvision's swin_t and
  // ViT train with dropout 0.0); with p > 0 native_dropout makes a mask and an output.
  auto dropout_bytes = [](const char* ratio) {
    const std::string text = std::string(R"(
opset 17
input x float32 batch,64
param fc.weight float32 64,64
const ratio float32 - = )") + ratio + R"(
const training bool - = 1
node memest::Linear x fc.weight -> h @fc
node Dropout h ratio training -> y mask @drop
output y
)";
    TrainConfig cfg;
    cfg.loss = Loss::Sum;
    Analysis a = analyze(read_text_graph(text), AnalysisOptions{.train = cfg});
    const Estimate e = estimate(a, 2);
    int64_t bytes = 0;
    for (const Event& ev : a.program.events) {
      const Block& b = a.program.blocks[ev.block];
      if (ev.kind == Event::Alloc && b.node >= 0 && a.graph.nodes[b.node].module == "drop") bytes += b.bytes.eval(e.bindings);
    }
    return bytes;
  };
  CHECK(dropout_bytes("0") == 0);
  // p = 0.1, three iterations: [2, 64] mask 128 B and output 512 B each forward; its
  // backward multiplies the gradient by the mask: 512 B.
  CHECK(dropout_bytes("0.1") == 3 * (128 + 512 + 512));
}

TEST_CASE("cuDNN's RNN call takes its workspace before the reserve, and frees it after") {
  // GPU traces of lstm_lm: workspace 81.3 MiB, reserve 88 MiB, workspace freed. Taken
  // after the reserve, the workspace's segment was where the next iteration's reserve
  // went, and lstm_lm fp32 Adam reserved 15% less than the GPU.
  const char* text = R"(
opset 17
input x float32 16,batch,32
param w float32 1,256,32
param r float32 1,256,64
node LSTM x w r -> y hidden_size=64 @lstm
output y
)";
  TrainConfig cfg;
  cfg.loss = Loss::Sum;
  const Analysis a = analyze_text(text, cfg);
  std::vector<std::string> seq;
  for (const Event& ev : a.program.events) {
    const Block& b = a.program.blocks[ev.block];
    if (ev.iter != 0 || ev.phase != Phase::Forward || b.node < 0 || a.graph.nodes[b.node].op != "LSTM") continue;
    if (b.category != Category::Workspace && !(b.category == Category::Activations && ev.kind == Event::Alloc)) continue;
    seq.push_back(std::string(ev.kind == Event::Alloc ? "+" : "-") + (b.category == Category::Workspace ? "ws" : "act"));
  }
  // Y, then the workspace, the reserve (kept), the workspace freed.
  CHECK(seq == std::vector<std::string>{"+act", "+ws", "+act", "-ws"});
}

TEST_CASE("a bidirectional RNN's Y, transposed and reshaped back to PyTorch's layout, is a view") {
  // The legacy exporter writes Y [seq, 2, batch, hidden] and Transpose(0, 2, 1, 3) +
  // Reshape back to [seq, batch, 2 * hidden], which is how cuDNN wrote it: no copy.
  // Copies kept as layer 1's input had rnd7_72 8 MiB over at the end of forward.
  const char* text = R"(
opset 17
input x float32 16,batch,32
param w0 float32 2,256,32
param r0 float32 2,256,64
param w1 float32 2,256,128
param r1 float32 2,256,64
const to_x int64 3 = 0,0,-1
node LSTM x w0 r0 -> y0 hidden_size=64 direction=bidirectional @rnn
node Transpose y0 -> t0 perm=0,2,1,3 @rnn
node Reshape t0 to_x -> x1 @rnn
node LSTM x1 w1 r1 -> y1 hidden_size=64 direction=bidirectional @rnn
node Transpose y1 -> t1 perm=0,2,1,3 @rnn
node Reshape t1 to_x -> out @rnn
output out
)";
  TrainConfig cfg;
  cfg.loss = Loss::Sum;
  const Analysis a = analyze_text(text, cfg);
  int reshape_outputs = 0;
  for (const Block& b : a.program.blocks) {
    reshape_outputs += b.node >= 0 && a.graph.nodes[b.node].op == "Reshape" && b.category == Category::Activations;
  }
  CHECK(reshape_outputs == 0);
  // Each iteration allocates the two Ys and layer 0's reserve as activations.
  CHECK(outputs_allocated_by(a, "rnn") == 3 * 3);
}

TEST_CASE("an exported multi-layer LSTM frees what its layers saved when the whole call's backward is done") {
  // nn.LSTM(num_layers=2) is one cuDNN call, and CudnnRnnBackward0 frees every layer's
  // saved tensors (layer 0's Y among them, inside the reserve) as it returns, after its
  // workspace: traces37 rnd12_74 (3 layers) kept the inner Ys to the end, where memest
  // freed them with each inner node and was 6.9% under.
  const char* text = R"(
opset 17
input x float32 16,batch,32
param w0 float32 1,256,32
param r0 float32 1,256,64
param w1 float32 1,256,64
param r1 float32 1,256,64
const ax int64 1 = 1
node LSTM x w0 r0 -> y0 hidden_size=64 @rnn
node Squeeze y0 ax -> x1 @rnn
node LSTM x1 w1 r1 -> y1 hidden_size=64 @rnn
output y1
)";
  TrainConfig cfg;
  cfg.loss = Loss::Sum;
  const Analysis a = analyze_text(text, cfg);
  const int first = a.graph.tensors[a.graph.find_tensor("y0")].producer;
  int workspace = -1, y0_freed = -1;
  for (size_t i = 0; i < a.program.events.size(); ++i) {
    const Event& ev = a.program.events[i];
    const Block& b = a.program.blocks[ev.block];
    if (ev.iter != 0 || ev.phase != Phase::Backward || b.node != first) continue;
    if (ev.kind == Event::Alloc && b.category == Category::Workspace && workspace < 0) workspace = static_cast<int>(i);
    if (ev.kind == Event::Free && b.category == Category::Activations && b.bytes.str() == "4096*batch") {
      y0_freed = static_cast<int>(i);  // y0: 16 x 1 x batch x 64 x 4 B
    }
  }
  REQUIRE(workspace >= 0);
  CHECK(y0_freed > workspace);
}

TEST_CASE("a convolution by a fixed weight (a buffer) keeps its input all the same") {
  // ConvolutionBackward0's one formula for input, weight and bias saves both tensors
  // whenever the node is recorded (autograd's code generator guards single-output
  // formulas only): timm's BlurPool convolves by a buffer filter and keeps its input.
  const char* text = R"(
opset 17
input x float32 batch,4,8,8
param s float32 4,1,1
buffer filt float32 4,1,3,3
node Mul x s -> m @scale
node Conv m filt -> y group=4 pads=1,1,1,1 @blur
output y
)";
  TrainConfig cfg;
  cfg.loss = Loss::Sum;
  Analysis a = analyze_text(text, cfg);
  const Estimate e = estimate(a, 2);
  int64_t kept = 0;
  for (size_t k = 0; k < a.graph.nodes.size(); ++k) {
    if (a.graph.nodes[k].module != "blur") continue;
    for (int b : a.program.saved_by_node[k]) kept += a.program.blocks[b].bytes.eval(e.bindings);
  }
  // The Mul's output, [2, 4, 8, 8] fp32: 2,048 bytes; and the filter, [4, 1, 3, 3] fp32:
  // 144 bytes (the buffer itself, no copy).
  CHECK(kept == 2 * 4 * 8 * 8 * 4 + 4 * 9 * 4);
}

TEST_CASE("cross_entropy under fp16 autocast: log_softmax in half, nll_loss on an fp32 copy") {
  // cross_entropy passes log_softmax an explicit dtype (the logits'), which autocast
  // respects; nll_loss is on the fp32 list and casts. [batch 4, 10 classes] of half
  // logits: log_softmax's result is 4*10*2 = 80 bytes, nll_loss's fp32 copy 160, both
  // saved for backward. In fp32 there is no copy: nll_loss reads log_softmax's result.
  auto loss_blocks = [](Amp amp) {
    TrainConfig cfg;
    cfg.amp = amp;
    Analysis a = analyze_text(kMlp, cfg);
    const Estimate e = estimate(a, 4);
    std::vector<int64_t> bytes;  // the first forward's loss allocations, in order
    for (const Event& ev : a.program.events) {
      const Block& b = a.program.blocks[ev.block];
      if (ev.kind == Event::Alloc && ev.iter == 0 && ev.phase == Phase::Forward && b.node >= 0 &&
          a.graph.nodes[b.node].module == "loss") {
        bytes.push_back(b.bytes.eval(e.bindings));
      }
    }
    return bytes;
  };
  // log_softmax 80; nll_loss: the fp32 copy 160, the loss 4, total_weight 4.
  CHECK(loss_blocks(Amp::FP16) == std::vector<int64_t>{80, 160, 4, 4});
  // fp32: log_softmax 160; nll_loss: the loss 4, total_weight 4.
  CHECK(loss_blocks(Amp::None) == std::vector<int64_t>{160, 4, 4});
}
