// What the dynamo exporter writes beside the graph and memest reads: the exported
// program's signature (which initializers are parameters) and each node's module
// classes (which modules run with autocast disabled).
#include <doctest/doctest.h>

#include <string>

#include "estimator/analysis.h"
#include "frontends/dynamo_repair.h"
#include "frontends/merged_initializers.h"
#include "frontends/onnx_reader.h"
#include "frontends/text_reader.h"
#include "tests/dynamo_test_util.h"
#include "tests/wire_builder.h"

using namespace memest;
using namespace memest::testing;

TEST_CASE("dynamo export: initializers the signature does not list as parameters get no gradient") {
  // y = (x * w) * (x * c) + x @ big: w is listed (PARAMETER); c, 32 floats the exporter
  // folded from a buffer (llama's inv_freq[None, :, None].expand(...) as "expand_2"),
  // is not; big, a weight's folded transpose ("val_1188") of 4,097+ elements, is not
  // listed either, but fc.weight is listed with no initializer of its name: big is it.
  const std::string signature =
      "# inputs\np_w: PARAMETER target='w'\np_fc_weight: PARAMETER target='fc.weight'\n"
      "b_freq: BUFFER target='freq' persistent=False\nx: USER_INPUT\n";
  const std::string body =
      lfield(1, lfield(1, "x") + lfield(1, "w") + lfield(2, "a") + lfield(4, "Mul")) +
      lfield(1, lfield(1, "x") + lfield(1, "c") + lfield(2, "b") + lfield(4, "Mul")) +
      lfield(1, lfield(1, "x") + lfield(1, "big") + lfield(2, "m") + lfield(4, "MatMul")) +
      lfield(1, lfield(1, "a") + lfield(1, "b") + lfield(2, "s") + lfield(4, "Mul")) +
      lfield(1, lfield(1, "s") + lfield(1, "m") + lfield(2, "y") + lfield(4, "Add")) + initializer("w", {32}) +
      initializer("c", {32}) + initializer("big", {32, 32, 5}) +
      lfield(11, value_info("x", tensor_type(1, dim_param("batch") + dim_value(32)))) +
      lfield(12, value_info("y", tensor_type(1, dim_param("batch") + dim_value(32))));
  const Graph g = read_onnx_bytes(
      dynamo_model(body + lfield(16, entry("pkg.torch.export.ExportedProgram.graph_signature", signature))), "m.onnx");
  CHECK(g.tensors[g.find_tensor("w")].kind == TensorKind::Parameter);
  CHECK(g.tensors[g.find_tensor("c")].kind == TensorKind::Buffer);
  CHECK(g.tensors[g.find_tensor("big")].kind == TensorKind::Parameter);

  // Without a signature (the TorchScript exporter), every float initializer is a parameter.
  const Graph h = read_onnx_bytes(dynamo_model(body), "m.onnx");
  CHECK(h.tensors[h.find_tensor("c")].kind == TensorKind::Parameter);
}

TEST_CASE("dynamo export: module classes: rotary embeddings run without autocast, transformers keeps locals") {
  // transformers' rotary embeddings compute cos and sin under autocast(enabled=False).
  auto ns = [](const std::string& module_class) {
    return lfield(9, entry("namespace", ": pkg.Root/model.rotary_emb: " + module_class + "/matmul: aten.matmul.default"));
  };
  const std::string io = lfield(11, value_info("x", tensor_type(1, dim_param("batch") + dim_value(4)))) +
                         lfield(12, value_info("y", tensor_type(1, dim_param("batch") + dim_value(4))));
  auto relu = [&](const std::string& more) {
    return dynamo_model(lfield(1, lfield(1, "x") + lfield(2, "y") + lfield(4, "Relu") + more) + io);
  };
  const Graph rotary = read_onnx_bytes(relu(ns("transformers.models.llama.modeling_llama.LlamaRotaryEmbedding")), "m.onnx");
  CHECK(rotary.nodes[0].autocast_off);
  CHECK(rotary.nodes[0].module == "model.rotary_emb");
  const Graph other = read_onnx_bytes(relu(ns("transformers.models.llama.modeling_llama.LlamaAttention")), "m.onnx");
  CHECK_FALSE(other.nodes[0].autocast_off);
  // transformers' modules keep submodule results in locals; torch.nn's are not assumed to.
  CHECK(other.nodes[0].keeps_locals);
  CHECK_FALSE(read_onnx_bytes(relu(ns("torch.nn.modules.linear.Linear")), "m.onnx").nodes[0].keeps_locals);
}

