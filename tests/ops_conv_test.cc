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
    // One derivative formula for input, weight and bias: both kept whenever recorded.
    CHECK(info->saved_inputs == bits({0, 1}));
    CHECK(info->saved_if_other == 0);
    CHECK(std::string(info->grads) == "AAA");
  }
}

// F.fold (timm's VOLO outlook attention): [N, C * kh * kw, L] summed back into [N, C, H, W].
TEST_CASE("conv: Col2Im's output and what its backward keeps") {
  // VOLO's first stage at 384 px: 192 channels, 3x3 blocks over a 48x48 map, L = 48 * 48.
  Graph g = infer(R"(
    opset 18
    input cols float32 batch,1728,2304
    const image int64 2 = 48,48
    const block int64 2 = 3,3
    node Col2Im cols image block -> y pads=1,1,1,1
  )");
  CHECK(shape(g, "y") == "[batch, 192, 48, 48]");  // 1728 / (3 * 3) channels
  CHECK(dtype(g, "y") == "float32");
  CHECK(g.warnings.empty());
  const OpInfo* info = find_op("", "Col2Im");
  REQUIRE(info);
  // derivatives.yaml: col2im's gradient is im2col of the output's gradient; nothing saved.
  CHECK(info->saved_inputs == 0);
  CHECK(info->saved_outputs == 0);
  CHECK(std::string(info->grads) == "ANN");
  CHECK(info->autocast == Autocast::Keep);
  SUBCASE("unbatched input, and a channel count block_shape does not divide") {
    Graph u = infer("opset 18\ninput c float16 36,10\nconst i int64 2 = 4,6\nconst b int64 2 = 2,2\n"
                    "node Col2Im c i b -> y strides=1,2");
    CHECK(shape(u, "y") == "[9, 4, 6]");
    CHECK_THROWS_WITH_AS(infer("opset 18\ninput c float16 1,35,10\nconst i int64 2 = 4,6\nconst b int64 2 = 2,2\n"
                               "node Col2Im c i b -> y"),
                         doctest::Contains("not a multiple of prod(block_shape) = 4"), Error);
  }
}

