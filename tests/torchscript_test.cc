// TorchScript frontend tests: small models that make_torchscript.py builds at ctest
// time with Debian's torch 1.13 (traced, scripted, and exported to ONNX), lowered
// by memest-torchscript and checked against torch's own numbers and against the
// ONNX frontend. Without the generated models (a plain `memest_tests` run) or the
// helper, each case says so and passes.
#include <doctest/doctest.h>

#include "frontends/text_reader.h"
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "estimator/analysis.h"
#include "estimator/error.h"
#include "frontends/load.h"
#include "frontends/onnx_reader.h"

using namespace memest;

namespace {

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// The generated models' folder, or "" after a MESSAGE saying why not.
std::string models() {
#ifdef MEMEST_TS_HELPER
  setenv("MEMEST_TORCHSCRIPT", MEMEST_TS_HELPER, /*overwrite=*/0);
#endif
  const char* helper = std::getenv("MEMEST_TORCHSCRIPT");
  if (!helper || !exists(helper)) {
    MESSAGE("skipped: memest-torchscript is not built (libtorch-dev missing?)");
    return "";
  }
  const char* dir = std::getenv("MEMEST_TS_MODELS");
  if (!dir || !exists(std::string(dir) + "/manifest.json")) {
    MESSAGE("skipped: no generated TorchScript models (ctest -R torchscript builds them)");
    return "";
  }
  return dir;
}

nlohmann::json manifest(const std::string& dir) {
  std::ifstream in(dir + "/manifest.json");
  return nlohmann::json::parse(in);
}

std::vector<InputSpec> specs_of(const nlohmann::json& entry) {
  return {parse_input_shape(entry.at("input_shape").get<std::string>())};
}

Analysis analyze_adam(Graph g) {
  AnalysisOptions o;
  o.train.optim = Optim::Adam;
  return analyze(std::move(g), o);
}

const Node* find_node(const Graph& g, const std::string& op) {
  for (const Node& n : g.nodes) {
    if (!n.dead && n.op == op) return &n;
  }
  return nullptr;
}

int count_nodes(const Graph& g, const std::string& op) {
  int k = 0;
  for (const Node& n : g.nodes) k += !n.dead && n.op == op;
  return k;
}

}  // namespace

TEST_CASE("torchscript: traced and scripted models estimate like their ONNX export") {
  const std::string dir = models();
  if (dir.empty()) return;
  const nlohmann::json all = manifest(dir);
  for (const auto& [name, entry] : all.items()) {
    const Analysis onnx = analyze_adam(read_onnx_file(dir + "/" + name + ".onnx"));
    const int64_t want = estimate(onnx, 32).peak.peak_bytes;
    for (const std::string kind : {"_traced.pt", "_scripted.pt"}) {
      CAPTURE(name);
      CAPTURE(kind);
      const Analysis ts = analyze_adam(load_model(dir + "/" + name + kind, specs_of(entry)));
      // Parameters count once even when tied, as named_parameters() does.
      CHECK(ts.accounting.parameter_bytes == entry.at("parameter_bytes").get<int64_t>());
      // memest counts the buffers forward reads; BatchNorm's num_batches_tracked it
      // does not (nor does an ONNX export have it).
      CHECK(ts.accounting.buffer_bytes == onnx.accounting.buffer_bytes);
      CHECK(ts.accounting.buffer_bytes <= entry.at("buffer_bytes").get<int64_t>());
      const int64_t got = estimate(ts, 32).peak.peak_bytes;
      // The LSTM's ONNX export copies its weights into ONNX's gate order; TorchScript
      // keeps them (as cuDNN does). Everything else lowers to the same graph.
      CHECK(static_cast<double>(got) == doctest::Approx(static_cast<double>(want)).epsilon(0.01));
    }
  }
}

