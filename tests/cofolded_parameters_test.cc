// cofolded_parameters.h: parameters the exporter folded together into one value, the one
// the value does not stand for put back at the size a sibling module shows.
#include <doctest/doctest.h>

#include <string>

#include "frontends/cofolded_parameters.h"
#include "frontends/text_reader.h"
#include "tests/dynamo_test_util.h"

using namespace memest;
using namespace memest::testing;

namespace {

// timm's ScaledStdConv2d twice: in s the exporter folded the gain alone (`view_1`, 8
// elements, the BatchNorm's scale of the weight's standardization) and kept the weight
// [8, 4, 3, 3]; in m it folded the whole standardized weight, gain and weight, into
// `view_8` [6, 4, 1, 1]. `sibling` false leaves s out.
Graph cofolded_graph(bool sibling, ParameterReads& reads) {
  std::string text = R"(
opset 18
input x float32 batch,4,8,8
param view_8 float32 6,4,1,1
node Conv x view_8 -> y @m
)";
  if (sibling) {
    text += R"(param s.weight float32 8,4,3,3
param view_1 float32 8
node Mul s.weight view_1 -> w @s
node Conv x w -> z @s
output z
)";
  }
  text += "output y\n";
  Graph g = read_text_graph(text);
  g.relink();
  reads.folded_from[g.find_tensor("view_8")] = {"m.gain", "m.weight", "val_7"};
  if (sibling) reads.folded_from[g.find_tensor("view_1")] = {"mul", "s.gain", "val_6"};
  return g;
}

}  // namespace

TEST_CASE("cofolded parameters: a gain folded with its weight is put back at the size its sibling shows") {
  ParameterReads reads;
  Graph g = cofolded_graph(true, reads);
  const std::vector<std::string_view> params = {"s.weight", "s.gain", "m.weight", "m.gain"};
  // Before: s.weight 288 + view_1 8 + view_8 24 elements, m.gain in no tensor.
  CHECK(parameter_bytes(g) == (288 + 8 + 24) * 4);
  CHECK(restore_cofolded_parameters(g, params, reads) == 1);
  // s's gain has as many elements as dimension 0 of its weight, so m's has 6 (view_8's
  // dimension 0): 288 + 8 + 24 + 6 = 326 elements, 1,304 bytes, torch's count.
  CHECK(parameter_bytes(g) == 1304);
  const int gain = g.find_tensor("m.gain");
  REQUIRE(gain >= 0);
  CHECK(g.tensors[gain].module == "m");
  CHECK(g.tensors[gain].shape->size() == 4);
  CHECK(g.tensors[gain].shape->at(0).as_const() == 6);
  // The Conv reads the weight scaled by the gain, made just before it.
  const Node& mul = g.nodes[0];
  CHECK(mul.op == "Mul");
  CHECK(mul.inputs[0] == g.find_tensor("view_8"));
  CHECK(mul.inputs[1] == gain);
  CHECK(g.nodes[1].inputs[1] == mul.outputs[0]);
}

TEST_CASE("cofolded parameters: without a sibling to say the size, nothing is put back") {
  ParameterReads reads;
  Graph g = cofolded_graph(false, reads);
  const std::vector<std::string_view> params = {"m.weight", "m.gain"};
  CHECK(restore_cofolded_parameters(g, params, reads) == 0);
  CHECK(parameter_bytes(g) == 24 * 4);
  CHECK(g.nodes.size() == 1);
}