// ResNet's stem, from the probe rows of validate/results/kernels-h200-torch2.11.jsonl.
// The table holds, per phase, bytes a + b * N: the line (a, b >= 0) with the least excess
// over the measured batches that none of them exceeds (validate/cudnn_table.py). The fp32
// stem was probed at n = 32, 64, 96, 128, 256. Forward allocates y, then a workspace it
// frees; after 512-byte rounding the transient above y is 122065920 B at n=32 and
// 976262144 at n=256, and the batches between lie on or above the line through those two:
//   fwd       b = (976262144 - 122065920) / 224 = 3813376, a = 122065920 - 32 * 3813376 = 37888
// Backward without an input gradient allocates the weight gradient (37632 B), then a
// workspace: 134522368 B at n=32, 1033676288 at n=256, again the line through the two:
//   bwd_first b = (1033676288 - 134522368) / 224 = 4014080, a = 134522368 - 32 * 4014080 = 6071808
// The full backward (with grad_input) peaks at the same bytes above its outputs.
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
  CHECK(n.info->fwd_workspace(g, n, DType::F32, false, false).bytes.str() == "3813376*batch + 37888");
  CHECK(n.info->bwd_workspace(g, n, DType::F32, false, false).bytes.str() == "4014080*batch + 6071808");
  CHECK(n.info->bwd_workspace(g, n, DType::F32, true, false).bytes.str() == "4014080*batch + 6071808");
  // Under fp16 autocast the conv runs in half: the fp16 rows, not the fp32 ones. Its
  // weight-only backward measured 128878080, 193103360, 257328640, 514229760 B at n = 64,
  // 96, 128, 256, on one line (b = (514229760 - 128878080) / 192 = 2007040, a = 427520),
  // with n = 32's 64451584 below it (64652800): that line.
  CHECK(n.info->bwd_workspace(g, n, DType::F16, false, false).bytes.str() == "2007040*batch + 427520");

  SUBCASE("a layer near one the table holds borrows its workspace, scaled by activation size") {
    // 225x224 is not in the table; its nearest row of the class (fp32, 7x7, stride 2, dense)
    // is the 224x224 stem. Activation elements per sample (input + output at the stride):
    //   this layer 3*225*224 + 64*225*224/4 = 957600, the stem 3*224*224 + 64*224*224/4 = 953344
    //   fwd: 3813376 * 957600 / 953344 = 3830400, 37888 * ... = 38057.1 -> 38058
    //   bwd: 4014080 * ... = 4032000, 6071808 * ... = 6098914.3 -> 6098915
    Graph near = infer("input x float32 batch,3,225,224\nparam w float32 64,3,7,7\nnode Conv x w -> y strides=2,2 pads=3,3,3,3");
    const Node& m = producer(near, "y");
    CHECK(m.info->fwd_workspace(near, m, DType::F32, true, false).bytes.str() == "3830400*batch + 38058");
    CHECK(m.info->bwd_workspace(near, m, DType::F32, true, false).bytes.str() == "4032000*batch + 6098915");
  }

  SUBCASE("a layer far from every row of its class, or of a class the table lacks: the envelope") {
    // 16x16 input: log2 of the spatial size is 7.6 away from the stems' (a distance of 58 > 0.5).
    // The table holds that class (fp32, 7x7, stride 2, dense) but nothing near: the envelope,
    // never none. Forward at most input + output + weight bytes: x 3*16*16*4 = 3072 and y
    // [batch, 64, 8, 8] 64*8*8*4 = 16384 bytes a sample, w 64*3*7*7*4 = 37632.
    Graph other = infer("input x float32 batch,3,16,16\nparam w float32 64,3,7,7\nnode Conv x w -> y strides=2,2 pads=3,3,3,3");
    const Node& m = producer(other, "y");
    CHECK(m.info->fwd_workspace(other, m, DType::F32, true, false).bytes.str() == "19456*batch + 37632");
    // No fp32 4x4 stride-2 row (DCGAN's discriminator): the envelope, forward at most input +
    // output + weight bytes (estimator/data/cudnn_model_h200.inc). y is [batch, 128, 16, 16]:
    // 64*32*32*4 + 128*16*16*4 = 393216 B a sample, and 128*64*4*4*4 = 524288.
    Graph dcgan = infer("input x float32 batch,64,32,32\nparam w float32 128,64,4,4\nnode Conv x w -> y strides=2,2 pads=1,1,1,1");
    const Node& d = producer(dcgan, "y");
    CHECK(d.info->fwd_workspace(dcgan, d, DType::F32, true, false).bytes.str() == "393216*batch + 524288");
    // Symbolic spatial sizes stay symbolic: wgrad's 18/16 x + 20/16 y + 2 w + 1 MiB with y
    // [batch, 64, h, w] (pads 3, k 7). 16 does not divide 12*18 (x's 12 bytes a position), so
    // x's coefficient rounds up to 2 (an envelope only grows): 2*12 + 64*4 * 20/16 = 344 bytes
    // a position, and 2 * 37632 + 1048576 = 1123840.
    Graph sym = infer("input x float32 batch,3,h,w\nparam w float32 64,3,7,7\nnode Conv x w -> y pads=3,3,3,3");
    const Node& s = producer(sym, "y");
    CHECK(s.info->bwd_workspace(sym, s, DType::F32, true, false).bytes.str() == "344*batch*h*w + 1123840");
    // Asymmetric pads (as SAME padding exports them): y is [batch, 64, 112, 112] ((224 + 5 - 7) / 2 + 1).
    // 3*224*224*4 + 64*112*112*4 = 602112 + 3211264 = 3813376 a sample.
    Graph asym = infer("input x float32 batch,3,224,224\nparam w float32 64,3,7,7\nnode Conv x w -> y strides=2,2 pads=3,3,2,2");
    const Node& a = producer(asym, "y");
    CHECK(a.info->fwd_workspace(asym, a, DType::F32, true, false).bytes.str() == "3813376*batch + 37632");
  }

  SUBCASE("the simulator holds it as a transient: the backward peak is weight grad + workspace") {
    AnalysisOptions o;
    o.train.loss = Loss::Sum;
    Analysis an = analyze(read_text_graph(kStem), o);
    const int64_t B = 8;
    Estimate e = estimate(an, B);
    // The first layer's backward: weight gradient and a 6071808 + 8 * 4014080 B workspace
    // (both rounded to 512 B) beside the parameter, the input, the kept output and its gradient.
    const int64_t ws = round_alloc(6071808 + 8 * 4014080);
    CHECK(e.peak.phase == Phase::Backward);
    CHECK(e.peak.components[static_cast<size_t>(Category::Workspace)] == ws);
    int64_t workspaces = 0;
    for (const Block& b : an.program.blocks) {
      if (b.category == Category::Workspace) workspaces += b.bytes.eval(e.bindings);
    }
    // Three iterations, each one forward and one backward workspace.
    CHECK(workspaces == 3 * ((37888 + B * 3813376) + (6071808 + B * 4014080)));
  }
}

