// norm_casts.h: transformers' RMSNorm casts, put back where a float32 export dropped them.
#include <doctest/doctest.h>

#include <string>

#include "estimator/analysis.h"
#include "estimator/norm_casts.h"
#include "frontends/text_reader.h"
#include "tests/simulate_test_util.h"

using namespace memest;

namespace {

// Qwen3's q_norm over q_proj's output as the dynamo exporter writes it in float32, with
// the stack trace's statements: `weight_line` is the weight's multiply.
Graph q_norm(const std::string& weight_line) {
  Graph g = read_text_graph(R"(
opset 17
input x float32 batch,16
param wq float32 16,16
param gamma float32 16
const two float32 - = 2
const eps float32 - = 0.000001
node memest::Linear x wq -> q @attn.q_proj
node Pow q two -> p @attn.q_norm
node ReduceMean p -> m axes=[-1] keepdims=1 @attn.q_norm
node Add m eps -> a @attn.q_norm
node Sqrt a -> s @attn.q_norm
node Reciprocal s -> r @attn.q_norm
node Mul q r -> n @attn.q_norm
node Mul gamma n -> y @attn.q_norm
output y
)");
  PyStatement body, weight;
  body.where = "modeling_qwen3.py:62";
  body.code = "hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)";
  weight.where = "modeling_qwen3.py:63";
  weight.code = weight_line;
  g.python.statements = {body, weight};
  g.python.stacks = {{PyFrame{0, 0}}, {PyFrame{1, 0}}};
  for (Node& n : g.nodes) n.py_stack = n.op == "Mul" && n.outputs[0] == g.find_tensor("y") ? 1 : 0;
  g.relink();
  return g;
}

const Node* made(const Graph& g, const char* tensor) {
  const int t = g.find_tensor(tensor);
  return t >= 0 && g.tensors[t].producer >= 0 ? &g.nodes[g.tensors[t].producer] : nullptr;
}

// The forward allocations of the norm's module in the first iteration, in bytes at batch 2.
std::vector<int64_t> norm_forward(Graph g, Amp amp) {
  AnalysisOptions o;
  o.train.loss = Loss::Sum;
  o.train.amp = amp;
  const Analysis a = analyze(std::move(g), o);
  return testing::allocated_bytes(a, estimate(a, 2), Phase::Forward, [](const Node& n, const Block& b) {
    return n.module == "attn.q_norm" && b.category == Category::Activations;
  });
}

// Bytes the first iteration's forward allocated in the attention (q_proj and q_norm) that
// live into its backward: what autograd keeps, the output aside.
int64_t kept_for_backward(Graph g, Amp amp) {
  AnalysisOptions o;
  o.train.loss = Loss::Sum;
  o.train.amp = amp;
  const Analysis a = analyze(std::move(g), o);
  const Estimate e = estimate(a, 2);
  const int y = a.graph.find_tensor("y");
  std::vector<int> freed_in(a.program.blocks.size(), -1);
  for (const Event& ev : a.program.events) {
    if (ev.kind == Event::Free && ev.iter == 0) freed_in[static_cast<size_t>(ev.block)] = static_cast<int>(ev.phase);
  }
  int64_t bytes = 0;
  for (const Event& ev : a.program.events) {
    const Block& b = a.program.blocks[ev.block];
    if (ev.kind != Event::Alloc || ev.iter != 0 || ev.phase != Phase::Forward || b.node < 0) continue;
    const Node& n = a.graph.nodes[b.node];
    if (std::string(n.module).rfind("attn.", 0) != 0 || (!n.outputs.empty() && n.outputs[0] == y)) continue;
    if (freed_in[static_cast<size_t>(ev.block)] == static_cast<int>(Phase::Backward)) bytes += b.bytes.eval(e.bindings);
  }
  return bytes;
}

}  // namespace

TEST_CASE("norm casts: the weight's `x.to(input_dtype)` puts back the upcast and the cast of the rows") {
  Graph g = q_norm("return self.weight * hidden_states.to(input_dtype)");
  REQUIRE(restore_norm_casts(g) == 1);
  // One float copy of q feeds the Pow and the rows' Mul; the rows are cast back to q's
  // dtype before the weight multiplies them.
  const Node* pow = made(g, "p");
  REQUIRE(pow);
  const Node* up = made(g, g.tensors[pow->inputs[0]].name.c_str());
  REQUIRE(up);
  CHECK(up->op == "Cast");
  CHECK(up->inputs[0] == g.find_tensor("q"));
  CHECK(made(g, "n")->inputs[0] == pow->inputs[0]);
  const Node* weight = made(g, "y");
  const int rows = weight->inputs[1];
  REQUIRE(made(g, g.tensors[rows].name.c_str()));
  CHECK(made(g, g.tensors[rows].name.c_str())->op == "CastLike");
}

TEST_CASE("norm casts: `(weight * x).to(input_dtype)` casts the product back") {
  Graph g = q_norm("return (self.weight * hidden_states).to(input_dtype)");
  REQUIRE(restore_norm_casts(g) == 1);
  const Node* out = made(g, "y");
  REQUIRE(out);
  CHECK(out->op == "CastLike");
  CHECK(made(g, g.tensors[out->inputs[0]].name.c_str())->op == "Mul");
}

TEST_CASE("norm casts: the last `.to(` of the weight's statement decides, and an upcast is none") {
  // Helium: (self.weight.to(torch.float32) * hidden_states).to(input_dtype) casts the product.
  Graph g = q_norm("return (self.weight.to(torch.float32) * hidden_states).to(input_dtype)");
  REQUIRE(restore_norm_casts(g) == 1);
  CHECK(made(g, "y")->op == "CastLike");
  Graph h = q_norm("hidden_states = self.weight.to(torch.float32) * hidden_states");
  CHECK(restore_norm_casts(h) == 0);
}

