// Data-parallel tests: the reducer's bucket assignment, FSDP2's shard sizes, the hooks'
// allocation sequences on a recording memory, and whole steps with their increments,
// all derived by hand below.
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <map>

#include "estimator/analysis.h"
#include "estimator/parallel.h"
#include "frontends/text_reader.h"

using namespace memest;

namespace {

constexpr int64_t MiB = int64_t{1} << 20;

// Two repeated blocks and a head: FSDP groups blocks.0, blocks.1 and the root (head).
const char* kBlocks = R"(
opset 17
input x float32 batch,64
param blocks.0.fc.weight float32 64,64
param blocks.0.fc.bias float32 64
param blocks.1.fc.weight float32 64,64
param blocks.1.fc.bias float32 64
param head.weight float32 10,64
param head.bias float32 10
node memest::Linear x blocks.0.fc.weight blocks.0.fc.bias -> h0 @blocks.0.fc
node Relu h0 -> r0 @blocks.0.act
node memest::Linear r0 blocks.1.fc.weight blocks.1.fc.bias -> h1 @blocks.1.fc
node Relu h1 -> r1 @blocks.1.act
node memest::Linear r1 head.weight head.bias -> out @head
output out
)";

// Live bytes of what the hooks allocate (unrounded), and their peak.
class Recorder : public StepMemory {
 public:
  int allocate(Expr bytes, Category, int) override {
    sizes.push_back(*bytes.as_const());
    refs.push_back(1);
    live += sizes.back();
    peak = std::max(peak, live);
    log.push_back(sizes.back());
    return static_cast<int>(sizes.size()) - 1;
  }
  void hold(int b) override {
    if (b >= 0) ++refs[b];
  }
  void release(int b) override {
    if (b < 0 || --refs[b] > 0) return;
    live -= sizes[b];
    log.push_back(-sizes[b]);
  }
  std::vector<int64_t> sizes, log;  // log: +bytes per allocation, -bytes per free
  std::vector<int> refs;
  int64_t live = 0, peak = 0;
};

// A text graph with its producer/consumer links (analyze() links them too).
Graph linked(const char* text) {
  Graph g = read_text_graph(text);
  g.relink();
  return g;
}

int tensor(const Graph& g, const std::string& name) {
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    if (g.tensors[t].name == name) return static_cast<int>(t);
  }
  FAIL("no tensor " << name);
  return -1;
}

Analysis analyze_text(const char* text, TrainConfig cfg) {
  AnalysisOptions o;
  o.train = cfg;
  return analyze(read_text_graph(text), o);
}

int64_t phase_peak(const PeakResult& p, int iter, Phase phase) {
  for (const PhasePeak& x : p.phases) {
    if (x.iter == iter && x.phase == phase) return x.peak;
  }
  FAIL("no such phase");
  return 0;
}

int64_t category_total(const Analysis& a, int64_t batch, Category c) {
  Bindings b;
  b.set(a.batch, batch);
  const std::vector<int64_t> sizes = block_sizes(a.program, b);
  int64_t sum = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (a.program.blocks[i].category == c) sum += sizes[i];
  }
  return sum;
}

}  // namespace

