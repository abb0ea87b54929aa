// MatMul broadcasting and vectors, Gemm transposes, Einsum equations.
#include <doctest/doctest.h>

#include "tests/ops_test_util.h"

namespace memest {
namespace {

using testing::dtype;
using testing::infer;
using testing::shape;

TEST_CASE("matmul: numpy semantics") {
  Graph g = infer(R"(
    input x float32 batch,seq,768
    param w float32 768,3072
    input v float32 3
    input m float32 2,3
    input n float32 3,4
    input b4 float32 batch,1,2,3
    input b3 float32 5,3,4
    node MatMul x w -> y
    node MatMul v n -> vn
    node MatMul m v -> mv
    node MatMul v v -> vv
    node MatMul b4 b3 -> bb
  )");
  CHECK(shape(g, "y") == "[batch, seq, 3072]");
  CHECK(shape(g, "vn") == "[4]");
  CHECK(shape(g, "mv") == "[2]");
  CHECK(shape(g, "vv") == "[]");
  CHECK(shape(g, "bb") == "[batch, 5, 2, 4]");
  CHECK_THROWS_WITH_AS(infer("input a float32 2,3\ninput b float32 4,5\nnode MatMul a b -> c :mm"),
                       "<text>: node 'mm': MatMul: inner dimensions differ: [2, 3] x [4, 5]", Error);
}

TEST_CASE("matmul: gemm") {
  Graph g = infer(R"(
    input x float16 batch,512
    input xt float16 512,batch
    param fc.weight float16 1000,512
    param fc.bias float16 1000
    param wt float16 512,1000
    node Gemm x fc.weight fc.bias -> y transB=1
    node Gemm xt wt -> z transA=1
  )");
  CHECK(shape(g, "y") == "[batch, 1000]");
  CHECK(dtype(g, "y") == "float16");
  CHECK(shape(g, "z") == "[batch, 1000]");
  CHECK_THROWS_AS(infer("input a float32 2,3\ninput b float32 2,3\nnode Gemm a b -> c"), Error);
}

TEST_CASE("matmul: einsum") {
  Graph g = infer(R"(
    input q float32 batch,12,seq,64
    input k float32 batch,12,seq,64
    input a float32 3,4
    input b float32 4,5
    input e1 float32 batch,1,3,4
    input e2 float32 7,4,5
    input v float32 6
    node Einsum q k -> s equation="bhqd,bhkd->bhqk"
    node Einsum a b -> ik equation="ij,jk"
    node Einsum a -> t equation=ba
    node Einsum e1 e2 -> ell equation="...ij,...jk->...ik"
    node Einsum e1 b -> imp equation="...ij,jk"
    node Einsum v v -> outer equation="i,j->ij"
    node Einsum a -> total equation="ij->"
    node Einsum q -> trace equation="b h i i -> b h"
  )");
  CHECK(shape(g, "s") == "[batch, 12, seq, seq]");
  CHECK(shape(g, "ik") == "[3, 5]");
  CHECK(shape(g, "t") == "[4, 3]");  // implicit output sorts the letters: "ab"
  CHECK(shape(g, "ell") == "[batch, 7, 3, 5]");
  CHECK(shape(g, "imp") == "[batch, 1, 3, 5]");
  CHECK(shape(g, "outer") == "[6, 6]");
  CHECK(shape(g, "total") == "[]");
  CHECK(shape(g, "trace") == "[batch, 12]");
  CHECK_THROWS_AS(infer("input a float32 3,4\nnode Einsum a a -> c equation=ij"), Error);
  CHECK_THROWS_AS(infer("input a float32 3,4\ninput b float32 5,6\nnode Einsum a b -> c equation=\"ij,jk->ik\""),
                  Error);
  CHECK_THROWS_AS(infer("input a float32 3,4\nnode Einsum a -> c equation=ijk->i"), Error);
  CHECK_THROWS_AS(infer("input a float32 3,4\nnode Einsum a -> c equation=ij->z"), Error);
}

TEST_CASE("matmul: training facts") {
  for (const char* op : {"MatMul", "Gemm", "Einsum"}) {
    const OpInfo* info = find_op("", op);
    REQUIRE(info);
    CHECK(info->autocast == Autocast::Lower);
    CHECK((info->saved_if_other & bits({0, 1})) == bits({0, 1}));
    CHECK(info->grad_of(1) == 'A');
  }
  CHECK(!find_op("", "Gemm")->saves_input(2));
}

}  // namespace
}  // namespace memest