TEST_CASE("conv: backward's two cuDNN calls keep workspaces of their own") {
  // resnet18's layer1 conv (64 -> 64, 56x56, 3x3). The probe at batch 8 records, in
  // order: grad_input, dgrad's workspace of 12,992,528 B (allocated and freed),
  // grad_weight, wgrad's workspace of 15,057,575 B. Rounded to 512 B: 12,993,024 and
  // 15,057,920; at batch 256, 411,189,760 and 413,254,656. Each phase's five batches
  // (8 to 256) lie on one line:
  //   dgrad b = (411189760 - 12993024) / 248 = 1605632, a = 12993024 - 8 * 1605632 = 147968
  //   wgrad b = (413254656 - 15057920) / 248 = 1605632, a = 15057920 - 8 * 1605632 = 2212864
  // Per sample (the largest bytes / n, batch 8's) they were 1,624,128 and 1,882,240: at
  // batch 256, 5.6 and 58 MiB over.
  Graph g = infer(R"(
    input x float32 batch,64,56,56
    param w float32 64,64,3,3
    node Conv x w -> y kernel_shape=3,3 pads=1,1,1,1
  )");
  const Node& n = producer(g, "y");
  REQUIRE(static_cast<bool>(n.info->bwd_data_workspace));
  CHECK(n.info->bwd_data_workspace(g, n, DType::F32, true, false).bytes.str() == "1605632*batch + 147968");
  CHECK(n.info->bwd_workspace(g, n, DType::F32, true, false).bytes.str() == "1605632*batch + 2212864");
}

}  // namespace
TEST_CASE("conv: a channels-last input looks up the rows probed channels-last") {
  // ConvNeXt's depthwise 7x7 at 96x56x56, fp32: contiguous, cuDNN's weight gradient
  // takes 3072 B at n=64 and none at n=32: 48 B a sample; channels-last (the block's
  // input is a permute's view), 318220288 B at n=32 (303.5 MiB, as the GPU trace of
  // convnext_tiny shows) and 626501632 at n=64: b = 308281344 / 32 = 9633792,
  // a = 318220288 - 32 * 9633792 = 9938944.
  Graph g = infer(
      "input x float32 batch,96,56,56\nparam w float32 96,1,7,7\n"
      "node Conv x w -> y kernel_shape=7,7 pads=3,3,3,3 group=96");
  const Node& n = producer(g, "y");
  CHECK(n.info->bwd_workspace(g, n, DType::F32, true, false).bytes.str() == "48*batch");
  CHECK(n.info->bwd_workspace(g, n, DType::F32, true, true).bytes.str() == "9633792*batch + 9938944");
  // A channels-last layer with no channels-last row near it is looked up as contiguous.
  Graph stem = infer(kStem);
  const Node& s = producer(stem, "y");
  CHECK(s.info->fwd_workspace(stem, s, DType::F32, false, true).bytes.str() == "3813376*batch + 37888");
}

