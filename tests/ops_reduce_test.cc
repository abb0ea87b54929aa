// Reductions: axes as attribute or input by opset, keepdims, noop; ArgMax, TopK, CumSum.
#include <doctest/doctest.h>

#include "tests/ops_test_util.h"

namespace memest {
namespace {

using testing::dtype;
using testing::infer;
using testing::shape;
using testing::value;

TEST_CASE("reduce: axes and keepdims") {
  Graph g = infer(R"(
    opset 13
    input x float32 batch,seq,768
    const ax int64 1 = -1
    node ReduceSum x ax -> sum
    node ReduceSum x -> all keepdims=0
    node ReduceSum x -> noop noop_with_empty_axes=1
    node ReduceMean x -> mean axes=[1] keepdims=0
    node ReduceMax x -> max axes=0,2
    node ReduceL2 x -> l2 axes=[-1]
    node ReduceLogSumExp x -> lse axes=[2] keepdims=0
  )");
  CHECK(shape(g, "sum") == "[batch, seq, 1]");
  CHECK(shape(g, "all") == "[]");
  CHECK(shape(g, "noop") == "[batch, seq, 768]");
  CHECK(shape(g, "mean") == "[batch, 768]");
  CHECK(shape(g, "max") == "[1, seq, 1]");
  CHECK(shape(g, "l2") == "[batch, seq, 1]");
  CHECK(shape(g, "lse") == "[batch, seq]");
  CHECK(g.warnings.empty());
}

TEST_CASE("reduce: opset 18 axes input, unknown axes fall back") {
  Graph g = infer(R"(
    opset 18
    input x float32 batch,seq,768
    input dyn int64 1
    const ax int64 2 = 0,1
    node ReduceMean x ax -> m keepdims=0
    node ReduceProd x dyn -> unknown
  )");
  CHECK(shape(g, "m") == "[768]");
  CHECK(!g.warnings.empty());
  CHECK_THROWS_AS(infer("input x float32 2,3\nnode ReduceMean x -> y axes=[1,1]"), Error);
  CHECK_THROWS_AS(infer("input x float32 2,3\nnode ReduceMean x -> y axes=[2]"), Error);
}

TEST_CASE("reduce: folding shape products") {
  Graph g = infer(R"(
    input x float32 batch,seq,12,64
    node Shape x -> s
    node ReduceProd s -> numel keepdims=0
    input y float32 n,12,64
    node Shape y -> sy
    node ReduceSum sy -> total keepdims=0
  )");
  CHECK(value(g, "numel") == "[768*batch*seq]");
  CHECK(value(g, "total") == "[n + 76]");
}

TEST_CASE("reduce: arg, topk, cumsum") {
  Graph g = infer(R"(
    input x float16 batch,10,vocab
    const k int64 1 = 5
    const axis int64 - = 1
    node ArgMax x -> am axis=2 keepdims=0
    node ArgMin x -> an
    node TopK x k -> vals idx
    node Shape x -> s
    const one int64 1 = 1
    node Gather s one -> ten
    node TopK x ten -> tv ti axis=1
    node CumSum x axis -> cs
  )");
  CHECK(shape(g, "am") == "[batch, 10]");
  CHECK(dtype(g, "am") == "int64");
  CHECK(shape(g, "an") == "[1, 10, vocab]");
  CHECK(shape(g, "vals") == "[batch, 10, 5]");
  CHECK(dtype(g, "vals") == "float16");
  CHECK(shape(g, "idx") == "[batch, 10, 5]");
  CHECK(dtype(g, "idx") == "int64");
  CHECK(shape(g, "tv") == "[batch, 10, vocab]");
  CHECK(shape(g, "cs") == "[batch, 10, vocab]");
  Graph old = infer("opset 9\ninput x float32 4,20\nnode TopK x -> v i k=3");
  CHECK(shape(old, "v") == "[4, 3]");
  CHECK_THROWS_AS(infer("input x float32 4,2\nconst k int64 1 = 3\nnode TopK x k -> v i"), Error);
}

TEST_CASE("reduce: training facts") {
  CHECK(find_op("", "ReduceSum")->grad_of(0) == 'V');
  // sum, prod and linalg_vector_norm are autocast's fp32_set_opt_dtype: half in, float out,
  // no fp32 copy of the input.
  CHECK(find_op("", "ReduceSum")->autocast == Autocast::Widen);
  CHECK(find_op("", "ReduceL2")->autocast == Autocast::Widen);
  CHECK(find_op("", "ReduceL1")->autocast == Autocast::Widen);
  CHECK(find_op("", "ReduceMean")->grad_of(0) == 'A');
  CHECK(find_op("", "ReduceMean")->autocast == Autocast::Keep);
  CHECK(find_op("", "ReduceProd")->autocast == Autocast::Widen);
  CHECK(find_op("", "ReduceLogSumExp")->autocast == Autocast::Fp32);
  CHECK(find_op("", "CumSum")->autocast == Autocast::Fp32);
  CHECK(find_op("", "TopK")->saves_output(1));
  CHECK(std::string(find_op("", "ArgMax")->grads).empty());
}

}  // namespace
}  // namespace memest