TEST_CASE("under fp16 autocast, a MatMul with autocast disabled stays fp32 and its product with half is fp32") {
  // cos = (inv_freq @ pos) in fp32; q * cos then promotes to fp32: [batch 2, 4, 8] of
  // q is 64 half bytes, the product 256 fp32 bytes (the GPU trace of llama_hf: q's
  // rotary terms are fp32 under fp16 autocast).
  Graph g = read_text_graph(R"(
opset 17
input x float32 batch,4,8
input pos float32 1,8
param fc.weight float32 8,8
const freq float32 4,1 = 1,1,1,1
node memest::Linear x fc.weight -> q @attn.q
node MatMul freq pos -> cos @rotary
node Mul q cos -> y @attn
output y
)");
  for (Node& n : g.nodes) n.autocast_off = n.module == "rotary";
  AnalysisOptions o;
  o.train.amp = Amp::FP16;
  o.train.loss = Loss::Sum;
  Analysis a = analyze(std::move(g), o);
  const Estimate e = estimate(a, 2);
  auto first_alloc = [&](const char* module) {
    for (const Event& ev : a.program.events) {
      const Block& b = a.program.blocks[ev.block];
      if (ev.kind == Event::Alloc && b.node >= 0 && a.graph.nodes[b.node].module == module &&
          b.category == Category::Activations) {
        return b.bytes.eval(e.bindings);
      }
    }
    return int64_t{-1};
  };
  CHECK(first_alloc("rotary") == 4 * 8 * 4);  // [4, 8] fp32, not half
  CHECK(first_alloc("attn") == 2 * 4 * 8 * 4);  // half q * fp32 cos: fp32
}

TEST_CASE("dynamo export: the nodes of one aten.gelu call are one Gelu, whatever their spelling") {
  // F.gelu(x, approximate="tanh") at opset 18: x^3, scaled, added, tanh... each node named
  // after the one FX node in its namespace. Eager PyTorch runs one kernel that keeps x.
  auto node = [](std::initializer_list<const char*> in, const char* out, const char* op, bool ns) {
    std::string b;
    for (const char* i : in) b += lfield(1, i);
    b += lfield(2, out) + lfield(4, op);
    if (ns) b += lfield(9, entry("namespace", ": pkg.Root/act: torch.nn.modules.activation.GELU/gelu: aten.gelu.default"));
    return lfield(1, b);
  };
  auto graph = [&](bool ns) {
    std::string scalars;
    for (const char* c : {"three", "k", "s", "one", "half"}) scalars += initializer(c, {});
    return dynamo_model(node({"x", "three"}, "p", "Pow", ns) + node({"p", "k"}, "pk", "Mul", ns) + node({"x", "pk"}, "a", "Add", ns) +
                 node({"a", "s"}, "as", "Mul", ns) + node({"as"}, "t", "Tanh", ns) + node({"t", "one"}, "t1", "Add", ns) +
                 node({"t1", "half"}, "h", "Mul", ns) + node({"x", "h"}, "y", "Mul", ns) + scalars +
                 lfield(11, value_info("x", tensor_type(1, dim_param("batch") + dim_value(64)))) +
                 lfield(12, value_info("y", tensor_type(1, dim_param("batch") + dim_value(64)))));
  };
  AnalysisOptions o;
  o.train.loss = Loss::Sum;
  auto ops = [](const Analysis& a) {
    int gelu = 0, other = 0;
    for (const Node& n : a.graph.nodes) {
      if (n.dead || n.op == "SumLoss") continue;
      (n.op == "Gelu" ? gelu : other) += 1;
    }
    return std::pair{gelu, other};
  };
  const Analysis fused = analyze(read_onnx_bytes(graph(true), "m.onnx"), o);
  CHECK(ops(fused) == std::pair{1, 0});
  // The same nodes from Python code (transformers' NewGELUActivation, no single aten op)
  // are separate kernels in eager PyTorch too: left alone.
  const Analysis apart = analyze(read_onnx_bytes(graph(false), "m.onnx"), o);
  CHECK(ops(apart).first == 0);
  CHECK(estimate(fused, 8).peak.peak_bytes < estimate(apart, 8).peak.peak_bytes);
}

