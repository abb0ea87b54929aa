// The BatchNorms torch 2.11's dynamo exporter folds into the layer before them, and what
// memest puts back (frontends/dynamo_repair.h restore_batch_norm): the BatchNorm, its
// parameters and statistics, its mode, the layer's own bias and Python statement.
#include <doctest/doctest.h>

#include <string>

#include "estimator/analysis.h"
#include "estimator/frames.h"
#include "frontends/dynamo_repair.h"
#include "frontends/onnx_reader.h"
#include "frontends/text_reader.h"
#include "tests/dynamo_test_util.h"
#include "tests/wire_builder.h"

using namespace memest;
using namespace memest::testing;

TEST_CASE("dynamo export: a BatchNorm the exporter dropped after a Conv is put back") {
  // torch 2.11's dynamo exporter leaves `conv1 -> bn1` as one Conv carrying bn1's
  // metadata and output (resnet18: 20 BatchNorms gone, the estimate 38% under).
  auto graph = [](const std::string& aten) {
    const std::string ns = ": pkg.Root/bn1: torch.nn.modules.batchnorm.BatchNorm2d/_native_batch_norm_legit: " + aten;
    return dynamo_model(lfield(1, lfield(1, "x") + lfield(1, "conv1.weight") + lfield(2, "getitem") + lfield(4, "Conv") +
                              lfield(9, entry("namespace", ns))) +
                 lfield(1, lfield(1, "getitem") + lfield(2, "y") + lfield(4, "Relu")) + initializer("conv1.weight", {8, 3, 1, 1}) +
                 lfield(11, value_info("x", tensor_type(1, dim_param("batch") + dim_value(3) + dim_value(16) + dim_value(16)))) +
                 lfield(12, value_info("y", tensor_type(1, dim_param("batch") + dim_value(8) + dim_value(16) + dim_value(16)))));
  };
  const Graph g = read_onnx_bytes(graph("aten._native_batch_norm_legit_functional.default"), "m.onnx");
  REQUIRE(g.nodes.size() == 3);
  CHECK(g.nodes[0].op == "Conv");
  CHECK(g.nodes[0].module == "conv1");
  CHECK(g.nodes[1].op == "BatchNormalization");
  CHECK(g.nodes[1].module == "bn1");
  CHECK(g.nodes[1].attr_int("training_mode", -1) == 1);
  CHECK(g.tensors[g.nodes[1].outputs[0]].name == "getitem");
  CHECK(g.tensors[g.find_tensor("bn1.weight")].kind == TensorKind::Parameter);
  CHECK(g.tensors[g.find_tensor("bn1.running_var")].kind == TensorKind::Buffer);

  // The estimate is the one of the graph written with the BatchNorm.
  AnalysisOptions o;
  o.train.loss = Loss::Sum;
  const Estimate restored = estimate(analyze(read_onnx_bytes(graph("aten._native_batch_norm_legit_functional.default"), "m.onnx"), o), 4);
  const Estimate written = estimate(analyze(read_text_graph(R"(
opset 18
input x float32 batch,3,16,16
param conv1.weight float32 8,3,1,1
param bn1.weight float32 8
param bn1.bias float32 8
buffer bn1.running_mean float32 8
buffer bn1.running_var float32 8
node Conv x conv1.weight -> c @conv1
node BatchNormalization c bn1.weight bn1.bias bn1.running_mean bn1.running_var -> getitem training_mode=1 @bn1
node Relu getitem -> y
output y
)"), o), 4);
  CHECK(restored.peak.peak_bytes == written.peak.peak_bytes);

  // Exported in eval mode: the BatchNorm comes back in inference mode, and memest says so.
  const Analysis eval = analyze(read_onnx_bytes(graph("aten._native_batch_norm_legit_no_training.default"), "m.onnx"), o);
  CHECK(eval.inference_export);
}

TEST_CASE("dynamo export: a layer folded into a BatchNorm called in a statement of its own runs in its own") {
  // torchvision's Bottleneck, exported with both BatchNorms folded into their Convs; each
  // Conv carries its BatchNorm's stack:
  //   out = self.conv1(x)    # b.py:10   (no node says so)
  //   out = self.bn1(out)    # b.py:11
  //   out = self.relu(out)   # b.py:12
  //   out = self.conv2(out)  # b.py:13
  //   out = self.bn2(out)    # b.py:14
  //   return self.head(out)  # b.py:15
  // relu's output is `out` until conv2's statement rebinds it: it goes when conv2
  // returns (the GPU frees it before bn2 allocates: seqtrace33c), not after bn2.
  auto frame = [](int line, const std::string& code) {
    return "File \"b.py\", line " + std::to_string(line) + ", in forward\n    " + code + "\n  ";
  };
  const std::string bn_frame = "File \"batchnorm.py\", line 194, in forward\n    return F.batch_norm(";
  const std::string aten = "aten._native_batch_norm_legit_functional.default";
  auto node = [&](const std::string& in, const std::string& w, const std::string& out, const std::string& op,
                  const std::string& module, const std::string& type, const std::string& trace) {
    std::string ins = lfield(1, in) + (w.empty() ? "" : lfield(1, w));
    const std::string ns = ": pkg.Root/" + module + ": " + type + "/" + op + ": aten." + op;
    return lfield(1, ins + lfield(2, out) + lfield(4, op) + lfield(9, entry("namespace", ns)) +
                         lfield(9, entry("pkg.torch.onnx.stack_trace", trace)));
  };
  auto graph = [&](const std::string& bn2_code) {
    const std::string bn = "torch.nn.modules.batchnorm.BatchNorm2d/_native_batch_norm_legit_functional: " + aten;
    auto folded = [&](const std::string& in, const std::string& w, const std::string& out, const std::string& module,
                      const std::string& trace) {
      const std::string ns = ": pkg.Root/" + module + ": " + bn;
      return lfield(1, lfield(1, in) + lfield(1, w) + lfield(2, out) + lfield(4, "Conv") + lfield(9, entry("namespace", ns)) +
                           lfield(9, entry("pkg.torch.onnx.stack_trace", trace)));
    };
    const std::string relu = "torch.nn.modules.activation.ReLU";
    return dynamo_model(folded("x", "conv1.weight", "getitem", "bn1", frame(11, "out = self.bn1(out)") + bn_frame) +
                 node("getitem", "", "r", "Relu", "relu", relu, frame(12, "out = self.relu(out)")) +
                 folded("r", "conv2.weight", "getitem_1", "bn2", frame(14, bn2_code) + bn_frame) +
                 node("getitem_1", "", "y", "Relu", "head", relu, frame(15, "return self.head(out)")) +
                 initializer("conv1.weight", {8, 8, 1, 1}) + initializer("conv2.weight", {8, 8, 1, 1}) +
                 lfield(11, value_info("x", tensor_type(1, dim_param("batch") + dim_value(8) + dim_value(4) + dim_value(4)))) +
                 lfield(12, value_info("y", tensor_type(1, dim_param("batch") + dim_value(8) + dim_value(4) + dim_value(4)))));
  };
  const Graph g = read_onnx_bytes(graph("out = self.bn2(out)"), "m.onnx");
  REQUIRE(g.nodes.size() == 6);  // conv1, bn1, relu, conv2, bn2, head
  REQUIRE(g.nodes[3].op == "Conv");
  REQUIRE(g.nodes[4].op == "BatchNormalization");
  const std::vector<PyFrame>& conv2 = g.python.stacks[static_cast<size_t>(g.nodes[3].py_stack)];
  const std::vector<PyFrame>& bn2 = g.python.stacks[static_cast<size_t>(g.nodes[4].py_stack)];
  REQUIRE(conv2.size() == 1);  // the caller's frame, not into the BatchNorm's forward
  REQUIRE(bn2.size() == 2);
  const PyStatement& twin = g.python.statements[static_cast<size_t>(conv2[0].statement)];
  CHECK(conv2[0].statement != bn2[0].statement);
  CHECK(twin.targets == g.python.statements[static_cast<size_t>(bn2[0].statement)].targets);
  CHECK(twin.binds);
  // relu's output goes at its last reader, conv2: no hold past it (-1).
  CHECK(frame_release_nodes(g)[g.find_tensor("r")] == -1);

  // A nested call runs the Conv in the BatchNorm's statement: left as read, and relu's
  // output, bound to `out`, stays until that statement's end (bn2, node 4).
  const Graph nested = read_onnx_bytes(graph("out = self.bn2(self.conv2(out))"), "m.onnx");
  CHECK(nested.nodes[3].py_stack == nested.nodes[4].py_stack);
  CHECK(frame_release_nodes(nested)[nested.find_tensor("r")] == 4);
}

TEST_CASE("dynamo export: a BatchNorm1d dropped after a Linear is put back too") {
  // fc -> bn (BatchNorm1d(16)) -> relu, as torch 2.11 exports it: one Gemm with bn's namespace.
  const std::string ns = ": pkg.Root/bn: torch.nn.modules.batchnorm.BatchNorm1d/_native_batch_norm_legit_functional: "
                         "aten._native_batch_norm_legit_functional.default";
  std::string trans_b = lfield(1, "transB") + vfield(3, 1) + vfield(20, 2);  // AttributeProto: name, i, type INT
  const Graph g = read_onnx_bytes(
      dynamo_model(lfield(1, lfield(1, "x") + lfield(1, "fc.weight") + lfield(2, "getitem") + lfield(4, "Gemm") +
                      lfield(5, trans_b) + lfield(9, entry("namespace", ns))) +
            lfield(1, lfield(1, "getitem") + lfield(2, "y") + lfield(4, "Relu")) + initializer("fc.weight", {16, 8}) +
            lfield(11, value_info("x", tensor_type(1, dim_param("batch") + dim_value(8)))) +
            lfield(12, value_info("y", tensor_type(1, dim_param("batch") + dim_value(16))))),
      "m.onnx");
  REQUIRE(g.nodes.size() == 3);
  CHECK(g.nodes[0].op == "Gemm");
  CHECK(g.nodes[0].module == "fc");
  CHECK(g.nodes[1].op == "BatchNormalization");
  const Tensor& scale = g.tensors[g.find_tensor("bn.weight")];
  REQUIRE(scale.shape);
  CHECK(shape_str(*scale.shape) == "[16]");  // transB: W is [out, in]
}

TEST_CASE("dynamo export: a kept BatchNorm from aten's training batch norm is in training mode") {
  // The exporter writes the BatchNormalization it keeps (after a Concat: timm's mixed
  // blocks) without training_mode; its aten op says which mode ran.
  Node bn;
  bn.op = "BatchNormalization";
  mark_training_batch_norm(bn, "aten._native_batch_norm_legit_functional.default");
  CHECK(bn.attr_int("training_mode", 0) == 1);
  Node eval;
  eval.op = "BatchNormalization";
  mark_training_batch_norm(eval, "aten._native_batch_norm_legit_no_training.default");
  CHECK(eval.attr("training_mode") == nullptr);
  Node other;
  other.op = "BatchNormalization";
  mark_training_batch_norm(other, "aten.conv2d.default");
  CHECK(other.attr("training_mode") == nullptr);
}

TEST_CASE("dynamo export: a conv bias the exporter folded a BatchNorm into is put back in place of the made one") {
  // rexnet's squeeze-excite: fc1 (a Conv with a zero bias) then bn. The exporter folds bn
  // into the Conv, which then reads a bias it made, se.fc1.weight_bias (no parameter: the
  // signature does not list it); se.fc1.bias, listed, has no tensor. The Conv reads the
  // parameter instead: 4 floats, as torch counts them (rexnet_100 read 2,748 bytes under).
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,8,1,1
param se.fc1.weight float32 4,8,1,1
buffer se.fc1.weight_bias float32 4
node Conv x se.fc1.weight se.fc1.weight_bias -> y @se.fc1
output y
)");
  g.relink();
  const std::vector<std::string_view> params = {"se.fc1.weight", "se.fc1.bias"};
  CHECK(restore_dropped_biases(g, params) == 1);
  const int b = g.find_tensor("se.fc1.bias");
  REQUIRE(b >= 0);
  CHECK(g.nodes[0].inputs.size() == 3);
  CHECK(g.nodes[0].inputs[2] == b);
  CHECK(*g.tensors[b].shape == Shape{Expr(4)});
  CHECK(parameter_bytes(g) == (4 * 8 + 4) * 4);
}
