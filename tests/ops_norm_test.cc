// Normalisations and Dropout: output and statistics shapes, saved statistics and masks.
#include <doctest/doctest.h>

#include "tests/ops_test_util.h"

namespace memest {
namespace {

using testing::dtype;
using testing::extras;
using testing::infer;
using testing::shape;

TEST_CASE("norm: batch norm") {
  Graph g = infer(R"(
    opset 15
    input x float32 batch,64,56,56
    param bn.weight float32 64
    param bn.bias float32 64
    buffer bn.running_mean float32 64
    buffer bn.running_var float32 64
    node BatchNormalization x bn.weight bn.bias bn.running_mean bn.running_var -> y rm rv training_mode=1
    node BatchNormalization x bn.weight bn.bias bn.running_mean bn.running_var -> z
  )");
  CHECK(shape(g, "y") == "[batch, 64, 56, 56]");
  CHECK(shape(g, "rm") == "[64]");
  CHECK(shape(g, "rv") == "[64]");
  CHECK(extras(g, "y") == "64:float32 64:float32");
  CHECK(shape(g, "z") == "[batch, 64, 56, 56]");
  const OpInfo* bn = find_op("", "BatchNormalization");
  CHECK(bn->saved_inputs == bits({0, 1}));
  CHECK(std::string(bn->grads) == "AAANN");
  CHECK(bn->autocast == Autocast::Keep);
}

TEST_CASE("norm: layer norm statistics") {
  Graph g = infer(R"(
    input x float16 batch,seq,768
    param ln.weight float16 768
    param ln.bias float16 768
    node LayerNormalization x ln.weight ln.bias -> y mean inv
    node LayerNormalization x ln.weight ln.bias -> y1 mean1 - axis=1
  )");
  CHECK(shape(g, "y") == "[batch, seq, 768]");
  CHECK(dtype(g, "y") == "float16");
  CHECK(shape(g, "mean") == "[batch, seq, 1]");
  CHECK(dtype(g, "mean") == "float32");
  CHECK(shape(g, "inv") == "[batch, seq, 1]");
  CHECK(shape(g, "mean1") == "[batch, 1, 1]");
  CHECK(extras(g, "y") == "batch*seq:float32 batch*seq:float32");
  CHECK(extras(g, "y1") == "batch:float32 batch:float32");
  const OpInfo* ln = find_op("", "LayerNormalization");
  CHECK(ln->autocast == Autocast::Fp32);
  CHECK(ln->saved_inputs == bits({0, 1}));
}

TEST_CASE("norm: rms_norm, fused unless a half input meets an fp32 weight") {
  // validate/results/norm-probe-h200-torch2.11.jsonl: F.rms_norm is on no autocast list
  // (a half input gives a half output) and runs aten._fused_rms_norm (rstd kept, 4 B a
  // row) but for a half input by a weight of another dtype, whose composite keeps the
  // input upcast to fp32 and the fp32 normalised rows too (2 x 3,145,728 + 8,192 B at
  // [8, 256, 384]).
  Graph g = infer(R"(
    opset 23
    input x float32 batch,seq,384
    input h float16 batch,seq,384
    param n.weight float32 384
    param m.weight float16 384
    node RMSNormalization x n.weight -> y axis=-1
    node RMSNormalization h n.weight -> yh axis=-1
    node RMSNormalization h m.weight -> ym axis=-1
  )");
  CHECK(extras(g, "y") == "batch*seq:float32");
  const OpInfo* rms = find_op("", "RMSNormalization");
  CHECK(rms->autocast == Autocast::Keep);
  CHECK(rms->saved_inputs == bits({0, 1}));
  const Dispatch half{DType::F16};
  const Dispatch fp32{DType::F32};
  const Node& y = testing::producer(g, "y");
  const Node& yh = testing::producer(g, "yh");
  const Node& ym = testing::producer(g, "ym");
  CHECK(rms->variant(g, y, fp32) == nullptr);
  CHECK(rms->variant(g, ym, half) == nullptr);  // weight and input both half: fused
  const OpInfo* upcast = rms->variant(g, yh, half);
  REQUIRE(upcast != nullptr);
  CHECK(std::string(upcast->op) == "RMSNormalizationUpcast");
  CHECK(upcast->saved_inputs == bits({1}));
  std::string kept;
  for (const SavedExtra& e : upcast->saved_extra(g, yh)) kept += e.numel.str() + ":" + dtype_name(e.dtype) + " ";
  CHECK(kept == "384*batch*seq:float32 384*batch*seq:float32 batch*seq:float32 ");
}

TEST_CASE("norm: instance, group, lp") {
  Graph g = infer(R"(
    opset 21
    input x float32 batch,32,16,16
    param s float32 32
    param b float32 32
    node InstanceNormalization x s b -> i
    node GroupNormalization x s b -> gn num_groups=8
    node LpNormalization x -> lp axis=1
    node MeanVarianceNormalization x -> mvn
  )");
  CHECK(shape(g, "i") == "[batch, 32, 16, 16]");
  CHECK(shape(g, "gn") == "[batch, 32, 16, 16]");
  CHECK(shape(g, "lp") == "[batch, 32, 16, 16]");
  CHECK(shape(g, "mvn") == "[batch, 32, 16, 16]");
  // The weight repeated per sample, then mean and invstd per (n, c).
  CHECK(extras(g, "i") == "32*batch:float32 32*batch:float32 32*batch:float32");
  CHECK(extras(g, "gn") == "8*batch:float32 8*batch:float32");
  CHECK(extras(g, "lp") == "256*batch:float32 256*batch:float32");
  CHECK_THROWS_AS(infer("input x float32 1,30,4\nparam s float32 30\nnode GroupNormalization x s s -> y num_groups=8"),
                  Error);
}

TEST_CASE("norm: dropout mask") {
  SUBCASE("opset 12+: ratio and training_mode inputs") {
    Graph g = infer(R"(
      opset 17
      input x float32 batch,128
      const p float32 - = 0.1
      const zero float32 - = 0
      const on bool - = 1
      const off bool - = 0
      node Dropout x p on -> train mask
      node Dropout x p off -> eval mask2
      node Dropout x zero on -> nodrop
      node Dropout x p -> unknown_with_mask mask3
      node Dropout x p -> unknown_without_mask
      node Dropout x -> default_ratio m4
    )");
    CHECK(shape(g, "train") == "[batch, 128]");
    CHECK(shape(g, "mask") == "[batch, 128]");
    CHECK(dtype(g, "mask") == "bool");
    CHECK(extras(g, "train") == "128*batch:bool");
    CHECK(extras(g, "eval") == "");
    CHECK(extras(g, "nodrop") == "");
    CHECK(extras(g, "unknown_with_mask") == "128*batch:bool");
    CHECK(extras(g, "unknown_without_mask") == "");
    CHECK(extras(g, "default_ratio") == "128*batch:bool");
  }
  SUBCASE("opset < 12: ratio attribute") {
    Graph g = infer(R"(
      opset 11
      input x float32 4,8
      node Dropout x -> a m ratio=0.5
      node Dropout x -> b m2 ratio=0.0
    )");
    CHECK(extras(g, "a") == "32:bool");
    CHECK(extras(g, "b") == "");
  }
}

// layer_norm_backward_cuda copies a strided saved input (X.expect_contiguous()) and a
// strided gradient (dY.contiguous()). The tensors here
// are [batch, 8, 8, 4] fp32: 1,024 bytes a sample.
TEST_CASE("norm: a LayerNorm over a permuted view copies its input, and a strided gradient, contiguous") {
  auto copies = [](const std::string& after) {
    Graph g = testing::infer(R"(
      opset 18
      input x float32 batch,4,8,8
      param w float32 4
      param b float32 4
      node Transpose x -> xp perm=0,2,3,1
      node LayerNormalization xp w b -> y axis=-1
      node Transpose y -> yp perm=0,3,1,2
      node Relu yp -> r
    )" + after);
    const Node& ln = testing::producer(g, "y");
    REQUIRE(ln.info);
    return ln.info->bwd_workspace(g, ln, DType::F32, true, false).bytes.str();
  };
  // Read through a mean: mean's backward makes a contiguous gradient, so the permute's
  // backward hands the LayerNorm a strided view: the input's copy and the gradient's.
  CHECK(copies("node ReduceMean r -> m axes=2,3\n") == "2048*batch");
  // Read through a 2-D max pool: the pool keeps the channels-last order of its input for
  // its input's gradient, the ReLU's backward keeps it, the permute's undoes it.
  CHECK(copies("node MaxPool r -> p kernel_shape=2,2 strides=2,2\n") == "1024*batch");

  Graph plain = testing::infer(R"(
    opset 18
    input x float32 batch,8,4
    param w float32 4
    node LayerNormalization x w -> y axis=-1
  )");
  const Node& ln = testing::producer(plain, "y");
  CHECK(ln.info->bwd_workspace(plain, ln, DType::F32, true, false).bytes.is_zero());
}

}  // namespace
}  // namespace memest
