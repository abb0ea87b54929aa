// Grouped-query attention: transformers' repeat_kv folded into the fused kernel, and
// the backend scaled_dot_product_attention picks by dtype.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "estimator/analysis.h"
#include "frontends/text_reader.h"

using namespace memest;

namespace {

// q has 4 heads; k and v have 2, repeated to 4 as transformers' repeat_kv spells it
// (Unsqueeze, Expand, Reshape), then attention as the exporter spells
// scaled_dot_product_attention (the scale split over q and k^T). T = 8, D = 2; q
// comes from a parameter, so that autograd records the attention.
const char* kGqa = R"(
opset 17
input x float32 batch,4,8,2
input k float32 batch,2,8,2
input v float32 batch,2,8,2
param gain float32 1
const s float32 - = 0.8409
const axis int64 1 = 2
const wide int64 5 = 1,2,2,8,2
const heads int64 4 = -1,4,8,2
node Mul x gain -> q @proj
node Unsqueeze k axis -> k5 @attn
node Expand k5 wide -> k5r @attn
node Reshape k5r heads -> kr @attn
node Unsqueeze v axis -> v5 @attn
node Expand v5 wide -> v5r @attn
node Reshape v5r heads -> vr @attn
node Mul q s -> qs @attn
node Transpose kr -> kt perm=0,1,3,2 @attn
node Mul kt s -> kts @attn
node MatMul qs kts -> scores @attn
node Softmax scores -> p axis=-1 @attn
node MatMul p vr -> o @attn
output o
)";

Analysis analyze_gqa(Amp amp) {
  AnalysisOptions o;
  o.train.loss = Loss::Sum;
  o.train.amp = amp;
  return analyze(read_text_graph(kGqa), o);
}

// Bytes of the first forward's allocations made by the attention node, in order.
std::vector<int64_t> attention_allocs(const Analysis& a, int64_t batch) {
  const Estimate e = estimate(a, batch);
  std::vector<int64_t> out;
  for (const Event& ev : a.program.events) {
    const Block& b = a.program.blocks[ev.block];
    if (ev.kind != Event::Alloc || ev.iter != 0 || ev.phase != Phase::Forward || b.node < 0) continue;
    if (a.graph.nodes[b.node].op == "Attention") out.push_back(b.bytes.eval(e.bindings));
  }
  return out;
}

}  // namespace

TEST_CASE("attention: repeat_kv of k and v is folded into the kernel, which takes them grouped") {
  Analysis a = analyze_gqa(Amp::None);
  const Node* att = nullptr;
  int live = 0;
  for (const Node& n : a.graph.nodes) {
    if (n.dead || n.op == "SumLoss" || n.module == "proj") continue;
    ++live;
    if (n.op == "Attention") att = &n;
  }
  REQUIRE(att != nullptr);
  CHECK(live == 1);  // no Unsqueeze, Expand or Reshape left
  CHECK(att->attr_int("gqa", 0) == 1);
  CHECK(a.graph.tensors[att->inputs[1]].name == "k");
  CHECK(a.graph.tensors[att->inputs[2]].name == "v");
}

TEST_CASE("attention: torch.repeat_interleave, spelled the same, keeps its copies (the dynamo export names it)") {
  // The rows of a random transformer's k.repeat_interleave(2, dim=1): the dynamo exporter
  // writes the same Unsqueeze, Expand, Reshape, each naming its aten call. Those copies are
  // what scaled_dot_product_attention keeps (traces28 rnd18_66).
  Graph g = read_text_graph(kGqa);
  g.calls.push_back("aten.repeat_interleave.self_int");
  for (Node& n : g.nodes) {
    if (n.op == "Unsqueeze" || n.op == "Expand" || n.op == "Reshape") n.call = static_cast<int>(g.calls.size()) - 1;
  }
  AnalysisOptions o;
  o.train.loss = Loss::Sum;
  Analysis a = analyze(std::move(g), o);
  const Node* att = nullptr;
  for (const Node& n : a.graph.nodes) {
    if (!n.dead && n.op == "Attention") att = &n;
  }
  REQUIRE(att != nullptr);
  CHECK(att->attr_int("gqa", 0) == 0);
  CHECK(a.graph.tensors[att->inputs[1]].name == "kr");
  CHECK(a.graph.tensors[att->inputs[2]].name == "vr");
}