// Layers no table row answers take the envelope of estimator/data/cudnn_model_h200.inc
// (validate/cudnn_model.py): per call and class, (cx * input + cy * output + cw * weight
// bytes) / 16 + c0, the bytes in the run dtype. The rows used here:
//   fwd, bwd_data dense fp32 and half spatial:  16, 16, 16, 0
//   bwd_weight dense fp32 spatial:              18, 20, 32, 1 MiB
TEST_CASE("conv: workspace envelope of 1-D, 3-D and transposed convolutions") {
  SUBCASE("1-D, dilated (cuDNN runs it as 2-D with H = 1)") {
    // wav2letter-like: 512 -> 16 channels, length 1000, k 3, dilation 2: y [batch, 16, 1000].
    // x 512*1000*4 = 2048000 B a sample, y 16*1000*4 = 64000, w 16*512*3*4 = 98304.
    //   fwd, dgrad 2048000 + 64000 = 2112000 a sample, 98304
    //   wgrad      2048000 * 18/16 + 64000 * 20/16 = 2384000 a sample, 2 * 98304 + 1048576 = 1245184
    // The probe at batch 64 (convprobe seed 1, row 0) measured 131170816, 135266816 and
    // 139592704 B: the envelope's 135266304, 135266304 (within the fit's 1% + 1 MiB) and
    // 153821184.
    Graph g = infer("input x float32 batch,512,1000\nparam w float32 16,512,3\nnode Conv x w -> y pads=2,2 dilations=[2]");
    const Node& n = producer(g, "y");
    CHECK(shape(g, "y") == "[batch, 16, 1000]");
    CHECK(n.info->fwd_workspace(g, n, DType::F32, true, false).bytes.str() == "2112000*batch + 98304");
    CHECK(n.info->bwd_data_workspace(g, n, DType::F32, true, false).bytes.str() == "2112000*batch + 98304");
    CHECK(n.info->bwd_workspace(g, n, DType::F32, true, false).bytes.str() == "2384000*batch + 1245184");
  }
  SUBCASE("3-D under fp16 autocast: the half rows, bytes in the run dtype") {
    // x [batch, 32, 8, 16, 16], w [64, 32, 3, 3, 3], pads 1: y [batch, 64, 8, 16, 16].
    // In fp16: x 32*2048*2 = 131072 B a sample, y 64*2048*2 = 262144, w 64*32*27*2 = 110592.
    //   fwd 131072 + 262144 = 393216 a sample, 110592
    Graph g = infer(
        "input x float32 batch,32,8,16,16\nparam w float32 64,32,3,3,3\n"
        "node Conv x w -> y pads=1,1,1,1,1,1");
    const Node& n = producer(g, "y");
    CHECK(n.info->fwd_workspace(g, n, DType::F16, true, false).bytes.str() == "393216*batch + 110592");
  }
  SUBCASE("transposed 1-D") {
    // x [batch, 16, 64], w [16, 8, 4], stride 2, pads 1: y [batch, 8, 128].
    // x 16*64*4 = 4096 B a sample, y 8*128*4 = 4096, w 16*8*4*4 = 2048.
    Graph g = infer("input x float32 batch,16,64\nparam w float32 16,8,4\nnode ConvTranspose x w -> y strides=[2] pads=1,1");
    const Node& n = producer(g, "y");
    CHECK(shape(g, "y") == "[batch, 8, 128]");
    CHECK(n.info->fwd_workspace(g, n, DType::F32, true, false).bytes.str() == "8192*batch + 2048");
  }
  SUBCASE("transposed with one input channel per group: cuDNN's, by its own envelope") {
    // Convolution.cpp's is_depthwise requires !transposed: cuDNN runs it (rnd40_87).
    // x [batch, 8, 32, 32], w [8, 1, 3, 3], group 8, stride 2: y [batch, 8, 65, 65]. In
    // fp16: x 8*1024*2 = 16384 B a sample, y 8*4225*2 = 67600. cudnn_model_tdw_h200.inc:
    //   wgrad {BwdWeight, Depthwise, half, spatial, 64, 32, 0, 1 MiB}: 4 x + 2 y = 200736 a sample
    //   dgrad {BwdData, Depthwise, half, spatial, 0, 18, 0, 1 MiB}: 1.125 y = 76050 a sample
    //   fwd   {Fwd, Depthwise, half, spatial, 0, 0, 0, 0}: none
    Graph g = infer("input x float16 batch,8,32,32\nparam w float16 8,1,3,3\nnode ConvTranspose x w -> y strides=2,2 group=8");
    const Node& n = producer(g, "y");
    CHECK(shape(g, "y") == "[batch, 8, 65, 65]");
    CHECK(n.info->bwd_workspace(g, n, DType::F16, true, false).bytes.str() == "200736*batch + 1048576");
    CHECK(n.info->bwd_workspace(g, n, DType::F16, false, false).bytes.str() == "200736*batch + 1048576");
    CHECK(n.info->bwd_data_workspace(g, n, DType::F16, true, false).bytes.str() == "76050*batch + 1048576");
    CHECK(n.info->fwd_workspace(g, n, DType::F16, true, false).bytes.is_zero());
  }
  SUBCASE("depthwise: PyTorch's own kernels, no cuDNN workspace") {
    Graph g = infer("input x float32 batch,64,1000\nparam w float32 64,1,5\nnode Conv x w -> y pads=2,2 group=64");
    const Node& n = producer(g, "y");
    CHECK(n.info->fwd_workspace(g, n, DType::F32, true, false).bytes.is_zero());
    CHECK(n.info->bwd_workspace(g, n, DType::F32, true, false).bytes.is_zero());
  }
}

