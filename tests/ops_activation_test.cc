// Activations keep their input's shape; the table says what backward keeps.
#include <doctest/doctest.h>

#include "tests/ops_test_util.h"

namespace memest {
namespace {

using testing::dtype;
using testing::infer;
using testing::shape;

TEST_CASE("activation: shapes follow the input") {
  for (const char* op : {"Relu", "LeakyRelu", "Elu", "Selu", "Celu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh",
                         "Softplus", "Softsign", "Gelu", "Mish", "ThresholdedRelu", "Shrink", "Softmax",
                         "LogSoftmax", "Hardmax"}) {
    CAPTURE(op);
    Graph g = infer(std::string("opset 20\ninput x float16 batch,seq,64\nnode ") + op + " x -> y");
    CHECK(shape(g, "y") == "[batch, seq, 64]");
    CHECK(dtype(g, "y") == "float16");
    CHECK(g.warnings.empty());
  }
}

TEST_CASE("activation: PRelu and softmax axes") {
  Graph g = infer(R"(
    input x float32 batch,16,8,8
    param slope float32 16,1,1
    node PRelu x slope -> y
    node Softmax x -> s axis=1
  )");
  CHECK(shape(g, "y") == "[batch, 16, 8, 8]");
  CHECK(shape(g, "s") == "[batch, 16, 8, 8]");
  CHECK_THROWS_AS(infer("input x float32 2,3\nparam s float32 4\nnode PRelu x s -> y"), Error);
  CHECK_THROWS_AS(infer("input x float32 2,3\nnode Softmax x -> y axis=2"), Error);
  // Before opset 13 the default axis is 1, with flattening that keeps the shape.
  Graph old = infer("opset 11\ninput x float32 2,3,4\nnode LogSoftmax x -> y");
  CHECK(shape(old, "y") == "[2, 3, 4]");
}

TEST_CASE("activation: softsign keeps its denominator") {
  Graph g = infer("input x float16 batch,64\nnode Softsign x -> y");
  CHECK(testing::extras(g, "y") == "64*batch:float16");
}

TEST_CASE("activation: training facts") {
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Softmax", "LogSoftmax"}) {
    CAPTURE(op);
    CHECK(find_op("", op)->saves_output(0));
    CHECK(!find_op("", op)->saves_input(0));
  }
  for (const char* op : {"Gelu", "LeakyRelu", "Elu", "HardSwish", "HardSigmoid", "Softplus", "Mish"}) {
    CAPTURE(op);
    CHECK(find_op("", op)->saves_input(0));
    CHECK(!find_op("", op)->saves_output(0));
  }
  // softmax and log_softmax take fp16 input and write float output without a cast copy;
  // bf16 input is converted first (the simulator's policy_of).
  CHECK(find_op("", "Softmax")->autocast == Autocast::WidenHalf);
  CHECK(find_op("", "LogSoftmax")->autocast == Autocast::WidenHalf);
  CHECK(find_op("", "Softplus")->autocast == Autocast::Fp32);
  CHECK(find_op("", "PRelu")->autocast == Autocast::Lower);
  CHECK(find_op("", "Relu")->autocast == Autocast::Keep);
  CHECK(std::string(find_op("", "Hardmax")->grads).empty());
}

TEST_CASE("activation: softmax's backward takes a grad * result temporary; log_softmax's does not") {
  // SoftMax.cu's softmax_backward_cuda_out: tmp = grad * output, then the kernel. Recorded
  // with C++ stacks on the H200 (validate/results/attn-bwd-stacks-h200-torch2.11.txt):
  // _softmax_backward_data allocates grad_input, then mul's temporary, freed before it
  // returns. [batch, 8, 256, 256] in the dtype it runs in: 4 * 8 * 65536 = 2 MiB a sample
  // in fp32 (autocast runs softmax in fp32).
  Graph g = infer("input x float32 batch,8,256,256\nnode Softmax x -> y axis=-1\nnode LogSoftmax x -> z axis=-1");
  const Node& sm = g.nodes[0];
  const Node& lsm = g.nodes[1];
  REQUIRE(static_cast<bool>(sm.info->bwd_data_workspace));
  CHECK(sm.info->bwd_data_workspace(g, sm, DType::F32, true, false).bytes.str() == "2097152*batch");
  CHECK(sm.info->bwd_data_workspace(g, sm, DType::F16, true, false).bytes.str() == "1048576*batch");
  CHECK_FALSE(static_cast<bool>(lsm.info->bwd_data_workspace));
}

}  // namespace
}  // namespace memest
