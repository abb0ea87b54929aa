// Resampling ops (estimator/ops/resample.cc): output sizes from scales or sizes.
#include <doctest/doctest.h>

#include "tests/ops_test_util.h"

namespace memest {
namespace {

using testing::infer;
using testing::shape;

TEST_CASE("resample: Resize scales joined by Concat (the legacy exporter's nn.Upsample)") {
  // torch.onnx (TorchScript exporter) writes nn.Upsample(scale_factor=2) as Resize whose
  // scales are Concat([1, 1], [2, 2]) of two Constants; without float contents through
  // the Concat, Resize kept its input's size and a random UNet read 76% low.
  Graph g = infer(R"(
    opset 17
    input x float32 batch,4,8,8
    const keep float32 2 = 1,1
    const twice float32 2 = 2,2
    node Concat keep twice -> scales axis=0
    node Resize x - scales -> up mode=nearest
  )");
  CHECK(shape(g, "up") == "[batch, 4, 16, 16]");
  CHECK(g.warnings.empty());
}

TEST_CASE("resample: Resize and Upsample") {
  Graph g = infer(R"(
    opset 18
    input x float32 batch,3,h,w
    input c float32 1,3,15,20
    const scales float32 4 = 1,1,2,2
    const half float32 4 = 1,1,0.5,0.5
    const sizes int64 4 = 1,3,64,64
    const none float32 0
    const sz2 int64 2 = 10,10
    node Resize x - scales -> up
    node Resize c - half -> down
    node Resize c - none sizes -> sized
    node Resize c - - sz2 -> fit axes=2,3 keep_aspect_ratio_policy=not_larger
    node Resize c - - sz2 -> cover axes=2,3 keep_aspect_ratio_policy=not_smaller
  )");
  CHECK(shape(g, "up") == "[batch, 3, 2*h, 2*w]");
  CHECK(shape(g, "down") == "[1, 3, 7, 10]");
  CHECK(shape(g, "sized") == "[1, 3, 64, 64]");
  CHECK(shape(g, "fit") == "[1, 3, 8, 10]");     // scale min(10/15, 10/20) = 0.5 -> 7.5 rounds to 8
  CHECK(shape(g, "cover") == "[1, 3, 10, 13]");  // scale 10/15: 20 * 0.667 = 13.3 -> 13
  CHECK(g.warnings.empty());
  Graph o10 = infer("opset 10\ninput x float32 1,3,8,8\nconst s float32 4 = 1,1,2,2\nnode Resize x s -> y");
  CHECK(shape(o10, "y") == "[1, 3, 16, 16]");
  Graph up = infer(R"(
    opset 9
    input x float32 1,3,8,8
    const s float32 4 = 1,1,2,3
    node Upsample x s -> y
  )");
  CHECK(shape(up, "y") == "[1, 3, 16, 24]");
  Graph up7 = infer("opset 7\ninput x float32 1,3,8,8\nnode Upsample x -> y scales=1.0,1.0,2.0,2.0");
  CHECK(shape(up7, "y") == "[1, 3, 16, 16]");
  // Half of a symbolic size is not exact: the driver falls back.
  Graph sym = infer("input x float32 1,3,h,w\nconst s float32 4 = 1,1,0.5,0.5\nnode Resize x - s -> y");
  CHECK(!sym.warnings.empty());
}

TEST_CASE("resample: GridSample") {
  Graph g = infer("opset 16\ninput x float32 batch,3,h,w\ninput grid float32 batch,7,9,2\nnode GridSample x grid -> y");
  CHECK(shape(g, "y") == "[batch, 3, 7, 9]");
}

}  // namespace
}  // namespace memest