// A depthwise layer on a channels-last input runs cuDNN (use_cudnn_depthwise), whose
// workspace the channels-last envelope bounds (estimator/data/cudnn_model_cl_h200.inc),
// except the 3x3 undilated stride-1 case its specialised kernels run without one.
TEST_CASE("conv: a channels-last depthwise layer takes the channels-last envelope") {
  SUBCASE("2x2 dilated (traces21 rnd14_95): x + 8 y + 1.25 w for the weight gradient") {
    // x = y = 32*48*48*4 = 294,912 B a sample, w = 32*1*2*2*4 = 512 B; the row
    // {BwdWeight, Depthwise, fp32, spatial, 16, 128, 20, 0} in sixteenths:
    // 294,912 + 8 * 294,912 = 2,654,208 a sample, 1.25 * 512 = 640.
    Graph g = infer(
        "input x float32 batch,32,48,48\nparam w float32 32,1,2,2\n"
        "node Conv x w -> y pads=1,1,1,1 dilations=2,2 group=32");
    const Node& n = producer(g, "y");
    CHECK(shape(g, "y") == "[batch, 32, 48, 48]");
    CHECK(n.info->bwd_workspace(g, n, DType::F32, true, true).bytes.str() == "2654208*batch + 640");
    // Contiguous, PyTorch's own depthwise kernel: none.
    CHECK(n.info->bwd_workspace(g, n, DType::F32, true, false).bytes.is_zero());
  }
  SUBCASE("3x3 undilated stride 1: cuDNN's specialised kernels, none") {
    Graph g = infer(
        "input x float32 batch,256,56,56\nparam w float32 256,1,3,3\n"
        "node Conv x w -> y pads=1,1,1,1 group=256");
    const Node& n = producer(g, "y");
    CHECK(n.info->fwd_workspace(g, n, DType::F32, true, true).bytes.is_zero());
    CHECK(n.info->bwd_workspace(g, n, DType::F32, true, true).bytes.is_zero());
  }
}

