// LSTM, GRU and RNN output shapes by direction and layout; cuDNN's reserve and workspace.
#include <doctest/doctest.h>

#include "tests/ops_test_util.h"

namespace memest {
namespace {

using testing::dtype;
using testing::extras;
using testing::infer;
using testing::shape;

TEST_CASE("rnn: LSTM") {
  Graph g = infer(R"(
    input x float32 seq,batch,32
    input xb float32 batch,seq,32
    param w float32 2,256,32
    param r float32 2,256,64
    param b float32 2,512
    param w1 float32 1,256,32
    param r1 float32 1,256,64
    node LSTM x w r b -> y yh yc hidden_size=64 direction=bidirectional
    node LSTM xb w1 r1 -> yb ybh ybc hidden_size=64 layout=1
    node LSTM x w1 r1 -> only_y
  )");
  CHECK(shape(g, "y") == "[seq, 2, batch, 64]");
  CHECK(shape(g, "yh") == "[2, batch, 64]");
  CHECK(shape(g, "yc") == "[2, batch, 64]");
  CHECK(dtype(g, "y") == "float32");
  CHECK(shape(g, "yb") == "[batch, seq, 1, 64]");
  CHECK(shape(g, "ybh") == "[batch, 1, 64]");
  CHECK(shape(g, "only_y") == "[seq, 1, batch, 64]");  // hidden size from R
  // cuDNN's reserve, as measured: 5x Y's bytes plus 256 bytes.
  CHECK(extras(g, "only_y") == "320*batch*seq + 64:float32");
}

TEST_CASE("rnn: GRU and RNN") {
  Graph g = infer(R"(
    input x float16 10,batch,16
    param w float16 1,96,16
    param r float16 1,96,32
    param rw float16 1,32,16
    param rr float16 1,32,32
    node GRU x w r -> y yh hidden_size=32 direction=reverse
    node RNN x rw rr -> ry ryh hidden_size=32
  )");
  CHECK(shape(g, "y") == "[10, 1, batch, 32]");
  CHECK(shape(g, "yh") == "[1, batch, 32]");
  CHECK(dtype(g, "yh") == "float16");
  CHECK(shape(g, "ry") == "[10, 1, batch, 32]");
  CHECK(extras(g, "y") == "1920*batch + 128:float16");  // 6x Y
  CHECK(extras(g, "ry") == "320*batch + 128:float16");  // 1x Y
  CHECK_THROWS_AS(infer("input x float32 4,16\nparam w float32 1,96,16\nparam r float32 1,96,32\nnode GRU x w r -> y"),
                  Error);
  CHECK_THROWS_AS(infer(R"(
    input x float32 4,2,16
    param w float32 1,96,16
    param r float32 1,96,32
    node GRU x w r -> y hidden_size=32 direction=sideways
  )"), Error);
}

TEST_CASE("rnn: an nn.LSTM of two layers is one cuDNN call: one reserve, one workspace") {
  // The TorchScript exporter's two nodes of module "lstm", layer 0's Y squeezed into
  // layer 1's X. seq 128, batch 32, hidden 512, fp32: Y = 128 x 32 x 512 elements.
  Graph g = infer(R"(
    input x float32 128,32,512
    param w0 float32 1,2048,512
    param r0 float32 1,2048,512
    param w1 float32 1,2048,512
    param r1 float32 1,2048,512
    const axis int64 1 = 1
    node LSTM x w0 r0 -> y0 h0 c0 hidden_size=512 @lstm
    node Squeeze y0 axis -> x1 @lstm
    node LSTM x1 w1 r1 -> y1 h1 c1 hidden_size=512 @lstm
    node Relu y1 -> z @head
  )");
  // The call's reserve, (5 + 1) x 2 - 1 = 11 Y measured, is 5 x 2 Y on the first node
  // and the inner Y that the second keeps as its X: 10 x 2,097,152 elements + 64.
  CHECK(extras(g, "y0") == "20971584:float32");
  CHECK(extras(g, "y1") == "");
  // Workspace, stacked fp32 LSTM: 2 pseudo-layers x 8.1322 MiB = 17,054,459 bytes, plus a
  // copy of W and R (4 x 1,048,576 elements x 4 bytes = 16,777,216), plus round(6.1660 x 4)
  // = 25 bytes per element of Y (52,428,800): 86,260,475 (82.3 MiB; 81.25 MiB measured).
  const OpInfo* lstm = find_op("", "LSTM");
  const Node& first = testing::producer(g, "y0");
  const Node& second = testing::producer(g, "y1");
  CHECK(lstm->fwd_workspace(g, first, DType::F32, true, false).bytes.str() == "86260475");
  CHECK(lstm->bwd_workspace(g, first, DType::F32, true, false).bytes.str() == "86260475");
  CHECK(lstm->fwd_workspace(g, second, DType::F32, true, false).bytes.is_zero());
  // Under autocast it runs in fp16: 2 x 8.0661 MiB = 16,915,837 bytes, the weights in fp16
  // (8,388,608), 12 bytes per element of Y (25,165,824): 50,470,269 (48.1 MiB; 48.63 measured).
  CHECK(lstm->fwd_workspace(g, first, DType::F16, true, false).bytes.str() == "50470269");
}

TEST_CASE("rnn: a bidirectional layer is two pseudo-layers of cuDNN's workspace") {
  // The legacy exporter's two-layer bidirectional GRU: layer 0's Y [seq, 2, batch, 64]
  // transposed and reshaped into layer 1's X [seq, batch, 128].
  Graph g = infer(R"(
    input x float16 32,64,40
    param w0 float16 2,192,40
    param r0 float16 2,192,64
    param w1 float16 2,192,128
    param r1 float16 2,192,64
    const to_x int64 3 = 0,0,-1
    node GRU x w0 r0 -> y0 h0 hidden_size=64 direction=bidirectional linear_before_reset=1 @rnn
    node Transpose y0 -> t0 perm=0,2,1,3 @rnn
    node Reshape t0 to_x -> x1 @rnn
    node GRU x1 w1 r1 -> y1 h1 hidden_size=64 direction=bidirectional linear_before_reset=1 @rnn
  )");
  CHECK(shape(g, "x1") == "[32, 64, 128]");
  // 2 layers x 2 directions = 4 pseudo-layers x 8.0986 MiB = 33,967,990 bytes; W and R of
  // both: 2 x 192 x (40 + 64 + 128 + 64) = 113,664 elements, 227,328 bytes in fp16; Y is
  // 32 x 2 x 64 x 64 = 262,144 elements; a hidden size under 192 in two directions takes
  // 16 Y, round(16 x 2) = 32 bytes each: 8,388,608. The input (40) is narrower than the
  // output (2 x 64): nothing for it. 42,583,926 in all; the fit alone (11 bytes per
  // element of Y) gave 37,078,902, counting each layer once (the earlier fit) 17,736,470.
  const OpInfo* gru = find_op("", "GRU");
  CHECK(gru->fwd_workspace(g, testing::producer(g, "y0"), DType::F16, true, false).bytes.str() == "42583926");
  CHECK(gru->fwd_workspace(g, testing::producer(g, "y1"), DType::F16, true, false).bytes.is_zero());
  // The reserve: (6 + 1) x 2 - 1 = 13 Y for the call, 12 on the first node.
  CHECK(extras(g, "y0") == "3145856:float16");
}

TEST_CASE("rnn: a single layer keeps its own reserve and workspace") {
  Graph g = infer(R"(
    input x float16 64,16,256
    param w float16 1,1024,256
    param r float16 1,1024,256
    node LSTM x w r -> y hidden_size=256 @lstm
  )");
  CHECK(extras(g, "y") == "1310848:float16");  // 5 x 262,144 + 128
  // One fp16 layer: 8.0354 MiB = 8,425,727 bytes, W and R (2 x 1024 x 256 elements,
  // 1,048,576 bytes), round(22.0566 x 2) = 44 bytes x 262,144: 21,008,639 (20.04 MiB;
  // 20.06 measured at batch 16, seq 64).
  CHECK(find_op("", "LSTM")->fwd_workspace(g, testing::producer(g, "y"), DType::F16, true, false).bytes.str() == "21008639");
}

TEST_CASE("rnn: a single fp16 LSTM in two directions takes the two-direction workspace") {
  // rnd25_28's layer: 128 steps x 8 samples of 80 features, hidden 256, both directions.
  Graph g = infer(R"(
    input x float16 128,8,80
    param w float16 2,1024,80
    param r float16 2,1024,256
    node LSTM x w r -> y hidden_size=256 direction=bidirectional @lstm
  )");
  // 2 pseudo-layers x 8.0354 MiB = 16,851,455 bytes; W and R 2 x 1024 x (80 + 256) =
  // 688,128 elements x 2 = 1,376,256; Y = 128 x 2 x 8 x 256 = 524,288 elements at 8 Y (two
  // directions, hidden 256: not the one-direction layer's 22), 16 bytes each: 8,388,608.
  // 26,616,319 in all; traces36 measured 25,756,160 (22 Y gave 41,295,871).
  CHECK(find_op("", "LSTM")->fwd_workspace(g, testing::producer(g, "y"), DType::F16, true, false).bytes.str() ==
        "26616319");
}

TEST_CASE("rnn: a small hidden size and a wide input raise the workspace (the random grid)") {
  // One fp32 LSTM layer, hidden 64, input 512, 16 steps x 8 samples.
  Graph g = infer(R"(
    input x float32 16,8,512
    param w float32 1,256,512
    param r float32 1,256,64
    node LSTM x w r -> y hidden_size=64 @lstm
  )");
  // 1 pseudo-layer x 8.0968 MiB = 8,490,110 bytes; W and R 147,456 elements x 4 = 589,824;
  // Y = 16 x 8 x 64 = 8,192 elements at 22 Y (hidden under 192, one direction), 88 bytes
  // each: 720,896; the input's 512 - 64 = 448 features beyond Y's width x 128 steps and
  // samples x 4 copies x 4 bytes: 917,504. 10,718,334 in all (the fit alone: 9,276,542).
  CHECK(find_op("", "LSTM")->fwd_workspace(g, testing::producer(g, "y"), DType::F32, true, false).bytes.str() ==
        "10718334");
}

TEST_CASE("rnn: training facts") {
  const OpInfo* lstm = find_op("", "LSTM");
  CHECK(lstm->autocast == Autocast::Lower);
  CHECK(lstm->saves_input(0));
  CHECK(lstm->saves_input(1));
  CHECK(lstm->saves_output(0));
  CHECK(lstm->grad_of(4) == 'N');
}

}  // namespace
}  // namespace memest
