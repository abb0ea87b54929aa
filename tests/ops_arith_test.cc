// Shape-arithmetic sources: Shape, Size, Constant, ConstantOfShape, Range, EyeLike.
#include <doctest/doctest.h>

#include "tests/ops_test_util.h"

namespace memest {
namespace {

using testing::dtype;
using testing::infer;
using testing::shape;
using testing::tensor;
using testing::value;

TEST_CASE("arith: Shape and Size") {
  Graph g = infer(R"(
    opset 15
    input x float32 batch,3,32,32
    node Shape x -> s
    node Shape x -> tail start=1
    node Shape x -> mid start=1 end=-1
    node Shape x -> last start=-1
    node Shape x -> none start=3 end=1
    node Size x -> n
  )");
  CHECK(shape(g, "s") == "[4]");
  CHECK(dtype(g, "s") == "int64");
  CHECK(value(g, "s") == "[batch, 3, 32, 32]");
  CHECK(value(g, "tail") == "[3, 32, 32]");
  CHECK(value(g, "mid") == "[3, 32]");
  CHECK(value(g, "last") == "[32]");
  CHECK(shape(g, "none") == "[0]");
  CHECK(shape(g, "n") == "[]");
  CHECK(value(g, "n") == "[3072*batch]");
}

TEST_CASE("arith: Constant") {
  Graph g = infer(R"(
    node Constant -> t value=tensor:int64:2:4,5
    node Constant -> f value=tensor:float32:-:0.5
    node Constant -> big value=tensor:float16:64,64
    node Constant -> i value_int=7
    node Constant -> is value_ints=1,2,3
    node Constant -> vf value_float=0.25
    node Constant -> vfs value_floats=0.5,1.5
    node Constant -> str value_string=hello
  )");
  CHECK(shape(g, "t") == "[2]");
  CHECK(value(g, "t") == "[4, 5]");
  CHECK(shape(g, "f") == "[]");
  CHECK(*tensor(g, "f").fvalue == std::vector<double>{0.5});
  CHECK(shape(g, "big") == "[64, 64]");
  CHECK(dtype(g, "big") == "float16");
  CHECK(value(g, "big") == "?");
  CHECK(value(g, "i") == "[7]");
  CHECK(shape(g, "i") == "[]");
  CHECK(value(g, "is") == "[1, 2, 3]");
  CHECK(shape(g, "vf") == "[]");
  CHECK(*tensor(g, "vfs").fvalue == std::vector<double>{0.5, 1.5});
  CHECK(dtype(g, "str") == "string");
}

TEST_CASE("arith: ConstantOfShape") {
  Graph g = infer(R"(
    input x float32 batch,seq
    node Shape x -> s
    node ConstantOfShape s -> zeros
    node ConstantOfShape s -> mask value=tensor:bool:1:1
    const three int64 1 = 3
    node ConstantOfShape three -> sevens value=tensor:int64:1:7
  )");
  CHECK(shape(g, "zeros") == "[batch, seq]");
  CHECK(dtype(g, "zeros") == "float32");
  CHECK(dtype(g, "mask") == "bool");
  CHECK(value(g, "sevens") == "[7, 7, 7]");
}

TEST_CASE("arith: Range") {
  Graph g = infer(R"(
    input x float32 batch,seq,64
    node Shape x -> s
    const one int64 1 = 1
    node Gather s one -> len
    node Squeeze len -> n
    const zero int64 - = 0
    const step int64 - = 1
    node Range zero n step -> pos
    const a int64 - = 2
    const b int64 - = 11
    const c int64 - = 3
    node Range a b c -> up
    const ten int64 - = 10
    const m3 int64 - = -3
    node Range ten zero m3 -> down
    node Range b a c -> empty
    const f0 float32 - = 0
    const f1 float32 - = 1
    const fq float32 - = 0.25
    node Range f0 f1 fq -> quarters
  )");
  CHECK(shape(g, "pos") == "[seq]");
  CHECK(dtype(g, "pos") == "int64");
  CHECK(shape(g, "up") == "[3]");
  CHECK(value(g, "up") == "[2, 5, 8]");
  CHECK(value(g, "down") == "[10, 7, 4, 1]");
  CHECK(shape(g, "empty") == "[0]");
  CHECK(shape(g, "quarters") == "[4]");
  CHECK(*tensor(g, "quarters").fvalue == std::vector<double>{0, 0.25, 0.5, 0.75});
  CHECK_THROWS_AS(infer("const a int64 - = 0\nnode Range a a a -> r"), Error);
}

TEST_CASE("arith: random tensors") {
  Graph g = infer(R"(
    input x float16 batch,8
    input p float32 batch,10
    node RandomNormalLike x -> n
    node RandomUniformLike x -> u dtype=1
    node Bernoulli x -> b
    node RandomNormal -> r shape=3,4
    node RandomUniform -> ru shape=[5] dtype=10
    node Multinomial p -> m sample_size=3 dtype=7
  )");
  CHECK(shape(g, "n") == "[batch, 8]");
  CHECK(dtype(g, "n") == "float16");
  CHECK(dtype(g, "u") == "float32");
  CHECK(shape(g, "b") == "[batch, 8]");
  CHECK(shape(g, "r") == "[3, 4]");
  CHECK(dtype(g, "r") == "float32");
  CHECK(shape(g, "ru") == "[5]");
  CHECK(dtype(g, "ru") == "float16");
  CHECK(shape(g, "m") == "[batch, 3]");
  CHECK(dtype(g, "m") == "int64");
}

TEST_CASE("arith: EyeLike and facts") {
  Graph g = infer("input x int64 4,4\nnode EyeLike x -> e dtype=1\nnode EyeLike x -> f");
  CHECK(dtype(g, "e") == "float32");
  CHECK(dtype(g, "f") == "int64");
  CHECK(shape(g, "e") == "[4, 4]");
  for (const char* op : {"Shape", "Size", "Constant", "ConstantOfShape", "Range", "EyeLike"}) {
    CAPTURE(op);
    CHECK(std::string(find_op("", op)->grads).empty());
    CHECK(find_op("", op)->autocast == Autocast::None);
  }
}

}  // namespace
}  // namespace memest