TEST_CASE("dynamo export: a large initializer is a parameter only when a folded weight explains it") {
  // y = (x * w) @ big + bias: w is the one listed parameter and has its initializer, so
  // no weight folded; big (32 x 5,120 floats, over the 4,096 taken for granted as
  // buffers) is a constant the exporter folded (Swin's coordinate tables), and bias
  // (1 x 5,120), listed as BUFFER (BART's final_logits_bias), is a buffer too.
  const std::string signature =
      "# inputs\np_w: PARAMETER target='w'\nb_bias: BUFFER target='bias'\nx: USER_INPUT\n";
  const std::string body =
      lfield(1, lfield(1, "x") + lfield(1, "w") + lfield(2, "a") + lfield(4, "Mul")) +
      lfield(1, lfield(1, "a") + lfield(1, "big") + lfield(2, "m") + lfield(4, "MatMul")) +
      lfield(1, lfield(1, "m") + lfield(1, "bias") + lfield(2, "y") + lfield(4, "Add")) + initializer("w", {32}) +
      initializer("big", {32, 5120}) + initializer("bias", {1, 5120}) +
      lfield(11, value_info("x", tensor_type(1, dim_param("batch") + dim_value(32)))) +
      lfield(12, value_info("y", tensor_type(1, dim_param("batch") + dim_value(5120))));
  const std::string sig = lfield(16, entry("pkg.torch.export.ExportedProgram.graph_signature", signature));
  const Graph g = read_onnx_bytes(dynamo_model(body + sig), "m.onnx");
  CHECK(g.tensors[g.find_tensor("big")].kind == TensorKind::Buffer);
  CHECK(g.tensors[g.find_tensor("bias")].kind == TensorKind::Buffer);
  int64_t param_bytes = 0;
  for (const Tensor& t : g.tensors) {
    if (t.kind == TensorKind::Parameter) param_bytes += product(*t.shape).as_const().value_or(0) * 4;
  }
  CHECK(param_bytes == 32 * 4);  // w alone: 32 floats

  // Once the signature lists a weight with no initializer of its name, big may be it.
  const std::string folded =
      "# inputs\np_w: PARAMETER target='w'\np_fc_weight: PARAMETER target='fc.weight'\n"
      "b_bias: BUFFER target='bias'\nx: USER_INPUT\n";
  const Graph h = read_onnx_bytes(
      dynamo_model(body + lfield(16, entry("pkg.torch.export.ExportedProgram.graph_signature", folded))), "m.onnx");
  CHECK(h.tensors[h.find_tensor("big")].kind == TensorKind::Parameter);
  CHECK(h.tensors[h.find_tensor("bias")].kind == TensorKind::Buffer);
}

TEST_CASE("dynamo export: a classifier's zero bias the exporter dropped from its Gemm is put back") {
  // y = Gemm(x, head.weight [10, 32], transB=1): the signature lists head.bias, which no
  // tensor holds (all zeros in a fresh model, the optimizer dropped C). Torch counts it:
  // 10 floats, a gradient and Adam's two states, so memest must too.
  const std::string signature =
      "# inputs\np_head_weight: PARAMETER target='head.weight'\np_head_bias: PARAMETER target='head.bias'\n"
      "x: USER_INPUT\n";
  const std::string trans_b = lfield(5, lfield(1, "transB") + vfield(3, 1) + vfield(20, 2));  // INT attribute
  const std::string body =
      lfield(1, lfield(1, "x") + lfield(1, "head.weight") + lfield(2, "y") + lfield(4, "Gemm") + trans_b) +
      initializer("head.weight", {10, 32}) +
      lfield(11, value_info("x", tensor_type(1, dim_param("batch") + dim_value(32)))) +
      lfield(12, value_info("y", tensor_type(1, dim_param("batch") + dim_value(10))));
  const Graph g = read_onnx_bytes(
      dynamo_model(body + lfield(16, entry("pkg.torch.export.ExportedProgram.graph_signature", signature))), "m.onnx");
  const int b = g.find_tensor("head.bias");
  REQUIRE(b >= 0);
  CHECK(g.tensors[b].kind == TensorKind::Parameter);
  CHECK(*g.tensors[b].shape == Shape{Expr(10)});
  CHECK(g.tensors[b].dtype == DType::F32);
  int64_t param_bytes = 0;
  for (const Tensor& t : g.tensors) {
    if (t.kind == TensorKind::Parameter) param_bytes += product(*t.shape).as_const().value_or(0) * 4;
  }
  CHECK(param_bytes == (10 * 32 + 10) * 4);
}