TEST_CASE("attention: grouped k and v in fp32 run the math backend, which keeps the T x T softmax") {
  // Batch 2, fp32: the output [2, 4, 8, 2] is 512 B; then what backward keeps:
  // q * sqrt(scale) 512 B, k repeated and scaled 512 B, the softmax [2, 4, 8, 8] 2048 B,
  // v repeated 512 B.
  CHECK(attention_allocs(analyze_gqa(Amp::None), 2) == std::vector<int64_t>{512, 512, 512, 2048, 512});
}

TEST_CASE("attention: the math backend with dropout also keeps the dropped softmax and its mask") {
  // The dynamo exporter drops scaled_dot_product_attention's dropout_p from the graph; the
  // reader puts the FX call's value on the softmax (sdpa_dropout_p). Batch 2, fp32: as
  // above, then the dropped softmax [2, 4, 8, 8] fp32 (2048 B) and the bool mask (512 B).
  std::string text = kGqa;
  const std::string sm = "node Softmax scores -> p axis=-1 @attn";
  text.replace(text.find(sm), sm.size(), sm + " sdpa_dropout_p=0.1");
  AnalysisOptions o;
  o.train.loss = Loss::Sum;
  const Analysis a = analyze(read_text_graph(text), o);
  CHECK(attention_allocs(a, 2) == std::vector<int64_t>{512, 512, 512, 2048, 512, 2048, 512});
}

TEST_CASE("attention: grouped k and v in half run the fused kernel on the unrepeated k and v") {
  // Batch 2 under fp16 autocast: half copies of q (256 B) and of the 2-head k and v
  // (128 B each, not repeated), the output (256 B), logsumexp [2, 4, 8] fp32 (256 B).
  CHECK(attention_allocs(analyze_gqa(Amp::FP16), 2) == std::vector<int64_t>{256, 128, 128, 256, 256});
}

TEST_CASE("attention memest cannot match is estimated as written, and the report says --attention changes nothing") {
  // torch 1.13's nn.MultiheadAttention exports bmm/softmax/bmm with reshapes memest does not
  // take for one scaled_dot_product_attention: --attention eager changed nothing and said
  // nothing (issue 23, finding 7). A lone Softmax stands for such a graph.
  const char* text = R"(
opset 17
input x float32 batch,4,8,8
node Softmax x -> y axis=-1
output y
)";
  AnalysisOptions o;
  o.train.loss = Loss::Sum;
  const Analysis fused = analyze(read_text_graph(text), o);
  bool said = false;
  for (const std::string& w : fused.graph.warnings) said |= w.find("--attention changes nothing") != std::string::npos;
  CHECK(said);
  o.train.attention = Attention::Eager;
  const Analysis eager = analyze(read_text_graph(text), o);
  CHECK(estimate(eager, 2).peak.peak_bytes == estimate(fused, 2).peak.peak_bytes);
}

