// Reduce.cuh's launch configuration, step by step, as far as it decides the buffer's size.
// Checked against 600 random reductions on the H200 (validate reduceprobe, seeds 1 and 2:
// contiguous and channels-last 1-D, 2-D and 3-D maps, fp32/fp16/bf16, sum and mean over the
// spatial dims or the channels): every buffer to the byte.
#include "estimator/reduce_kernel.h"

#include <algorithm>

namespace memest {
namespace {

constexpr int64_t kMaxThreads = 512;  // mnt_wrapper<T>::MAX_NUM_THREADS
constexpr int64_t kWarp = 32;
constexpr int64_t kMinValuesPerThread = 16, kMaxValuesPerThread = 256;

int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t last_pow2(int64_t n) {
  int64_t p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

}  // namespace

int64_t reduce_buffer_bytes(int64_t outputs, int64_t inputs, const ReduceLaunch& l) {
  if (outputs <= 0 || inputs <= 1 || l.sm_count <= 0 || l.threads_per_sm <= 0) return 0;
  // dim0 runs along block.x: the reduced inputs when they are innermost, else the outputs
  // (output_vec of them per thread).
  const int64_t ov = l.reduces_innermost ? 1 : std::max<int64_t>(l.output_vec, 1);
  int64_t dim0 = l.reduces_innermost ? inputs : outputs / ov;
  const int64_t dim1 = l.reduces_innermost ? outputs : inputs;
  if (l.reduces_innermost && l.one_reduce_dim && dim0 >= 128) dim0 /= l.input_vec;
  if (dim0 < 1) return 0;
  // set_block_dimension
  const int64_t max_threads = kMaxThreads / ov;
  const int64_t p0 = dim0 < max_threads ? last_pow2(dim0) : max_threads;
  const int64_t p1 = dim1 < max_threads ? last_pow2(dim1) : max_threads;
  int64_t bw = std::min(p0, kWarp);
  const int64_t bh = std::min(p1, max_threads / bw);
  bw = std::min(p0, max_threads / bh);
  // block.x splits the inputs (a block-x reduce) or the outputs; block.y splits the
  // inputs when each thread would otherwise read many values, else the outputs.
  int64_t step_in = 1, step_out = 1;
  (l.reduces_innermost ? step_in : step_out) *= bw;
  const bool split_y = div_up(inputs, step_in) >= std::min(bh * kMinValuesPerThread, kMaxValuesPerThread);
  (split_y ? step_in : step_out) *= bh;
  // Blocks per output (ctas_per_output), when the grid leaves the GPU idle.
  const int64_t grid_x = div_up(outputs / ov, step_out);
  const int64_t target = l.sm_count * (l.threads_per_sm / (bw * bh));
  const int64_t per_thread = div_up(inputs, step_in);
  if (!split_y || per_thread < kMaxValuesPerThread || grid_x > target) return 0;
  const int64_t ctas = std::max(std::min(div_up(target, grid_x), div_up(per_thread, kMinValuesPerThread)),
                                div_up(per_thread, kMaxValuesPerThread));
  if (ctas <= 1) return 0;
  // global_memory_size: one accumulator per output and block, and per thread of block.x
  // (times output_vec) when block.x runs along the outputs.
  return l.acc_bytes * outputs * ctas * (l.reduces_innermost ? 1 : bw * ov);
}

}  // namespace memest
