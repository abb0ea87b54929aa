// Fine-tuning tests: frozen parameters (--train / --freeze) and --grad-accum, on
// text-built MLPs whose bytes are derived by hand below.
#include <doctest/doctest.h>

#include "estimator/analysis.h"
#include "estimator/error.h"
#include "estimator/finetune.h"
#include "frontends/text_reader.h"
#include "tests/simulate_test_util.h"

using namespace memest;
using namespace memest::testing;

namespace {

int node_of(const Analysis& a, const char* module) {
  for (size_t k = 0; k < a.graph.nodes.size(); ++k) {
    if (a.graph.nodes[k].module == module) return static_cast<int>(k);
  }
  return -1;
}

int count_blocks(const Analysis& a, Category c) {
  int n = 0;
  for (const Block& b : a.program.blocks) n += b.category == c;
  return n;
}

// The blocks node `module` keeps for backward (iteration 1), with their bytes at batch B.
std::vector<std::pair<Category, int64_t>> saved_by(const Analysis& a, const char* module, int64_t batch) {
  const Bindings b = bind_dims(a, batch);
  std::vector<std::pair<Category, int64_t>> out;
  for (int blk : a.program.saved_by_node[node_of(a, module)]) {
    out.push_back({a.program.blocks[blk].category, a.program.blocks[blk].bytes.eval(b)});
  }
  return out;
}

int64_t comp(const PeakResult& p, Category c) { return p.components[static_cast<size_t>(c)]; }

}  // namespace

TEST_CASE("patterns: a glob whose * crosses dots, or a dotted prefix") {
  CHECK(pattern_matches("fc", "fc.weight"));
  CHECK_FALSE(pattern_matches("fc", "fc2.weight"));
  CHECK(pattern_matches("layer4", "layer4.0.conv1.weight"));
  CHECK(pattern_matches("*lora_*", "model.base_model.model.q_proj.lora_A.default.weight"));
  CHECK_FALSE(pattern_matches("*lora_*", "model.base_model.model.q_proj.base_layer.weight"));
  CHECK(pattern_matches("*.bias", "fc1.bias"));
  CHECK(pattern_matches("fc1.weight", "fc1.weight"));
  CHECK_FALSE(pattern_matches("", "fc1.weight"));
}

TEST_CASE("a pattern that matches no parameter is an error") {
  TrainConfig cfg;
  cfg.train = {"head"};
  CHECK_THROWS_WITH_AS(analyze_text(kMlp, cfg),
                       doctest::Contains("--train 'head' matches no parameter"), Error);
}

TEST_CASE("first layer frozen: fc1 and the ReLU save nothing, only fc2 has gradients and Adam state") {
  TrainConfig cfg;
  cfg.optim = Optim::Adam;
  cfg.freeze = {"fc1"};
  Analysis a = analyze_text(kMlp, cfg);
  const int64_t B = 32;
  Estimate e = estimate(a, B);
  // No input of fc1 or the ReLU needs a gradient: autograd records neither.
  CHECK(saved_by(a, "fc1", B).empty());
  CHECK(saved_by(a, "act", B).empty());
  // fc2 keeps r (its weight's gradient needs it), not its weight (r needs no gradient).
  CHECK(saved_by(a, "fc2", B) == std::vector<std::pair<Category, int64_t>>{{Category::Activations, B * 128 * 4}});
  // .grad of fc2.weight and fc2.bias, three iterations: no backward runs for fc1.
  CHECK(count_blocks(a, Category::Gradients) == 2 * 3);
  CHECK(a.accounting.trainable_count == 10 * 128 + 10);
  CHECK(a.accounting.trainable_bytes == (10 * 128 + 10) * 4);
  // At batch 1 the peak is the first step, as with every parameter training, but over
  // fc2 alone: P + I + W + out + loss + G + S + T, each block 512-byte rounded.
  const int64_t P = 32768 + 512 + 5120 + 512;
  const int64_t I = 512 + 512;  // x [1, 64] float32, y [1] int64
  const int64_t W = (32ll << 20) + (1ll << 20) + (32ll << 20);
  const int64_t G = 5120 + 512;  // fc2.weight 10x128 and fc2.bias (40 B -> 512)
  Estimate one = estimate(a, 1);
  CHECK(one.peak.peak_bytes == P + I + W + 512 + 512 + G + 2 * G + G);
  CHECK(one.peak.phase == Phase::Optimizer);
  CHECK(comp(one.peak, Category::Gradients) == G);
  CHECK(comp(one.peak, Category::OptimizerState) == 2 * G);
  // At batch 32 it is the second forward: Adam's state, and no gradients (set to None).
  CHECK(e.peak.phase == Phase::Forward);
  CHECK(comp(e.peak, Category::Gradients) == 0);
  CHECK(comp(e.peak, Category::OptimizerState) == 2 * G);
}

