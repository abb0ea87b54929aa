// The explicit-padding pass (estimator/explicit_pads.h) and what Pad keeps per mode.
#include <doctest/doctest.h>

#include "estimator/analysis.h"
#include "estimator/explicit_pads.h"
#include "estimator/ops/registry.h"
#include "frontends/dynamo_repair.h"
#include "frontends/text_reader.h"
#include "ops_test_util.h"

using namespace memest;

namespace {

// timm's Conv2dSame as torch's dynamo exporter writes it: F.pad(x, (0, 1, 0, 1)) folded
// into a stride-2 Conv's pads, twice on one input (a filter and a gate, as WaveNet does
// with one padded tensor), once on another input with other pads.
const char* kSame = R"(
opset 18
input x float32 batch,3,8,8
param a.weight float32 4,3,3,3
param b.weight float32 4,3,3,3
param c.weight float32 4,4,5,5
node Conv x a.weight -> ya pads=0,0,1,1 strides=2,2 @a
node Conv x b.weight -> yb pads=0,0,1,1 strides=2,2 @b
node Add ya yb -> s @add
node Conv s c.weight -> yc pads=1,1,2,2 strides=2,2 @c
output yc
)";

// Bytes of the blocks the nodes of `module` allocate in iteration 0's forward.
int64_t forward_bytes(const Analysis& a, const Estimate& e, const std::string& module, const std::string& op) {
  int64_t bytes = 0;
  for (const Event& ev : a.program.events) {
    const Block& b = a.program.blocks[ev.block];
    if (ev.kind != Event::Alloc || ev.iter != 0 || ev.phase != Phase::Forward || b.node < 0) continue;
    const Node& n = a.graph.nodes[b.node];
    if (n.module == module && n.op == op) bytes += b.bytes.eval(e.bindings);
  }
  return bytes;
}

}  // namespace

TEST_CASE("explicit pads: an asymmetric Conv padding becomes a Pad before it, one per input and padding") {
  Graph g = read_text_graph(kSame);
  CHECK(split_asymmetric_pads(g) == 3);
  verify_and_sort(g);
  infer_shapes(g);
  int pads = 0;
  for (const Node& n : g.nodes) {
    if (n.op == "Pad") ++pads;
    if (n.op == "Conv") CHECK(n.attr_ints("pads") == std::vector<int64_t>{0, 0, 0, 0});
  }
  CHECK(pads == 2);  // a and b read one padded x
  const Node& a = testing::producer(g, "ya");
  const Node& b = testing::producer(g, "yb");
  CHECK(a.inputs[0] == b.inputs[0]);
  CHECK(shape_str(*g.tensors[a.inputs[0]].shape) == "[batch, 3, 9, 9]");
  CHECK(g.nodes[g.tensors[a.inputs[0]].producer].module == "a");
  // The outputs are the ones the folded pads gave: (8 + 1 - 3) / 2 + 1 = 4, and
  // (4 + 3 - 5) / 2 + 1 = 2.
  CHECK(testing::shape(g, "ya") == "[batch, 4, 4, 4]");
  CHECK(shape_str(*g.tensors[testing::producer(g, "yc").inputs[0]].shape) == "[batch, 4, 7, 7]");
  CHECK(testing::shape(g, "yc") == "[batch, 4, 2, 2]");
}

TEST_CASE("explicit pads: symmetric padding, auto_pad SAME of an odd extent or a stride, and ConvTranspose are left alone") {
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,3,8,8
param a.weight float32 4,3,3,3
param s.weight float32 4,4,3,3
param d.weight float32 4,4,2,2
param t.weight float32 4,4,2,2
node Conv x a.weight -> y pads=1,1,1,1 @a
node Conv y s.weight -> ys auto_pad="SAME_UPPER" @s
node Conv ys d.weight -> yd auto_pad="SAME_UPPER" strides=2,2 @d
node ConvTranspose yd t.weight -> z pads=0,0,1,1 strides=2,2 @t
output z
)");
  CHECK(split_asymmetric_pads(g) == 0);
  CHECK(g.nodes.size() == 4);
}

