// parameter_images.h: values the exporter folded from one parameter, each an image of it,
// read as one tensor of the parameter's size.
#include <doctest/doctest.h>

#include <string>

#include "frontends/merged_initializers.h"
#include "frontends/parameter_images.h"
#include "frontends/text_reader.h"
#include "tests/dynamo_test_util.h"

using namespace memest;
using namespace memest::testing;

namespace {

// ConViT's gated attention in two blocks: sigmoid(gating_param) and 1 - sigmoid(gating_param)
// ([1, 4, 1, 1] each) scale the positional and the content attention. The optimizer
// folded both, equal in every fresh block, into `sigmoid_1` and `sub_20`, each read in
// blocks.0 and blocks.1, folded_from blocks.0's gating_param (listed, in no tensor).
Graph gated_graph(ParameterReads& reads, const std::string& second = "sub_20",
                  const std::string& second_dims = "1,4,1,1") {
  Graph g = read_text_graph(R"(
opset 18
input pos float32 batch,4,8,8
input content float32 batch,4,8,8
param sigmoid_1 float32 1,4,1,1
param )" + second + " float32 " + second_dims + R"(
node Mul pos sigmoid_1 -> a0 @blocks.0.attn
node Mul content )" + second + R"( -> b0 @blocks.0.attn
node Add a0 b0 -> h @blocks.0.attn
node Mul h sigmoid_1 -> a1 @blocks.1.attn
node Mul content )" + second + R"( -> b1 @blocks.1.attn
node Add a1 b1 -> y @blocks.1.attn
output y
)");
  g.relink();
  reads.folded_from[g.find_tensor("sigmoid_1")] = {"blocks.0.attn.gating_param", "val_33", "view_2"};
  reads.folded_from[g.find_tensor(second)] = {"blocks.0.attn.gating_param", "sigmoid", "val_38", "view_2"};
  return g;
}

const std::vector<std::string_view> kParams = {"blocks.0.attn.gating_param", "blocks.1.attn.gating_param"};

}  // namespace

TEST_CASE("parameter images: two images of one parameter are read as one") {
  ParameterReads reads;
  Graph g = gated_graph(reads);
  // Before: two tensors of 4 elements, 32 bytes, where blocks.0's gating_param is 16.
  CHECK(parameter_bytes(g) == 32);
  CHECK(merge_parameter_images(g, kParams, {}, reads) == 1);
  CHECK(parameter_bytes(g) == 16);
  CHECK(g.tensors[g.find_tensor("sub_20")].consumers.empty());
  CHECK(g.tensors[g.find_tensor("sigmoid_1")].consumers.size() == 4);
  // Split per module, each block has its own: 2 x 4 elements x 4 bytes, torch's 32.
  split_deduplicated_initializers(g, reads, kParams);
  CHECK(parameter_bytes(g) == 32);
}

TEST_CASE("parameter images: parts of a parameter, or values of other shapes, stay apart") {
  SUBCASE("a slice is a part, not an image") {
    // qkv_bias[:4] and qkv_bias[4:]: two halves of one parameter, 8 elements in torch.
    ParameterReads reads;
    Graph g = gated_graph(reads, "slice_3");
    reads.folded_from[g.find_tensor("sigmoid_1")] = {"blocks.0.attn.gating_param", "slice_2"};
    CHECK(merge_parameter_images(g, kParams, {}, reads) == 0);
    CHECK(parameter_bytes(g) == 32);
  }
  SUBCASE("another shape") {
    ParameterReads reads;
    Graph g = gated_graph(reads, "sub_20", "4,1,1");
    CHECK(merge_parameter_images(g, kParams, {}, reads) == 0);
    CHECK(parameter_bytes(g) == 32);
  }
  SUBCASE("folded with a buffer") {
    ParameterReads reads;
    Graph g = gated_graph(reads);
    reads.folded_from[g.find_tensor("sub_20")].push_back("blocks.0.attn.rel_indices");
    const std::vector<std::string_view> buffers = {"blocks.0.attn.rel_indices"};
    CHECK(merge_parameter_images(g, kParams, buffers, reads) == 0);
  }
  SUBCASE("the parameter has a tensor of its own") {
    ParameterReads reads;
    Graph g = gated_graph(reads);
    reads.folded_from[g.find_tensor("sub_20")] = {"blocks.0.attn.v.weight", "sigmoid"};
    reads.folded_from[g.find_tensor("sigmoid_1")] = {"blocks.0.attn.v.weight"};
    const std::vector<std::string_view> params = {"blocks.0.attn.v.weight"};
    g.new_tensor("blocks.0.attn.v.weight");
    CHECK(merge_parameter_images(g, params, {}, reads) == 0);
  }
}