TEST_CASE("bucket assignment: first bucket 1 MiB, then 25 MiB, one open bucket per dtype") {
  const DType f = DType::F32, h = DType::F16;
  // Gradient-ready order, as the rebuild sees it.
  const std::vector<BucketTensor> ts = {{MiB / 2, f},  {3 * MiB / 4, f}, {10 * MiB, f}, {20 * MiB, f},
                                        {2 * MiB, h},  {30 * MiB, f},    {1024, f}};
  // f32: 0.5 + 0.75 MiB reaches 1 MiB -> [0,1]; 10 + 20 reaches 25 -> [2,3] (30 MiB: a bucket
  // closes once it reaches its cap, by its last tensor); 30 alone -> [5]; 1 KiB stays open.
  // f16 has its own first bucket: 2 MiB reaches 1 MiB -> [4].
  const auto b = assign_buckets(ts, {kDdpFirstBucketBytes, kDdpBucketCapBytes}, false);
  REQUIRE(b.size() == 5);
  CHECK(b[0] == std::vector<size_t>{0, 1});
  CHECK(b[1] == std::vector<size_t>{2, 3});
  CHECK(b[2] == std::vector<size_t>{4});
  CHECK(b[3] == std::vector<size_t>{5});
  CHECK(b[4] == std::vector<size_t>{6});
  CHECK(bucket_bytes(ts, b) == std::vector<int64_t>{5 * MiB / 4, 30 * MiB, 2 * MiB, 30 * MiB, 1024});

  SUBCASE("the constructor's single cap: one bucket per dtype, sorted by smallest index") {
    const std::vector<BucketTensor> mixed = {{100, h}, {200, f}, {300, h}, {400, f}};
    const auto one = assign_buckets(mixed, {std::numeric_limits<int64_t>::max()}, true);
    REQUIRE(one.size() == 2);
    CHECK(one[0] == std::vector<size_t>{0, 2});
    CHECK(one[1] == std::vector<size_t>{1, 3});
  }
  SUBCASE("a tensor over the cap is a bucket of its own") {
    const auto big = assign_buckets({{40 * MiB, f}, {1, f}}, {kDdpFirstBucketBytes, kDdpBucketCapBytes}, false);
    REQUIRE(big.size() == 2);
    CHECK(big[0] == std::vector<size_t>{0});
  }
}

TEST_CASE("FSDP2 shards: dim 0 chunked ceil(rows / N), padded to a multiple of N when unsharded") {
  const std::vector<int64_t> w = {10, 3};
  // N:        1   2   4   8
  // rows:    10   5   3   2   (torch.chunk's first chunk)
  // shard:   30  15   9   6
  // padded:  30  30  36  48
  const std::map<int, std::pair<int64_t, int64_t>> want = {{1, {30, 30}}, {2, {15, 30}}, {4, {9, 36}}, {8, {6, 48}}};
  for (const auto& [n, sizes] : want) {
    CAPTURE(n);
    CHECK(fsdp_shard_numel(w, n) == sizes.first);
    CHECK(fsdp_unsharded_numel(w, n) == sizes.second);
  }
  CHECK(fsdp_shard_numel({3}, 8) == 1);  // fewer rows than ranks: one row, the rest empty
  CHECK(fsdp_unsharded_numel({3}, 8) == 8);
  CHECK(fsdp_shard_numel({}, 4) == 1);  // a 0-dim parameter
  CHECK_THROWS(fsdp_shard_rows(5, 0));
}

TEST_CASE("FSDP2 groups: each repeated block, and the root with what no block claims") {
  const Graph g = linked(kBlocks);
  const std::vector<FsdpGroup> groups = fsdp_groups(g);
  REQUIRE(groups.size() == 3);
  CHECK(groups[0].module == "blocks.0");
  CHECK(groups[0].params == std::vector<int>{tensor(g, "blocks.0.fc.weight"), tensor(g, "blocks.0.fc.bias")});
  CHECK(groups[1].module == "blocks.1");
  CHECK(groups[2].module == "");
  CHECK(groups[2].params == std::vector<int>{tensor(g, "head.weight"), tensor(g, "head.bias")});
}

