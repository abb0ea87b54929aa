// norm_casts.h: transformers' RMSNorm casts, put back where a float32 export dropped them.
#include <doctest/doctest.h>

#include <string>

#include "estimator/analysis.h"
#include "estimator/norm_casts.h"
#include "estimator/ops/registry.h"
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

TEST_CASE("parameter casts: a weight's float Cast in a module that casts back follows x; `.to(device)` stays") {
  // timm's EvoNorm in a legacy float32 export: `x.float()...sqrt().to(x_dtype)` (two
  // float Casts, restore_cast_backs makes the second a CastLike) and
  // `self.weight.view(v_shape).to(x_dtype)` (a float Cast of the weight). BART's
  // `self.final_logits_bias.to(lm_logits.device)` is a float Cast of a weight too, at the
  // top level where nothing casts back: it stays, and its sum with half logits is float.
  const char* text = R"(
opset 17
input x float32 batch,8
param w float32 4,8
param gamma float32 4
param bias float32 4
node memest::Linear x w -> h
node Cast h -> hf to=1 @norm
node ReduceMean hf -> m axes=[-1] keepdims=1 @norm
node Sqrt m -> s @norm
node Cast s -> sb to=1 @norm
node Div h sb -> d @norm
node Reshape gamma -> gv shape=[1,4] @norm
node Cast gv -> gc to=1 @norm
node Mul d gc -> y @norm
node Cast bias -> bc to=1
node Add y bc -> out
output out
)";
  Graph g = read_text_graph(text);
  CHECK(restore_cast_backs(g) == 1);
  CHECK(restore_parameter_casts(g) == 1);
  CHECK(made(g, "gc")->op == "CastLike");
  CHECK(made(g, "gc")->inputs[0] == g.find_tensor("gv"));
  CHECK(made(g, "gc")->inputs[1] == g.find_tensor("d"));
  CHECK(made(g, "bc")->op == "Cast");
  // Under fp16 at batch 2: d and y are half, [2, 4] x 2 B = 16 B each; out is float
  // (32 B): the bias promotes it. The literal Cast of gamma made y float (32 B).
  AnalysisOptions o;
  o.train.loss = Loss::Sum;
  o.train.amp = Amp::FP16;
  const Analysis a = analyze(read_text_graph(text), o);
  const Estimate e = estimate(a, 2);
  auto bytes_of = [&](const char* op) {
    return testing::allocated_bytes(a, e, Phase::Forward, [&](const Node& n, const Block& b) {
      return n.op == op && b.category == Category::Activations;
    });
  };
  CHECK(bytes_of("Mul") == std::vector<int64_t>{16});
  CHECK(bytes_of("Add") == std::vector<int64_t>{32});
}

namespace {

// timm's EvoNorm2dS0a over a Linear's output as a float32 dynamo export writes it: no
// cast at all (`x.float()`, `.to(x_dtype)` and the weight's `.to(x_dtype)` are no-ops
// in float32), the variance spelled out, the module's class marking every node.
const char* kEvoNorm = R"(
opset 17
input x float32 batch,8
param w float32 4,8
param gamma float32 1,4
const eps float32 - = 0.00001
node memest::Linear x w -> h
node ReduceMean h -> m axes=[-1] keepdims=1 @norm
node Sub h m -> c @norm
node Mul c c -> c2 @norm
node ReduceMean c2 -> var axes=[-1] keepdims=1 @norm
node Add var eps -> ve @norm
node Sqrt ve -> s @norm
node Div h s -> d @norm
node Mul d gamma -> y @norm
output y
)";

Graph evo_norm() {
  Graph g = read_text_graph(kEvoNorm);
  for (Node& n : g.nodes) n.casts_to_input = n.module == "norm";
  return g;
}

}  // namespace

