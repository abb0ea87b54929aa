// Evaluating the program's sized blocks: size switches (cuDNN's engine by the batch) and
// the CUDA reduction buffers of global pooling and of a convolution's bias gradient.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "estimator/allocator.h"
#include "estimator/analysis.h"
#include "frontends/text_reader.h"

namespace memest {

// A workspace whose algorithm depends on the batch (SizeBound::switch_above): its bytes
// up to the switch, the alternative's past it, chosen when the program is evaluated.
TEST_CASE("evaluate: a block with a size switch takes the alternative past it") {
  const SymbolId batch = intern_symbol("batch");
  Program p;
  p.blocks.push_back({Expr::symbol(batch) * Expr(4096), 0, Category::Workspace});
  p.blocks[0].bounded = true;
  p.bounds.push_back({0, {.switch_above = 40960, .above = Expr::symbol(batch) * Expr(512)}});
  Bindings b;
  b.set(batch, 10);  // 40960 B: not past the switch
  CHECK(block_size(p, 0, b, 512) == 40960);
  b.set(batch, 11);  // 45056 B would be past it: 11 * 512 = 5632 instead (a multiple of 512)
  CHECK(block_size(p, 0, b, 512) == 5632);
}

}  // namespace memest

namespace memest {

// The bytes of the reduction buffers (OpInfo::reduced_axes) that the GlobalAveragePool of
// `text` allocates in the first iteration's forward, at batch 8.
std::vector<int64_t> pool_buffers(const char* text) {
  TrainConfig cfg;
  cfg.loss = Loss::Sum;
  Analysis a = analyze(read_text_graph(text), AnalysisOptions{.train = cfg});
  const Estimate e = estimate(a, 8);
  std::vector<int64_t> out;
  for (const Event& ev : a.program.events) {
    const Block& b = a.program.blocks[ev.block];
    if (ev.kind == Event::Alloc && ev.iter == 0 && ev.phase == Phase::Forward && b.node >= 0 &&
        a.graph.nodes[b.node].op == "GlobalAveragePool" &&
        b.category == Category::Temporaries) {
      out.push_back(block_size(a.program, ev.block, e.bindings, 512));
    }
  }
  return out;
}

TEST_CASE("a global average pool of a channels-last map takes the CUDA reduction's global buffer") {
  // A channel LayerNorm written with movedim leaves [8, 64, 192, 192] channels-last (the
  // TorchScript exporter writes movedim(-1, 1) as perm (0, -1, 1, 2)); a ReLU keeps it so.
  // mean over H, W: 512 outputs innermost, 36,864 inputs each: reduce_kernel_test works
  // the launch out to a 138,412,032 B buffer (traces21 rnd15_27: 132 MiB, to the byte).
  for (const char* perm : {"0,-1,1,2", "0,3,1,2"}) {
    CAPTURE(perm);
    const std::string text = std::string(R"(
opset 17
input x float32 batch,192,192,64
node Transpose x -> xt perm=)") + perm + R"( @ln
node Relu xt -> r @act
node GlobalAveragePool r -> p @pool
output p
)";
    CHECK(pool_buffers(text.c_str()) == std::vector<int64_t>{138412032});
  }
  // A batch norm between keeps the map channels-last (its output takes the input's
  // suggested memory format; traces28 rnd22_69's global mean took the buffer so).
  CHECK(pool_buffers(R"(
opset 17
input x float32 batch,192,192,64
param bn.weight float32 64
param bn.bias float32 64
param bn.running_mean float32 64
param bn.running_var float32 64
node Transpose x -> xt perm=0,3,1,2 @ln
node BatchNormalization xt bn.weight bn.bias bn.running_mean bn.running_var -> bn rm rv training_mode=1 @bn
node GlobalAveragePool bn -> p @pool
output p
)") == std::vector<int64_t>{138412032});
  // The same map contiguous: each block reduces its outputs alone (72 values a thread).
  CHECK(pool_buffers(R"(
opset 17
input x float32 batch,64,192,192
node Relu x -> r @act
node GlobalAveragePool r -> p @pool
output p
)") == std::vector<int64_t>{0});
}

}  // namespace memest

namespace memest {

// Bytes of the reduction buffers a Conv node allocates in iteration 0's backward (its
// bias gradient, OpInfo::bias_grad_is_reduction), at batch 8.
std::vector<int64_t> bias_buffers(const char* text) {
  TrainConfig cfg;
  cfg.loss = Loss::Sum;
  Analysis a = analyze(read_text_graph(text), AnalysisOptions{.train = cfg});
  const Estimate e = estimate(a, 8);
  std::vector<int64_t> out;
  for (const Event& ev : a.program.events) {
    const Block& b = a.program.blocks[ev.block];
    if (ev.kind == Event::Alloc && ev.iter == 0 && ev.phase == Phase::Backward && b.node >= 0 &&
        a.graph.nodes[b.node].op == "Conv" && b.category == Category::Temporaries && b.bounded) {
      out.push_back(block_size(a.program, ev.block, e.bindings, 512));
    }
  }
  return out;
}

TEST_CASE("a convolution's bias gradient on a channels-last map takes the reduction's buffer") {
  // y = conv(x) is [8, 64, 192, 192] channels-last (its input is); the bias gradient sums
  // it over N, H, W: 64 outputs innermost, 294,912 inputs each. output_vec 4: dim0 16,
  // thread limit 128: block (16, 8); 294,912 per thread-column >= min(8 * 16, 256): block.y
  // splits the inputs (step 8); grid.x = 16 / 16 = 1; target = 132 * (2048 / 128) = 2112;
  // 36,864 values a thread; ctas = max(min(2112, 2304), 144) = 2112.
  // 4 B * 64 * 2112 * (16 * 4) = 34,603,008 B.
  CHECK(bias_buffers(R"(
opset 17
input x float32 batch,192,192,64
param w float32 64,1,1,1
param b float32 64
node Transpose x -> xt perm=0,3,1,2 @ln
node Conv xt w b -> y group=64 @conv
output y
)") == std::vector<int64_t>{34603008});
  // Contiguous: W innermost is reduced, N and (H, W) are two runs (no vectorized loads):
  // dim0 294,912, dim1 64: block (32, 16); block.x and block.y split the inputs (step
  // 512); grid.x 64, target 132 * 4 = 528; 576 values a thread; ctas = max(min(9, 36), 3)
  // = 9: 4 B * 64 * 9 = 2,304 B, 2,560 once rounded to 512.
  CHECK(bias_buffers(R"(
opset 17
input x float32 batch,64,192,192
param w float32 64,1,1,1
param b float32 64
node Conv x w b -> y group=64 @conv
output y
)") == std::vector<int64_t>{2560});
}

}  // namespace memest

namespace memest {

// Bytes of the reduction buffers a Mul node allocates in iteration 0's backward (the
// sum_to_size of its broadcast operand's full-shape gradient), at `batch`.
std::vector<int64_t> mul_buffers(const char* text, int64_t batch) {
  TrainConfig cfg;
  cfg.loss = Loss::Sum;
  Analysis a = analyze(read_text_graph(text), AnalysisOptions{.train = cfg});
  const Estimate e = estimate(a, batch);
  std::vector<int64_t> out;
  for (const Event& ev : a.program.events) {
    const Block& b = a.program.blocks[ev.block];
    if (ev.kind == Event::Alloc && ev.iter == 0 && ev.phase == Phase::Backward && b.node >= 0 &&
        a.graph.nodes[b.node].op == "Mul" && b.bounded) {
      out.push_back(block_size(a.program, ev.block, e.bindings, 512));
    }
  }
  return out;
}

// A squeeze-excitation gate x * s, s = sigmoid(mean(x)) of shape [N, C, 1, 1], on the
// channels-last map a channel LayerNorm leaves (permute, layer_norm, permute back), then
// `tail`.
std::string se_gate(const char* tail) {
  return std::string(R"(
opset 17
input x float32 batch,130,130,24
param ls float32 24
param lb float32 24
node LayerNormalization x ls lb -> n axis=-1 @ln
node Transpose n -> r perm=0,3,1,2 @ln
node ReduceMean r -> m axes=2,3 @se
node Sigmoid m -> s @se
node Mul r s -> y @se
)") + tail;
}

TEST_CASE("an SE gate's broadcast gradient on a channels-last map takes the reduction's buffer") {
  // s's gradient is (grad * x) summed over H, W, one Reduce.cuh reduction of a
  // channels-last [16, 24, 130, 130] fp32 map: 384 outputs (C innermost, output_vec 4:
  // dim0 96), 16,900 inputs each; thread limit 128: block (32, 4); block.y splits the
  // inputs (step 4); grid.x = 96 / 32 = 3; target = 132 * (2048 / 128) = 2112; 4,225 values
  // a thread; ctas = max(min(704, 265), 17) = 265. 4 B * 384 * 265 * (32 * 4) =
  // 52,101,120 B: traces26 rnd21_151's MulBackward0 buffer, to the byte.
  CHECK(mul_buffers(se_gate("node MaxPool y -> z kernel_shape=2,2 strides=2,2 @pool\noutput z\n").c_str(), 16) ==
        std::vector<int64_t>{52101120});
  // A mean after the gate hands back its gradient expanded into a fresh, contiguous
  // tensor (MeanBackward0): grad * x is contiguous, H x W innermost, and its 16,900
  // inputs a row take no buffer (128 values a thread at most: one block per output).
  CHECK(mul_buffers(se_gate("node ReduceMean y -> z axes=2,3 @pool\noutput z\n").c_str(), 16) ==
        std::vector<int64_t>{0});
  // The same through a view first (an unsqueeze before the mean).
  CHECK(mul_buffers(se_gate("const ax int64 1 = 2\nnode Unsqueeze y ax -> u @pool\nnode ReduceMean u -> z axes=3,4 @pool\noutput z\n")
                        .c_str(),
                    16) == std::vector<int64_t>{0});
  // A GELU between, as the dynamo exporter decomposes it (one fused Gelu, a TensorIterator
  // op: the map stays channels-last), as in rnd21_151 itself.
  std::string gelu = se_gate("node MaxPool y -> z kernel_shape=2,2 strides=2,2 @pool\noutput z\n");
  const std::string gelu_nodes = R"(const r2 float32 - = 1.4142
const one float32 - = 1
const half float32 - = 0.5
node Div t r2 -> d @act
node Erf d -> e @act
node Add e one -> a @act
node Mul half a -> hm @act
node Mul t hm -> r @act
)";
  gelu.replace(gelu.find("-> r perm"), 4, "-> t");
  gelu.insert(gelu.find("node ReduceMean"), gelu_nodes);
  CHECK(mul_buffers(gelu.c_str(), 16) == std::vector<int64_t>{52101120});
  // A clamp between (hardtanh: Clip, a TensorIterator op like GELU's pieces) keeps the
  // map channels-last too (traces30 rnd23_132: ReLU6 after a channel LayerNorm; with Clip's
  // output taken as contiguous its 132 MiB buffer went missing).
  std::string clamp = se_gate("node MaxPool y -> z kernel_shape=2,2 strides=2,2 @pool\noutput z\n");
  clamp.replace(clamp.find("-> r perm"), 4, "-> t");
  clamp.insert(clamp.find("node ReduceMean"), "const lo float32 - = 0\nconst hi float32 - = 6\nnode Clip t lo hi -> r @act\n");
  CHECK(mul_buffers(clamp.c_str(), 16) == std::vector<int64_t>{52101120});
  // Reflection padding's backward allocates its input's gradient contiguous: none either
  // (traces28 rnd6_89).
  CHECK(mul_buffers(se_gate("const p int64 8 = 0,0,1,1,0,0,1,1\nnode Pad y p -> z mode=reflect @pad\noutput z\n").c_str(),
                    16) ==
        std::vector<int64_t>{0});
}

// The blocks the node made by `op` allocates in the first iteration's backward, at batch 2.
std::vector<int64_t> backward_blocks(const std::string& text, const char* op) {
  TrainConfig cfg;
  cfg.loss = Loss::Sum;
  Analysis a = analyze(read_text_graph(text), AnalysisOptions{.train = cfg});
  const Estimate e = estimate(a, 2);
  std::vector<int64_t> out;
  for (const Event& ev : a.program.events) {
    const Block& b = a.program.blocks[ev.block];
    if (ev.kind == Event::Alloc && ev.iter == 0 && ev.phase == Phase::Backward && b.node >= 0 &&
        a.graph.nodes[b.node].op == op) {
      out.push_back(block_size(a.program, ev.block, e.bindings, 1));
    }
  }
  return out;
}

// A pooling of the channels-last map a channel LayerNorm leaves (24 channels, `dims`
// spatial dims of 8), then `tail` reading y.
std::string pooled_channels_last(int dims, const char* pool, const char* tail) {
  const std::string spatial = dims == 2 ? "8,8" : "8,8,8";
  const std::string perm = dims == 2 ? "0,3,1,2" : "0,4,1,2,3";
  const std::string window = dims == 2 ? "2,2" : "2,2,2";
  return "opset 17\ninput x float32 batch," + spatial + ",24\nparam ls float32 24\nparam lb float32 24\n" +
         "node LayerNormalization x ls lb -> n axis=-1 @ln\nnode Transpose n -> r perm=" + perm + " @ln\n" + "node " +
         pool + " r -> y kernel_shape=" + window + " strides=" + window + " @pool\n" + tail;
}

TEST_CASE("pooling's backward copies a gradient laid out otherwise than its output") {
  // A reflect pad's backward hands back a contiguous gradient; max pooling of a
  // channels-last map wants it channels-last: after the input's gradient (2 x 24 x 8 x 8
  // x 4 B = 12,288 B), a copy of the output's (2 x 24 x 4 x 4 x 4 B = 3,072 B), held for
  // the call (DilatedMaxPool2d.cu: gradOutput_.contiguous(memory_format)).
  const char* reflect = "const p int64 8 = 0,0,1,1,0,0,1,1\nnode Pad y p -> z mode=reflect @pad\noutput z\n";
  CHECK(backward_blocks(pooled_channels_last(2, "MaxPool", reflect), "MaxPool") == std::vector<int64_t>{12288, 3072});
  CHECK(backward_blocks(pooled_channels_last(2, "AveragePool", reflect), "AveragePool") ==
        std::vector<int64_t>{12288, 3072});
  // 3-D max pooling keeps channels_last_3d too (DilatedMaxPool3d.cu; traces36 rnd25_48:
  // 64 MiB, then an 8 MiB copy): 2 x 24 x 512 x 4 B, then 2 x 24 x 64 x 4 B.
  const char* reflect3 = "const p int64 10 = 0,0,1,1,1,0,0,1,1,1\nnode Pad y p -> z mode=reflect @pad\noutput z\n";
  CHECK(backward_blocks(pooled_channels_last(3, "MaxPool", reflect3), "MaxPool") == std::vector<int64_t>{98304, 12288});
  // avg_pool3d allocates its output contiguous (AveragePool3d.cpp's meta): a contiguous
  // gradient needs no copy.
  CHECK(backward_blocks(pooled_channels_last(3, "AveragePool", reflect3), "AveragePool") ==
        std::vector<int64_t>{98304});
  // A convolution after the pool hands back a channels-last gradient (cuDNN allocates in
  // its input's format): no copy.
  CHECK(backward_blocks(pooled_channels_last(2, "MaxPool",
                                             "param w float32 8,24,1,1\nnode Conv y w -> z @conv\noutput z\n"),
                        "MaxPool") == std::vector<int64_t>{12288});
}

}  // namespace memest
