// exported_parameters.cc: what the optimizer's folded_from notes say of an unlisted
// initializer (keep_exported_parameters, dynamo_repair.h).
#include <doctest/doctest.h>

#include "frontends/dynamo_repair.h"
#include "frontends/text_reader.h"
#include "tests/dynamo_test_util.h"

using namespace memest;
using namespace memest::testing;

TEST_CASE("exported parameters: a value folded through the program's calls from no parameter is no parameter") {
  // HF Swin-V2's shifted-window attention mask: arange, slices and comparisons folded into
  // sub_63 [64, 9, 9], read beside the attention's folded query weight (val_34). Large, in
  // a module whose weights folded, the module rule took it for a parameter: 5,184
  // elements over torch's count. val_60 was folded
  // from the exporter's own values alone, which say nothing: the module rule keeps it.
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,9,8
param val_34 float32 8,8
param sub_63 float32 64,9,9
node MatMul x val_34 -> q @attn.self.query
node Add q q -> s @attn.self
node Unsqueeze sub_63 -> m @attn.self
output s
output m
)");
  g.relink();
  ParameterReads reads;
  reads.by_node = {{"attn.self.query.weight"}, {}, {}};
  reads.folded_from[g.find_tensor("val_34")] = {"attn.self.query.weight"};
  reads.folded_from[g.find_tensor("sub_63")] = {"arange", "ge_1", "slice_2", "val_192"};
  const std::vector<std::string_view> params = {"attn.self.query.weight"};
  keep_exported_parameters(g, params, {}, reads);
  CHECK(g.tensors[g.find_tensor("sub_63")].kind == TensorKind::Buffer);
  CHECK(g.tensors[g.find_tensor("val_34")].kind == TensorKind::Parameter);
  CHECK(parameter_bytes(g) == 8 * 8 * 4);
}

TEST_CASE("exported parameters: a one-element literal folded from a parameter is that parameter") {
  // CLIP's `logits * self.logit_scale.exp()`: the optimizer folds the one-element scale
  // into `exp`, which the reader takes for a literal (a constant). Its notes name
  // model.logit_scale: it is a parameter, 4 bytes, with a gradient. `val_7`, a literal
  // the exporter made itself, stays one.
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,4
const exp float32 - = 2.5
const val_7 float32 - = 0.5
node Mul x exp -> a @model
node Mul a val_7 -> y @model
output y
)");
  g.relink();
  ParameterReads reads;
  reads.by_node = {{}, {}};
  reads.folded_from[g.find_tensor("exp")] = {"model.logit_scale"};
  reads.folded_from[g.find_tensor("val_7")] = {"val_6"};
  const std::vector<std::string_view> params = {"model.logit_scale"};
  keep_exported_parameters(g, params, {}, reads);
  CHECK(g.tensors[g.find_tensor("exp")].kind == TensorKind::Parameter);
  CHECK(g.tensors[g.find_tensor("val_7")].kind == TensorKind::Constant);
  CHECK(parameter_bytes(g) == 4);
}

TEST_CASE("exported parameters: a one-element literal folded from several parameters stays a literal") {
  // DiffLlama's lambda, exp(sum(lambda_q1 * lambda_k1)) - exp(sum(lambda_q2 * lambda_k2)),
  // folded into `add_339`: one element stands for four vectors the file holds in no form.
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,4
const add_339 float32 - = 0.2
node Mul x add_339 -> y @model.layers.0.self_attn
output y
)");
  g.relink();
  ParameterReads reads;
  reads.by_node = {{}};
  reads.folded_from[g.find_tensor("add_339")] = {"attn.lambda_q1", "attn.lambda_k1", "attn.lambda_q2",
                                                  "attn.lambda_k2", "exp", "sum_1", "val_9"};
  const std::vector<std::string_view> params = {"attn.lambda_q1", "attn.lambda_k1", "attn.lambda_q2", "attn.lambda_k2"};
  keep_exported_parameters(g, params, {}, reads);
  CHECK(g.tensors[g.find_tensor("add_339")].kind == TensorKind::Constant);
  CHECK(parameter_bytes(g) == 0);
}
