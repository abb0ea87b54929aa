// The CUDA reduction's global buffer (estimator/reduce_kernel.cc), worked through
// Reduce.cuh's setReduceConfig by hand for an H200 (132 SMs, 2048 threads each).
#include <doctest/doctest.h>

#include "estimator/reduce_kernel.h"

using namespace memest;

namespace {

ReduceLaunch h200(bool innermost, int64_t output_vec = 4, int64_t input_vec = 4) {
  ReduceLaunch l;
  l.reduces_innermost = innermost;
  l.output_vec = output_vec;
  l.input_vec = input_vec;
  l.sm_count = 132;
  l.threads_per_sm = 2048;
  return l;
}

}  // namespace

TEST_CASE("reduce buffer: the spatial mean of a channels-last map spreads each output over many blocks") {
  // fp32 [8, 64, 192, 192] channels-last, mean over H and W (traces21 rnd15_27): 512
  // outputs (innermost), 36,864 inputs each. output_vec 4: dim0 = 512 / 4 = 128, the
  // thread limit 512 / 4 = 128; block (32, 4). block.x runs along the outputs (step 32);
  // 36,864 inputs per thread >= min(4 * 16, 256): block.y splits the inputs (step 4).
  // grid.x = 128 / 32 = 4; target = 132 * (2048 / 128) = 2112 blocks; 9,216 values per
  // thread. ctas = max(min(2112 / 4, 9216 / 16), 9216 / 256) = max(min(528, 576), 36) = 528.
  // Buffer = 4 B * 512 outputs * 528 * (32 * 4) = 138,412,032 B: the 132 MiB measured.
  CHECK(reduce_buffer_bytes(512, 192 * 192, h200(false)) == 138'412'032);
  // [48, 32, 48, 48]: 1,536 outputs, 2,304 inputs; block (32, 4); grid.x = 384 / 32 = 12;
  // 576 values per thread; ctas = max(min(ceil(2112 / 12) = 176, 36), 3) = 36.
  // 4 * 1536 * 36 * 128 = 28,311,552 B.
  CHECK(reduce_buffer_bytes(48 * 32, 48 * 48, h200(false)) == 28'311'552);
  // [2, 256, 7, 7]: 49 inputs per output < min(4 * 16, 256): block.y takes outputs too,
  // each block sums its outputs alone: no buffer.
  CHECK(reduce_buffer_bytes(512, 49, h200(false)) == 0);
}

TEST_CASE("reduce buffer: a contiguous map reduces within blocks unless an output has very many inputs") {
  // fp32 [8, 64, 192, 192] contiguous: the inputs are innermost; dim0 = 36,864 / 4
  // (vectorized loads) >= 512: block.x 32 then 512 / min(512, 512 / 32 = 16)... block
  // (32, 16); block.x reduces (step_in 32); 36,864 / 32 = 1,152 >= min(16 * 16, 256):
  // block.y too (step_in 512): 72 values per thread < 256: no global reduce.
  CHECK(reduce_buffer_bytes(512, 192 * 192, h200(true)) == 0);
  // One output of 2^20 inputs ([1, 1, 1024, 1024]): dim0 = 2^18, dim1 = 1: block (512, 1);
  // step_in 512; 2,048 per thread; grid.x 1; target 132 * 4 = 528; ctas = max(min(528,
  // 128), 8) = 128: 4 B * 1 * 128 = 512 B (no block.x factor when block.x reduces).
  CHECK(reduce_buffer_bytes(1, 1 << 20, h200(true)) == 512);
}

TEST_CASE("reduce buffer: nothing without the GPU's size, for one input, or for no outputs") {
  ReduceLaunch unknown = h200(false);
  unknown.sm_count = 0;
  CHECK(reduce_buffer_bytes(512, 192 * 192, unknown) == 0);
  CHECK(reduce_buffer_bytes(512, 1, h200(false)) == 0);
  CHECK(reduce_buffer_bytes(0, 4096, h200(false)) == 0);
}
