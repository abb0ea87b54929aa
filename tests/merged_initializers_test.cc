// merged_initializers.h: the exporter's merges of equal initializers and equal calls,
// undone, each module its own parameters again.
#include <doctest/doctest.h>

#include <string>

#include "frontends/merged_initializers.h"
#include "frontends/text_reader.h"
#include "tests/dynamo_test_util.h"

using namespace memest;
using namespace memest::testing;

TEST_CASE("merged initializers: an initializer the exporter merged across modules is one parameter per module") {
  // onnxscript's optimizer merges initializers of equal contents: timm's layer scales, a
  // LayerNorm weight still all ones. ls is read by two blocks (two parameters in torch);
  // tmp, a folded addcmul alpha the signature does not list, scales in two blocks;
  // shared is read twice by one module (ALBERT's shared layer) and stays one tensor.
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,4
param ls float32 4
buffer tmp float32 4
param shared float32 4
node Mul x ls -> a @blocks.0
node Mul a ls -> b @blocks.0
node Mul b ls -> c @blocks.1
node Mul c tmp -> d @blocks.0.norm
node Mul d tmp -> e @blocks.1.norm
node Add e shared -> f @layer
node Add f shared -> y @layer
output y
)");
  g.relink();
  split_deduplicated_initializers(g);
  auto readers = [&](const char* name) {
    int count = 0;
    for (const Tensor& t : g.tensors) {
      if (t.name.rfind(name, 0) == 0 && t.producer < 0 && t.kind == TensorKind::Parameter) ++count;
    }
    return count;
  };
  CHECK(readers("ls") == 2);
  CHECK(readers("tmp") == 2);
  CHECK(readers("shared") == 1);
  // Each copy belongs to the module that reads it, and the nodes read their own copy.
  const Node& third = g.nodes[2];
  CHECK(g.tensors[third.inputs[1]].module == "blocks.1");
  CHECK(g.nodes[0].inputs[1] == g.nodes[1].inputs[1]);
}

TEST_CASE("merged initializers: a merged parameter's copies take their modules' own names") {
  // A fresh ViT's LayerNorm weights are all ones: the exporter keeps one,
  // encoder_layer_0.ln_1.weight; encoder.ln's copy is encoder.ln.weight, so --train
  // encoder.ln matches it as it matches model.named_parameters().
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,4
param encoder.layers.encoder_layer_0.ln_1.weight float32 4
node Mul x encoder.layers.encoder_layer_0.ln_1.weight -> a @encoder.layers.encoder_layer_0.ln_1
node Mul a encoder.layers.encoder_layer_0.ln_1.weight -> y @encoder.ln
output y
)");
  g.relink();
  split_deduplicated_initializers(g);
  CHECK(g.nodes[0].inputs[1] == g.find_tensor("encoder.layers.encoder_layer_0.ln_1.weight"));
  REQUIRE(g.find_tensor("encoder.ln.weight") >= 0);
  CHECK(g.nodes[1].inputs[1] == g.find_tensor("encoder.ln.weight"));
  CHECK(g.tensors[g.find_tensor("encoder.ln.weight")].kind == TensorKind::Parameter);
}

TEST_CASE("merged initializers: the FX calls say which parameter each reader of a merged initializer reads") {
  // a.norm.weight (4 floats, all ones) is what the exporter kept of a.norm.weight and
  // b.norm.weight, whose FX calls name different parameters: two parameters. cpe.w
  // (CoaT's conv position encoding, one module the model calls from s.0 and s.1) is read
  // from two module paths, but both calls name cpe.w: one parameter, as torch counts it.
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,4
param a.norm.weight float32 4
param cpe.w float32 4
node Mul x a.norm.weight -> p @a.norm
node Mul p a.norm.weight -> q @b.norm
node Mul q cpe.w -> r @s.0.cpe
node Mul r cpe.w -> y @s.1.cpe
output y
)");
  g.relink();
  ParameterReads reads;
  reads.by_node = {{"a.norm.weight", "a.norm.bias"}, {"b.norm.weight", "b.norm.bias"}, {"cpe.w"}, {"cpe.w"}};
  split_deduplicated_initializers(g, reads);
  REQUIRE(g.find_tensor("b.norm.weight") >= 0);
  CHECK(g.nodes[1].inputs[1] == g.find_tensor("b.norm.weight"));
  CHECK(g.nodes[2].inputs[1] == g.nodes[3].inputs[1]);
  CHECK(parameter_bytes(g) == (4 + 4 + 4) * 4);  // a.norm.weight, b.norm.weight, cpe.w

  // Without the FX metadata, one copy per module: cpe.w counted twice (the 167,936 bytes
  // st_coat_lite_mini read over).
  Graph h = read_text_graph(R"(
opset 18
input x float32 batch,4
param cpe.w float32 4
node Mul x cpe.w -> r @s.0.cpe
node Mul r cpe.w -> y @s.1.cpe
output y
)");
  h.relink();
  split_deduplicated_initializers(h);
  CHECK(parameter_bytes(h) == 2 * 4 * 4);
}

