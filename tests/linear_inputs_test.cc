// linear_inputs.h: a legacy export's initializer that linear layers take as their input
// is a buffer, not a weight.
#include <doctest/doctest.h>

#include "frontends/linear_inputs.h"
#include "frontends/text_reader.h"
#include "tests/dynamo_test_util.h"

using namespace memest;
using namespace memest::testing;

TEST_CASE("linear inputs: a table a linear layer reads as its input is a buffer") {
  // torchvision's Swin-V2: cpb_mlp(relative_coords_table), the legacy exporter's
  // MatMul(table, Transpose(cpb_mlp.0.weight)). The table [1, 15, 15, 2] is a buffer; the
  // weight [512, 2] and the second layer's [3, 512] are torch's 1,024 + 1,536 elements.
  Graph g = read_text_graph(R"(
opset 17
param attn.relative_coords_table float32 1,15,15,2
param attn.cpb_mlp.0.weight float32 512,2
param attn.cpb_mlp.2.weight float32 3,512
node Transpose attn.cpb_mlp.0.weight -> w0t perm=1,0 @attn.cpb_mlp.0
node MatMul attn.relative_coords_table w0t -> h @attn.cpb_mlp.0
node Relu h -> r @attn.cpb_mlp.1
node Transpose attn.cpb_mlp.2.weight -> w2t perm=1,0 @attn.cpb_mlp.2
node MatMul r w2t -> y @attn.cpb_mlp.2
output y
)");
  g.relink();
  CHECK(parameter_bytes(g) == (450 + 1024 + 1536) * 4);
  CHECK(keep_linear_inputs_as_buffers(g) == 1);
  CHECK(g.tensors[g.find_tensor("attn.relative_coords_table")].kind == TensorKind::Buffer);
  CHECK(parameter_bytes(g) == (1024 + 1536) * 4);
}

TEST_CASE("linear inputs: a learned input read otherwise too, or a weight, stays a parameter") {
  // Query tokens [1, 4, 8] normed and projected, and projected again by a Gemm of two
  // parameters: the tokens are read by a LayerNormalization besides; the Gemm's B is a weight.
  Graph g = read_text_graph(R"(
opset 17
input x float32 batch,8
param query_tokens float32 4,8
param ln.weight float32 8
param proj.weight float32 8,8
param fc.weight float32 8,8
node LayerNormalization query_tokens ln.weight -> q @ln
node MatMul query_tokens proj.weight -> p @proj
node Add q p -> s
node Gemm x fc.weight -> y transB=1 @fc
output s
output y
)");
  g.relink();
  CHECK(keep_linear_inputs_as_buffers(g) == 0);
  CHECK(parameter_bytes(g) == (32 + 8 + 64 + 64) * 4);
}
