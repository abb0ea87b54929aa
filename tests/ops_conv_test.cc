// Conv and ConvTranspose output sizes: padding, strides, dilations, groups, auto_pad.
#include <doctest/doctest.h>

#include "estimator/analysis.h"
#include "frontends/text_reader.h"
#include "tests/ops_test_util.h"

namespace memest {
namespace {

using testing::dtype;
using testing::infer;
using testing::producer;
using testing::shape;

TEST_CASE("conv: output sizes") {
  SUBCASE("resnet stem: 224 -> 112 with k=7, s=2, p=3") {
    Graph g = infer(R"(
      input x float32 batch,3,224,224
      param conv1.weight float32 64,3,7,7
      node Conv x conv1.weight -> y kernel_shape=7,7 strides=2,2 pads=3,3,3,3
    )");
    CHECK(shape(g, "y") == "[batch, 64, 112, 112]");
    CHECK(dtype(g, "y") == "float32");
    CHECK(g.warnings.empty());
  }
  SUBCASE("kernel from the weight, bias, asymmetric pads") {
    Graph g = infer(R"(
      input x float16 2,3,10,10
      param w float16 8,3,3,3
      param b float16 8
      node Conv x w b -> y pads=0,1,2,0
    )");
    CHECK(shape(g, "y") == "[2, 8, 10, 9]");  // pads are [h_begin, w_begin, h_end, w_end]: 10+0+2-3+1, 10+1+0-3+1
    CHECK(dtype(g, "y") == "float16");
  }
  SUBCASE("dilation") {
    Graph g = infer("input x float32 1,8,32,32\nparam w float32 8,8,3,3\nnode Conv x w -> y dilations=2,2");
    CHECK(shape(g, "y") == "[1, 8, 28, 28]");
  }
  SUBCASE("depthwise groups") {
    Graph g = infer("input x float32 1,32,16,16\nparam w float32 32,1,3,3\nnode Conv x w -> y group=32 pads=1,1,1,1");
    CHECK(shape(g, "y") == "[1, 32, 16, 16]");
  }
  SUBCASE("auto_pad") {
    Graph g = infer(R"(
      input x float32 1,4,15,15
      param w float32 4,4,3,3
      node Conv x w -> same strides=2,2 auto_pad=SAME_UPPER
      node Conv x w -> lower strides=2,2 auto_pad=SAME_LOWER
      node Conv x w -> valid strides=2,2 auto_pad=VALID
      node Conv x w -> notset strides=2,2 auto_pad=NOTSET pads=1,1,1,1
    )");
    CHECK(shape(g, "same") == "[1, 4, 8, 8]");
    CHECK(shape(g, "lower") == "[1, 4, 8, 8]");
    CHECK(shape(g, "valid") == "[1, 4, 7, 7]");
    CHECK(shape(g, "notset") == "[1, 4, 8, 8]");
  }
  SUBCASE("1D with a symbolic length") {
    Graph g = infer("input x float32 batch,4,seq\nparam w float32 8,4,3\nnode Conv x w -> y pads=1,1");
    CHECK(shape(g, "y") == "[batch, 8, seq]");
  }
  SUBCASE("3D") {
    Graph g = infer(R"(
      input x float32 2,3,8,16,16
      param w float32 4,3,3,3,3
      node Conv x w -> y strides=2,2,2 pads=1,1,1,1,1,1
    )");
    CHECK(shape(g, "y") == "[2, 4, 4, 8, 8]");
  }
}

TEST_CASE("conv: errors and fallbacks") {
  CHECK_THROWS_WITH_AS(
      infer("input x float32 1,32,8,8\nparam w float32 32,2,3,3\nnode Conv x w -> y group=32 :dw"),
      "<text>: node 'dw': Conv: input has 32 channels but weight [32, 2, 3, 3] with group 32 expects 64", Error);
  CHECK_THROWS_AS(infer("input x float32 1,3,2,2\nparam w float32 8,3,3,3\nnode Conv x w -> y"), Error);
  CHECK_THROWS_AS(infer("input x float32 1,3,8\nparam w float32 8,3,3,3\nnode Conv x w -> y"), Error);
  // (h + 2 - 3) / 2 is not exact for a symbolic h: the driver falls back and says so.
  Graph g = infer(R"(
    input x float32 batch,3,h,w
    param k float32 8,3,3,3
    node Conv x k -> y strides=2,2 pads=1,1,1,1 :c
  )");
  CHECK(!g.warnings.empty());
}

TEST_CASE("conv: transpose") {
  Graph g = infer(R"(
    input x float32 1,16,8,8
    input s float32 batch,16,h,w
    param w float32 16,8,4,4
    node ConvTranspose x w -> up strides=2,2 pads=1,1,1,1
    node ConvTranspose x w -> grouped strides=2,2 pads=1,1,1,1 group=2
    node ConvTranspose x w -> outpad strides=2,2 pads=1,1,1,1 output_padding=1,1
    node ConvTranspose x w -> explicit strides=2,2 output_shape=20,20
    node ConvTranspose x w -> same strides=2,2 auto_pad=SAME_UPPER
    node ConvTranspose s w -> sym strides=2,2 pads=1,1,1,1
  )");
  CHECK(shape(g, "up") == "[1, 8, 16, 16]");
  CHECK(shape(g, "grouped") == "[1, 16, 16, 16]");
  CHECK(shape(g, "outpad") == "[1, 8, 17, 17]");
  CHECK(shape(g, "explicit") == "[1, 8, 20, 20]");
  CHECK(shape(g, "same") == "[1, 8, 16, 16]");
  CHECK(shape(g, "sym") == "[batch, 8, 2*h, 2*w]");
}

TEST_CASE("conv: training facts") {
  for (const char* op : {"Conv", "ConvTranspose"}) {
    const OpInfo* info = find_op("", op);
    REQUIRE(info);
    CHECK(info->autocast == Autocast::Lower);
    CHECK(info->saved_if_other == bits({0, 1}));
    CHECK(info->saved_inputs == 0);
    CHECK(std::string(info->grads) == "AAA");
  }
}

// ResNet's stem, from the probe rows of validate/results/kernels-h200-torch2.11.jsonl.
// The table keeps, per phase, the largest per-sample workspace over the measured batches
// (ceil of bytes / n). At fp32 that is n=32 for both phases: forward allocates y then a
// workspace it frees, 122065920 B above y after 512-byte rounding; backward without an
// input gradient allocates the weight gradient (37632 B) then a workspace, 134522368 B:
//   fwd       122065920 / 32 = 3814560 B per sample (n=256 gives 976262144 / 256 = 3813524)
//   bwd_first 134522368 / 32 = 4203824 B per sample (n=256 gives 4037798)
// The full backward (with grad_input) peaks at the same 4203824 B per sample above its outputs.
const char* kStem = R"(
  opset 17
  input x float32 batch,3,224,224
  param conv1.weight float32 64,3,7,7
  node Conv x conv1.weight -> y kernel_shape=7,7 strides=2,2 pads=3,3,3,3 @conv1
  output y
)";

TEST_CASE("conv: cuDNN workspace from the measured table") {
  Graph g = infer(kStem);
  const Node& n = producer(g, "y");
  REQUIRE(static_cast<bool>(n.info->fwd_workspace));
  REQUIRE(static_cast<bool>(n.info->bwd_workspace));
  CHECK(n.info->fwd_workspace(g, n, DType::F32, false, false).str() == "3814560*batch");
  CHECK(n.info->bwd_workspace(g, n, DType::F32, false, false).str() == "4203824*batch");
  CHECK(n.info->bwd_workspace(g, n, DType::F32, true, false).str() == "4203824*batch");
  // Under fp16 autocast the conv runs in half: the fp16 rows (weight-only backward at
  // n=32: 64451584 B / 32), not the fp32 ones.
  CHECK(n.info->bwd_workspace(g, n, DType::F16, false, false).str() == "2014112*batch");

  SUBCASE("a layer near one the table holds borrows its workspace, scaled by activation size") {
    // 225x224 is not in the table; its nearest row of the class (fp32, 7x7, stride 2, dense)
    // is the 224x224 stem. Activation elements per sample (input + output at the stride):
    //   this layer 3*225*224 + 64*225*224/4 = 957600, the stem 3*224*224 + 64*224*224/4 = 953344
    //   fwd 3814560 * 957600 / 953344 = 3831589.3 -> 3831590; bwd 4203824 * ... = 4222591.1 -> 4222592
    Graph near = infer("input x float32 batch,3,225,224\nparam w float32 64,3,7,7\nnode Conv x w -> y strides=2,2 pads=3,3,3,3");
    const Node& m = producer(near, "y");
    CHECK(m.info->fwd_workspace(near, m, DType::F32, true, false).str() == "3831590*batch");
    CHECK(m.info->bwd_workspace(near, m, DType::F32, true, false).str() == "4222592*batch");
  }

  SUBCASE("a layer far from every row, or symbolic sizes: no workspace") {
    // 16x16 input: log2 of the spatial size is 7.6 away from the stems' (a distance of 58 > 0.5).
    Graph other = infer("input x float32 batch,3,16,16\nparam w float32 64,3,7,7\nnode Conv x w -> y strides=2,2 pads=3,3,3,3");
    const Node& m = producer(other, "y");
    CHECK(m.info->fwd_workspace(other, m, DType::F32, true, false).is_zero());
    Graph sym = infer("input x float32 batch,3,h,w\nparam w float32 64,3,7,7\nnode Conv x w -> y pads=3,3,3,3");
    const Node& s = producer(sym, "y");
    CHECK(s.info->bwd_workspace(sym, s, DType::F32, true, false).is_zero());
    Graph asym = infer("input x float32 batch,3,224,224\nparam w float32 64,3,7,7\nnode Conv x w -> y strides=2,2 pads=3,3,2,2");
    const Node& a = producer(asym, "y");
    CHECK(a.info->fwd_workspace(asym, a, DType::F32, true, false).is_zero());
  }

  SUBCASE("the simulator holds it as a transient: the backward peak is weight grad + workspace") {
    AnalysisOptions o;
    o.train.loss = Loss::Sum;
    Analysis an = analyze(read_text_graph(kStem), o);
    const int64_t B = 8;
    Estimate e = estimate(an, B);
    // The first layer's backward: weight gradient and a 8 * 4203824 B workspace (both
    // rounded to 512 B) beside the parameter, the input, the kept output and its gradient.
    const int64_t ws = round_alloc(8 * 4203824);
    CHECK(e.peak.phase == Phase::Backward);
    CHECK(e.peak.components[static_cast<size_t>(Category::Workspace)] == ws);
    int64_t workspaces = 0;
    for (const Block& b : an.program.blocks) {
      if (b.category == Category::Workspace) workspaces += b.bytes.eval(e.bindings);
    }
    // Three iterations, each one forward and one backward workspace.
    CHECK(workspaces == 3 * (B * 3814560 + B * 4203824));
  }
}

TEST_CASE("conv: backward's two cuDNN calls keep workspaces of their own") {
  // resnet18's layer1 conv (64 -> 64, 56x56, 3x3). The probe at batch 8 records, in
  // order: grad_input, dgrad's workspace of 12,992,528 B (allocated and freed),
  // grad_weight, wgrad's workspace of 15,057,575 B. Rounded to 512 B and per sample:
  //   dgrad 12,993,024 / 8 = 1,624,128;  wgrad 15,057,920 / 8 = 1,882,240
  // (the largest per-sample value over the measured batches; batch 8's is the largest).
  Graph g = infer(R"(
    input x float32 batch,64,56,56
    param w float32 64,64,3,3
    node Conv x w -> y kernel_shape=3,3 pads=1,1,1,1
  )");
  const Node& n = producer(g, "y");
  REQUIRE(static_cast<bool>(n.info->bwd_data_workspace));
  CHECK(n.info->bwd_data_workspace(g, n, DType::F32, true, false).str() == "1624128*batch");
  CHECK(n.info->bwd_workspace(g, n, DType::F32, true, false).str() == "1882240*batch");
}

}  // namespace
TEST_CASE("conv: a channels-last input looks up the rows probed channels-last") {
  // ConvNeXt's depthwise 7x7 at 96x56x56, fp32: contiguous, cuDNN's weight gradient
  // takes 48 B a sample (n=64); channels-last (the block's input is a permute's view),
  // 9944384 B a sample: 303.5 MiB at batch 32, as the GPU trace of convnext_tiny shows.
  Graph g = infer(
      "input x float32 batch,96,56,56\nparam w float32 96,1,7,7\n"
      "node Conv x w -> y kernel_shape=7,7 pads=3,3,3,3 group=96");
  const Node& n = producer(g, "y");
  CHECK(n.info->bwd_workspace(g, n, DType::F32, true, false).str() == "48*batch");
  CHECK(n.info->bwd_workspace(g, n, DType::F32, true, true).str() == "9944384*batch");
  // A channels-last layer with no channels-last row near it is looked up as contiguous.
  Graph stem = infer(kStem);
  const Node& s = producer(stem, "y");
  CHECK(s.info->fwd_workspace(stem, s, DType::F32, false, true).str() == "3814560*batch");
}

}  // namespace memest