TEST_CASE("torchscript: batch_norm keeps its training flag, relu_ is marked in place") {
  const std::string dir = models();
  if (dir.empty()) return;
  const auto m = manifest(dir);
  for (const std::string kind : {"_traced.pt", "_scripted.pt"}) {
    CAPTURE(kind);
    Graph g = load_model(dir + "/convnet" + kind, specs_of(m.at("convnet")));
    REQUIRE(count_nodes(g, "BatchNormalization") == 2);
    const Node* bn = find_node(g, "BatchNormalization");
    CHECK(bn->attr_int("training_mode", 0) == 1);
    CHECK(bn->inputs.size() == 5);
    CHECK(g.tensors[bn->inputs[3]].kind == TensorKind::Buffer);  // running_mean
    CHECK(g.tensors[bn->inputs[4]].kind == TensorKind::Buffer);
    CHECK(bn->module == "bn1");
    const Node* relu = find_node(g, "Relu");
    REQUIRE(relu);
    CHECK(relu->attr_int("inplace", 0) == 1);
    const Node* pool = find_node(g, "MaxPool");
    REQUIRE(pool);
    CHECK(pool->attr_int("ceil_mode", 0) == 1);
    CHECK(find_node(g, "GlobalAveragePool"));
    const Node* conv2 = nullptr;
    for (const Node& n : g.nodes) {
      if (n.op == "Conv" && n.module == "conv2") conv2 = &n;
    }
    REQUIRE(conv2);
    CHECK(conv2->attr_int("group", 1) == 2);
    CHECK(conv2->attr_ints("pads") == std::vector<int64_t>{1, 1, 1, 1});
  }
}

TEST_CASE("torchscript: dropout keeps its probability; GELU, SiLU and linear stay whole") {
  const std::string dir = models();
  if (dir.empty()) return;
  const auto m = manifest(dir);
  for (const std::string kind : {"_traced.pt", "_scripted.pt"}) {
    CAPTURE(kind);
    Graph g = load_model(dir + "/mlp" + kind, specs_of(m.at("mlp")));
    const Node* drop = find_node(g, "Dropout");
    REQUIRE(drop);
    REQUIRE(drop->inputs.size() == 3);
    // The ratio is a Constant node's float; the shape pass reads it into fvalue.
    const Analysis a = analyze_adam(std::move(g));
    const Node* d = find_node(a.graph, "Dropout");
    REQUIRE(d);
    const auto& ratio = a.graph.tensors[d->inputs[1]].fvalue;
    REQUIRE(ratio);
    CHECK((*ratio)[0] == doctest::Approx(0.25));
    CHECK(find_node(a.graph, "Gelu"));
    CHECK(find_node(a.graph, "Silu"));
    CHECK(count_nodes(a.graph, "Linear") == 3);
  }
}

TEST_CASE("torchscript: a tied embedding and head are one parameter") {
  const std::string dir = models();
  if (dir.empty()) return;
  const auto m = manifest(dir);
  Graph g = load_model(dir + "/block_traced.pt", specs_of(m.at("block")));
  const int emb = g.find_tensor("emb.weight");
  REQUIRE(emb >= 0);
  CHECK(g.find_tensor("head.weight") < 0);
  int uses = 0;
  for (const Node& n : g.nodes) {
    for (int i : n.inputs) uses += i == emb;
  }
  CHECK(uses == 2);  // Gather (embedding) and Linear (head)
  CHECK(g.tensors[g.inputs[0]].dtype == DType::I64);
}

TEST_CASE("torchscript: an LSTM is one ONNX LSTM per layer over the module's weights") {
  // A batch_first LSTM: transposed in, sequence-first layers, a transposed view out.
  const std::string dir = models();
  if (dir.empty()) return;
  const auto m = manifest(dir);
  for (const std::string kind : {"_traced.pt", "_scripted.pt"}) {
    CAPTURE(kind);
    Graph g = load_model(dir + "/lstm_lm" + kind, specs_of(m.at("lstm_lm")));
    CHECK(count_nodes(g, "LSTM") == 2);
    const Node* lstm = find_node(g, "LSTM");
    REQUIRE(lstm);
    CHECK(lstm->attr_int("hidden_size", 0) == 48);
    CHECK(lstm->attr_int("layout", 0) == 0);  // sequence-first, as cuDNN runs it
    CHECK(lstm->module == "lstm");
  }
}

