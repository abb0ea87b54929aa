// Known exporter bugs: a rejected node names the bug that wrote it, and only then.
#include <doctest/doctest.h>

#include <string>

#include "tests/ops_test_util.h"

namespace memest {
namespace {

using testing::infer;

// torch.onnx's TorchScript exporter writes Cohere-2's rotary embedding,
// inv_freq[None, :, None].expand(position_ids.shape[0], -1, 1), as a list of sizes
// (Unsqueeze each, Concat, Reshape to -1), a Where(Equal(size, -1), ones, size), and the
// Expand; `size` stands for the pooled constant the list reads for the model's -1.
std::string rotary_expand(const std::string& size) {
  return R"(
    opset 17
    input ids int64 batch,seq
    const inv float32 1,32,1
    node Constant -> minus_one value=tensor:int64:-:)" + size + R"( :shared_constant
    node Shape ids -> s
    const zero int64 - = 0
    node Gather s zero -> b
    const ax0 int64 1 = 0
    node Unsqueeze b ax0 -> b1
    node Unsqueeze minus_one ax0 -> m1
    const one int64 - = 1
    node Unsqueeze one ax0 -> o1
    node Concat b1 m1 o1 -> list axis=0
    const flat int64 1 = -1
    node Reshape list flat -> size
    node Shape size -> nsize
    node ConstantOfShape nsize -> ones value=tensor:int64:1:1
    const neg int64 - = -1
    node Mul ones neg -> negs
    node Equal size negs -> is_neg
    node Where is_neg ones size -> target
    node Expand inv target -> inv_freq :rotary_expand
  )";
}

// emb = torch.repeat_interleave(freqs, 2, dim=-1) on freqs [batch, seq, 32], after it.
const char* const kRepeatInterleave = R"(
    node Transpose inv_freq -> freqs perm=0,2,1
    node Constant -> ax3 value=tensor:int64:1:3
    node Unsqueeze freqs ax3 -> freqs1 :rotary_unsqueeze
    node Constant -> reps value=tensor:int64:4:1,1,1,2
    node Tile freqs1 reps -> tiled
  )";

TEST_CASE("exporter bugs: the file as the model means it loads") {
  Graph g = infer(rotary_expand("-1") + kRepeatInterleave);
  CHECK(testing::value(g, "target") == "[batch, 1, 1]");
  CHECK(testing::shape(g, "inv_freq") == "[batch, 32, 1]");
  CHECK(testing::shape(g, "tiled") == "[batch, 1, 32, 2]");
}

TEST_CASE("exporter bugs: repeat_interleave(dim=-1) turned the shared -1 into the rank's last axis") {
  CHECK_THROWS_WITH_AS(
      infer(rotary_expand("2") + kRepeatInterleave),
      "<text>: node 'rotary_expand': Expand: cannot broadcast [1, 32, 1] with [batch, 2, 1]; the file's constant "
      "'shared_constant' holds 2 where the model's code has -1: torch.onnx's TorchScript exporter (dynamo=False) "
      "rewrites the -1 it shares when it exports repeat_interleave with a negative dim (here at 'rotary_unsqueeze', "
      "dim 2), so the file contradicts itself; re-export with dynamo=True",
      Error);
}

TEST_CASE("exporter bugs: without the repeat_interleave the error is the rule's alone") {
  CHECK_THROWS_WITH_AS(infer(rotary_expand("2")),
                       "<text>: node 'rotary_expand': Expand: cannot broadcast [1, 32, 1] with [batch, 2, 1]", Error);
  // A repeat_interleave along another axis did not write this 2.
  std::string other_axis = kRepeatInterleave;
  other_axis.replace(other_axis.find("1:3"), 3, "1:2").replace(other_axis.find("1,1,1,2"), 7, "1,1,2,1");
  CHECK_THROWS_WITH_AS(infer(rotary_expand("2") + other_axis),
                       "<text>: node 'rotary_expand': Expand: cannot broadcast [1, 32, 1] with [batch, 2, 1]", Error);
}

}  // namespace
}  // namespace memest