TEST_CASE("merged initializers: BatchNorms' merged scale and bias are one parameter per BatchNorm, their statistics stay") {
  // mobileone's identity branches: a fresh BatchNorm's weight (ones) and bias (zeros) are
  // merged across blocks into s.0.bn's, which s.1.bn reads as its scale and bias; each
  // BatchNorm keeps its own running statistics. torch counts both pairs (48,896 bytes
  // st_mobileone_s0 read under). A tensor read as a running statistic is never split.
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,8,4,4
param s.0.bn.weight float32 8
param s.0.bn.bias float32 8
buffer s.0.bn.running_mean float32 8
buffer s.0.bn.running_var float32 8
buffer s.1.bn.running_mean float32 8
buffer s.1.bn.running_var float32 8
node BatchNormalization x s.0.bn.weight s.0.bn.bias s.0.bn.running_mean s.0.bn.running_var -> a training_mode=1 @s.0.bn
node BatchNormalization a s.0.bn.weight s.0.bn.bias s.1.bn.running_mean s.1.bn.running_var -> y training_mode=1 @s.1.bn
output y
)");
  g.relink();
  ParameterReads reads;
  reads.by_node = {{"s.0.bn.weight", "s.0.bn.bias"}, {"s.1.bn.weight", "s.1.bn.bias"}};
  split_deduplicated_initializers(g, reads);
  REQUIRE(g.find_tensor("s.1.bn.weight") >= 0);
  REQUIRE(g.find_tensor("s.1.bn.bias") >= 0);
  CHECK(g.nodes[1].inputs[1] == g.find_tensor("s.1.bn.weight"));
  CHECK(g.nodes[1].inputs[2] == g.find_tensor("s.1.bn.bias"));
  CHECK(g.nodes[1].inputs[3] == g.find_tensor("s.1.bn.running_mean"));
  CHECK(parameter_bytes(g) == 4 * 8 * 4);

  // Statistics merged across BatchNorms (zeros and ones) stay one buffer.
  Graph h = read_text_graph(R"(
opset 18
input x float32 batch,8,4,4
param a.weight float32 8
param a.bias float32 8
param b.weight float32 8
param b.bias float32 8
buffer a.running_mean float32 8
buffer a.running_var float32 8
node BatchNormalization x a.weight a.bias a.running_mean a.running_var -> p training_mode=1 @a
node BatchNormalization p b.weight b.bias a.running_mean a.running_var -> y training_mode=1 @b
output y
)");
  h.relink();
  split_deduplicated_initializers(h);
  CHECK(h.nodes[1].inputs[3] == h.find_tensor("a.running_mean"));
  CHECK(parameter_bytes(h) == 4 * 8 * 4);
}

TEST_CASE("merged initializers: one merged initializer a node reads as two of its call's parameters is two parameters") {
  // levit's BatchNorms start with weight and bias both zero: the exporter keeps one
  // initializer (a.bn.weight) that a.bn reads as scale and bias, and b.bn too. Each
  // BatchNorm has two parameters of 8 (torch: 4 x 32 bytes); memest saw one per BatchNorm.
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,8
param a.bn.weight float32 8
buffer a.bn.running_mean float32 8
buffer a.bn.running_var float32 8
buffer b.bn.running_mean float32 8
buffer b.bn.running_var float32 8
node BatchNormalization x a.bn.weight a.bn.weight a.bn.running_mean a.bn.running_var -> h training_mode=1 @a.bn
node BatchNormalization h a.bn.weight a.bn.weight b.bn.running_mean b.bn.running_var -> y training_mode=1 @b.bn
output y
)");
  g.relink();
  ParameterReads reads;
  reads.by_node = {{"a.bn.weight", "a.bn.bias"}, {"b.bn.weight", "b.bn.bias"}};
  split_deduplicated_initializers(g, reads);
  REQUIRE(g.find_tensor("a.bn.bias") >= 0);
  REQUIRE(g.find_tensor("b.bn.weight") >= 0);
  REQUIRE(g.find_tensor("b.bn.bias") >= 0);
  CHECK(g.nodes[0].inputs[1] == g.find_tensor("a.bn.weight"));
  CHECK(g.nodes[0].inputs[2] == g.find_tensor("a.bn.bias"));
  CHECK(g.nodes[1].inputs[1] == g.find_tensor("b.bn.weight"));
  CHECK(g.nodes[1].inputs[2] == g.find_tensor("b.bn.bias"));
  CHECK(g.tensors[g.find_tensor("b.bn.bias")].module == "b.bn");
  CHECK(parameter_bytes(g) == 4 * 8 * 4);
}