TEST_CASE("torchscript: bad files and bad --input-shape are one clear error") {
  const std::string dir = models();
  if (dir.empty()) return;
  const auto m = manifest(dir);
  CHECK_THROWS_WITH_AS(load_model(dir + "/broken_zip.pt", specs_of(m.at("mlp"))),
                       doctest::Contains("libtorch cannot load it as TorchScript"), Error);
  CHECK_THROWS_WITH_AS(load_model(dir + "/mlp_traced.pt", {}), doctest::Contains("needs --input-shape"), Error);
  CHECK_THROWS_WITH_AS(load_model(dir + "/mlp_traced.pt", {parse_input_shape("64"), parse_input_shape("64")}),
                       doctest::Contains("forward() takes 1 input (x), --input-shape was given 2 times"), Error);
  // An input of the wrong dtype for what it feeds, named with the fix.
  CHECK_THROWS_WITH_AS(load_model(dir + "/block_traced.pt", {parse_input_shape("16:float32")}),
                       doctest::Contains("input 'ids' is float32 but feeds an embedding as indices; "
                                         "give it --input-shape 16:int64"),
                       Error);
  CHECK_THROWS_WITH_AS(load_model(dir + "/convnet_scripted.pt", {parse_input_shape("3x32x32:int64")}),
                       doctest::Contains("give it --input-shape 3x32x32:float32"), Error);
  // A shape the model cannot take is the shape pass's error, naming the node.
  CHECK_THROWS_AS(analyze_adam(load_model(dir + "/mlp_traced.pt", {parse_input_shape("65")})), Error);
}

TEST_CASE("torchscript: a file saved by torch 2.11 loads") {
  const std::string path = std::string(MEMEST_SOURCE_DIR) + "/models/torchscript/tiny_mlp_torch211.pt";
  if (models().empty()) return;
  if (!exists(path)) {
    MESSAGE("skipped: " << path << " is absent (validate/export.py --torchscript makes it on the GPU machine)");
    return;
  }
  Graph g = load_model(path, {parse_input_shape("32")});
  const Analysis a = analyze_adam(std::move(g));
  CHECK(a.accounting.parameter_bytes == (32 * 64 + 64 + 64 * 10 + 10) * 4);
  CHECK(count_nodes(a.graph, "Linear") == 2);
  // validate.nets.TinyMLP is fc2(relu(fc1(x))): written as text, the same bytes.
  const Analysis text = analyze_adam(read_text_graph(R"(
opset 17
input x float32 batch,32
param fc1.weight float32 64,32
param fc1.bias float32 64
param fc2.weight float32 10,64
param fc2.bias float32 10
node memest::Linear x fc1.weight fc1.bias -> h @fc1
node Relu h -> r @relu
node memest::Linear r fc2.weight fc2.bias -> out @fc2
output out
)"));
  CHECK(estimate(a, 8).peak.peak_bytes == estimate(text, 8).peak.peak_bytes);
  CHECK(estimate(a, 8).reserved_bytes == estimate(text, 8).reserved_bytes);
}

TEST_CASE("torchscript: scaled_dot_product_attention, which libtorch 1.13 lacks, is one Attention") {
  // sdpa_scripted.pt's code calls torch.scaled_dot_product_attention(q, k, v, None,
  // 0.1, True), as torch >= 2.0 writes it; the helper declares the schema to load it.
  const std::string dir = models();
  if (dir.empty()) return;
  Graph g = load_model(dir + "/sdpa_scripted.pt", {parse_input_shape("16x32")});
  REQUIRE(count_nodes(g, "Attention") == 1);
  const Node* att = find_node(g, "Attention");
  CHECK(att->domain == "memest");
  CHECK(att->attr_float("dropout", 0) == doctest::Approx(0.1));
  CHECK(att->attr_int("is_causal", 0) == 1);
  CHECK(count_nodes(g, "Softmax") == 0);
  const Analysis a = analyze_adam(std::move(g));
  CHECK(a.accounting.parameter_bytes == (32 * 96 + 96 + 32 * 32 + 32) * 4);
  CHECK(estimate(a, 4).peak.peak_bytes > 0);
}
