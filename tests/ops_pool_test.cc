// Pooling output sizes, ceil_mode's last-window rule, indices and saved extras.
#include <doctest/doctest.h>

#include "tests/ops_test_util.h"

namespace memest {
namespace {

using testing::dtype;
using testing::extras;
using testing::infer;
using testing::shape;

TEST_CASE("pool: windows") {
  Graph g = infer(R"(
    input x float32 batch,64,112,112
    input s float32 batch,8,h,w
    node MaxPool x -> y idx kernel_shape=3,3 strides=2,2 pads=1,1,1,1
    node AveragePool s -> a kernel_shape=3,3 pads=1,1,1,1
    node MaxPool x -> d kernel_shape=2,2 dilations=2,2
    node LpPool x -> lp kernel_shape=2,2 strides=2,2
    node GlobalAveragePool x -> gap
    node GlobalMaxPool x -> gmp
  )");
  CHECK(shape(g, "y") == "[batch, 64, 56, 56]");
  CHECK(shape(g, "idx") == "[batch, 64, 56, 56]");
  CHECK(dtype(g, "idx") == "int64");
  CHECK(shape(g, "a") == "[batch, 8, h, w]");
  CHECK(shape(g, "d") == "[batch, 64, 110, 110]");
  CHECK(shape(g, "lp") == "[batch, 64, 56, 56]");
  CHECK(shape(g, "gap") == "[batch, 64, 1, 1]");
  CHECK(shape(g, "gmp") == "[batch, 64, 1, 1]");
  CHECK(g.warnings.empty());
}

TEST_CASE("pool: ceil_mode") {
  Graph g = infer(R"(
    input a float32 1,1,6,32
    input b float32 1,1,5,5
    node MaxPool a -> floor_a kernel_shape=3,3 strides=2,2 pads=1,0,1,0
    node MaxPool a -> ceil_a kernel_shape=3,3 strides=2,2 pads=1,0,1,0 ceil_mode=1
    node AveragePool b -> ceil_b kernel_shape=2,2 strides=2,2 pads=1,1,1,1 ceil_mode=1
    node AveragePool b -> floor_b kernel_shape=2,2 strides=2,2 pads=1,1,1,1
  )");
  // 6 -> floor((6+2-3)/2)+1 = 3; ceil gives 4, its last window starts at input index 5.
  // 32 -> 15 floor, 16 ceil (last window starts at 30 < 32).
  CHECK(shape(g, "floor_a") == "[1, 1, 3, 15]");
  CHECK(shape(g, "ceil_a") == "[1, 1, 4, 16]");
  // 5 with k=2, s=2, p=1: ceil((5+2-2)/2)+1 = 4, but that window would start at
  // padded index 6, in the right padding, so it is dropped: 3.
  CHECK(shape(g, "ceil_b") == "[1, 1, 3, 3]");
  CHECK(shape(g, "floor_b") == "[1, 1, 3, 3]");
}

TEST_CASE("pool: unpool and errors") {
  Graph g = infer(R"(
    input x float32 1,4,5,5
    input i int64 1,4,5,5
    const out int64 4 = 1,4,11,11
    node MaxUnpool x i -> u kernel_shape=2,2 strides=2,2
    node MaxUnpool x i out -> v kernel_shape=2,2 strides=2,2
  )");
  CHECK(shape(g, "u") == "[1, 4, 10, 10]");
  CHECK(shape(g, "v") == "[1, 4, 11, 11]");
  CHECK_THROWS_WITH_AS(infer("input x float32 1,4,5,5\nnode MaxPool x -> y :mp"),
                       "<text>: node 'mp': MaxPool: missing attribute 'kernel_shape'", Error);
  CHECK_THROWS_AS(infer("input x float32 1,4\nnode GlobalAveragePool x -> y"), Error);
}

TEST_CASE("pool: training facts") {
  Graph g = infer(R"(
    input x float32 batch,64,112,112
    node MaxPool x -> y kernel_shape=3,3 strides=2,2 pads=1,1,1,1
    node GlobalMaxPool y -> gm
    node GlobalAveragePool y -> ga
  )");
  CHECK(extras(g, "y") == "200704*batch:int64");
  CHECK(extras(g, "gm") == "64*batch:int64");
  CHECK(extras(g, "ga") == "");
  Graph lp = infer("input x float16 batch,8,16,16\nnode LpPool x -> y kernel_shape=2,2 strides=2,2");
  CHECK(extras(lp, "y") == "2048*batch:float16 2560*batch:float16");  // x^p, five output-sized
  CHECK(find_op("", "MaxPool")->saves_input(0));
  CHECK(find_op("", "AveragePool")->saves_input(0));
  CHECK(find_op("", "GlobalAveragePool")->saved_inputs == 0);
  CHECK(find_op("", "MaxPool")->autocast == Autocast::Keep);
}

}  // namespace
}  // namespace memest