TEST_CASE("dynamo export: a zero conv bias the exporter dropped is put back, with the conv's output channels") {
  // timm's squeeze-excite and 1x1-conv MLP biases start at zero, and the optimizer drops
  // them from the Conv as from a Gemm (focalnet_tiny_lrf: 66 biases, 171,072 bytes).
  // conv: weight [8, 3, 3, 3], bias [8]; up (ConvTranspose, group 2): weight [8, 3, 2, 2]
  // is [C_in, C_out / group, kH, kW], so its bias has 3 * 2 = 6 channels.
  const std::string signature =
      "# inputs\np_conv_weight: PARAMETER target='conv.weight'\np_conv_bias: PARAMETER target='conv.bias'\n"
      "p_up_weight: PARAMETER target='up.weight'\np_up_bias: PARAMETER target='up.bias'\nx: USER_INPUT\n";
  const std::string group2 = lfield(5, lfield(1, "group") + vfield(3, 2) + vfield(20, 2));  // INT attribute
  const std::string body =
      lfield(1, lfield(1, "x") + lfield(1, "conv.weight") + lfield(2, "c") + lfield(4, "Conv")) +
      lfield(1, lfield(1, "c") + lfield(1, "up.weight") + lfield(2, "y") + lfield(4, "ConvTranspose") + group2) +
      initializer("conv.weight", {8, 3, 3, 3}) + initializer("up.weight", {8, 3, 2, 2}) +
      lfield(11, value_info("x", tensor_type(1, dim_param("batch") + dim_value(3) + dim_value(8) + dim_value(8)))) +
      lfield(12, value_info("y", tensor_type(1, dim_param("batch") + dim_value(6) + dim_value(14) + dim_value(14))));
  const Graph g = read_onnx_bytes(
      dynamo_model(body + lfield(16, entry("pkg.torch.export.ExportedProgram.graph_signature", signature))), "m.onnx");
  const int b = g.find_tensor("conv.bias");
  const int u = g.find_tensor("up.bias");
  REQUIRE(b >= 0);
  REQUIRE(u >= 0);
  CHECK(*g.tensors[b].shape == Shape{Expr(8)});
  CHECK(*g.tensors[u].shape == Shape{Expr(6)});
  CHECK(g.nodes[0].inputs.size() == 3);
  int64_t param_bytes = 0;
  for (const Tensor& t : g.tensors) {
    if (t.kind == TensorKind::Parameter) param_bytes += product(*t.shape).as_const().value_or(0) * 4;
  }
  CHECK(param_bytes == (8 * 3 * 3 * 3 + 8 + 8 * 3 * 2 * 2 + 6) * 4);  // 216 + 8 + 96 + 6 floats
}

TEST_CASE("dynamo export: a layer that reads its weight computed keeps its dropped bias") {
  // timm's ScaledStdConv2d: conv2d(x, standardize(weight) * gain, bias). The zero bias is
  // dropped from the Conv, which reads the standardized weight, an activation: its FX
  // call still takes s.conv.bias, of s.conv.weight's 8 output channels. A stem conv whose
  // whole weight computation the exporter folded reads view_2 (8 x 3 x 3 x 3), no
  // parameter of its own: its bias takes view_2's output channels (nf_resnet26 read
  // 123,392 bytes under, eca_nfnet_l2 691,584).
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,3,8,8
param s.conv.weight float32 8,3,3,3
param view_2 float32 4,3,3,3
node Reshape s.conv.weight shp -> v @s.conv
node Reshape v shp2 -> w @s.conv
node Conv x w -> y1 @s.conv
node Conv x view_2 -> y2 @stem.conv
node Add y1 y2 -> y
output y
)");
  g.relink();
  ParameterReads reads;
  reads.by_node = {{"s.conv.weight"}, {}, {"s.conv.bias"}, {"stem.conv.bias"}, {}};
  const std::vector<std::string_view> params = {"s.conv.weight", "s.conv.bias", "stem.conv.weight", "stem.conv.bias"};
  CHECK(restore_dropped_biases(g, params, reads) == 2);
  const int b = g.find_tensor("s.conv.bias");
  const int sb = g.find_tensor("stem.conv.bias");
  REQUIRE(b >= 0);
  REQUIRE(sb >= 0);
  CHECK(*g.tensors[b].shape == Shape{Expr(8)});
  CHECK(*g.tensors[sb].shape == Shape{Expr(4)});
  CHECK(g.nodes[2].inputs.size() == 3);
  CHECK(parameter_bytes(g) == (8 * 3 * 3 * 3 + 8 + 4 * 3 * 3 * 3 + 4) * 4);
}

TEST_CASE("dynamo export: a large initializer read at the top level by calls that take no parameter is a buffer") {
  // dinov3's rotary angles: `tile` (256 x 64) computed at export from a buffer, read by
  // the model's own sin and cos (no module), whose FX calls take no parameter. A reader
  // of no module once matched any folded parameter (blocks.0.fc.weight here): 65,536
  // bytes of parameters torch does not have. val_9, the folded fc weight, still is one.
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,64
param tile float32 256,64
param val_9 float32 64,64
node Sin tile -> s
node MatMul x val_9 -> h @blocks.0.fc
node Add h s -> y @blocks.0
output y
)");
  g.relink();
  ParameterReads reads;
  reads.by_node = {{}, {"blocks.0.fc.weight"}, {}};
  const std::vector<std::string_view> params = {"blocks.0.fc.weight"};
  keep_exported_parameters(g, params, {}, reads);
  CHECK(g.tensors[g.find_tensor("tile")].kind == TensorKind::Buffer);
  CHECK(g.tensors[g.find_tensor("val_9")].kind == TensorKind::Parameter);
  CHECK(parameter_bytes(g) == 64 * 64 * 4);
}