// A dense 3-D layer's weight gradient: the estimate keeps the general envelope; the 3-D
// probes' envelope (estimator/data/cudnn_model_3d_h200.inc) bounds what cuDNN's split-K
// may take beyond it, reported beside the peak (workspace_excess).
TEST_CASE("conv: a 3-D weight gradient's unpredictable split-K workspace is bounded, not estimated") {
  // fp16: x = 8*8^3*2 = 8,192 B a sample, y = 16*8^3*2 = 16,384 B, w = 16*8*27*2 = 6,912 B.
  // Estimate (general row {BwdWeight, Dense, half, spatial, 20, 18, 32, 1 MiB}):
  //   1.25 * 8,192 + 1.125 * 16,384 = 28,672 a sample; 2 * 6,912 + 1,048,576 = 1,062,400.
  // Bound (3-D row {BwdWeight, Dense, half, spatial, 48, 64, 512, 1 MiB}):
  //   3 * 8,192 + 4 * 16,384 = 90,112 a sample; 32 * 6,912 + 1,048,576 = 1,269,760.
  const std::string text =
      "input x float16 batch,8,8,8,8\nparam w float16 16,8,3,3,3\n"
      "node Conv x w -> y pads=1,1,1,1,1,1\n";
  Graph g = infer(text);
  const Node& n = producer(g, "y");
  CHECK(shape(g, "y") == "[batch, 16, 8, 8, 8]");
  CHECK(n.info->bwd_workspace(g, n, DType::F16, true, false).bytes.str() == "28672*batch + 1062400");
  CHECK(n.info->bwd_workspace_bound(g, n, DType::F16, true, false).bytes.str() == "90112*batch + 1269760");
  SUBCASE("through the program: the peak may rise by bound - estimate at the layer") {
    TrainConfig cfg;
    cfg.loss = Loss::Sum;
    cfg.amp = Amp::None;
    Analysis a = analyze(read_text_graph("opset 17\n" + text + "output y\n"), AnalysisOptions{.train = cfg});
    const WorkspaceExcess x = workspace_excess(a, bind_dims(a, 4));
    CHECK(x.bytes == (90112 - 28672) * 4 + (1269760 - 1062400));
    REQUIRE(x.node >= 0);
    CHECK(a.graph.nodes[x.node].op == "Conv");
  }
  SUBCASE("transposed 3-D layers, dense and grouped (one channel a group too), by their own envelope") {
    // x [batch, 16, 4, 4, 4] fp16 = 2,048 B a sample, y [batch, 8, 8, 8, 8] = 8,192 B.
    // Dense, w [16, 8, 2, 2, 2] = 2,048 B, row {BwdWeight, Dense, half, spatial, 96, 64, 384, 0}
    // of cudnn_model_3d_tconv_h200.inc: 6 * 2,048 + 4 * 8,192 = 45,056 a sample, 24 * 2,048.
    // Grouped (2), w [16, 4, 2, 2, 2] = 1,024 B, row {..., Grouped, half, spatial, 384, 256,
    // 384, 1 MiB}: 24 * 2,048 + 16 * 8,192 = 180,224 a sample; 24 * 1,024 + 1,048,576.
    Graph gt = infer(
        "input x float16 batch,16,4,4,4\nparam d float16 16,8,2,2,2\nparam q float16 16,4,2,2,2\n"
        "param e float16 16,1,2,2,2\nnode ConvTranspose x d -> yd strides=2,2,2\n"
        "node ConvTranspose x q -> yq strides=2,2,2 group=2\nnode ConvTranspose x e -> ye strides=2,2,2 group=16");
    CHECK(shape(gt, "yd") == "[batch, 8, 8, 8, 8]");
    CHECK(shape(gt, "yq") == "[batch, 8, 8, 8, 8]");
    const Node& d = producer(gt, "yd");
    const Node& q = producer(gt, "yq");
    const Node& e = producer(gt, "ye");
    CHECK(d.info->bwd_workspace_bound(gt, d, DType::F16, true, false).bytes.str() == "45056*batch + 49152");
    CHECK(q.info->bwd_workspace_bound(gt, q, DType::F16, true, false).bytes.str() == "180224*batch + 1073152");
    // One input channel a group (16): not depthwise to PyTorch when transposed, cuDNN's
    // grouped call. w [16, 1, 2, 2, 2] = 256 B, y [batch, 16, 8, 8, 8] = 16,384 B a sample:
    // 24 * 2,048 + 16 * 16,384 = 311,296 a sample; 24 * 256 + 1,048,576.
    CHECK(shape(gt, "ye") == "[batch, 16, 8, 8, 8]");
    CHECK(e.info->bwd_workspace_bound(gt, e, DType::F16, true, false).bytes.str() == "311296*batch + 1054720");
  }
  SUBCASE("grouped 3-D Conv layers by their own envelope; depthwise ones take none") {
    // x [batch, 8, 8, 8, 8] fp16 = 8,192 B a sample, y [batch, 16, 8, 8, 8] = 16,384 B.
    // Groups 2, w [16, 4, 3, 3, 3] = 3,456 B, row {BwdWeight, Grouped, half, spatial, 48,
    // 256, 384, 64 MiB} of cudnn_model_3d_grouped_h100.inc: 3 * 8,192 + 16 * 16,384 =
    // 286,720 a sample; 24 * 3,456 + 67,108,864 = 67,191,808 (rnd44_52's groups-8 layer
    // took 66.2 MB). Depthwise (8 groups of one channel): no workspace in any probe.
    Graph g3 = infer(
        "input x float16 batch,8,8,8,8\nparam q float16 16,4,3,3,3\nparam e float16 8,1,3,3,3\n"
        "node Conv x q -> yq pads=1,1,1,1,1,1 group=2\nnode Conv x e -> ye pads=1,1,1,1,1,1 group=8");
    const Node& q = producer(g3, "yq");
    const Node& e = producer(g3, "ye");
    CHECK(shape(g3, "yq") == "[batch, 16, 8, 8, 8]");
    CHECK(q.info->bwd_workspace_bound(g3, q, DType::F16, true, false).bytes.str() == "286720*batch + 67191808");
    CHECK(e.info->bwd_workspace_bound(g3, e, DType::F16, true, false).bytes.is_zero());
  }
  SUBCASE("a 2-D layer: nothing beyond the estimate") {
    Graph g2 = infer("input x float16 batch,8,8,8\nparam w float16 16,8,3,3\nnode Conv x w -> y pads=1,1,1,1");
    const Node& n2 = producer(g2, "y");
    CHECK(n2.info->bwd_workspace_bound(g2, n2, DType::F16, true, false).bytes.is_zero());
  }
}