TEST_CASE("merged initializers: one merged initializer the nodes of one call read as two of its values is two") {
  // convnextv2's GRN: addcmul(%view, %view_1, %x) with weight and bias both zero, folded to
  // their views and merged into one initializer `view`, which the call's Mul (weight) and
  // Add (bias) both read. The call takes view_1 too, which no tensor holds and no node
  // computes: the Add's read is view_1, a parameter of its own (st_convnextv2_nano read
  // 7,680 bytes under).
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,8
param view float32 1,8
node Mul view x -> tmp_0 @grn
node Add view tmp_0 -> y @grn
output y
)");
  g.relink();
  ParameterReads reads;
  reads.by_node = {{}, {}};
  reads.buffers_by_node = {{}, {}};
  reads.name_by_node = {"addcmul", "addcmul"};
  reads.values_by_node = {{"view", "view_1", "mul_28"}, {"view", "view_1", "mul_28"}};
  split_deduplicated_initializers(g, reads);
  REQUIRE(g.find_tensor("view_1") >= 0);
  CHECK(g.nodes[0].inputs[0] == g.find_tensor("view"));
  CHECK(g.nodes[1].inputs[0] == g.find_tensor("view_1"));
  CHECK(parameter_bytes(g) == 2 * 8 * 4);
}

TEST_CASE("merged initializers: one merged initializer the nodes of one call read as two of its parameters is two") {
  // timm's resnet50_gn: a decomposed group_norm(%x, 32, %p_weight, %p_bias) scales by its
  // weight (Mul) and shifts by its bias (Add). zero_init_last starts bn3's weight at zero,
  // like its bias: both fold to [C, 1, 1] and merge into one initializer val_110, read by
  // both nodes. The call takes the two parameters, which no tensor holds: two parameters
  // of 8 (the file read 8,960 parameters short).
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,8,1,1
param val_110 float32 8,1,1
node Mul x val_110 -> a @layer1.0.bn3
node Add a val_110 -> y @layer1.0.bn3
output y
)");
  g.relink();
  ParameterReads reads;
  reads.by_node = {{"layer1.0.bn3.weight", "layer1.0.bn3.bias"}, {"layer1.0.bn3.weight", "layer1.0.bn3.bias"}};
  reads.buffers_by_node = {{}, {}};
  reads.name_by_node = {"group_norm", "group_norm"};
  reads.values_by_node = {{"view_3"}, {"view_3"}};
  split_deduplicated_initializers(g, reads);
  REQUIRE(g.find_tensor("layer1.0.bn3.bias") >= 0);
  CHECK(g.nodes[0].inputs[1] == g.find_tensor("val_110"));
  CHECK(g.nodes[1].inputs[1] == g.find_tensor("layer1.0.bn3.bias"));
  CHECK(parameter_bytes(g) == 2 * 8 * 4);
}