TEST_CASE("attention: one-head k and v broadcast to q's heads run the math backend, in fp32 under autocast") {
  // Falcon's multi-query attention calls F.scaled_dot_product_attention with k and v of
  // one head and no enable_gqa: flash and the memory-efficient kernel need equal heads,
  // so the math backend runs whatever the dtype (falcon fp32 -4.1% -> 0.0%), and it upcasts
  // half inputs to fp32 (falcon fp16 -3.3% -> +0.1%, traces16). Batch 2 under fp16
  // autocast: the half casts of q [2, 4, 8, 2] (256 B) and of the one-head k and v
  // [2, 1, 8, 2] (64 B each), the output (256 B), then what backward keeps, in fp32: q
  // scaled (512 B), k repeated to 4 heads (512 B), the softmax [2, 4, 8, 8] (2048 B), v
  // repeated (512 B).
  const char* text = R"(
opset 17
input x float32 batch,4,8,2
input k float32 batch,1,8,2
input v float32 batch,1,8,2
param gain float32 1
const s float32 - = 0.8409
node Mul x gain -> q @proj
node Mul q s -> qs @attn
node Transpose k -> kt perm=0,1,3,2 @attn
node Mul kt s -> kts @attn
node MatMul qs kts -> scores @attn
node Softmax scores -> p axis=-1 @attn
node MatMul p v -> o @attn
output o
)";
  AnalysisOptions o;
  o.train.loss = Loss::Sum;
  o.train.amp = Amp::FP16;
  const Analysis a = analyze(read_text_graph(text), o);
  const Node* att = nullptr;
  for (const Node& n : a.graph.nodes) {
    if (!n.dead && n.op == "Attention") att = &n;
  }
  REQUIRE(att != nullptr);
  CHECK(att->attr_int("broadcast_heads", 0) == 1);
  CHECK(attention_allocs(a, 2) == std::vector<int64_t>{256, 64, 64, 256, 512, 512, 2048, 512});
}

// An additive bias looked up from a parameter by an index buffer on its inner axis
// (`biases[:, idxs]`, TinyViT), as the dynamo exporter spells aten.index.Tensor:
// Transpose, GatherND, Transpose. As an ONNX Transpose the bias's last axis is strided,
// which sends scaled_dot_product_attention to the math backend; but aten's index returns
// its result contiguous, so the call the exporter names keeps the fused kernel
// (blind12's st_tiny_vit dynamo exports: +4.5% to +11.7% on math, -0.3% to +0.3% fused).
TEST_CASE("attention: a bias from aten.index.Tensor's Transpose, GatherND, Transpose is contiguous") {
  const char* text = R"(
opset 17
input x float32 batch,2,4,8
param gain float32 1
param biases float32 2,7
const idx int64 4,4,1 = 0,1,2,3,1,0,1,2,2,1,0,1,3,2,1,0
const s float32 - = 0.5946
node Mul x gain -> q @attn
node Transpose biases -> bt perm=1,0 @attn
node GatherND bt idx -> gathered @attn
node Transpose gathered -> bias perm=2,0,1 @attn
node Mul q s -> qs @attn
node Transpose q -> kt perm=0,1,3,2 @attn
node Mul kt s -> kts @attn
node MatMul qs kts -> scores @attn
node Add scores bias -> biased @attn
node Softmax biased -> p axis=-1 @attn
node MatMul p q -> o @attn
output o
)";
  auto allocs = [&](bool index_call) {
    Graph g = read_text_graph(text);
    if (index_call) {
      g.calls = {"aten.index.Tensor"};
      for (Node& n : g.nodes) {
        if (n.op == "Transpose" || n.op == "GatherND") n.call = n.outputs[0] == g.find_tensor("bt") ? -1 : 0;
      }
    }
    AnalysisOptions o;
    o.train.loss = Loss::Sum;
    return attention_allocs(analyze(std::move(g), o), 2);
  };
  // Fused: the output [2, 2, 4, 8] fp32 = 512 B and logsumexp [2, 2, 4] fp32 = 64 B.
  CHECK(allocs(true) == std::vector<int64_t>{512, 64});
  // Without the call the strided bias sends it to math: the output, then what math keeps,
  // q * sqrt(scale) and k (512 B each, fp32), the softmax [2, 2, 4, 4] (256 B) and v (512 B).
  CHECK(allocs(false) == std::vector<int64_t>{512, 512, 512, 256, 512});
}

