// The branch-copies pass (estimator/branch_copies.h): an op the exporter merged across
// sibling branches gets back one copy per branch.
#include <doctest/doctest.h>

#include "estimator/analysis.h"
#include "estimator/branch_copies.h"
#include "frontends/text_reader.h"
#include "ops_test_util.h"
#include "simulate_test_util.h"

using namespace memest;

namespace {

// A NASNet cell as the exporters write it: the branches c.a, c.b and c.d each open with
// their own `act_1 = nn.ReLU()` on the cell's input x, merged into c.a's; c.b reads it
// twice (two convolutions: one copy serves both). c's own Add reads no first op.
const char* kCell = R"(
opset 17
input x float32 batch,4,8,8
param c.a.s.weight float32 4,4,1,1
param c.b.s.weight float32 4,4,1,1
param c.b.t.weight float32 4,4,1,1
param c.d.s.weight float32 4,4,1,1
node Relu x -> r @c.a.act_1
node Conv r c.a.s.weight -> ya @c.a.s
node Conv r c.b.s.weight -> yb @c.b.s
node Conv r c.b.t.weight -> yt @c.b.t
node Conv r c.d.s.weight -> yd @c.d.s
node Add ya yb -> s1 @c
node Add yt yd -> s2 @c
node Add s1 s2 -> y @c
output y
)";

}  // namespace

TEST_CASE("branch copies: each sibling branch that read a merged first op gets its own copy") {
  Graph g = read_text_graph(kCell);
  CHECK(restore_branch_copies(g) == 2);
  verify_and_sort(g);
  const Node& a = testing::producer(g, "ya");
  const Node& b = testing::producer(g, "yb");
  const Node& t = testing::producer(g, "yt");
  const Node& d = testing::producer(g, "yd");
  CHECK(a.inputs[0] == g.find_tensor("r"));  // the owner keeps the original
  CHECK(b.inputs[0] == t.inputs[0]);          // one copy per branch
  CHECK(b.inputs[0] != a.inputs[0]);
  CHECK(d.inputs[0] != a.inputs[0]);
  CHECK(d.inputs[0] != b.inputs[0]);
  const Node& rb = g.nodes[g.tensors[b.inputs[0]].producer];
  const Node& rd = g.nodes[g.tensors[d.inputs[0]].producer];
  CHECK(rb.op == "Relu");
  CHECK(rb.module == "c.b.act_1");
  CHECK(rd.module == "c.d.act_1");
  CHECK(rb.inputs[0] == g.find_tensor("x"));
}

TEST_CASE("branch copies: each copy is an output the forward allocates and the ReLU keeps") {
  TrainConfig cfg;
  cfg.loss = Loss::Sum;
  const Analysis a = analyze(read_text_graph(kCell), AnalysisOptions{.train = cfg});
  const Estimate e = estimate(a, 2);
  // Three ReLU outputs of [2, 4, 8, 8] fp32 = 2,048 B each, where the file has one.
  const std::vector<int64_t> relus =
      testing::allocated_bytes(a, e, Phase::Forward, [](const Node& n, const Block&) { return n.op == "Relu"; });
  CHECK(relus == std::vector<int64_t>{2048, 2048, 2048});
}

TEST_CASE("branch copies: a module's output, an op that is not its module's first, and a lone reader are left alone") {
  // r is p's last op (what p returns): readers outside p read it in PyTorch too. q.act
  // reads q.s's output (not q's first op). u.act's output is read inside u only.
  Graph g = read_text_graph(R"(
opset 17
input x float32 batch,4,8,8
param p.s.weight float32 4,4,1,1
param q.s.weight float32 4,4,1,1
param q.t.weight float32 4,4,1,1
param o.s.weight float32 4,4,1,1
param u.s.weight float32 4,4,1,1
node Conv x p.s.weight -> ps @p.s
node Relu ps -> r @p.act
node Conv r q.s.weight -> qs @q.s
node Relu qs -> qr @q.act
node Conv qr q.t.weight -> qt @q.t
node Conv r o.s.weight -> os @o.s
node Add qt qr -> w @w
node Relu w -> ur @u.act
node Conv ur u.s.weight -> us @u.s
node Add us os -> y
output y
)");
  CHECK(restore_branch_copies(g) == 0);
}

TEST_CASE("branch copies: a reader in the same module spelled otherwise reads the op itself") {
  // A legacy scope ("m.dec.layers.0") beside the path the parameters' names gave
  // ("m.m.dec.layers.0", frontends/scope_repair.h): BlenderBot-small's decoder layer,
  // whose self_attn_layer_norm reads the layer's residual Add and is read by its fc1.
  Graph g = read_text_graph(R"(
opset 17
input x float32 batch,8
param m.m.dec.layers.0.ln.weight float32 8
param m.m.dec.layers.0.ln.bias float32 8
param m.m.dec.layers.0.q.weight float32 8,8
param m.m.dec.layers.0.fc1.weight float32 8,8
node Add x x -> h @m.dec.layers.0
node LayerNormalization h m.m.dec.layers.0.ln.weight m.m.dec.layers.0.ln.bias -> n @m.m.dec.layers.0.ln
node MatMul n m.m.dec.layers.0.q.weight -> q @m.m.dec.layers.0.q
node MatMul n m.m.dec.layers.0.fc1.weight -> f @m.dec.layers.0.fc1
node Add q f -> y @m.dec.layers.0
output y
)");
  CHECK(restore_branch_copies(g) == 0);
}