TEST_CASE("explicit pads: auto_pad SAME of an even extent at stride 1 is PyTorch's padding='same' padded first") {
  // The legacy exporter writes `nn.Conv2d(96, 24, 2, padding="same")` as auto_pad
  // SAME_UPPER; aten's _convolution_mode pads (0, 1) per axis with constant_pad_nd first
  // (traces25 rnd20_81: a [16, 96, 129, 129] fp32 block in the convolution's forward).
  // Kernel 2 with dilation 3 pads 3 in all: 1 before and 2 after (SAME_LOWER: 2 and 1).
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,3,8,8
param u.weight float32 4,3,2,2
param l.weight float32 4,4,2,3
node Conv x u.weight -> yu auto_pad="SAME_UPPER" @u
node Conv yu l.weight -> yl auto_pad="SAME_LOWER" dilations=3,1 @l
output yl
)");
  CHECK(split_asymmetric_pads(g) == 2);
  verify_and_sort(g);
  infer_shapes(g);
  for (const Node& n : g.nodes) {
    if (n.op != "Conv") continue;
    CHECK(n.attr_string("auto_pad", "NOTSET") == "NOTSET");
    CHECK(n.attr_ints("pads") == std::vector<int64_t>{0, 0, 0, 0});
  }
  const Node& u = testing::producer(g, "yu");
  const Node& l = testing::producer(g, "yl");
  CHECK(g.nodes[g.tensors[u.inputs[0]].producer].op == "Pad");
  // The amounts: axes (batch, channel, h, w), all begins then all ends.
  auto amounts = [&](const Node& conv) {
    const Node& pad = g.nodes[g.tensors[conv.inputs[0]].producer];
    std::vector<int64_t> v;
    for (const Expr& e : *g.tensors[pad.inputs[1]].value) v.push_back(e.as_const().value_or(-1));
    return v;
  };
  CHECK(amounts(u) == std::vector<int64_t>{0, 0, 0, 0, 0, 0, 1, 1});
  CHECK(amounts(l) == std::vector<int64_t>{0, 0, 2, 1, 0, 0, 1, 1});
  CHECK(shape_str(*g.tensors[u.inputs[0]].shape) == "[batch, 3, 9, 9]");
  CHECK(testing::shape(g, "yu") == "[batch, 4, 8, 8]");  // "same": the size is kept
  CHECK(shape_str(*g.tensors[l.inputs[0]].shape) == "[batch, 4, 11, 10]");
  CHECK(testing::shape(g, "yl") == "[batch, 4, 8, 8]");
}

TEST_CASE("explicit pads: a Pad the dynamo exporter folded into a symmetric Conv padding comes back out") {
  // onnx_reader.cc marks a Conv the rewriter's FuseConvPad rule made with its call's own
  // padding (call_pads): pads 1 on each side, the call 0 (timm's BlurPool2d), and pads 3
  // around a call of 1 (a Pad of 2 before a padded convolution). Without call_pads the
  // same symmetric pads are the convolution's own.
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,4,8,8
param b.filt float32 4,1,3,3
param c.weight float32 4,4,3,3
param d.weight float32 4,4,3,3
node Conv x b.filt -> yb pads=1,1,1,1 strides=2,2 group=4 call_pads=0,0 @b
node Conv yb c.weight -> yc pads=3,3,3,3 call_pads=1,1 @c
node Conv yc d.weight -> yd pads=1,1,1,1 @d
output yd
)");
  CHECK(split_asymmetric_pads(g) == 2);
  verify_and_sort(g);
  infer_shapes(g);
  const Node& b = testing::producer(g, "yb");
  const Node& c = testing::producer(g, "yc");
  const Node& d = testing::producer(g, "yd");
  CHECK(b.attr_ints("pads") == std::vector<int64_t>{0, 0, 0, 0});
  CHECK(c.attr_ints("pads") == std::vector<int64_t>{1, 1, 1, 1});
  CHECK(d.attr_ints("pads") == std::vector<int64_t>{1, 1, 1, 1});
  CHECK(g.nodes[g.tensors[b.inputs[0]].producer].op == "Pad");
  CHECK(g.nodes[g.tensors[c.inputs[0]].producer].op == "Pad");
  CHECK(g.nodes[g.tensors[d.inputs[0]].producer].op == "Conv");
  CHECK(shape_str(*g.tensors[b.inputs[0]].shape) == "[batch, 4, 10, 10]");
  CHECK(testing::shape(g, "yb") == "[batch, 4, 4, 4]");  // (10 - 3) / 2 + 1
  CHECK(shape_str(*g.tensors[c.inputs[0]].shape) == "[batch, 4, 8, 8]");
  CHECK(testing::shape(g, "yc") == "[batch, 4, 8, 8]");  // (8 + 2 - 3) + 1
}