// A mask scaled_dot_product_attention sees is kept to backward by the fused kernels
// (sdpa-mask-lifetime-h200-torch2.11.jsonl.xz: in all 268 configurations a mask the caller
// dropped stayed allocated after forward). Masks the exporter traced but no run sees
// (transformers' all-ones and causal masks, made from shapes and constants) stay out; a
// bias that carries data plus such a mask is the bias alone at run time.
TEST_CASE("attention: a mask that carries data is kept to backward; a traced constant one is not") {
  auto graph = [](const std::string& mask_nodes) {
    return std::string(R"(
opset 17
input x float32 batch,2,4,8
input tok int64 batch,1,1,4
param gain float32 1
param rel float32 1,2,4,4
const s float32 - = 0.5946
const zero int64 - = 0
const ninf float32 - = -1000000000
const traced float32 1,1,4,4 = 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0
node Mul x gain -> q @attn
node Mul rel gain -> bias @maskmod
)") + mask_nodes + R"(
node Mul q s -> qs @attn
node Transpose q -> kt perm=0,1,3,2 @attn
node Mul kt s -> kts @attn
node MatMul qs kts -> scores @attn
node Add scores mask -> biased @attn
node Softmax biased -> p axis=-1 @attn
node MatMul p q -> o @attn
output o
)";
  };
  // The phase in which iteration 0 frees the block node `module`/`op` allocated in its forward.
  auto freed_in = [](const Analysis& a, const char* module, const char* op) {
    std::vector<int> mine;
    for (size_t b = 0; b < a.program.blocks.size(); ++b) {
      const int k = a.program.blocks[b].node;
      if (k >= 0 && a.graph.nodes[k].module == module && a.graph.nodes[k].op == op) mine.push_back(static_cast<int>(b));
    }
    for (const Event& ev : a.program.events) {
      if (ev.kind == Event::Free && ev.iter == 0 && std::find(mine.begin(), mine.end(), ev.block) != mine.end()) {
        return ev.phase;
      }
    }
    return Phase::Setup;
  };
  auto attention = [](const Analysis& a) -> const Node& {
    for (const Node& n : a.graph.nodes) {
      if (!n.dead && n.op == "Attention") return n;
    }
    FAIL("no Attention");
    return a.graph.nodes[0];
  };
  AnalysisOptions o;
  o.train.loss = Loss::Sum;
  SUBCASE("a padding mask from the tokens over a bias from a parameter (rnd20_127's layers)") {
    Analysis a = analyze(read_text_graph(graph("node Equal tok zero -> pad @maskmod\n"
                                               "node Where pad ninf bias -> mask @maskmod")), o);
    const Node& att = attention(a);
    CHECK(att.attr_int("mask_kept", 0) == 1);
    CHECK(a.graph.tensors[att.inputs[3]].name == "mask");
    CHECK(freed_in(a, "maskmod", "Where") == Phase::Backward);
  }
  SUBCASE("a bias plus a constant mask: the bias alone is what the run keeps") {
    Analysis a = analyze(read_text_graph(graph("node Add bias traced -> mask @maskmod")), o);
    const Node& att = attention(a);
    CHECK(att.attr_int("mask_kept", 0) == 1);
    CHECK(a.graph.tensors[att.inputs[3]].name == "bias");
    CHECK(freed_in(a, "maskmod", "Mul") == Phase::Backward);
  }
  SUBCASE("a mask from constants and shapes alone: traced, dropped at run time") {
    Analysis a = analyze(read_text_graph(graph("node Shape tok -> tshape @maskmod\n"
                                               "node ConstantOfShape tshape -> tz @maskmod\n"
                                               "node Cast tz -> tf to=1 @maskmod\n"
                                               "node Add tf traced -> mask @maskmod")), o);
    const Node& att = attention(a);
    CHECK(att.attr_int("mask_kept", 0) == 0);
    CHECK(freed_in(a, "maskmod", "Add") == Phase::Forward);
  }
}