TEST_CASE("merged initializers: a BatchNorm scale merged with a None bias's zeros is its module's untaken parameter") {
  // timm's ScaledStdConv2d standardizes its weight with F.batch_norm(w, None, None,
  // weight=(gain * scale).view(-1)); NormFreeBlock starts conv3's gain at zero, so the
  // folded scale and the zeros of the None bias are one initializer val_46, read as both,
  // which the exporter's signature does not list. The call takes no parameter; the
  // module's gain, which no call takes and no tensor holds, is what it reads: a
  // parameter of 8. Another module's None-bias zeros (val_13 at the bias only) stay a
  // buffer (nf_resnet50 read 36,096 bytes short).
  Graph g = read_text_graph(R"(
opset 18
input w float32 1,8,4
input v float32 1,8,4
buffer val_46 float32 8
buffer val_13 float32 8
param view_10 float32 8
buffer m float32 8
buffer s float32 8
node BatchNormalization w val_46 val_46 m s -> a @conv3
node BatchNormalization v view_10 val_13 m s -> b @conv2
node Add a b -> y
output y
)");
  g.relink();
  ParameterReads reads;
  reads.by_node = {{}, {}, {}};
  reads.buffers_by_node = {{}, {}, {}};
  reads.name_by_node = {"_native_batch_norm_legit_4", "_native_batch_norm_legit_3", "add"};
  reads.values_by_node = {{"view_12", "view_13"}, {"view_9", "view_10"}, {}};
  const std::vector<std::string_view> params = {"conv3.weight", "conv3.gain", "conv2.weight", "conv2.gain"};
  split_deduplicated_initializers(g, reads, params);
  CHECK(g.tensors[g.find_tensor("val_46")].kind == TensorKind::Parameter);
  CHECK(g.tensors[g.find_tensor("val_13")].kind == TensorKind::Buffer);
  CHECK(parameter_bytes(g) == 2 * 8 * 4);
}

TEST_CASE("merged initializers: a one-element initializer merged across modules is split where the FX calls name it") {
  // timm's StarReLU: scale * relu(x)^2 + bias, scale and bias one element each, equal in
  // every block, merged into block 0's. The FX calls name each block's: one parameter
  // each (st_convformer_s36 read 568 bytes under). Without the FX metadata a one-element
  // initializer stays one: it may be a literal many calls share.
  const std::string text = R"(
opset 18
input x float32 batch,8
param b.0.act.scale float32 1
node Mul b.0.act.scale x -> a @b.0.act
node Mul b.0.act.scale a -> y @b.1.act
output y
)";
  Graph g = read_text_graph(text);
  g.relink();
  ParameterReads reads;
  reads.by_node = {{"b.0.act.scale"}, {"b.1.act.scale"}};
  split_deduplicated_initializers(g, reads);
  REQUIRE(g.find_tensor("b.1.act.scale") >= 0);
  CHECK(g.nodes[1].inputs[0] == g.find_tensor("b.1.act.scale"));
  CHECK(parameter_bytes(g) == 2 * 4);

  Graph h = read_text_graph(text);
  h.relink();
  split_deduplicated_initializers(h);
  CHECK(parameter_bytes(h) == 4);
}

TEST_CASE("merged initializers: folded values of one module's several untaken parameters are told apart") {
  // timm's EvoNorm2dS0 has weight, bias and v; it multiplies by v and by weight viewed
  // (both ones: folded, merged into `view`) and adds bias viewed (view_4). No call names
  // a parameter; the folded value each call takes (view, view_3, view_4) tells the reads
  // apart, and they take the module's untaken parameters in turn: three parameters of 8
  // (resnetv2_50d_evos read 66,560 bytes under).
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,8
param view float32 8
param view_4 float32 8
node Mul x view -> a @n
node Mul a view -> b @n
node Add b view_4 -> y @n
output y
)");
  g.relink();
  ParameterReads reads;
  reads.by_node = {{}, {}, {}};
  reads.buffers_by_node.resize(3);
  reads.name_by_node = {"mul_2", "mul_41", "add_66"};
  reads.values_by_node = {{"view"}, {"mul_2", "view_3"}, {"mul_41", "view_4"}};
  const std::vector<std::string_view> params = {"n.weight", "n.bias", "n.v"};
  split_deduplicated_initializers(g, reads, params);
  CHECK(g.nodes[0].inputs[1] != g.nodes[1].inputs[1]);
  CHECK(parameter_bytes(g) == 3 * 8 * 4);
}

