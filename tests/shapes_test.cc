// The shape pass driver's ordering: a file already in topological order keeps it.
#include <doctest/doctest.h>

#include "estimator/error.h"
#include "estimator/shapes.h"
#include "frontends/text_reader.h"

using namespace memest;

TEST_CASE("a graph in topological order keeps the file's order, branches included") {
  // x feeds the main path (a, b) and, later in the file, a second branch (c), as a
  // ResNet block's downsample follows its main path. Breadth-first order would put c
  // before b; PyTorch ran b first, and autograd differentiates c first for it.
  Graph g = read_text_graph(R"(
opset 17
input x float32 batch,8
node Relu x -> a @main.0
node Relu a -> b @main.1
node Relu x -> c @downsample
node Add b c -> d @add
output d
)");
  verify_and_sort(g);
  REQUIRE(g.nodes.size() == 4);
  CHECK(g.nodes[0].module == "main.0");
  CHECK(g.nodes[1].module == "main.1");
  CHECK(g.nodes[2].module == "downsample");
  CHECK(g.nodes[3].module == "add");
}

TEST_CASE("a graph out of order is sorted, earliest-in-file first among ready nodes") {
  Graph g = read_text_graph(R"(
opset 17
input x float32 batch,8
node Add b c -> d @add
node Relu a -> b @main.1
node Relu x -> c @downsample
node Relu x -> a @main.0
output d
)");
  verify_and_sort(g);
  REQUIRE(g.nodes.size() == 4);
  CHECK(g.nodes[0].module == "downsample");  // ready at the start, before main.0 in the file
  CHECK(g.nodes[1].module == "main.0");
  CHECK(g.nodes[2].module == "main.1");
  CHECK(g.nodes[3].module == "add");
}

TEST_CASE("a rule that rejects a shape a fallback assumed falls back too; one that rejects the file's throws") {
  // An op memest has no entry for (here a made-up one) gets its first input's shape, a
  // rank-1 [4]; the Transpose after it asks for rank 3 and rejects the guess. That is the
  // guess's fault: the Transpose falls back and the rest goes on (blind29's sv_mvit_v2_s,
  // legacy: a Loop's trip count reached a Transpose). The same Transpose on an input the
  // file shapes is an error in the file.
  Graph g = read_text_graph(R"(
opset 17
input x float32 batch,8,16
input n int64 4
node NoSuchOp n x -> y
node Transpose y -> t perm=[0,2,1]
node Relu t -> r
output r
)");
  verify_and_sort(g);
  const std::vector<int> fell_back = infer_shapes(g);
  CHECK(fell_back.size() == 2);  // y, then t
  CHECK(g.tensors[g.find_tensor("r")].shape);
  Graph bad = read_text_graph(R"(
opset 17
input n int64 4
node Transpose n -> t perm=[0,2,1]
output t
)");
  verify_and_sort(bad);
  CHECK_THROWS_AS(infer_shapes(bad), Error);
}