TEST_CASE("FSDP2 hooks at world size 4: shards, all-gather buffers, one block in forward, prefetch in backward") {
  const Graph g = linked(kBlocks);
  TrainConfig cfg;
  cfg.parallel = Parallel::FSDP;
  cfg.world_size = 4;
  Recorder mem;
  std::vector<std::string> notes;
  auto fsdp = make_parallel(g, cfg, mem, notes);
  // The unsharded parameters first (model.cuda()): 16384 + 256 per block, 2560 + 40 for the head.
  std::vector<int> block_of(g.tensors.size(), -1);
  std::vector<int> params;
  for (const char* p : {"blocks.0.fc.weight", "blocks.0.fc.bias", "blocks.1.fc.weight", "blocks.1.fc.bias",
                        "head.weight", "head.bias"}) {
    params.push_back(tensor(g, p));
    block_of[params.back()] = mem.allocate(Expr(g.tensors[params.back()].bytes()), Category::Parameters, -1);
  }
  const int64_t full = 2 * (16384 + 256) + 2560 + 40;
  REQUIRE(mem.live == full);
  mem.log.clear();
  fsdp->wrap(params, block_of);
  // Shards: 64 rows -> 16 (4096 B, bias 64 B); head 10 rows -> 3 (768 B, bias 12 B). Each
  // group's shards are made while its originals live.
  const int64_t shards = 2 * (4096 + 64) + 768 + 12;
  CHECK(mem.live == shards);
  CHECK(mem.log == std::vector<int64_t>{4096, 64, -16384, -256, 4096, 64, -16384, -256, 768, 12, -2560, -40});
  CHECK(mem.peak == full + 4096 + 64);  // blocks.0's shards beside every original
  mem.log.clear();

  // Forward. The root unshards at the model's first node: 12 rows padded (3072 B, 48 B);
  // at world size 4 every unshard goes through a flat all-gather output of 4 x the shards.
  fsdp->forward_begin();
  fsdp->before_forward(0);  // root, then blocks.0
  CHECK(mem.log == std::vector<int64_t>{4 * (768 + 12), 3072, 48, 4 * (4096 + 64), -4 * (768 + 12), 16384, 256});
  fsdp->after_forward(1);  // blocks.0 resharded; its all-gather output is held for overlap
  CHECK(mem.live == shards + 3072 + 48 + 4 * (4096 + 64));
  fsdp->before_forward(2);
  fsdp->after_forward(3);
  fsdp->before_forward(4);
  const int64_t after_forward = shards + 3072 + 48 + 4 * (4096 + 64);  // root + blocks.1's held output
  CHECK(mem.live == after_forward);
  mem.log.clear();

  // Backward. No loss node here, so the root's post-forward (which frees the held all-gather
  // output) comes with backward; its pre-backward prefetches blocks.1 (an all-gather output
  // freed at once outside forward), whose own pre-backward prefetches blocks.0: two
  // blocks unsharded at once.
  fsdp->backward_begin();
  fsdp->visit_backward(4);
  fsdp->before_backward(4);
  CHECK(mem.log == std::vector<int64_t>{-4 * (4096 + 64), 4 * (4096 + 64), 16384, 256, -4 * (4096 + 64)});
  fsdp->visit_backward(3);
  fsdp->before_backward(3);
  const int64_t two_blocks = shards + 3072 + 48 + 2 * (16384 + 256);
  CHECK(mem.live == two_blocks);
  CHECK(mem.peak == two_blocks + 4 * (4096 + 64));  // blocks.0's all-gather output beside both

  // blocks.1's gradients (unsharded, as autograd makes them), then backward passes the
  // block: reshard, one padded reduce-scatter input, the gradients go, one output of
  // rank 0's shards that the sharded gradients view.
  const int w1 = tensor(g, "blocks.1.fc.weight"), b1 = tensor(g, "blocks.1.fc.bias");
  const int gw = mem.allocate(Expr(16384), Category::Gradients, 3), gb = mem.allocate(Expr(256), Category::Gradients, 3);
  CHECK(fsdp->takes_grad(w1, gw));
  CHECK(fsdp->takes_grad(b1, gb));
  mem.log.clear();
  fsdp->visit_backward(2);  // still inside blocks.1
  CHECK(mem.log.empty());
  fsdp->visit_backward(1);
  CHECK(mem.log == std::vector<int64_t>{-16384, -256, 16384 + 256, -16384, -256, 4096 + 64});
  const int64_t after_block1 = shards + 3072 + 48 + (16384 + 256) + (16384 + 256) + (4096 + 64);
  CHECK(mem.live == after_block1);  // root + blocks.0 unsharded, blocks.1's reduce-scatter input and sharded grads
  // zero_grad drops the sharded gradients (the reduce-scatter output).
  fsdp->backward_end();  // blocks.0 and the root: nothing to reduce; the held input goes
  fsdp->zero_grad();
  CHECK(mem.live == shards);
}

