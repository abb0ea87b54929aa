// What the dynamo exporter writes beside the graph and memest reads: the exported
// program's signature (which initializers are parameters) and each node's module
// classes (which modules run with autocast disabled).
#include <doctest/doctest.h>

#include <string>

#include "estimator/analysis.h"
#include "frontends/onnx_reader.h"
#include "frontends/text_reader.h"
#include "tests/wire_builder.h"

using namespace memest;
using namespace memest::testing;

namespace {

std::string dim_value(int64_t v) { return lfield(1, vfield(1, static_cast<uint64_t>(v))); }
std::string dim_param(const std::string& p) { return lfield(1, lfield(2, p)); }
std::string tensor_type(int elem, const std::string& dims) { return lfield(1, vfield(1, elem) + lfield(2, dims)); }
std::string value_info(const std::string& name, const std::string& type) { return lfield(1, name) + lfield(2, type); }
std::string entry(const std::string& key, const std::string& value) { return lfield(1, key) + lfield(2, value); }
// A float initializer of these dims, no data (shape-only, as models/ stores them).
std::string initializer(const std::string& name, std::initializer_list<int64_t> dims) {
  std::string d;
  for (int64_t v : dims) d += vfield(1, static_cast<uint64_t>(v));
  return lfield(5, d + vfield(2, 1) + lfield(8, name));
}
std::string model(const std::string& graph) {
  return vfield(1, 10) + lfield(7, graph) + lfield(8, lfield(1, "") + vfield(2, 18));
}

}  // namespace

TEST_CASE("dynamo export: initializers the signature does not list as parameters get no gradient") {
  // y = (x * w) * (x * c) + x @ big: w is listed (PARAMETER); c, 32 floats the exporter
  // folded from a buffer (llama's inv_freq[None, :, None].expand(...) as "expand_2"),
  // is not; big, a weight's folded transpose ("val_1188"), is not listed either, but a
  // buffer of 4,097+ elements is taken for a weight.
  const std::string signature =
      "# inputs\np_w: PARAMETER target='w'\nb_freq: BUFFER target='freq' persistent=False\nx: USER_INPUT\n";
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
      model(body + lfield(16, entry("pkg.torch.export.ExportedProgram.graph_signature", signature))), "m.onnx");
  CHECK(g.tensors[g.find_tensor("w")].kind == TensorKind::Parameter);
  CHECK(g.tensors[g.find_tensor("c")].kind == TensorKind::Buffer);
  CHECK(g.tensors[g.find_tensor("big")].kind == TensorKind::Parameter);

  // Without a signature (the TorchScript exporter), every float initializer is a parameter.
  const Graph h = read_onnx_bytes(model(body), "m.onnx");
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
    return model(lfield(1, lfield(1, "x") + lfield(2, "y") + lfield(4, "Relu") + more) + io);
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
