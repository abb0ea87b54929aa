// unread_parameters.h: the parameters a dynamo export lists of modules the forward never
// ran, which the file holds in no form (a vision tower beside a forward on token ids).
#include <doctest/doctest.h>

#include <string>

#include "frontends/text_reader.h"
#include "frontends/unread_parameters.h"

using namespace memest;

namespace {

// A language model whose embedding is read by name, whose head reads its weight through
// its FX call only (the exporter renamed the transposed copy `permute`), whose norm's
// weight the optimizer folded into `view_3` (its note names it), and whose tied head
// `lm.tied` runs reading the embedding; beside it a vision tower and a projector
// nothing runs, and a root parameter nothing reads.
Graph lm_graph(ParameterReads& reads) {
  Graph g = read_text_graph(R"(
opset 18
input ids int64 batch,8
param lm.embed.weight float32 100,16
param permute float32 16,100
param view_3 float32 16
node Gather lm.embed.weight ids -> h @lm.embed
node Mul h view_3 -> s @lm.norm
node MatMul s permute -> y @lm.head
node Gather lm.embed.weight ids -> z @lm.tied
output y
output z
)");
  g.relink();
  reads.by_node = {{"lm.embed.weight"}, {}, {"lm.head.weight"}, {"lm.embed.weight"}};
  reads.folded_from[g.find_tensor("view_3")] = {"lm.norm.weight", "val_2"};
  return g;
}

const std::vector<std::string_view> kListed = {
    "lm.embed.weight", "lm.head.weight", "lm.norm.weight", "lm.tied.weight",
    "model.vision_tower.patch.weight", "model.vision_tower.blocks.0.fc.bias", "model.projector.weight", "logit_scale"};

}  // namespace

TEST_CASE("unread parameters: listed, in no tensor, taken by no call, named by no note, of a module that never ran") {
  ParameterReads reads;
  const Graph g = lm_graph(reads);
  const auto unread = unread_parameters(g, kListed, reads);
  // lm.tied.weight is in no tensor and taken by no call, but its module ran (a tied
  // weight read under the embedding's name); logit_scale is the root's own.
  REQUIRE(unread.size() == 3);
  CHECK(unread[0].name == "model.vision_tower.patch.weight");
  CHECK(unread[1].name == "model.vision_tower.blocks.0.fc.bias");
  CHECK(unread[2].name == "model.projector.weight");
  // Each under the outermost module that never ran ("model" did not run either here).
  CHECK(unread[0].module == "model");
  CHECK(unread[2].module == "model");
  const auto modules = unread_modules(unread);
  REQUIRE(modules.size() == 1);
  CHECK(modules[0] == "model (3)");
}

TEST_CASE("unread parameters: named by the outermost module that never ran, the largest group first") {
  Graph g = read_text_graph(R"(
opset 18
input ids int64 batch,8
param model.lm.embed.weight float32 100,16
node Gather model.lm.embed.weight ids -> h @model.lm.embed
output h
)");
  g.relink();
  ParameterReads reads;
  reads.by_node = {{"model.lm.embed.weight"}};
  // model.tied.embed.weight: a module that never ran, but "embed.weight" below it is the
  // tail of a name the file holds (tied to model.lm.embed); model.head.weight: "weight"
  // below the head is every weight's tail, so it goes unsaid.
  const std::vector<std::string_view> listed = {"model.lm.embed.weight", "model.vision.blocks.0.fc.weight",
                                                "model.vision.blocks.1.fc.weight", "model.projector.linear_1.weight",
                                                "model.tied.embed.weight", "model.head.weight"};
  const auto unread = unread_parameters(g, listed, reads);
  REQUIRE(unread.size() == 3);
  CHECK(unread[2].name == "model.projector.linear_1.weight");
  CHECK(unread[0].module == "model.vision");
  CHECK(unread[2].module == "model.projector");
  const auto modules = unread_modules(unread);
  REQUIRE(modules.size() == 2);
  CHECK(modules[0] == "model.vision (2)");
  CHECK(modules[1] == "model.projector (1)");
}

TEST_CASE("unread parameters: the warning names them and the graph keeps the count; none, no warning") {
  ParameterReads reads;
  Graph g = lm_graph(reads);
  CHECK(warn_unread_parameters(g, kListed, reads) == 3);
  CHECK(g.unread_parameters == 3);
  REQUIRE(g.warnings.size() == 1);
  CHECK(g.warnings[0].find("3 parameters of modules the exported forward never ran (model (3))") == 0);

  ParameterReads none;
  Graph h = lm_graph(none);
  const std::vector<std::string_view> read_only = {"lm.embed.weight", "lm.head.weight", "lm.norm.weight", "lm.tied.weight"};
  CHECK(warn_unread_parameters(h, read_only, none) == 0);
  CHECK(h.unread_parameters == 0);
  CHECK(h.warnings.empty());
}
