// upcast_matmuls.h: products of operands the code cast to float32 run with autocast off.
#include <doctest/doctest.h>

#include <string>

#include "estimator/analysis.h"
#include "estimator/upcast_matmuls.h"
#include "frontends/text_reader.h"
#include "tests/simulate_test_util.h"

using namespace memest;

namespace {

// timm's LiteMLA._attn as a float32 legacy export writes it: q and k cast by `.float()`
// (Casts of float32 tensors), kv = k^T @ v and q @ kv, then a head that reads the
// product alone. `v_cast`: whether v is cast too (else v is read as it is).
Graph lite_attention(bool v_cast) {
  std::string text = R"(
opset 17
input x float32 batch,8
param w float32 8,8
param w2 float32 8,8
node MatMul x w -> h @proj
node Relu h -> q @attn
node Relu h -> k @attn
node Cast q -> qf to=1 @attn
node Cast k -> kf to=1 @attn
node Transpose kf -> kt perm=[1,0] @attn
)";
  text += v_cast ? "node Cast h -> vf to=1 @attn\nnode MatMul kt vf -> s @attn.kv\n" : "node MatMul kt h -> s @attn.kv\n";
  text += R"(node MatMul qf s -> o @attn.out
node MatMul o w2 -> y @head
output y
)";
  return read_text_graph(text);
}

const Node& made(const Graph& g, const char* tensor) { return g.nodes[g.tensors[g.find_tensor(tensor)].producer]; }

std::vector<int64_t> forward_activations(Graph g, const char* module) {
  AnalysisOptions o;
  o.train.loss = Loss::Sum;
  o.train.amp = Amp::FP16;
  const Analysis a = analyze(std::move(g), o);
  return testing::allocated_bytes(a, estimate(a, 2), Phase::Forward, [&](const Node& n, const Block& b) {
    return n.module == module && b.category == Category::Activations;
  });
}

}  // namespace

TEST_CASE("upcast matmuls: both operands cast by the code, and the product that reads one") {
  const Analysis a = analyze(lite_attention(true), AnalysisOptions{});
  CHECK(made(a.graph, "s").autocast_off);
  CHECK(made(a.graph, "o").autocast_off);  // qf, and s from a marked product
  CHECK_FALSE(made(a.graph, "y").autocast_off);  // o alone: one activation operand
  CHECK_FALSE(made(a.graph, "h").autocast_off);
  // Under fp16 autocast at batch 2: kv = kt [8,2] @ vf [2,8] in float32, 8*8*4 = 256 bytes,
  // no half copies of its operands; q @ kv, [2,8] float32 = 64 bytes.
  CHECK(forward_activations(lite_attention(true), "attn.kv") == std::vector<int64_t>{256});
  CHECK(forward_activations(lite_attention(true), "attn.out") == std::vector<int64_t>{64});
}

TEST_CASE("upcast matmuls: one operand cast is a cast back to the run's dtype, no evidence") {
  Graph g = lite_attention(false);
  AnalysisOptions o;
  const Analysis a = analyze(std::move(g), o);
  CHECK_FALSE(made(a.graph, "s").autocast_off);
  CHECK_FALSE(made(a.graph, "o").autocast_off);
  // Autocast on: kt's float32 copy cast down (2*8*2 = 32 bytes), the output in half
  // (8*8*2 = 128 bytes); h is half already.
  CHECK(forward_activations(lite_attention(false), "attn.kv") == std::vector<int64_t>{32, 128});
}