TEST_CASE("explicit pads: the padded tensor is allocated, and is what the convolution keeps") {
  TrainConfig cfg;
  cfg.loss = Loss::Sum;
  Analysis a = analyze(read_text_graph(kSame), AnalysisOptions{.train = cfg});
  const Estimate e = estimate(a, 2);
  // x padded: [2, 3, 9, 9] fp32 = 1,944 B; s padded: [2, 4, 7, 7] fp32 = 1,568 B
  // (requested bytes; the allocator rounds each to 2,048).
  CHECK(forward_bytes(a, e, "a", "Pad") == 1944);
  CHECK(forward_bytes(a, e, "b", "Pad") == 0);
  CHECK(forward_bytes(a, e, "c", "Pad") == 1568);
  // The convolutions keep the padded tensors for their weights' gradients.
  for (size_t k = 0; k < a.graph.nodes.size(); ++k) {
    const Node& n = a.graph.nodes[k];
    if (n.op != "Conv") continue;
    const int padded = n.inputs[0];
    CHECK(a.graph.nodes[a.graph.tensors[padded].producer].op == "Pad");
    CHECK(a.program.saved_by_node[k].size() >= 1);
  }
}

TEST_CASE("Pad keeps its input in reflect and edge mode (reflection_pad, replication_pad), not in constant") {
  const OpInfo* pad = find_op("", "Pad");
  REQUIRE(pad);
  REQUIRE(static_cast<bool>(pad->variant));
  Graph g = testing::infer(R"(
opset 18
input x float32 batch,4,16
const p int64 6 = 0,0,1,0,0,1
node Pad x p -> r mode=reflect
node Pad x p -> e mode=edge
node Pad x p -> c mode=constant
node Pad x p -> w mode=wrap
)");
  auto keeps = [&](const char* out) {
    const Node& n = testing::producer(g, out);
    const OpInfo* v = pad->variant(g, n, Dispatch{DType::F32});
    return (v ? v : pad)->saves_input(0);
  };
  CHECK(keeps("r"));
  CHECK(keeps("e"));
  CHECK_FALSE(keeps("c"));
  CHECK_FALSE(keeps("w"));

  // In a step: the reflect Pad keeps the Mul's output ([2, 4, 16] fp32, 512 B) until its
  // backward; a constant Pad lets it go once the Pad has run.
  auto saved_by_pad = [](const char* mode) {
    const std::string text = std::string(R"(
opset 18
input x float32 batch,4,16
param s float32 4,1
param w.weight float32 4,4,3
const p int64 6 = 0,0,1,0,0,1
node Mul x s -> m @scale
node Pad m p -> pm mode=)") + mode + R"( @pad
node Conv pm w.weight -> y @w
output y
)";
    TrainConfig cfg;
    cfg.loss = Loss::Sum;
    Analysis a = analyze(read_text_graph(text), AnalysisOptions{.train = cfg});
    const Estimate e = estimate(a, 2);
    int64_t bytes = 0;
    for (size_t k = 0; k < a.graph.nodes.size(); ++k) {
      if (a.graph.nodes[k].op != "Pad") continue;
      for (int b : a.program.saved_by_node[k]) bytes += a.program.blocks[b].bytes.eval(e.bindings);
    }
    return bytes;
  };
  CHECK(saved_by_pad("reflect") == 512);
  CHECK(saved_by_pad("edge") == 512);
  CHECK(saved_by_pad("constant") == 0);
}