// A dense 1x1 convolution's weight gradient (conv.cc's pointwise_wgrad): cuDNN's
// per-sample GEMM (fp32 partials, N * Cin * Cout * 4 B) where it is likely, the NHWC
// engine's copies (x + y) past the batch where the partials grow too large.
TEST_CASE("conv: the weight gradient of a dense 1x1 convolution switches engines with the batch") {
  SUBCASE("fasternet_t2's last projection, bf16: the GEMM up to batch 17") {
    // x [batch, 1536, 7, 7], w [768, 1536, 1, 1]. Partials 1536*768*4 = 4718592 B a sample;
    // copies (1536 + 768) * 49 * 2 = 225792 B a sample: 20.9 times less, so past twice.
    // Last GEMM batch: max(8 MiB / 4718592 = 1, min(3200 / 49 = 65, (80 MiB - 1) / 4718592 = 17)) = 17,
    // so the switch is at 17 * 4718592 = 80216064 B. At batch 16 (the GPU trace's 72 MiB
    // workspace) 75497472 B; at batch 32, 32 * 225792 = 7225344 B.
    Graph g = infer("input x float32 batch,1536,7,7\nparam w float32 768,1536,1,1\nnode Conv x w -> y");
    const Node& n = producer(g, "y");
    const Workspace ws = n.info->bwd_workspace(g, n, DType::BF16, true, false);
    CHECK(ws.bytes.str() == "4718592*batch");
    CHECK(ws.switch_above == 80216064);
    CHECK(ws.above.str() == "225792*batch");
    CHECK(n.info->bwd_workspace(g, n, DType::BF16, false, false).bytes.str() == "4718592*batch");
  }
  SUBCASE("partials at most twice the copies: the GEMM at every batch") {
    // x [batch, 64, 28, 28], w [128, 64, 1, 1], fp32: partials 64*128*4 = 32768 B a sample,
    // copies (64 + 128) * 784 * 4 = 602112 B: the GEMM's, no switch.
    Graph g = infer("input x float32 batch,64,28,28\nparam w float32 128,64,1,1\nnode Conv x w -> y");
    const Node& n = producer(g, "y");
    const Workspace ws = n.info->bwd_workspace(g, n, DType::F32, true, false);
    CHECK(ws.bytes.str() == "32768*batch");
    CHECK(ws.switch_above == 0);
  }
  SUBCASE("a pooled head (1x1 spatial): the NHWC engine's copies") {
    // x [batch, 960, 1, 1] -> 1280 channels, fp32: (960 + 1280) * 4 = 8960 B a sample
    // (the GEMM's partials would be 960 * 1280 * 4 = 4915200).
    Graph g = infer("input x float32 batch,960,1,1\nparam w float32 1280,960,1,1\nnode Conv x w -> y");
    const Node& n = producer(g, "y");
    const Workspace ws = n.info->bwd_workspace(g, n, DType::F32, true, false);
    CHECK(ws.bytes.str() == "8960*batch");
    CHECK(ws.switch_above == 0);
  }
  SUBCASE("a map larger than the probes' keeps the table or the envelope") {
    Graph g = infer("input x float32 batch,64,128,128\nparam w float32 256,64,1,1\nnode Conv x w -> y");
    const Node& n = producer(g, "y");
    CHECK(n.info->bwd_workspace(g, n, DType::F32, true, false).bytes.str() != "65536*batch");
  }
}

