// The legacy exporter's tensor_split loop back into Slices (estimator/sequence_split.cc).
#include <doctest/doctest.h>

#include "estimator/analysis.h"
#include "estimator/sequence_split.h"
#include "frontends/text_reader.h"

using namespace memest;

namespace {

// symbolic_opset11.tensor_split for `a, b = torch.tensor_split(x, (3,), dim=2)` on
// x [batch, 4, 10, 8] (torchvision's MViT pools its class token off this way).
const char* kSplit = R"(
opset 17
input x float32 batch,4,10,8
const zero int64 1 = 0
const idx int64 1 = 3
const axes int64 1 = 2
const last int64 - = -1
const trip int64 1 = 1
const cond int64 - = 1
const k0 int64 - = 0
const k1 int64 - = 1
node Concat zero idx -> c axis=0
node SequenceEmpty -> s0
node Loop trip cond s0 -> pieces
node Gather c last -> lastp axis=0
node Unsqueeze lastp zero -> start
node Shape x -> xs
node Gather xs axes -> end axis=0
node Slice x start end axes -> tail
node SequenceInsert pieces tail -> all
node SequenceAt all k0 -> a
node SequenceAt all k1 -> b
node Relu a -> ya
node Relu b -> yb
output ya
output yb
)";

}  // namespace

TEST_CASE("sequence split: tensor_split's Loop becomes the Slices it makes") {
  Graph g = read_text_graph(kSplit);
  CHECK(split_sequence_loops(g) == 2);
  const Node& a = g.nodes[g.tensors[g.find_tensor("a")].producer];
  const Node& b = g.nodes[g.tensors[g.find_tensor("b")].producer];
  CHECK(a.op == "Slice");
  CHECK(b.op == "Identity");  // the last piece is the Slice the exporter wrote
  for (const Node& n : g.nodes) {
    if (n.op == "Loop" || n.op == "SequenceInsert" || n.op == "SequenceEmpty") CHECK(n.dead);
  }
}

TEST_CASE("sequence split: the pieces get their shapes, nothing rests on a fallback") {
  AnalysisOptions o;
  o.train.loss = Loss::Sum;
  const Analysis an = analyze(read_text_graph(kSplit), o);
  CHECK(an.unsupported.empty());
  CHECK(an.fallback_bytes.is_zero());
  const Expr batch = Expr::symbol("batch");
  CHECK(*an.graph.tensors[an.graph.find_tensor("a")].shape == Shape{batch, Expr(4), Expr(3), Expr(8)});
  CHECK(*an.graph.tensors[an.graph.find_tensor("b")].shape == Shape{batch, Expr(4), Expr(7), Expr(8)});
}