TEST_CASE("explicit pads: timm's pad_same by zeros before a stride-2 1x1 layer is a copy the layer keeps") {
  // constant_pad_nd returns a clone when no pad is positive; torch.export drops such a
  // Pad, and the reader marks a Conv2dSame-family layer with no padding (same_pad_copy).
  // x [batch, 8, 6, 6] fp32 at batch 2: the copy is 2 * 8 * 36 * 4 = 2,304 B (2,560
  // allocated), and it, not x, is what the layer keeps for its weight's gradient.
  const char* text = R"(
opset 18
input x float32 batch,8,6,6
param w float32 16,8,1,1
param s float32 8,1,1
node Mul x s -> h @pre
node Conv h w -> y kernel_shape=1,1 pads=0,0,0,0 strides=2,2 same_pad_copy=1 @down
output y
)";
  Graph g = read_text_graph(text);
  CHECK(split_asymmetric_pads(g) == 1);
  const Node& conv = g.nodes[g.tensors[g.find_tensor("y")].producer];
  const Node& pad = g.nodes[g.tensors[conv.inputs[0]].producer];
  CHECK(pad.op == "Pad");
  CHECK(pad.inputs[0] == g.find_tensor("h"));
  AnalysisOptions o;
  o.train.loss = Loss::Sum;
  const Analysis a = analyze(read_text_graph(text), o);
  const Estimate e = estimate(a, 2);
  CHECK(forward_bytes(a, e, "down", "Pad") == 2304);
}

TEST_CASE("explicit pads: the reader marks a Conv2dSame-family layer whose padding is dynamic") {
  // The namespace as the dynamo exporter writes it, the conv's own module last.
  const std::string ns =
      ": timm.models.resnetv2.ResNetV2/stages.0.blocks.0.downsample.conv: timm.layers.std_conv.StdConv2dSame/"
      "conv2d_1: aten.conv2d.default";
  auto conv = [](const std::string& attrs) {
    Graph g = read_text_graph("opset 18\ninput x float32 2,8,6,6\nparam w float32 16,8,1,1\nnode Conv x w -> y " +
                              attrs + "\noutput y\n");
    return g.nodes[0];
  };
  Node strided = conv("kernel_shape=1,1 pads=0,0,0,0 strides=2,2");
  mark_same_pad_copy(strided, ns);
  CHECK(strided.attr_int("same_pad_copy", 0) == 1);
  // At stride 1 a 1x1 layer pads statically (timm's is_static_pad): F.pad is never called.
  Node plain = conv("kernel_shape=1,1 pads=0,0,0,0 strides=1,1");
  mark_same_pad_copy(plain, ns);
  CHECK(plain.attr_int("same_pad_copy", 0) == 0);
  // Another class: nothing.
  Node other = conv("kernel_shape=1,1 pads=0,0,0,0 strides=2,2");
  mark_same_pad_copy(other, ": m.Net/down: torch.nn.modules.conv.Conv2d/conv2d: aten.conv2d.default");
  CHECK(other.attr_int("same_pad_copy", 0) == 0);
}

TEST_CASE("explicit pads: a convolution the exporter folded an F.pad into reads the Pad it kept for another reader") {
  // timm's HGNetV2 StemV2: `x = F.pad(x, (0, 1, 0, 1))`, then `self.stem2a(x)` and
  // `self.pool(x)`. The dynamo exporter folds the Pad into the convolution's pads and keeps
  // it for the max pool: in PyTorch one padded tensor, which the convolution reads too
  // (seqtrace34 st_hgnetv2_b1: one 39.2 MB pad, where memest had made a second).
  Graph g = read_text_graph(R"(
opset 18
input x float32 batch,4,8,8
const amounts int64 8 = 0,0,0,0,0,0,1,1
param c.weight float32 4,4,2,2
node Pad x amounts -> p mode=constant @stem
node MaxPool p -> mp kernel_shape=2,2 strides=1,1 @pool
node Conv x c.weight -> y pads=0,0,1,1 @c
node Add mp y -> s @add
output s
)");
  CHECK(split_asymmetric_pads(g) == 1);
  verify_and_sort(g);
  infer_shapes(g);
  int pads = 0;
  for (const Node& n : g.nodes) pads += n.op == "Pad" ? 1 : 0;
  CHECK(pads == 1);
  const Node& c = testing::producer(g, "y");
  CHECK(g.tensors[c.inputs[0]].name == "p");
  CHECK(c.attr_ints("pads") == std::vector<int64_t>{0, 0, 0, 0});
  CHECK(testing::shape(g, "y") == "[batch, 4, 8, 8]");
}