TEST_CASE("norm casts: no cast back in the weight's statement, or no trace, leaves the graph") {
  Graph g = q_norm("return self.weight * hidden_states");
  CHECK(restore_norm_casts(g) == 0);
  Graph h = q_norm("return self.weight * hidden_states.to(input_dtype)");
  h.python = {};
  CHECK(restore_norm_casts(h) == 0);
}

TEST_CASE("norm casts: under bf16 a half q is copied to float once and the rows are kept in half") {
  // q is q_proj's bf16 output [2, 16]: float 128 B, half 64 B; rstd per row [2, 1]: 8 B.
  // As exported: Pow's autocast copy of q (128), its float output (128), the mean, eps sum,
  // sqrt and rstd (8 each), rows (128, float by promotion), weight * rows (128).
  // With the casts: the one float copy (128), the Pow (128), 8 x 4, rows (128), rows cast
  // back (64), weight * rows (128, a float weight times half rows).
  Graph plain = q_norm("return self.weight * hidden_states");
  Graph cast = q_norm("return self.weight * hidden_states.to(input_dtype)");
  CHECK(norm_forward(std::move(cast), Amp::BF16) == std::vector<int64_t>{128, 128, 8, 8, 8, 8, 128, 64, 128});
  // In float32 the casts are their inputs: the same allocations as the plain graph.
  CHECK(norm_forward(q_norm("return self.weight * hidden_states.to(input_dtype)"), Amp::None) ==
        norm_forward(std::move(plain), Amp::None));
}

TEST_CASE("norm casts: under bf16 autograd keeps the float copy and the half rows, not q and float rows") {
  // [2, 16]: float 128 B, half 64 B; per row [2, 1] float: 8 B. Both keep q_proj's half
  // copy of x (64, its weight's gradient). As exported, backward also keeps q (64, the
  // Mul's half operand), Pow's autocast copy of it (128), sqrt and rstd (8 + 8) and the
  // float rows (128): 400. With the casts: the one float copy (128, read by the Pow and
  // the Mul), sqrt and rstd (16) and the rows cast back (64): 272.
  CHECK(kept_for_backward(q_norm("return self.weight * hidden_states"), Amp::BF16) == 400);
  CHECK(kept_for_backward(q_norm("return self.weight * hidden_states.to(input_dtype)"), Amp::BF16) == 272);
}

TEST_CASE("norm casts: Gemma's `self._norm(x.float())` upcasts, and its `type_as` product casts back") {
  // Gemma's RMSNorm: `output = self._norm(x.float())`, then `output = output * (1.0 +
  // self.weight.float())`, then `return output.type_as(x)`, a statement with no node of
  // its own; the exporter names the weight's product `type_as_1`.
  Graph g = q_norm("output = output * (1.0 + self.weight.float())");
  g.python.statements[0].code = "output = self._norm(x.float())";
  // The product is `y` here: the upcast is put back, no cast back (none is seen).
  REQUIRE(restore_norm_casts(g) == 1);
  CHECK(made(g, g.tensors[made(g, "p")->inputs[0]].name.c_str())->op == "Cast");
  CHECK(made(g, "y")->op == "Mul");
  Graph h = q_norm("output = output * (1.0 + self.weight.float())");
  h.python.statements[0].code = "output = self._norm(x.float())";
  // What the exporter calls the product, as in the Gemma2 export.
  const int y = h.find_tensor("y");
  const int renamed = h.new_tensor("type_as_1");
  for (Node& n : h.nodes) {
    for (int& o : n.outputs) o = o == y ? renamed : o;
  }
  h.outputs = {renamed};
  h.tensors[renamed].graph_output = true;
  h.tensors[y].graph_output = false;
  h.relink();
  REQUIRE(restore_norm_casts(h) == 1);
  const Node* out = made(h, "type_as_1");
  REQUIRE(out);
  CHECK(out->op == "CastLike");
  // The upcast: the Pow reads a float copy of q.
  CHECK(made(h, h.tensors[made(h, "p")->inputs[0]].name.c_str())->op == "Cast");
}

TEST_CASE("cast backs: `.to(x_dtype)` after `x.float()` casts back to x's dtype; a lone float Cast stays") {
  // timm's EvoNorm group_std in a legacy float32 export: x.float(), a statistic, sqrt,
  // .to(x_dtype), each cast a Cast(to=FLOAT). Under fp16 autocast h (a Linear's output) is
  // half; the second cast makes the root half again, so the product is half:
  // [2, 4] x 2 B = 16 B at batch 2, where the literal Cast made it float (32 B).
  const char* text = R"(
opset 17
input x float32 batch,8
param w float32 4,8
node memest::Linear x w -> h
node Cast h -> hf to=1
node Sqrt hf -> s
node Cast s -> sb to=1
node Mul h sb -> y
node Cast h -> z to=1
node Add y z -> out
output out
)";
  Graph g = read_text_graph(text);
  CHECK(restore_cast_backs(g) == 1);
  CHECK(made(g, "sb")->op == "CastLike");
  CHECK(made(g, "sb")->inputs[1] == g.find_tensor("h"));
  CHECK(made(g, "hf")->op == "Cast");  // the upcast itself
  CHECK(made(g, "z")->op == "Cast");   // a float Cast of h alone is `.float()`
  AnalysisOptions o;
  o.train.loss = Loss::Sum;
  o.train.amp = Amp::FP16;
  const Analysis a = analyze(read_text_graph(text), o);
  const Estimate e = estimate(a, 2);
  const auto mul = testing::allocated_bytes(a, e, Phase::Forward, [](const Node& n, const Block&) { return n.op == "Mul"; });
  CHECK(mul == std::vector<int64_t>{16});
}
