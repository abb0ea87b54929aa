// LoRA adapters added by memest (estimator/lora.h) to a graph exported without peft:
// a two-layer model whose bytes are derived by hand below.
#include <doctest/doctest.h>

#include <algorithm>

#include "estimator/analysis.h"
#include "estimator/lora.h"
#include "frontends/text_reader.h"

using namespace memest;

namespace {

// x [B, 64] -> q (Linear 64->32, the exporters' [in, out] weight) -> ReLU -> head (32->10).
const char* kTwo = R"(
opset 17
input x float32 batch,64
param q.weight float32 64,32
param head.weight float32 32,10
node MatMul x q.weight -> h :q/MatMul @q
node Relu h -> r :act @act
node MatMul r head.weight -> out :head/MatMul @head
output out
)";

int node_named(const Graph& g, const std::string& name) {
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (g.nodes[k].name == name) return static_cast<int>(k);
  }
  return -1;
}

std::vector<int64_t> saved_bytes(const Analysis& a, const std::string& node, int64_t batch) {
  const Bindings b = bind_dims(a, batch);
  std::vector<int64_t> out;
  for (int blk : a.program.saved_by_node[node_named(a.graph, node)]) out.push_back(a.program.blocks[blk].bytes.eval(b));
  return out;
}

}  // namespace

TEST_CASE("with_lora wraps the target Linear layers only, with peft's names and shapes") {
  const Graph g = read_text_graph(kTwo);
  int wrapped = -1;
  LoraSpec spec;
  spec.targets = {"q"};
  const Graph l = with_lora(g, spec, &wrapped);
  CHECK(wrapped == 1);
  const int a = l.find_tensor("q.lora_A.default.weight");
  const int b = l.find_tensor("q.lora_B.default.weight");
  REQUIRE(a >= 0);
  REQUIRE(b >= 0);
  CHECK(l.tensors[a].kind == TensorKind::Parameter);
  CHECK(l.tensors[a].shape->at(0).as_const() == 64);  // [in, r]
  CHECK(l.tensors[a].shape->at(1).as_const() == 8);
  CHECK(l.tensors[b].shape->at(1).as_const() == 32);  // [r, out]
  // The adapter runs right after the Linear it wraps, before the ReLU reads the sum.
  CHECK(node_named(l, "q/MatMul/lora_add") < node_named(l, "act"));
  CHECK(l.tensors[l.nodes[node_named(l, "act")].inputs[0]].producer == node_named(l, "q/MatMul/lora_add"));

  spec.targets = {"v_proj"};
  const Graph same = with_lora(g, spec, &wrapped);
  CHECK(wrapped == 0);
  CHECK(same.nodes.size() == g.nodes.size());
}

TEST_CASE("LoRA r=8 on q, adapters alone training: their gradients, Adam state and saved tensors") {
  LoraSpec spec;
  spec.targets = {"q"};
  AnalysisOptions o;
  o.train.optim = Optim::Adam;
  o.train.train = {kLoraTrainPattern};
  const Analysis a = analyze(with_lora(read_text_graph(kTwo), spec, nullptr), o);
  // A [64, 8] and B [8, 32] float32 train; q and head stay frozen.
  CHECK(a.accounting.trainable_bytes == (64 * 8 + 8 * 32) * 4);
  CHECK(a.accounting.parameter_bytes == (64 * 32 + 32 * 10 + 64 * 8 + 8 * 32) * 4);
  const int64_t B = 16;
  // A's gradient needs x [B, 64]; B's needs x A [B, 8], and x A's gradient (for A) needs
  // B itself (a parameter, [8, 32]); the frozen q keeps nothing (x needs no gradient);
  // the scaling by a constant keeps nothing.
  CHECK(saved_bytes(a, "q/MatMul/lora_A", B) == std::vector<int64_t>{B * 64 * 4});
  std::vector<int64_t> by_b = saved_bytes(a, "q/MatMul/lora_B", B);
  std::sort(by_b.begin(), by_b.end());
  CHECK(by_b == std::vector<int64_t>{B * 8 * 4, 8 * 32 * 4});  // 512, 1024 at B = 16
  CHECK(saved_bytes(a, "q/MatMul", B).empty());
  CHECK(saved_bytes(a, "q/MatMul/lora_scaling", B).empty());
  // The ReLU after it keeps its output for backward (h needs a gradient, for A and B);
  // head's weight is frozen and r needs a gradient: head keeps its weight only.
  CHECK(saved_bytes(a, "act", B) == std::vector<int64_t>{B * 32 * 4});
  CHECK(saved_bytes(a, "head/MatMul", B) == std::vector<int64_t>{32 * 10 * 4});
}

TEST_CASE("with_lora reads the weight through the legacy exporter's Transpose ([out, in] stored)") {
  const Graph g = read_text_graph(R"(
opset 17
input x float32 batch,64
param enc.value.weight float32 32,64
node Transpose enc.value.weight -> wt perm=1,0 @enc.value
node MatMul x wt -> out @enc.value
output out
)");
  int wrapped = 0;
  const Graph l = with_lora(g, LoraSpec{}, &wrapped);  // peft's defaults include `value`
  CHECK(wrapped == 1);
  const int a = l.find_tensor("enc.value.lora_A.default.weight");
  const int b = l.find_tensor("enc.value.lora_B.default.weight");
  REQUIRE(a >= 0);
  REQUIRE(b >= 0);
  CHECK(l.tensors[a].shape->at(0).as_const() == 64);  // in
  CHECK(l.tensors[b].shape->at(1).as_const() == 32);  // out
  // lora_A is a module of its own, as in peft: the simulator casts its input as peft does.
  CHECK(l.nodes[l.tensors[l.find_tensor("enc.value.lora_A.out")].producer].module == "enc.value.lora_A.default");
}