TEST_CASE("merged initializers: a module whose call the exporter merged with its twin's is put back") {
  // GPT-NeoX's parallel residual: input_layernorm and post_attention_layernorm normalize
  // one hidden state with fresh (equal) weights, and the exporter keeps one LayerNorm
  // (layer_norm), which the MLP's linear reads though its call takes `layer_norm_1`, a
  // value no node computes. post_attention_layernorm's parameters are listed, in no
  // tensor, taken by no call: the LayerNorm is put back as its, with weight and bias of
  // input_layernorm's shapes, and the MLP reads it (gpt_neox read 16,384 bytes under).
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,8
param l.input_layernorm.weight float32 8
param l.input_layernorm.bias float32 8
param l.q.weight float32 8,8
param l.mlp.weight float32 8,8
node LayerNormalization x l.input_layernorm.weight l.input_layernorm.bias -> layer_norm axis=-1 @l.input_layernorm
node MatMul layer_norm l.q.weight -> linear @l.q
node MatMul layer_norm l.mlp.weight -> linear_1 @l.mlp
node Add linear linear_1 -> y @l
output y
)");
  g.relink();
  ParameterReads reads;
  reads.by_node = {{"l.input_layernorm.weight", "l.input_layernorm.bias"}, {"l.q.weight"}, {"l.mlp.weight"}, {}};
  reads.buffers_by_node.resize(4);
  reads.name_by_node = {"layer_norm", "linear", "linear_1", "add"};
  reads.values_by_node = {{}, {"layer_norm"}, {"layer_norm_1"}, {"linear", "linear_1"}};
  const std::vector<std::string_view> params = {"l.input_layernorm.weight", "l.input_layernorm.bias",
                                                "l.post_attention_layernorm.weight", "l.post_attention_layernorm.bias",
                                                "l.q.weight", "l.mlp.weight"};
  CHECK(restore_merged_modules(g, params, {}, reads) == 1);
  const int w = g.find_tensor("l.post_attention_layernorm.weight");
  REQUIRE(w >= 0);
  CHECK(*g.tensors[w].shape == Shape{Expr(8)});
  REQUIRE(g.nodes.size() == 5);
  CHECK(g.nodes[4].op == "LayerNormalization");
  CHECK(g.nodes[4].module == "l.post_attention_layernorm");
  CHECK(g.nodes[4].inputs[0] == g.find_tensor("x"));
  CHECK(g.nodes[2].inputs[0] == g.nodes[4].outputs[0]);
  CHECK(g.nodes[1].inputs[0] == g.find_tensor("layer_norm"));
  CHECK(parameter_bytes(g) == (4 * 8 + 2 * 64) * 4);

  // A twin that reads another module's parameter runs a tied weight (T5's decoder
  // embedding reads model.shared.weight): torch counts it once, nothing is put back.
  Graph h = read_text_graph(R"(
opset 18
input ids int64 batch,4
param shared.weight float32 16,8
param enc.fc.weight float32 8,8
param dec.fc.weight float32 8,8
node Gather shared.weight ids -> embedding @enc.embed
node MatMul embedding enc.fc.weight -> linear @enc.fc
node MatMul embedding dec.fc.weight -> linear_1 @dec.fc
node Add linear linear_1 -> y
output y
)");
  h.relink();
  reads.by_node = {{"shared.weight"}, {"enc.fc.weight"}, {"dec.fc.weight"}, {}};
  reads.values_by_node = {{}, {"embedding"}, {"embedding_1"}, {"linear", "linear_1"}};
  reads.name_by_node = {"embedding", "linear", "linear_1", "add"};
  const std::vector<std::string_view> tied = {"shared.weight", "enc.embed.weight", "dec.embed.weight", "enc.fc.weight",
                                              "dec.fc.weight"};
  CHECK(restore_merged_modules(h, tied, {}, reads) == 0);
  CHECK(h.nodes.size() == 4);
}

TEST_CASE("merged initializers: copies of a table computed from parameters are such tables too") {
  // EVA02's q/k/v bias, cat(q_bias, zeros, v_bias), is the same in every block of a fresh
  // model: the exporter folds it per block and merges the blocks' into one `cat_1` [12].
  // Split again, each block's copy is still a table larger than its parameters (the zero
  // k part is no parameter), so each is named in Graph::derived_parameters: 2 x 12 x 4 =
  // 96 bytes that matrix-check may find over torch's count, not 48.
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,12
param cat_1 float32 12
node Add x cat_1 -> a @blocks.0.attn
node Add a cat_1 -> y @blocks.1.attn
output y
)");
  g.relink();
  g.derived_parameters = {g.find_tensor("cat_1")};
  split_deduplicated_initializers(g);
  REQUIRE(g.derived_parameters.size() == 2);
  CHECK(g.derived_parameters[0] != g.derived_parameters[1]);
  CHECK(g.nodes[0].inputs[1] == g.derived_parameters[0]);
  CHECK(g.nodes[1].inputs[1] == g.derived_parameters[1]);
}
