// LSTM, GRU and RNN output shapes by direction and layout; the cuDNN reserve size.
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