TEST_CASE("dynamo export: an initializer whose reader's FX call takes a buffer is that buffer") {
  // CTRL's pos_encoding (a plain tensor attribute, lifted as a non-persistent buffer):
  // index(%b_pos_encoding, [%positions]) reads val_127 (512 x 256), in a module whose
  // linear weights folded. Its call takes the buffer, which has no tensor of its name:
  // val_127 is the buffer (it was 524,288 bytes of parameters).
  Graph g = read_text_graph(R"(
opset 18
input x int64 batch,1
param val_127 float32 512,256
param val_9 float32 256,256
node GatherND val_127 x -> e @model.transformer
node MatMul e val_9 -> y @model.transformer.h.0.fc
output y
)");
  g.relink();
  ParameterReads reads;
  reads.by_node = {{}, {"model.transformer.h.0.fc.weight"}};
  reads.buffers_by_node = {{"model.transformer.pos_encoding"}, {}};
  const std::vector<std::string_view> params = {"model.transformer.h.0.fc.weight"};
  const std::vector<std::string_view> buffers = {"model.transformer.pos_encoding"};
  keep_exported_parameters(g, params, buffers, reads);
  CHECK(g.tensors[g.find_tensor("val_127")].kind == TensorKind::Buffer);
  CHECK(g.tensors[g.find_tensor("val_9")].kind == TensorKind::Parameter);
  CHECK(parameter_bytes(g) == 256 * 256 * 4);
}

TEST_CASE("dynamo export: a layout call's value is the parameter of its reader's module that no FX call takes") {
  // ScaledStdConv2d scales its standardized weight by (gain * scale).view(-1), which the
  // exporter folds into an initializer named after the view (view_1). No FX call takes
  // s.conv.gain (the Mul that read it folded away): view_1 is it, the one parameter of its
  // reader's module no call takes. A second such value (view_5) is not gain again.
  // botnet's height_rel, transposed at export (transpose_2), is read the same way.
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,8
param view_1 float32 8
param view_5 float32 8
node Mul x view_1 -> a @s.conv
node Mul a view_5 -> y @s.conv
output y
)");
  g.relink();
  ParameterReads reads;
  reads.by_node = {{}, {}};
  const std::vector<std::string_view> params = {"s.conv.gain"};
  keep_exported_parameters(g, params, {}, reads);
  CHECK(g.tensors[g.find_tensor("view_1")].kind == TensorKind::Parameter);
  CHECK(g.tensors[g.find_tensor("view_5")].kind == TensorKind::Buffer);
  CHECK(parameter_bytes(g) == 8 * 4);
}

TEST_CASE("dynamo export: poolformerv2's norms: a GroupNorm without bias, and a scale read through a folded view") {
  // timm's GroupNorm1 without bias: group_norm(x, 1, %p_norm1_weight, None), torchlib's
  // Add reads zeros it made (val_29), no parameter. res_scale multiplies by its scale
  // viewed (`mul(%x, %view_3)`), folded and merged with the norm's weight (`view`, all
  // ones): its call names no parameter, but res_scale.scale is its module's one listed
  // parameter that no call takes, so it reads a copy of its own (poolformerv2_s12 read
  // 26,624 bytes over without the first, 23,552 under without the second).
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,8,4
param view float32 8,1
param val_29 float32 8,1
node Mul x view -> a @b.norm1
node Add a val_29 -> n @b.norm1
node Mul n view -> y @b.res_scale1
output y
)");
  g.relink();
  g.calls = {"aten.group_norm.default", "aten.mul.Tensor"};
  g.nodes[0].call = g.nodes[1].call = 0;
  g.nodes[2].call = 1;
  ParameterReads reads;
  reads.by_node = {{"b.norm1.weight"}, {"b.norm1.weight"}, {}};
  reads.buffers_by_node.resize(3);
  reads.name_by_node = {"group_norm", "group_norm", "mul"};
  reads.values_by_node = {{"x"}, {"x"}, {"group_norm", "view_3"}};
  const std::vector<std::string_view> params = {"b.norm1.weight", "b.res_scale1.scale"};
  classify_group_norm_initializers(g, reads);
  CHECK(g.tensors[g.find_tensor("view")].kind == TensorKind::Parameter);
  CHECK(g.tensors[g.find_tensor("val_29")].kind == TensorKind::Constant);
  split_deduplicated_initializers(g, reads, params);
  REQUIRE(g.find_tensor("b.res_scale1.scale") >= 0);
  CHECK(g.nodes[2].inputs[1] == g.find_tensor("b.res_scale1.scale"));
  CHECK(parameter_bytes(g) == 2 * 8 * 4);

  // Not so for what is no weight at all: ScaledStdConv2d's standardization reads zeros
  // for its None bias (val_13, a buffer), merged across convs whose gains no call takes.
  Graph h = read_text_graph(R"(
opset 18
input x float32 batch,8
param view_1 float32 8
param view_4 float32 8
buffer val_13 float32 8
node BatchNormalization x view_1 val_13 m1 v1 -> a training_mode=1 @s.conv1
node BatchNormalization a view_4 val_13 m2 v2 -> y training_mode=1 @s.conv2
output y
)");
  h.relink();
  reads.by_node = {{}, {}};
  reads.buffers_by_node = {{}, {}};
  reads.name_by_node = {"bn", "bn_1"};
  reads.values_by_node = {{"x", "view_1"}, {"bn", "view_4"}};
  const std::vector<std::string_view> gains = {"s.conv1.gain", "s.conv2.gain"};
  split_deduplicated_initializers(h, reads, gains);
  CHECK(h.tensors[h.find_tensor("val_13")].kind == TensorKind::Buffer);
  CHECK(parameter_bytes(h) == 2 * 8 * 4);  // view_1 and view_4, the gains
}

