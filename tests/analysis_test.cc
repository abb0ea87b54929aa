// The analysis pipeline's hints to the user (estimator/analysis.cc): a graph exported
// for inference is named, with advice in its own exporter's terms.
#include <doctest/doctest.h>

#include <string>

#include "estimator/analysis.h"
#include "frontends/text_reader.h"

namespace memest {
namespace {

// A CNN of `convs` 3x3 convolutions, each into a ReLU, then pooling and a classifier.
// `bias`: the convolutions carry one, under the exporter's made-up names when
// `folded` (as torch 1.13's default eval export of resnet18 names them: onnx::Conv_194);
// `extra` is appended before the pooling (it reads "h").
std::string cnn(int convs, bool bias, const std::string& extra = "", const std::string& last = "h",
                bool folded = true) {
  std::string t = "opset 17\ninput x float32 batch,8,16,16\n";
  std::string in = "x";
  for (int i = 0; i < convs; ++i) {
    const std::string c = "c" + std::to_string(i);
    const std::string w = folded ? "onnx::Conv_" + std::to_string(2 * i + 100) : c + ".weight";
    const std::string b = folded ? "onnx::Conv_" + std::to_string(2 * i + 101) : c + ".bias";
    t += "param " + w + " float32 8,8,3,3\n";
    if (bias) t += "param " + b + " float32 8\n";
    t += "node Conv " + in + " " + w + (bias ? " " + b : "") + " -> " + c +
         "_out kernel_shape=3,3 pads=1,1,1,1 @" + c + "\n";
    t += "node Relu " + c + "_out -> " + c + "_act @relu" + std::to_string(i) + "\n";
    in = c + "_act";
  }
  t += "node Identity " + in + " -> h\n" + extra;
  t += "node GlobalAveragePool " + last + " -> p\nnode Flatten p -> f\n";
  t += "param fc.weight float32 10,8\nparam fc.bias float32 10\nnode Gemm f fc.weight fc.bias -> y transB=1 @fc\n";
  return t + "output y\n";
}

Analysis analyze_text(const std::string& text, const std::string& file) {
  return analyze(read_text_graph(text, file), AnalysisOptions{});
}

std::string warnings(const Analysis& a) {
  std::string all;
  for (const auto& w : a.graph.warnings) all += w + "\n";
  return all;
}

}  // namespace

TEST_CASE("inference export: biases the exporter computed, no BatchNorm, no Dropout: BatchNorm was folded") {
  const Analysis a = analyze_text(cnn(8, true), "folded.onnx");
  CHECK(a.inference_export);
  CHECK(a.inference_evidence.find("8 convolutions carry biases the exporter computed") != std::string::npos);
  const std::string w = warnings(a);
  CHECK(w.find("exported for inference") != std::string::npos);
  // The legacy exporter's spelling, for an ONNX file.
  CHECK(w.find("training=torch.onnx.TrainingMode.TRAINING") != std::string::npos);
  CHECK(w.find("do_constant_folding=False") != std::string::npos);
  CHECK(w.find("torch.jit") == std::string::npos);
}

TEST_CASE("inference export: a TorchScript file is told to trace after model.train(), not ONNX advice") {
  const Analysis a = analyze_text(cnn(8, true), "folded.pt");
  REQUIRE(a.inference_export);
  const std::string w = warnings(a);
  CHECK(w.find("torch.jit.trace") != std::string::npos);
  CHECK(w.find("torch.onnx") == std::string::npos);
}

TEST_CASE("inference export: what a training export keeps is not flagged") {
  SUBCASE("a Dropout (VGG and SqueezeNet have biased convolutions and keep their Dropout)") {
    const Analysis a = analyze_text(cnn(8, true, "node Dropout h -> hd hm ratio=0.5\n", "hd"), "vgg.onnx");
    CHECK_FALSE(a.inference_export);
    CHECK(a.inference_evidence.empty());
  }
  SUBCASE("convolutions without a bias") {
    CHECK_FALSE(analyze_text(cnn(8, false), "nobias.onnx").inference_export);
  }
  SUBCASE("biases under the parameters' own names (a VGG without Dropout): real biases") {
    CHECK_FALSE(analyze_text(cnn(8, true, "", "h", false), "plain.onnx").inference_export);
  }
  SUBCASE("a few biased convolutions: a small CNN, not a folded one") {
    CHECK_FALSE(analyze_text(cnn(4, true), "small.onnx").inference_export);
  }
  SUBCASE("a training-mode BatchNormalization") {
    const std::string bn =
        "param bn.weight float32 8\nparam bn.bias float32 8\nbuffer bn.running_mean float32 8\n"
        "buffer bn.running_var float32 8\n"
        "node BatchNormalization h bn.weight bn.bias bn.running_mean bn.running_var -> hb rm rv training_mode=1 @bn\n";
    CHECK_FALSE(analyze_text(cnn(8, true, bn, "hb"), "bn.onnx").inference_export);
  }
}

TEST_CASE("inference export: a BatchNormalization in inference mode") {
  const std::string bn =
      "param bn.weight float32 8\nparam bn.bias float32 8\nbuffer bn.running_mean float32 8\n"
      "buffer bn.running_var float32 8\n"
      "node BatchNormalization h bn.weight bn.bias bn.running_mean bn.running_var -> hb training_mode=0 @bn\n"
      "node Dropout hb -> hd hm ratio=0.5\n";
  const Analysis a = analyze_text(cnn(2, false, bn, "hd"), "eval.onnx");
  CHECK(a.inference_export);
  CHECK(a.inference_evidence == "BatchNormalization in inference mode");
}


// A weight that a dynamo export lists among its parameters but that no gradient reaches
// (read only under torch.no_grad(): DeepSeek-V3.2's indexer projections; here a gate
// read through a comparison) is a buffer in memory and torch's parameter in the count.
namespace {
const char* kGatedByParameter =
    "opset 17\ninput x float32 batch,8\n"
    "param gate.weight float32 8\n"                                  // 32 B, reaches only a bool
    "node Greater gate.weight gate.weight -> m @gate\n"
    "node Where m x x -> z @gate\n"
    "param fc.weight float32 10,8\nparam fc.bias float32 10\n"      // 320 B + 40 B
    "node Gemm z fc.weight fc.bias -> y transB=1 @fc\noutput y\n";
}

TEST_CASE("parameters: a listed weight no gradient reaches counts as torch's parameter, not as trained") {
  Graph g = read_text_graph(kGatedByParameter, "gated.txt");
  g.lists_parameters = true;  // as a dynamo export's graph signature makes it
  const Analysis a = analyze(std::move(g), AnalysisOptions{});
  CHECK(a.accounting.parameter_count == 8 + 80 + 10);
  CHECK(a.accounting.parameter_bytes == 32 + 320 + 40);
  CHECK(a.accounting.trainable_count == 90);
  CHECK(a.accounting.trainable_bytes == 360);
  CHECK(a.accounting.gradless_count == 8);
  CHECK(a.accounting.gradless_bytes == 32);
  CHECK(a.accounting.buffer_bytes == 0);
}

TEST_CASE("parameters: without the exporter's list the same weight is a buffer (the legacy exporter's masks)") {
  const Analysis a = analyze_text(kGatedByParameter, "gated.txt");
  CHECK(a.accounting.parameter_bytes == 360);
  CHECK(a.accounting.gradless_bytes == 0);
  CHECK(a.accounting.buffer_bytes == 32);
}

}  // namespace memest
