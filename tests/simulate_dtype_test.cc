// Simulator tests of dtypes under autocast: type promotion, casts the engine and the
// Python code make, and the dtypes exports leave out. Tiny graphs, bytes derived by hand.
#include <doctest/doctest.h>

#include "estimator/analysis.h"
#include "frontends/text_reader.h"
#include "tests/simulate_test_util.h"

using namespace memest;
using namespace memest::testing;

TEST_CASE("a promoting op's gradient of its half input is made in float, then cast by the engine") {
  // GPT-2's tanh GELU under fp16: 0.5 * x (half) times the float 1 + tanh(...). MulBackward0
  // forms grad * other in float for the half input; autograd's engine casts it to half after
  // the node returns, so the float one lives beside the other input's gradient (traces34
  // sh_gpt2_cls: 4 + 4 + 2 MiB). Here h is a Linear's half output and n a LayerNorm's
  // float output, [2, 16]: float 128 B, half 64 B.
  const char* text = R"(
opset 17
input x float32 batch,16
param w float32 16,16
param g float32 16
node memest::Linear x w -> h @fc
node LayerNormalization x g -> n axis=-1 @ln
node Mul h n -> y @mul
output y
)";
  auto mul_backward = [&](Amp amp) {
    TrainConfig cfg;
    cfg.loss = Loss::Sum;
    cfg.amp = amp;
    const Analysis a = analyze_text(text, cfg);
    const Estimate e = estimate(a, 2);
    std::vector<int64_t> out;
    for (const Event& ev : a.program.events) {
      const Block& b = a.program.blocks[ev.block];
      if (ev.kind == Event::Alloc && ev.iter == 0 && ev.phase == Phase::Backward && b.node >= 0 &&
          a.graph.nodes[b.node].module == "mul") {
        out.push_back(b.bytes.eval(e.bindings));
      }
    }
    return out;
  };
  // h's float gradient, its half cast, then n's float gradient.
  CHECK(mul_backward(Amp::FP16) == std::vector<int64_t>{128, 64, 128});
  // In fp32 both inputs are float: one gradient each.
  CHECK(mul_backward(Amp::None) == std::vector<int64_t>{128, 128});
}

TEST_CASE("a stochastic-depth mask takes the dtype of the tensor it scales") {
  // timm's DropPath: x.new_empty([B, 1]).bernoulli_(keep) / keep, exported as
  // RandomUniformLike -> Less -> Cast(float) -> Div. new_empty takes x's run-time dtype, so
  // under fp16 autocast x * mask stays half (traces32 st_nextvit_small); a float mask
  // would promote it. h [2, 16] is a Linear's half output: 64 B half, 128 B float.
  const char* text = R"(
opset 17
input x float32 batch,16
param w float32 16,16
const ref float32 2,1 = 0,0
const keep float32 - = 0.9
node memest::Linear x w -> h @fc
node RandomUniformLike ref -> r @dp
node Less r keep -> b @dp
node Cast b -> m to=1 @dp
node Div m keep -> s @dp
node Mul h s -> y @dp
output y
)";
  TrainConfig cfg;
  cfg.loss = Loss::Sum;
  cfg.amp = Amp::FP16;
  const Analysis a = analyze_text(text, cfg);
  const Estimate e = estimate(a, 2);
  std::vector<int64_t> out;
  for (const Event& ev : a.program.events) {
    const Block& b = a.program.blocks[ev.block];
    if (ev.kind == Event::Alloc && ev.iter == 0 && ev.phase == Phase::Forward && b.node >= 0 &&
        a.graph.nodes[b.node].op == "Mul") {
      out.push_back(b.bytes.eval(e.bindings));
    }
  }
  CHECK(out == std::vector<int64_t>{2 * 16 * 2});
}

TEST_CASE("inside a disabled autocast block, x.float() arguments are float copies backward keeps") {
  // EfficientViT's LiteMLA._attn under bf16: q, k, v are relu outputs in half, cast by
  // .float() (absent from the fp32 export; Node::float_inputs marks them) and kept by the
  // float matmuls (traces35 st_efficientvit_b3: -3.9% before). h and g are Linear outputs,
  // [2, 16] half = 64 B; their and its transpose [16, 2].
  const char* text = R"(
opset 17
input x float32 batch,16
param w float32 16,16
param u float32 16,2
node memest::Linear x w -> h @fc
node memest::Linear h u -> g @fc2
node Transpose h -> ht perm=1,0 @attn
node MatMul ht g -> y @attn
output y
)";
  auto matmul_forward = [&](uint32_t float_inputs) {
    Graph g = read_text_graph(text);
    for (Node& n : g.nodes) {
      if (n.op == "MatMul") {
        n.float_inputs = float_inputs;
        n.autocast_off = true;
      }
    }
    AnalysisOptions o;
    o.train.loss = Loss::Sum;
    o.train.amp = Amp::BF16;
    const Analysis a = analyze(std::move(g), o);
    const Estimate e = estimate(a, 2);
    std::vector<int64_t> out;
    for (const Event& ev : a.program.events) {
      const Block& b = a.program.blocks[ev.block];
      if (ev.kind == Event::Alloc && ev.iter == 0 && ev.phase == Phase::Forward && b.node >= 0 &&
          a.graph.nodes[b.node].op == "MatMul") {
        out.push_back(b.bytes.eval(e.bindings));
      }
    }
    return out;
  };
  // Without the casts the matmul reads the half operands as they are: only its output.
  // Without the casts the matmul reads the half operands as they are: its output alone.
  // With them, first the float copy of ht ([16, 2] float: 128 B) and one of g, then the same
  // output.
  const std::vector<int64_t> plain = matmul_forward(0), cast = matmul_forward(0b11u);
  REQUIRE(plain.size() == 1);
  REQUIRE(cast.size() == 3);
  CHECK(cast[0] == 16 * 2 * 4);
  CHECK(cast.back() == plain.back());
}