TEST_CASE("DDP adds the flat buckets: +1 gradient persistently, gradients themselves only without bucket view") {
  TrainConfig base;
  base.optim = Optim::Adam;
  const Analysis plain = analyze_text(kBlocks, base);
  TrainConfig ddp = base;
  ddp.parallel = Parallel::DDP;
  ddp.world_size = 8;  // the world size changes nothing in one rank's bytes
  const Analysis with = analyze_text(kBlocks, ddp);
  ddp.bucket_view = true;
  const Analysis view = analyze_text(kBlocks, ddp);
  const int64_t B = 32;
  // Gradients, each rounded to 512: 16384 + 512 per block, 2560 + 512 for the head.
  const int64_t grads = 2 * (16384 + 512) + 2560 + 512;
  // One f32 bucket of every parameter (2 x 16640 + 2600 = 35880 B -> 36352), before and
  // after the rebuild (all under the 1 MiB first cap), and local_used_map_dev_ (6 int32 -> 512).
  const int64_t buckets = 36352 + 512;
  const int64_t step_plain = phase_peak(estimate(plain, B).peak, 2, Phase::Optimizer);
  CHECK(phase_peak(estimate(with, B).peak, 2, Phase::Optimizer) == step_plain + buckets);
  // With bucket view, .grad are views of the buckets: the step sees the buckets instead of the gradients.
  CHECK(phase_peak(estimate(view, B).peak, 2, Phase::Optimizer) == step_plain + buckets - grads);
  CHECK(category_total(with, B, Category::OptimizerState) == category_total(plain, B, Category::OptimizerState));
  // The constructor's buckets, replaced by the rebuild (second forward), are counted
  // until that iteration's backward ends, with bucket view or without (measured held in
  // some runs, see ddp.cc).
  const PeakResult pw = estimate(with, B).peak, pv = estimate(view, B).peak;
  CHECK(phase_peak(pw, 1, Phase::Forward) == phase_peak(pw, 2, Phase::Forward) + 36352);
  CHECK(phase_peak(pv, 1, Phase::Forward) == phase_peak(pv, 2, Phase::Forward) + 36352);
}

TEST_CASE("FSDP2 at world size 1 keeps full-size shards; at 4 the optimizer state is rank 0's shards") {
  TrainConfig cfg;
  cfg.optim = Optim::Adam;
  const Analysis plain = analyze_text(kBlocks, cfg);
  cfg.parallel = Parallel::FSDP;
  cfg.world_size = 1;
  const Analysis one = analyze_text(kBlocks, cfg);
  cfg.world_size = 4;
  const Analysis four = analyze_text(kBlocks, cfg);
  const int64_t B = 32;
  CHECK(category_total(one, B, Category::OptimizerState) == category_total(plain, B, Category::OptimizerState));
  // exp_avg and exp_avg_sq of each shard, rounded: 4096 + 512 per block, 768 -> 1024, 12 -> 512.
  CHECK(category_total(four, B, Category::OptimizerState) == 2 * (2 * (4096 + 512) + 1024 + 512));
  // One rank of four never holds more than at world size 1 in the step.
  CHECK(phase_peak(estimate(four, B).peak, 2, Phase::Optimizer) < phase_peak(estimate(one, B).peak, 2, Phase::Optimizer));
}
