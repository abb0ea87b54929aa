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

std::optional<ReducePlan> plan_reduction(const Shape& x, const std::vector<int8_t>& layout,
                                         const std::vector<int64_t>& axes, DType dtype, int64_t sm_count,
                                         int64_t threads_per_sm) {
  if (axes.empty() || x.size() > 64 || (!layout.empty() && layout.size() != x.size())) return std::nullopt;
  // Dims by memory position, innermost last; dims of size 1 have no say.
  std::vector<size_t> order;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] != Expr(1)) order.push_back(i);
  }
  if (order.empty()) return std::nullopt;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return layout.empty() ? a < b : layout[a] < layout[b];
  });
  auto reduced = [&](size_t d) { return std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end(); };
  ReducePlan p{{}, Expr(1), Expr(1)};
  int runs = 0;
  for (size_t r = 0; r < order.size(); ++r) {
    const bool red = reduced(order[r]);
    (red ? p.inputs : p.outputs) = (red ? p.inputs : p.outputs) * x[order[r]];
    if (red && (r == 0 || !reduced(order[r - 1]))) ++runs;
  }
  if (p.inputs == Expr(1)) return std::nullopt;
  ReduceLaunch& l = p.launch;
  l.reduces_innermost = reduced(order.back());
  l.one_reduce_dim = runs == 1;
  l.acc_bytes = dtype == DType::F64 ? 8 : 4;
  l.input_vec = dtype_size(dtype) == 2 ? 8 : 4;
  // Outputs per thread: 4, halved until it divides the innermost dim (an unknown one is
  // taken at 4, the largest buffer).
  const auto inner = x[order.back()].as_const();
  l.output_vec = 4;
  while (inner && l.output_vec > 1 && *inner % l.output_vec != 0) l.output_vec /= 2;
  l.sm_count = sm_count;
  l.threads_per_sm = threads_per_sm;
  return p;
}

std::optional<std::vector<int64_t>> broadcast_axes(const Shape& in, const Shape& out) {
  if (in.size() > out.size()) return std::nullopt;
  std::vector<int64_t> axes;
  const size_t lead = out.size() - in.size();
  for (size_t d = 0; d < out.size(); ++d) {
    if (d < lead || (in[d - lead] == Expr(1) && out[d] != Expr(1))) axes.push_back(static_cast<int64_t>(d));
  }
  return axes;
}

}  // namespace memest