// The same layer in 1-D (pointwise_wgrad_1d): the per-sample GEMM's fp32 partials in fp32
// whatever their size; in half precision only where they are at most twice x + y.
TEST_CASE("conv: the weight gradient of a dense 1-D pointwise convolution takes per-sample fp32 partials") {
  // wav2letter's 2000 -> 2000 layer on 201 positions: partials 2000 * 2000 * 4 = 16000000 B
  // a sample (the GPU's 256 MB at batch 16, 512 MB at batch 32); in bf16 its copies are
  // (2000 + 2000) * 201 * 2 = 1608000 B a sample, ten times less: not the GEMM's.
  Graph g = infer("input x float32 batch,2000,201\nparam w float32 2000,2000,1\nnode Conv x w -> y");
  const Node& n = producer(g, "y");
  CHECK(n.info->bwd_workspace(g, n, DType::F32, true, false).bytes.str() == "16000000*batch");
  CHECK(n.info->bwd_workspace(g, n, DType::F32, false, false).bytes.str() == "16000000*batch");
  CHECK(n.info->bwd_workspace(g, n, DType::BF16, true, false).bytes.str() != "16000000*batch");
  // 256 -> 128 on 1000 positions, fp16: partials 131072 B a sample, copies 768000: the GEMM's.
  Graph h = infer("input x float32 batch,256,1000\nparam w float32 128,256,1\nnode Conv x w -> y");
  const Node& m = producer(h, "y");
  CHECK(m.info->bwd_workspace(h, m, DType::F16, true, false).bytes.str() == "131072*batch");
  // 3 input channels (not a multiple of 8) or a kernel of 3: not this rule.
  Graph k = infer("input x float32 batch,3,1000\nparam w float32 128,3,1\nnode Conv x w -> y");
  CHECK(producer(k, "y").info->bwd_workspace(k, producer(k, "y"), DType::F32, true, false).bytes.str() != "1536*batch");
}

// The same layer on a channels-last input in half precision (pointwise_wgrad_channels_last):
// cuDNN's NHWC engine, at most one slice of fp32 partials per SM, bounded by (x + y) / 2.
TEST_CASE("conv: a dense 1x1 convolution on a channels-last input in half precision, split-K bounded") {
  // ConvNeXt-atto's stage-0 fc2: x [batch, 640, 56, 56] -> 160 channels, fp16.
  // (x + y) / 2 = (640 + 160) * 3136 * 2 / 2 = 2508800 B a sample, plus 1 MiB; at most
  // 132 slices of 640 * 160 * 4 = 409600 B: 54067200 + 1048576 = 55115776 B.
  Graph g = infer("input x float32 batch,640,56,56\nparam w float32 160,640,1,1\nnode Conv x w -> y");
  const Node& n = producer(g, "y");
  const Workspace ws = n.info->bwd_workspace(g, n, DType::F16, true, true);
  CHECK(ws.bytes.str() == "2508800*batch + 1048576");
  CHECK(ws.switch_above == 55115776);
  CHECK(ws.above.str() == "55115776");
  // The first layer's call (no input gradient) takes the same.
  CHECK(n.info->bwd_workspace(g, n, DType::F16, false, true).bytes.str() == "2508800*batch + 1048576");
  // fp32 layers keep the general envelope (their probes reach 31 (x + y)).
  CHECK(n.info->bwd_workspace(g, n, DType::F32, true, true).bytes.str() != "5017600*batch + 1048576");
  CHECK(n.info->bwd_workspace(g, n, DType::F32, true, true).switch_above == 0);
}

}  // namespace memest
