// Repairs of what torch's dynamo exporter drops (frontends/dynamo_repair.h), on graphs
// built from text with the FX calls the exporter's metadata would carry.
#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

#include "estimator/analysis.h"
#include "frontends/dynamo_repair.h"
#include "frontends/text_reader.h"

using namespace memest;

namespace {

// timm's CoaT between two stages: `x1_nocls = remove_cls(x1).reshape(B, H, W, C).permute(0,
// 3, 1, 2).contiguous()`, then patch_embed2's convolution. The exporter drops the clone:
// the Conv reads the Transpose, its FX call `%clone_3`.
const char* kCoat = R"(
opset 18
input x float32 batch,6,6,8
param w float32 4,8,1,1
node Relu x -> r @blocks
node Transpose r -> t perm=0,3,1,2 @
node Conv t w -> y kernel_shape=1,1 @proj
output y
)";
constexpr std::string_view kConvCall =
    "%conv2d : [num_users=1] = call_function[target=torch.ops.aten.conv2d.default](args = (%clone_3, %p_w), kwargs = {})";

// Bytes of the blocks `op` nodes allocate in iteration 0's forward.
int64_t forward_bytes(const Analysis& a, const Estimate& e, const std::string& op) {
  int64_t bytes = 0;
  for (const Event& ev : a.program.events) {
    const Block& b = a.program.blocks[ev.block];
    if (ev.kind != Event::Alloc || ev.iter != 0 || ev.phase != Phase::Forward || b.node < 0) continue;
    if (a.graph.nodes[b.node].op == op) bytes += b.bytes.eval(e.bindings);
  }
  return bytes;
}

}  // namespace

TEST_CASE("dynamo repair: .contiguous() of a permuted view the exporter dropped is a copy again") {
  Graph g = read_text_graph(kCoat);
  g.relink();  // as the ONNX reader leaves it
  const std::vector<std::string_view> fx = {"", "", std::string_view(kConvCall)};
  CHECK(restore_dropped_contiguous(g, fx) == 1);
  REQUIRE(g.nodes.size() == 4);
  CHECK(g.nodes[2].op == "Contiguous");
  CHECK(g.nodes[2].inputs[0] == g.find_tensor("t"));
  CHECK(g.nodes[3].op == "Conv");
  CHECK(g.nodes[3].inputs[0] == g.find_tensor("clone_3"));
  // At batch 2 the copy is [2, 8, 6, 6] fp32: 2 * 8 * 36 * 4 = 2,304 bytes, where the
  // Transpose is a view and allocates nothing.
  AnalysisOptions o;
  o.train.loss = Loss::Sum;
  const Analysis a = analyze(std::move(g), o);
  const Estimate e = estimate(a, 2);
  CHECK(forward_bytes(a, e, "Contiguous") == 2304);
  CHECK(forward_bytes(a, e, "Transpose") == 0);
}

TEST_CASE("dynamo repair: .contiguous() of a permute that is contiguous again copies nothing") {
  // transformers' `attn_output.transpose(1, 2).contiguous()` of SDPA's output, which is
  // stored [B, T, H, D]: the permute is contiguous, and .contiguous() returns it. Here x
  // is permuted to NHWC and back.
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,8,6,6
param w float32 4,8,1,1
node Relu x -> r @blocks
node Transpose r -> u perm=0,2,3,1 @
node Transpose u -> t perm=0,3,1,2 @
node Conv t w -> y kernel_shape=1,1 @proj
output y
)");
  g.relink();
  CHECK(restore_dropped_contiguous(g, {"", "", "", std::string_view(kConvCall)}) == 1);
  AnalysisOptions o;
  o.train.loss = Loss::Sum;
  const Analysis a = analyze(std::move(g), o);
  CHECK(forward_bytes(a, estimate(a, 2), "Contiguous") == 0);
}

TEST_CASE("dynamo repair: a clone of a contiguous value, or one the file holds, is left alone") {
  // nn.Dropout(p=0)'s clone: eager returns its input, no copy; the Conv reads the Relu.
  const char* plain = R"(
opset 18
input x float32 batch,8,6,6
param w float32 4,8,1,1
node Relu x -> r @blocks
node Conv r w -> y kernel_shape=1,1 @proj
output y
)";
  Graph g = read_text_graph(plain);
  g.relink();
  CHECK(restore_dropped_contiguous(g, {"", std::string_view(kConvCall)}) == 0);
  CHECK(g.nodes.size() == 2);
  // A value named clone_3 is in the file: the exporter kept what the call read.
  Graph kept = read_text_graph(std::string(kCoat) + "node Identity t -> clone_3 @\n");
  kept.relink();
  CHECK(restore_dropped_contiguous(kept, {"", "", std::string_view(kConvCall)}) == 0);
}