TEST_CASE("module casts: EvoNorm's statistic reads one float copy, its root casts back, its weight follows x") {
  CHECK(module_casts_to_input("timm.layers.evo_norm.EvoNorm2dS0"));
  CHECK_FALSE(module_casts_to_input("timm.layers.norm_act.BatchNormAct2d"));
  Graph g = evo_norm();
  CHECK(restore_module_casts(g) == 2);  // the weight's cast, and the statistic's pair
  const int h = g.find_tensor("h");
  const Node* mean = made(g, "m");
  const Node* up = &g.nodes[g.tensors[mean->inputs[0]].producer];
  CHECK(up->op == "Cast");
  CHECK(up->inputs[0] == h);
  CHECK(made(g, "c")->inputs[0] == mean->inputs[0]);  // the deviation reads the copy too
  CHECK(made(g, "d")->inputs[0] == h);                // the division reads x itself
  CHECK(made(g, "s")->op == "CastLike");               // sqrt's result, cast back to h's dtype
  CHECK(made(g, "s")->inputs[1] == h);
  const Node* y = made(g, "y");
  CHECK(g.nodes[g.tensors[y->inputs[1]].producer].op == "CastLike");  // gamma.to(x_dtype)
  CHECK(restore_module_casts(g) == 0);                 // once: the copy is a Cast now
}

TEST_CASE("module casts: under fp16 the norm keeps a float copy of x for the variance and runs in half") {
  // Batch 2: x.float() is [2, 8]... h is [2, 4]: its float copy is 2 x 4 x 4 B = 32 B, which
  // the fused variance keeps for backward; d and y are half (16 B each), where without the
  // casts the float gamma made y float (32 B). In float32 every cast is its input.
  auto run = [](Graph g, Amp amp) {
    AnalysisOptions o;
    o.train.loss = Loss::Sum;
    o.train.amp = amp;
    const Analysis a = analyze(std::move(g), o);
    const Estimate e = estimate(a, 2);
    auto bytes_of = [&](const char* op) {
      return testing::allocated_bytes(a, e, Phase::Forward, [&](const Node& n, const Block& b) {
        return n.op == op && n.module == "norm" && b.category == Category::Activations;
      });
    };
    return std::vector<std::vector<int64_t>>{bytes_of("Cast"), bytes_of("Variance"), bytes_of("Div"), bytes_of("Mul")};
  };
  const auto half = run(evo_norm(), Amp::FP16);
  CHECK(half[0] == std::vector<int64_t>{32});  // the float copy of h
  CHECK(half[1] == std::vector<int64_t>{8});   // the variance, [2, 1] float
  CHECK(half[2] == std::vector<int64_t>{16});
  CHECK(half[3] == std::vector<int64_t>{16});
  const auto as_exported = run(read_text_graph(kEvoNorm), Amp::FP16);
  CHECK(as_exported[0].empty());
  CHECK(as_exported[3] == std::vector<int64_t>{32});
  const auto full = run(evo_norm(), Amp::None);
  CHECK(full[0].empty());
  CHECK(full[3] == std::vector<int64_t>{32});
}

namespace {

// timm's FilterResponseNormTlu2d over a Linear's output in a legacy float32 export:
// `x.square().float().mean(...).add(eps).rsqrt().to(x.dtype)`, the square written
// Mul(x, x), then `x * rms` and the weight's `.to(dtype=x_dtype)`.
const char* kFrnLegacy = R"(
opset 17
input x float32 batch,8
param w float32 4,8
param gamma float32 4
const eps float32 - = 0.00001
node memest::Linear x w -> h
node Mul h h -> sq @norm
node Cast sq -> sqf to=1 @norm
node ReduceMean sqf -> m axes=[-1] keepdims=1 @norm
node Add m eps -> a @norm
node Sqrt a -> s @norm
node Reciprocal s -> r @norm
node Cast r -> rb to=1 @norm
node Mul h rb -> y0 @norm
node Reshape gamma -> gv shape=[1,4] @norm
node Cast gv -> gc to=1 @norm
node Mul y0 gc -> y @norm
output y
)";

}  // namespace