TEST_CASE("dynamo export: a call that reads as many initializers as it takes folded parameters reads them") {
  // PReLU's weight (one element, 0.25 in every layer) folds to [1, 1, 1], merges into one
  // initializer val_32, and reads as a literal scalar; each prelu call takes its own
  // weight: two parameters (conv_tasnet read 196 bytes under). A call that reads more
  // initializers than it takes folded parameters (an rms_norm's eps and its weight) says
  // nothing about the scalar.
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,4,8
param val_32 float32 1,1
param eps float32 1
param val_9 float32 8
node PRelu x val_32 -> a @l.0.act
node PRelu a val_32 -> b @l.1.act
node Add b eps -> c @n
node Mul c val_9 -> y @n
output y
)");
  g.relink();
  g.tensors[g.find_tensor("val_32")].kind = TensorKind::Constant;  // as classify_initializers leaves a scalar
  g.tensors[g.find_tensor("eps")].kind = TensorKind::Constant;
  ParameterReads reads;
  reads.by_node = {{"l.0.act.weight"}, {"l.1.act.weight"}, {"n.weight"}, {"n.weight"}};
  reads.buffers_by_node.resize(4);
  reads.name_by_node = {"prelu", "prelu_1", "rms_norm", "rms_norm"};
  reads.values_by_node = {{}, {"prelu"}, {"prelu_1"}, {"prelu_1"}};
  const std::vector<std::string_view> params = {"l.0.act.weight", "l.1.act.weight", "n.weight"};
  keep_exported_parameters(g, params, {}, reads);
  CHECK(g.tensors[g.find_tensor("val_32")].kind == TensorKind::Parameter);
  CHECK(g.tensors[g.find_tensor("eps")].kind == TensorKind::Constant);
  split_deduplicated_initializers(g, reads, params);
  CHECK(parameter_bytes(g) == (1 + 1 + 8) * 4);
}