TEST_CASE("type promotion: a zero-dim constant does not widen a half tensor (0.5 * x stays half)") {
  // c10::result_type: a tensor with dims outranks a zero-dim one of the same category.
  // The exporters store Python scalars as zero-dim fp32 constants.
  const char* text = R"(
opset 17
input x float32 batch,64
param fc.weight float32 32,64
const half float32 - = 0.5
const bias float32 32 = 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1
node memest::Linear x fc.weight -> h @fc
node Mul half h -> scaled @scale
node Add h bias -> shifted @shift
node Add scaled shifted -> y @sum
output y
)";
  TrainConfig cfg;
  cfg.loss = Loss::Sum;
  cfg.amp = Amp::FP16;
  Analysis a = analyze_text(text, cfg);
  const Estimate e = estimate(a, 2);
  auto output_bytes = [&](const char* module) {  // the first forward's last activation there
    int64_t bytes = -1;
    for (const Event& ev : a.program.events) {
      const Block& b = a.program.blocks[ev.block];
      if (ev.kind == Event::Alloc && ev.iter == 0 && ev.phase == Phase::Forward && b.node >= 0 &&
          a.graph.nodes[b.node].module == module && b.category == Category::Activations) {
        bytes = b.bytes.eval(e.bindings);
      }
    }
    return bytes;
  };
  CHECK(output_bytes("fc") == 2 * 32 * 2);     // autocast: half (after x's half copy)
  CHECK(output_bytes("scale") == 2 * 32 * 2);  // half * zero-dim fp32: half
  CHECK(output_bytes("shift") == 2 * 32 * 4);  // half + [32] fp32: fp32
}

TEST_CASE("a cast to the dtype its input already runs in is the input; CastLike takes input 1's run-time dtype") {
  // Tensor.to(dtype) returns self when nothing changes, so a Cast of a float tensor to
  // float allocates nothing (and its gradient passes through); x.to(y.dtype) takes y's
  // dtype as it runs, half under autocast, not the float32 the export wrote. h is a
  // Linear's output, [2, 16]: half 64 B, float 128 B.
  const char* text = R"(
opset 17
input x float32 batch,16
param w float32 16,16
node memest::Linear x w -> h @fc
node Cast h -> hf to=1 @up
node CastLike hf h -> hb @down
node Mul hb hb -> y @sq
output y
)";
  auto forward_bytes = [&](Amp amp, const char* module) {
    TrainConfig cfg;
    cfg.loss = Loss::Sum;
    cfg.amp = amp;
    const Analysis a = analyze_text(text, cfg);
    return allocated_bytes(a, estimate(a, 2), Phase::Forward, [&](const Node& n, const Block&) { return n.module == module; });
  };
  CHECK(forward_bytes(Amp::BF16, "up") == std::vector<int64_t>{128});
  CHECK(forward_bytes(Amp::BF16, "down") == std::vector<int64_t>{64});
  CHECK(forward_bytes(Amp::None, "up").empty());
  CHECK(forward_bytes(Amp::None, "down").empty());
}

TEST_CASE("a higher-order op's body no gradient reaches is a no_grad region: autocast lowers, the weight's copy is cached") {
  // DeepSeek V3.2's `@torch.no_grad()` indexer as torch.export writes it: a body whose
  // scores pick top-k indices, its weight wi read only there (a parameter no gradient
  // reaches, lists_parameters). Under bf16 the indexer's MatMul casts wi ([16, 16] bf16,
  // 512 B) into autocast's cache (wi still requires grad) and writes s in bf16 ([2, 16],
  // 64 B). A body the gradient does reach is autocast(enabled=False): no cast, s in
  // float32 (128 B); with wi trained the product is F.linear (memest::Linear).
  // seqtrace35b sh_deepseek_v32_lm bf16: -7.0% before.
  const char* text = R"(
opset 17
input x float32 batch,16
param w float32 16,16
param wi float32 16,16
const k int64 1 = 2
node memest::Linear x w -> h @proj
node MatMul h wi -> s @indexer
node TopK s k -> vals idx axis=-1 @indexer
node GatherElements h idx -> y axis=-1 @pick
output y
)";
  auto indexer_forward = [&](const char* reads) {
    std::string t = text;
    if (reads) t.replace(t.find("output y"), 8, std::string(reads) + "\noutput z");
    Graph g = read_text_graph(t.c_str());
    g.lists_parameters = true;
    for (Node& n : g.nodes) {
      if (n.module == "indexer") n.autocast_off = n.body_autocast_off = true;
    }
    AnalysisOptions o;
    o.train.loss = Loss::Sum;
    o.train.amp = Amp::BF16;
    const Analysis a = analyze(std::move(g), o);
    const Estimate e = estimate(a, 2);
    std::vector<std::pair<Category, int64_t>> out;
    for (const Event& ev : a.program.events) {
      const Block& b = a.program.blocks[ev.block];
      if (ev.kind == Event::Alloc && ev.iter == 0 && ev.phase == Phase::Forward && b.node >= 0 &&
          a.graph.nodes[b.node].module == "indexer" && a.graph.nodes[b.node].op != "TopK") {
        out.push_back({b.category, b.bytes.eval(e.bindings)});
      }
    }
    return out;
  };
  using Blocks = std::vector<std::pair<Category, int64_t>>;
  CHECK(indexer_forward(nullptr) == Blocks{{Category::AutocastCache, 512}, {Category::Activations, 64}});
  // The scores also feed the loss: the gradient reaches the body, autocast is off there.
  CHECK(indexer_forward("node Add y vals -> z @out") == Blocks{{Category::Activations, 128}});
}
