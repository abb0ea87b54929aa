// Elementwise ops: broadcasting, result dtypes, folded contents, table facts.
#include <doctest/doctest.h>

#include "tests/ops_test_util.h"

namespace memest {
namespace {

using testing::dtype;
using testing::infer;
using testing::shape;
using testing::value;

TEST_CASE("elementwise: broadcasting") {
  Graph g = infer(R"(
    input a float32 batch,1,5
    input b float32 4,1
    input c float16 5
    input m bool batch,4,5
    node Add a b -> ab
    node Mul a c -> ac
    node Sub c c -> cc
    node Div b a -> ba
    node Pow a b -> p
    node Sum a b c -> s3
    node Max a b -> mx
    node Mean c -> mean1
    node Where m a b -> w
    node Equal a b -> eq
    node And m m -> and
    node Not m -> not
    node IsNaN a -> nan
  )");
  CHECK(shape(g, "ab") == "[batch, 4, 5]");
  CHECK(dtype(g, "ac") == "float32");  // float16 promoted to float32
  CHECK(dtype(g, "cc") == "float16");
  CHECK(shape(g, "ba") == "[batch, 4, 5]");
  CHECK(shape(g, "p") == "[batch, 4, 5]");
  CHECK(shape(g, "s3") == "[batch, 4, 5]");
  CHECK(shape(g, "mx") == "[batch, 4, 5]");
  CHECK(shape(g, "mean1") == "[5]");
  CHECK(shape(g, "w") == "[batch, 4, 5]");
  CHECK(dtype(g, "w") == "float32");
  CHECK(dtype(g, "eq") == "bool");
  CHECK(dtype(g, "and") == "bool");
  CHECK(dtype(g, "not") == "bool");
  CHECK(dtype(g, "nan") == "bool");
  CHECK(g.warnings.empty());
}

TEST_CASE("elementwise: incompatible broadcast names the node") {
  CHECK_THROWS_WITH_AS(infer("input a float32 3\ninput b float32 4\nnode Add a b -> c :add1"),
                       "<text>: node 'add1': Add: cannot broadcast [3] with [4]", Error);
}

TEST_CASE("elementwise: a symbolic dim against another symbol keeps one") {
  Graph g = infer("input a float32 n,3\ninput b float32 m,1\nnode Add a b -> c");
  CHECK(shape(g, "c").find(", 3]") != std::string::npos);
}

TEST_CASE("elementwise: unary ops keep shape and dtype") {
  for (const char* op : {"Neg", "Abs", "Sqrt", "Reciprocal", "Exp", "Log", "Erf", "Sin", "Cos", "Tan", "Floor",
                         "Ceil", "Round", "Sign", "Clip", "Identity", "Trilu", "Asin", "Atanh"}) {
    CAPTURE(op);
    Graph g = infer(std::string("input x bfloat16 batch,7\nnode ") + op + " x -> y");
    CHECK(shape(g, "y") == "[batch, 7]");
    CHECK(dtype(g, "y") == "bfloat16");
  }
}

TEST_CASE("elementwise: casts") {
  Graph g = infer(R"(
    input x float32 batch,7
    input h float16 1
    const i int64 2 = batch,3
    const f float32 2 = 2.7,-2.7
    node Cast x -> xh to=10
    node CastLike x h -> xl
    node Cast i -> if to=1
    node Cast f -> fi to=7
    node Cast i -> ii to=6
    node Cast f -> fb to=9
  )");
  CHECK(dtype(g, "xh") == "float16");
  CHECK(shape(g, "xh") == "[batch, 7]");
  CHECK(dtype(g, "xl") == "float16");
  CHECK(dtype(g, "if") == "float32");
  CHECK(value(g, "fi") == "[2, -2]");  // truncation toward zero
  CHECK(value(g, "ii") == "[batch, 3]");
  CHECK(value(g, "fb") == "[1, 1]");
  CHECK_THROWS_AS(infer("input x float32 1\nnode Cast x -> y"), Error);
}

TEST_CASE("elementwise: folding integer contents") {
  Graph g = infer(R"(
    const a int64 3 = batch,6,-7
    const b int64 3 = 2,4,2
    const one int64 - = 3
    const s int64 1 = seq
    node Add a b -> add
    node Sub a b -> sub
    node Mul a one -> mul
    node Div a b -> div
    node Mod a b -> mod
    node Equal a b -> eq
    node Less a b -> lt
    node Greater b one -> gt
    node Max b one -> max
    node Min a b -> min
    node Where gt a b -> where
    node Not gt -> not
    node Neg a -> neg
    node Mul s one -> s3
    node Div s3 one -> s1
    node Div s one -> sdiv
    node Identity a -> id
    node Sum a -> sum1
  )");
  CHECK(value(g, "add") == "[batch + 2, 10, -5]");
  CHECK(value(g, "sub") == "[batch - 2, 2, -9]");
  CHECK(value(g, "mul") == "[3*batch, 18, -21]");
  CHECK(value(g, "div") == "?");  // batch / 2 is not exact
  CHECK(value(g, "mod") == "?");
  CHECK(value(g, "eq") == "?");  // batch == 2 is not known
  CHECK(value(g, "lt") == "?");
  CHECK(value(g, "gt") == "[0, 1, 0]");
  CHECK(dtype(g, "gt") == "bool");
  CHECK(value(g, "max") == "[3, 4, 3]");
  CHECK(value(g, "min") == "?");
  CHECK(value(g, "where") == "[2, 6, 2]");
  CHECK(value(g, "not") == "[1, 0, 1]");
  CHECK(value(g, "neg") == "[-batch, -6, 7]");
  CHECK(value(g, "s3") == "[3*seq]");
  CHECK(value(g, "s1") == "[seq]");
  CHECK(value(g, "sdiv") == "?");
  CHECK(value(g, "id") == "[batch, 6, -7]");
  CHECK(value(g, "sum1") == "[batch, 6, -7]");

  Graph c = infer(R"(
    const a int64 4 = 7,-7,7,-7
    const b int64 4 = 2,2,-2,-2
    node Div a b -> div
    node Mod a b -> mod
    node Equal a b -> eq
  )");
  CHECK(value(c, "div") == "[3, -3, -3, 3]");
  CHECK(value(c, "mod") == "[1, 1, -1, -1]");
  CHECK(value(c, "eq") == "[0, 0, 0, 0]");
}

TEST_CASE("elementwise: comparisons a dimension's range decides") {
  Graph g = infer(R"(
    const s int64 3 = batch,-1,-1
    const m1 int64 - = -1
    const one int64 - = 1
    const zero int64 - = 0
    const t int64 1 = seq
    node Equal s m1 -> eq
    node Max s one -> mx
    node Less s zero -> lt
    node GreaterOrEqual s one -> ge
    node LessOrEqual t one -> le
    const u int64 1 = batch
    node Mul u t -> st
    node Greater st zero -> gt
  )");
  CHECK(value(g, "eq") == "[0, 1, 1]");
  CHECK(value(g, "mx") == "[batch, 1, 1]");
  CHECK(value(g, "lt") == "[0, 1, 1]");
  CHECK(value(g, "ge") == "[1, 0, 0]");
  CHECK(value(g, "le") == "?");  // seq may be 1
  CHECK(value(g, "gt") == "[1]");  // batch*seq >= 1
}

TEST_CASE("elementwise: the float detour of interpolate sizes stays symbolic") {
  Graph g = infer(R"(
    input x float32 batch,3,h,w
    input c float32 1,3,15,9
    node Shape x -> s
    const a int64 1 = 0
    const b int64 1 = 2
    const e int64 1 = 4
    node Slice s a b -> nc
    node Slice s b e -> hw
    node Cast hw -> hwf to=1
    const two float32 - = 2
    node Mul hwf two -> scaled
    node Floor scaled -> fl
    node Cast fl -> hwi to=7
    node Concat nc hwi -> sizes axis=0
    node Resize x - - sizes -> up
    node Shape c -> cs
    node Slice cs b e -> chw
    node Cast chw -> chwf to=1
    const half float32 - = 0.5
    node Mul chwf half -> chalf
    node Floor chalf -> cfl
    node Ceil chalf -> cce
    node Round chalf -> cro
    node Div chwf two -> cdiv
    node Cast cfl -> cint to=7
  )");
  CHECK(value(g, "scaled") == "[2*h, 2*w]");
  CHECK(value(g, "sizes") == "[batch, 3, 2*h, 2*w]");
  CHECK(shape(g, "up") == "[batch, 3, 2*h, 2*w]");
  CHECK(value(g, "chalf") == "?");  // 7.5 and 4.5 are not whole
  CHECK(*testing::tensor(g, "chalf").fvalue == std::vector<double>{7.5, 4.5});
  CHECK(*testing::tensor(g, "cce").fvalue == std::vector<double>{8, 5});
  CHECK(*testing::tensor(g, "cro").fvalue == std::vector<double>{8, 4});  // halves round to even
  CHECK(*testing::tensor(g, "cdiv").fvalue == std::vector<double>{7.5, 4.5});
  CHECK(value(g, "cdiv") == "?");  // float division does not truncate
  CHECK(value(g, "cint") == "[7, 4]");
  CHECK(g.warnings.empty());
}

TEST_CASE("elementwise: training facts") {
  const OpInfo* mul = find_op("", "Mul");
  REQUIRE(mul);
  CHECK(mul->autocast == Autocast::Promote);
  CHECK(mul->saved_if_other == bits({0, 1}));
  CHECK(mul->saved_inputs == 0);
  const OpInfo* div = find_op("", "Div");
  CHECK(div->saves_input(1));
  CHECK(!div->saves_input(0));
  CHECK(div->saved_if_other == bits({0}));
  CHECK(find_op("", "Add")->grad_of(1) == 'V');
  CHECK(find_op("", "Sub")->grad_of(1) == 'A');
  CHECK(find_op("", "Sqrt")->saves_output(0));
  CHECK(find_op("", "Exp")->autocast == Autocast::Fp32);
  CHECK(find_op("", "Log")->saves_input(0));
  CHECK(find_op("", "Where")->grad_of(0) == 'N');
  CHECK(find_op("", "Identity")->view);
  CHECK(std::string(find_op("", "Equal")->grads).empty());
  CHECK(find_op("ai.onnx", "Cast")->autocast == Autocast::None);
}


// The legacy exporter's TF-"SAME" pad amount for a 224 input, kernel 3, stride 2:
// max((ceil(224 / 2) - 1) * 2 + 2 + 1 - 224, 0) = 1, in floats, then cast back.
TEST_CASE("elementwise: Clip folds known contents between constant bounds") {
  Graph g = infer(R"(
    opset 13
    input x float32 1,3,224,224
    node Shape x -> s
    const two int64 1 = 2
    node Gather s two -> h axis=0
    node Cast h -> hf to=1
    const st float32 - = 2
    node Div hf st -> q
    node Ceil q -> c
    const one float32 - = 1
    node Sub c one -> c1
    node Mul c1 st -> m
    const kd float32 - = 3
    node Add m kd -> a
    node Sub a hf -> need
    const zero float32 - = 0
    node Clip need zero -> pad
    node Cast pad -> padi to=7
    node Neg hf -> neg
    node Clip neg zero -> none
  )");
  CHECK(value(g, "padi") == "[1]");
  CHECK(value(g, "none") == "[0]");
}
}  // namespace
}  // namespace memest

namespace memest {

TEST_CASE("elementwise: pow's backward makes two input-sized temporaries") {
  // pow_backward: grad * (exp * self.pow(exp - 1)): self.pow(exp - 1) and exp * it, both
  // [batch, 128, 1024], in the dtype pow ran in: 131072 elements a sample, 4 bytes each in
  // fp32 (autocast runs pow in fp32), twice: 1048576 B a sample.
  Graph g = testing::infer("input x float32 batch,128,1024\nconst two float32 - = 2\nnode Pow x two -> y");
  const Node& n = testing::producer(g, "y");
  CHECK(n.info->bwd_workspace(g, n, DType::F32, true, false).bytes.str() == "1048576*batch");
  CHECK(n.info->scratch_is_temporary);
  // Nothing when the input needs no gradient.
  CHECK(n.info->bwd_workspace(g, n, DType::F32, false, false).bytes.is_zero());
}

}  // namespace memest