TEST_CASE("dynamo export: in aten.group_norm's nodes, the InstanceNormalization's scale and bias are constants") {
  // torchlib's group_norm: InstanceNormalization(x as [N, G, -1], G ones, G zeros), then
  // Mul by weight and Add of bias as [C, 1]. Here G = 1 and C = 1: the merged ones (also
  // ln.weight, a LayerNorm's) and zeros are the InstanceNormalization's constants, and the
  // one-element val_36 and val_38, which read as literal scalars, are gn.weight and
  // gn.bias (the random modules were 32-64 bytes over, or 8 under).
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,1,4
param ln.weight float32 1
param ln.bias float32 1
param val_36 float32 1,1
param val_38 float32 1,1
node LayerNormalization x ln.weight ln.bias -> a axis=-1 @ln
node InstanceNormalization a ln.weight ln.bias -> b @gn
node Mul b val_36 -> c @gn
node Add c val_38 -> y @gn
output y
)");
  g.relink();
  g.calls = {"aten.layer_norm.default", "aten.group_norm.default"};
  g.nodes[0].call = 0;
  for (int k : {1, 2, 3}) g.nodes[k].call = 1;
  g.tensors[g.find_tensor("val_36")].kind = TensorKind::Constant;  // as classify_initializers leaves a scalar
  g.tensors[g.find_tensor("val_38")].kind = TensorKind::Constant;
  ParameterReads reads;
  reads.by_node = {{"ln.weight", "ln.bias"}, {"gn.weight", "gn.bias"}, {"gn.weight", "gn.bias"}, {"gn.weight", "gn.bias"}};
  classify_group_norm_initializers(g, reads);
  CHECK(g.nodes[0].inputs[1] == g.find_tensor("ln.weight"));
  CHECK(g.tensors[g.nodes[1].inputs[1]].kind == TensorKind::Constant);
  CHECK(g.tensors[g.nodes[1].inputs[2]].kind == TensorKind::Constant);
  CHECK(g.tensors[g.find_tensor("val_36")].kind == TensorKind::Parameter);
  CHECK(parameter_bytes(g) == 4 * 4);  // ln.weight, ln.bias, gn.weight, gn.bias

  // A GroupNorm of 8 channels in 4 groups whose scale and bias only it reads.
  Graph h = read_text_graph(R"(
opset 18
input x float32 batch,8,4
param val_10 float32 4
param val_13 float32 4
param val_23 float32 8,1
param val_25 float32 8,1
node Reshape x shp -> r @gn
node InstanceNormalization r val_10 val_13 -> b @gn
node Reshape b shp2 -> c @gn
node Mul c val_23 -> d @gn
node Add d val_25 -> y @gn
output y
)");
  h.relink();
  h.calls = {"aten.group_norm.default"};
  for (Node& n : h.nodes) n.call = 0;
  reads.by_node.assign(5, {"gn.weight", "gn.bias"});
  classify_group_norm_initializers(h, reads);
  CHECK(h.tensors[h.find_tensor("val_10")].kind == TensorKind::Constant);
  CHECK(parameter_bytes(h) == 2 * 8 * 4);
}

TEST_CASE("dynamo export: an unlisted initializer is a parameter when its reader's FX call takes a folded one") {
  // fc.weight and attn.proj.weight are listed with no initializer of their names. val_14
  // (32 x 16) is read by the MatMul of linear(%x, %p_fc_weight): fc.weight transposed,
  // though its reader is in no module of a folded weight. index_5 (8 x 16 x 16, 2,048
  // floats) is read by add(%m, %index_5) in attn, a module with no folded weight of its
  // own: a table computed at export, a buffer. permute (16 x 16) is read by
  // matmul(%s, %permute), a call naming no parameter: the value of a transpose the
  // exporter computed, that of attn.proj.weight, which no FX call takes (falcon).
  // squeeze (16) is read in fc, whose folded weight an FX call does take (mpt's alibi
  // slopes, a buffer).
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,32
param val_14 float32 32,16
param index_5 float32 8,16,16
param permute float32 16,16
param squeeze float32 16
node MatMul x val_14 -> m @head
node Add m index_5 -> s @attn
node MatMul s permute -> t @attn.proj
node Add t squeeze -> y @fc
output y
)");
  g.relink();
  ParameterReads reads;
  reads.by_node = {{"fc.weight", "fc.bias"}, {}, {}, {}};
  const std::vector<std::string_view> params = {"fc.weight", "fc.bias", "attn.proj.weight"};
  keep_exported_parameters(g, params, {}, reads);
  CHECK(g.tensors[g.find_tensor("val_14")].kind == TensorKind::Parameter);
  CHECK(g.tensors[g.find_tensor("index_5")].kind == TensorKind::Buffer);
  CHECK(g.tensors[g.find_tensor("permute")].kind == TensorKind::Parameter);
  CHECK(g.tensors[g.find_tensor("squeeze")].kind == TensorKind::Buffer);
  CHECK(parameter_bytes(g) == (32 * 16 + 16 * 16) * 4);
}