TEST_CASE("head only (--train fc2) is --freeze fc1 here") {
  TrainConfig frozen, head;
  frozen.freeze = {"fc1"};
  head.train = {"fc2"};
  CHECK(estimate(analyze_text(kMlp, frozen), 256).peak.peak_bytes ==
        estimate(analyze_text(kMlp, head), 256).peak.peak_bytes);
}

TEST_CASE("a frozen Linear after a trainable one keeps its weight, not its input") {
  TrainConfig cfg;
  cfg.train = {"fc1"};
  Analysis a = analyze_text(kMlp, cfg);
  const int64_t B = 32;
  // fc2's input r needs a gradient (for fc1): fc2 keeps its weight, a parameter, and no
  // activation; the ReLU keeps r for its own backward.
  CHECK(saved_by(a, "fc2", B) == std::vector<std::pair<Category, int64_t>>{{Category::Parameters, 5120}});
  CHECK(saved_by(a, "act", B) == std::vector<std::pair<Category, int64_t>>{{Category::Activations, B * 128 * 4}});
  CHECK(count_blocks(a, Category::Gradients) == 2 * 3);

  // Under fp16 autocast the frozen weight's half copy is not cached (autocast caches
  // leaves that require grad only): fc2 makes it each iteration and keeps it for backward.
  cfg.amp = Amp::FP16;
  Analysis h = analyze_text(kMlp, cfg);
  CHECK(saved_by(h, "fc2", B) == std::vector<std::pair<Category, int64_t>>{{Category::Activations, 10 * 128 * 2}});
  int cached = 0;
  for (const Block& b : h.program.blocks) cached += b.category == Category::AutocastCache;
  CHECK(cached == 2 * 3);  // fc1.weight and fc1.bias, once per iteration; fc2's are cast anew
}

TEST_CASE("--grad-accum 2: gradients persist across micro-steps; the second one's are added in place") {
  TrainConfig one, two;
  two.grad_accum = 2;
  Analysis a1 = analyze_text(kMlp, one), a2 = analyze_text(kMlp, two);
  // Each micro-step's backward makes a gradient per parameter; the second one's is
  // transient (AccumulateGrad: variable.grad += new_grad).
  CHECK(count_blocks(a1, Category::Gradients) == 4 * 3);
  CHECK(count_blocks(a2, Category::Gradients) == 4 * 2 * 3);
  const int64_t B = 32;
  Estimate e = estimate(a2, B);
  // Iteration 2's phases: zero_grad, forward, backward, forward, backward (plain SGD's
  // step allocates nothing, so it is no phase of the replay). The second
  // forward runs with every .grad alive (P bytes), the first after zero_grad freed them;
  // everything else matches (the previous micro-step's out and loss are held either way).
  std::vector<PhasePeak> it2;
  for (const PhasePeak& p : e.peak.phases) {
    if (p.iter == 1) it2.push_back(p);
  }
  REQUIRE(it2.size() == 5);
  CHECK(it2[1].phase == Phase::Forward);
  CHECK(it2[3].phase == Phase::Forward);
  const int64_t P = 32768 + 512 + 5120 + 512;
  CHECK(it2[3].peak - it2[1].peak == P);
  // loss / 2: one more 512-byte scalar in forward (the undivided loss goes with it) and
  // one in backward (DivBackward0's grad / 2), each transient against K = 1's peak.
  CHECK(e.peak.peak_bytes >= estimate(a1, B).peak.peak_bytes);
}