TEST_CASE("squares: a legacy Mul(x, x) that a float Cast reads is x.square(), pow under autocast") {
  Graph g = read_text_graph(kFrnLegacy);
  CHECK(restore_cast_backs(g) == 1);  // rb: cast back to the dtype of what was upcast
  CHECK(restore_squares(g) == 1);
  CHECK(made(g, "sq")->op == "Pow");
  CHECK(made(g, "rb")->op == "CastLike");
  CHECK(made(g, "rb")->inputs[1] == g.find_tensor("h"));  // x's dtype, not the float square's
  CHECK(restore_parameter_casts(g) == 1);
  // Under fp16 at batch 2, h [2, 4] is half: pow runs in float32 on a float copy of h
  // (32 B, which its backward keeps) into a float square (32 B); x * rms and the weight's
  // product are half (16 B each). As a Mul the square was half (16 B) and nothing kept
  // the float copy: 16 B per norm too little.
  AnalysisOptions o;
  o.train.loss = Loss::Sum;
  o.train.amp = Amp::FP16;
  const Analysis a = analyze(read_text_graph(kFrnLegacy), o);
  const Estimate e = estimate(a, 2);
  auto bytes_of = [&](const char* op) {
    return testing::allocated_bytes(a, e, Phase::Forward, [&](const Node& n, const Block& b) {
      return n.op == op && b.category == Category::Activations;
    });
  };
  CHECK(bytes_of("Pow") == std::vector<int64_t>{32, 32});
  CHECK(bytes_of("Mul") == std::vector<int64_t>{16, 16});
}

TEST_CASE("squares: a square something else reads too stays a Mul") {
  Graph g = read_text_graph(R"(
opset 17
input x float32 batch,8
node Relu x -> h
node Mul h h -> sq
node Cast sq -> sqf to=1
node Add sq sqf -> out
output out
)");
  CHECK(restore_squares(g) == 0);
  CHECK(made(g, "sq")->op == "Mul");
}

TEST_CASE("module casts: FilterResponseNorm's rsqrt, Sqrt then Reciprocal, is cast back after both") {
  // The dynamo export writes `.rsqrt()` as Sqrt -> Reciprocal; reciprocal runs in float32
  // under autocast, so a cast back after the Sqrt alone left rms float and `x * rms` float.
  CHECK(module_casts_to_input("timm.layers.filter_response_norm.FilterResponseNormTlu2d"));
  const char* text = R"(
opset 17
input x float32 batch,8
param w float32 4,8
param gamma float32 1,4
const two float32 - = 2
const eps float32 - = 0.00001
node memest::Linear x w -> h
node Pow h two -> sq @norm
node ReduceMean sq -> m axes=[-1] keepdims=1 @norm
node Add m eps -> a @norm
node Sqrt a -> s @norm
node Reciprocal s -> r @norm
node Mul h r -> y0 @norm
node Mul y0 gamma -> y @norm
output y
)";
  auto marked = [&] {
    Graph g = read_text_graph(text);
    for (Node& n : g.nodes) n.casts_to_input = n.module == "norm";
    return g;
  };
  Graph g = marked();
  CHECK(restore_module_casts(g) == 2);  // the weight's cast, the statistic's pair
  CHECK(made(g, "s")->op == "Sqrt");
  CHECK(made(g, "r")->op == "CastLike");
  AnalysisOptions o;
  o.train.loss = Loss::Sum;
  o.train.amp = Amp::FP16;
  const Analysis a = analyze(marked(), o);
  const Estimate e = estimate(a, 2);
  const auto mul = testing::allocated_bytes(a, e, Phase::Forward, [](const Node& n, const Block& b) {
    return n.op == "Mul" && b.category == Category::Activations;
  });
  CHECK(mul == std::vector<int64_t>{16, 16});  // [2, 4] half, both products
}