TEST_CASE("dynamo export: a table the exporter gathered from a parameter is a parameter memest names as over") {
  // LeViT's attention: attn = q @ k * scale + attention_biases[:, attention_bias_idxs].
  // The exporter folds the gather into `index_5` (5 heads x 49 x 49), larger than the
  // parameter it read (5 x 49), which the file holds in no form. It stays a parameter
  // (torch sends gradients through the gather), in Graph::derived_parameters, and the
  // accounting says how many of the parameter bytes are such tables: 5 * 49 * 49 * 4.
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,5,49,49
param index_5 float32 5,49,49
param val_9 float32 49,49
node MatMul x val_9 -> s @stages.1.blocks.0.attn
node Add s index_5 -> y @stages.1.blocks.0.attn
output y
)");
  g.relink();
  ParameterReads reads;
  reads.by_node = {{"stages.1.blocks.0.attn.qkv.weight"}, {}};
  const std::vector<std::string_view> params = {"stages.1.blocks.0.attn.qkv.weight",
                                                "stages.1.blocks.0.attn.attention_biases"};
  keep_exported_parameters(g, params, {}, reads);
  const int table = g.find_tensor("index_5");
  CHECK(g.tensors[table].kind == TensorKind::Parameter);
  REQUIRE(g.derived_parameters.size() == 1);
  CHECK(g.derived_parameters[0] == table);
  CHECK(g.tensors[g.find_tensor("val_9")].kind == TensorKind::Parameter);  // a folded weight, no table
  const Accounting a = account(g, TrainConfig{});
  CHECK(a.parameter_bytes == (5 * 49 * 49 + 49 * 49) * 4);
  CHECK(a.derived_count == 5 * 49 * 49);
  CHECK(a.derived_bytes == 5 * 49 * 49 * 4);
  REQUIRE(!g.warnings.empty());
  CHECK(g.warnings.back().find("1 table the exporter computed from a parameter with a buffer or indices (index_5)") != std::string::npos);
}

TEST_CASE("dynamo export: what the exporter's optimizer folded into an initializer says whether it is a parameter") {
  // timm's mixed RoPE: rope.freqs (a parameter) selected and unsqueezed, as unsqueeze_1;
  // rope.t_x (a buffer) scaled, as t_scaled; LeViT's attention biases gathered by their
  // index buffer, as table. The value_info of each carries the optimizer's folded_from.
  // All three are read at the top level, where no module rule can tell them apart.
  const std::string signature =
      "# inputs\np_rope_freqs: PARAMETER target='rope.freqs'\n"
      "p_attn_attention_biases: PARAMETER target='attn.attention_biases'\n"
      "b_rope_t_x: BUFFER target='rope.t_x'\nb_attn_attention_bias_idxs: BUFFER target='attn.attention_bias_idxs'\n"
      "x: USER_INPUT\n";
  auto folded = [](const std::string& name, const std::string& dims, const std::string& from) {
    return lfield(13, value_info(name, tensor_type(1, dims)) +
                          lfield(4, entry("pkg.onnxscript.optimizer.folded_from", from)));
  };
  const std::string d6 = dim_value(6), d1 = dim_value(1), d32 = dim_value(32), d196 = dim_value(196);
  const std::string body =
      lfield(1, lfield(1, "x") + lfield(1, "unsqueeze_1") + lfield(2, "a") + lfield(4, "Mul")) +
      lfield(1, lfield(1, "a") + lfield(1, "t_scaled") + lfield(2, "b") + lfield(4, "Add")) +
      lfield(1, lfield(1, "b") + lfield(1, "table") + lfield(2, "y") + lfield(4, "Add")) +
      initializer("unsqueeze_1", {6, 1, 32}) + initializer("t_scaled", {6, 196, 32}) +
      initializer("table", {6, 196, 32}) +
      lfield(11, value_info("x", tensor_type(1, dim_param("batch") + d6 + d196 + d32))) +
      lfield(12, value_info("y", tensor_type(1, dim_param("batch") + d6 + d196 + d32))) +
      folded("unsqueeze_1", d6 + d1 + d32, "['rope.freqs', 'select', 'val_7', 'val_8']") +
      folded("t_scaled", d6 + d196 + d32, "['rope.t_x', 'val_6']") +
      folded("table", d6 + d196 + d32, "['index', 'attn.attention_bias_idxs', 'attn.attention_biases', 'val_9']");
  const std::string sig = lfield(16, entry("pkg.torch.export.ExportedProgram.graph_signature", signature));
  const Graph g = read_onnx_bytes(dynamo_model(body + sig), "m.onnx");
  const int freqs = g.find_tensor("unsqueeze_1"), t_x = g.find_tensor("t_scaled"), table = g.find_tensor("table");
  CHECK(g.tensors[freqs].kind == TensorKind::Parameter);
  CHECK(g.tensors[t_x].kind == TensorKind::Buffer);
  CHECK(g.tensors[table].kind == TensorKind::Parameter);
  // The table, folded from a parameter with an index buffer, is larger than the
  // parameter; the selected freqs are not.
  REQUIRE(g.derived_parameters.size() == 1);
  CHECK(g.derived_parameters[0] == table);
}

TEST_CASE("python_strings: the quoted names of a Python list") {
  const auto v = python_strings("['rope.freqs', 'select', 'val_7']");
  REQUIRE(v.size() == 3);
  CHECK(v[0] == "rope.freqs");
  CHECK(v[2] == "val_7");
  CHECK(python_strings("[]").empty());
  CHECK(python_strings("['unterminated").empty());
}
