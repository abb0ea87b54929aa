// Simulator tests of views: when a reshape, an unbind, a select or a batched matmul's
// operand is a view of its input and when it copies (estimator/layout.cc, simulate.cc),
// with the bytes derived by hand.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "estimator/analysis.h"
#include "estimator/simulate.h"
#include "frontends/text_reader.h"
#include "tests/simulate_test_util.h"

using namespace memest;
using namespace memest::testing;

TEST_CASE("a reshape of a permuted tensor is a view exactly when PyTorch's stride rule allows it") {
  // layout[i] = memory position of logical dim i (0 outermost); {} = contiguous.
  const Shape in{Expr(4), Expr(8), Expr(16)};
  const std::vector<int8_t> swapped{1, 0, 2};  // memory order: dim 1, dim 0, dim 2
  // Splitting a dim keeps a view; the new dims take their parent's place in memory.
  auto split = reshape_layout(in, swapped, Shape{Expr(2), Expr(2), Expr(8), Expr(16)});
  REQUIRE(split.has_value());
  CHECK(*split == std::vector<int8_t>{1, 2, 0, 3});
  // Merging dims 1 and 2, which are not neighbours in memory, needs a copy.
  CHECK_FALSE(reshape_layout(in, swapped, Shape{Expr(4), Expr(128)}).has_value());
  // Size-1 dims do not matter.
  CHECK(reshape_layout(in, swapped, Shape{Expr(4), Expr(1), Expr(8), Expr(16)}).has_value());
  // torch's multi-head attention: q [T, B*H, D].transpose(0, 1).view(B, H, T, D) is a view
  // whose memory order is T, B, H, D; the batch may be symbolic.
  const Expr b = Expr::symbol("batch");
  const Shape bht{b * Expr(12), Expr(197), Expr(64)};
  auto heads = reshape_layout(bht, {1, 0, 2}, Shape{b, Expr(12), Expr(197), Expr(64)});
  REQUIRE(heads.has_value());
  CHECK(*heads == std::vector<int8_t>{1, 2, 0, 3});
  // Heads-major [B, H, T, D] (memory B, T, H, D) flattened to [B, H, T*D] must copy.
  CHECK_FALSE(reshape_layout(Shape{b, Expr(12), Expr(197), Expr(64)}, {0, 2, 1, 3},
                             Shape{b, Expr(12), Expr(197 * 64)})
                  .has_value());
  // ... but merging T and H in memory order, [B, T, H*D] after a transpose, is a view.
  auto merged = reshape_layout(Shape{b, Expr(197), Expr(12), Expr(64)}, {}, Shape{b, Expr(197), Expr(768)});
  REQUIRE(merged.has_value());
  CHECK(merged->empty());
}

TEST_CASE("a tensor unbound from a permuted qkv keeps a hole where its siblings lay") {
  const Expr b = Expr::symbol("batch");
  // Visformer: qkv [B, 3, H, D, N] permuted (1, 0, 2, 4, 3) is [3, B, H, N, D] with memory
  // positions {1, 0, 2, 4, 3}; unbind's q is [1, B, H, N, D] cut in dim 0, which is not
  // outermost in memory: it moves out of the way and leaves position 1 a hole.
  const Shape qkv{Expr(3), b, Expr(3), Expr(196), Expr(64)};
  const Shape q5{Expr(1), b, Expr(3), Expr(196), Expr(64)};
  const std::vector<int8_t> q_layout = narrow_layout(qkv, {1, 0, 2, 4, 3}, q5);
  CHECK(q_layout == std::vector<int8_t>{5, 0, 2, 4, 3});
  // Squeezed to [B, H, N, D], the hole stays between B and H...
  const auto q = reshape_layout(q5, q_layout, Shape{b, Expr(3), Expr(196), Expr(64)});
  REQUIRE(q.has_value());
  CHECK(*q == std::vector<int8_t>{0, 2, 4, 3});
  // ... so bmm's reshape to [B*H, N, D] merges across it: a copy, as PyTorch makes.
  CHECK_FALSE(reshape_layout(Shape{b, Expr(3), Expr(196), Expr(64)}, *q, Shape{b * Expr(3), Expr(196), Expr(64)})
                  .has_value());
  // Hiera: qkv [B, N, W, 3, H, D] permuted (3, 0, 4, 2, 1, 5); q [B, H, W, N, D] viewed as
  // [B, H, W, 4, N/4, D] splits N alone, a view (q_stride's amax keeps all of qkv).
  const Shape h6{Expr(3), b, Expr(2), Expr(49), Expr(64), Expr(96)};
  const Shape hq6{Expr(1), b, Expr(2), Expr(49), Expr(64), Expr(96)};
  const std::vector<int8_t> hq = narrow_layout(h6, {3, 0, 4, 2, 1, 5}, hq6);
  const auto hq5 = reshape_layout(hq6, hq, Shape{b, Expr(2), Expr(49), Expr(64), Expr(96)});
  REQUIRE(hq5.has_value());
  CHECK(reshape_layout(Shape{b, Expr(2), Expr(49), Expr(64), Expr(96)}, *hq5,
                       Shape{b, Expr(2), Expr(49), Expr(4), Expr(16), Expr(96)})
            .has_value());
  // A cut of the outermost dim leaves the layout as it was; one that leaves several
  // elements of an inner dim opens a hole just outside it.
  CHECK(narrow_layout(Shape{Expr(8), Expr(4)}, {0, 1}, Shape{Expr(2), Expr(4)}) == std::vector<int8_t>{0, 1});
  CHECK(narrow_layout(Shape{Expr(8), Expr(4)}, {1, 0}, Shape{Expr(8), Expr(2)}) == std::vector<int8_t>{1, 0});
  CHECK(narrow_layout(Shape{Expr(8), Expr(4)}, {1, 0}, Shape{Expr(2), Expr(4)}) == std::vector<int8_t>{2, 0});
}

TEST_CASE("select (x[..., i, :]) is a view that keeps its base, and opens a hole unless it picks the outermost dim") {
  const Expr b = Expr::symbol("batch");
  // Persimmon's fused_qkv.view(B, S, H, 3, D)[..., 0, :]: strides (S*H*3*D, H*3*D, 3*D, D)
  // less the 3's: memory positions {0, 1, 2, 4}, a hole at 3 (where the 3 lay), so a
  // reshape to [B, S, H*D] copies, as PyTorch's does.
  const Shape qkv{b, Expr(128), Expr(8), Expr(3), Expr(64)};
  const std::vector<int8_t> q = select_layout(qkv, {}, 3);
  CHECK(q == std::vector<int8_t>{0, 1, 2, 4});
  CHECK_FALSE(reshape_layout(Shape{b, Expr(128), Expr(8), Expr(64)}, q, Shape{b, Expr(128), Expr(512)}).has_value());
  // timm's qkv.unbind(0) of [3, B, H, N, D]: the outermost dim goes, the rest contiguous.
  CHECK(select_layout(Shape{Expr(3), b, Expr(8), Expr(196), Expr(64)}, {}, 0).empty());
  // The innermost dim picked (x[..., 0]) leaves no dim of stride 1: unknown strides.
  CHECK(select_layout(Shape{b, Expr(8), Expr(2)}, {}, -1) == std::vector<int8_t>{-1});

  // In a graph: h = Linear(x) [B, 24] viewed [B, 3, 8]; q = h[:, 0], k = h[:, 1]; y = q * k.
  // The selects allocate nothing: at batch 2 the forward's activations are h (2*24*4 =
  // 192 B) and y (2*8*4 = 64 B). Mul keeps q and k, views of h, so h lives into backward;
  // each select's backward writes its gradient into zeros of h's size (192 B).
  const char* text = R"(
opset 17
input x float32 batch,16
param w float32 24,16
const shape3 int64 3 = 0,3,8
const i0 int64 - = 0
const i1 int64 - = 1
node memest::Linear x w -> h @proj
node Reshape h shape3 -> h3 @attn
node Gather h3 i0 -> q axis=1 @attn
node Gather h3 i1 -> k axis=1 @attn
node Mul q k -> y @attn
output y
)";
  const Analysis a = analyze_sum_loss(text);
  const Estimate e = estimate(a, 2);
  const auto activations = [&](Phase phase, const char* module) {
    return allocated_bytes(a, e, phase, [&](const Node& n, const Block& blk) {
      return n.module == module && blk.category == Category::Activations;
    });
  };
  CHECK(activations(Phase::Forward, "proj") == std::vector<int64_t>{192});
  CHECK(activations(Phase::Forward, "attn") == std::vector<int64_t>{64});
  const std::vector<int64_t> grads = allocated_bytes(a, e, Phase::Backward, [](const Node& n, const Block& blk) {
    return n.op == "Gather" && blk.category != Category::Workspace;
  });
  CHECK(grads == std::vector<int64_t>{192, 192});
  // h is freed in backward, once Mul's backward has read q and k.
  const int linear = a.graph.tensors[a.graph.find_tensor("h")].producer;
  const auto h_freed = std::find_if(a.program.events.begin(), a.program.events.end(), [&](const Event& ev) {
    return ev.kind == Event::Free && ev.iter == 0 && a.program.blocks[ev.block].node == linear;
  });
  REQUIRE(h_freed != a.program.events.end());
  CHECK(h_freed->phase == Phase::Backward);
}

TEST_CASE("batched matmul: a transposed operand whose batch dims merge is read as it is; a broadcast one is copied and kept") {
  // LeViT's y = v @ attn.transpose(-2, -1), attn [B, 2, 4, 4] a Softmax output, v a weight
  // (so attn's transpose is kept for v's gradient). With v [B, 2, 3, 4], matmul reshapes
  // both to [2B, ., .]: the transpose's B and heads merge (a view) and its matrices are
  // column-major, which bmm hands cuBLAS as they are: no copy. A v [2, 3, 4] spans the
  // heads and is broadcast over B: expanded to [B, 2, 3, 4] (strides 0, 12, 4, 1) its B
  // and heads do not merge, so the reshape copies the expanded v, [2B, 3, 4]. An attn
  // [B, 1, 4, 4] against v [B, 2, 3, 4] is expanded over the heads: its reshape copies
  // [2B, 4, 4], and bmm's backward keeps the copy.
  const auto forward_matmul_bytes = [](const char* x_shape, const char* v_shape) {
    const std::string text = std::string(R"(
opset 17
input x float32 )") + x_shape + "\nparam v float32 " + v_shape + R"(
node Softmax x -> attn axis=-1 @attn
node Transpose attn -> at perm=[0,1,3,2] @attn
node MatMul v at -> y @attn
output y
)";
    const Analysis a = analyze_sum_loss(text.c_str());
    const Estimate e = estimate(a, 2);
    return allocated_bytes(a, e, Phase::Forward, [](const Node& n, const Block& b) {
      return n.op == "MatMul" && b.category != Category::Workspace;
    });
  };
  // The output [2, 2, 3, 4] only: 192 B.
  CHECK(forward_matmul_bytes("batch,2,4,4", "batch,2,3,4") == std::vector<int64_t>{192});
  // v's expanded copy, 2*2*3*4*4 = 192 B, then the output.
  CHECK(forward_matmul_bytes("batch,2,4,4", "2,3,4") == std::vector<int64_t>{192, 192});
  // The expanded copy of the transpose, 2*2*4*4*4 = 256 B, then the output.
  CHECK(forward_matmul_bytes("batch,1,4,4", "batch,2,3,4") == std::vector<int64_t>{256, 192});
  // A weight broadcast over every batch dim, [1, 1, 3, 4]: stride 0 throughout, the batch
  // dims merge as a view and nothing is copied.
  CHECK(forward_matmul_bytes("batch,2,4,4", "1,1,3,4") == std::vector<int64_t>{192});

  // A batch-innermost operand: b [3, 4, B] permuted (2, 0, 1) to [B, 3, 4] has stride 1
  // along B, neither rows nor columns: bmm clones it for the call, a temporary (96 B at
  // batch 2), not an activation.
  const char* innermost = R"(
opset 17
input a float32 batch,2,3
param w float32 3,4,batch
node Transpose w -> b perm=[2,0,1] @mm
node MatMul a b -> y @mm
output y
)";
  const Analysis a = analyze_sum_loss(innermost);
  const Estimate e = estimate(a, 2);
  const auto bytes = [&](Category c) {
    return allocated_bytes(a, e, Phase::Forward, [&](const Node& n, const Block& b) {
      return n.op == "MatMul" && b.category == c;
    });
  };
  CHECK(bytes(Category::Temporaries) == std::vector<int64_t>{96});
  CHECK(bytes(Category::Activations) == std::vector<int64_t>{64});  // y [2, 2, 4]
}

TEST_CASE("batched matmul: a broadcast operand's gradient is made expanded, then summed to its shape") {
  // x [B, 2, 4, 4] @ v [2, 4, 3], v a weight broadcast over B: BmmBackward makes v's
  // gradient as [2B, 4, 3] (2*2*4*3*4 = 192 B at batch 2), ExpandBackward sums it to v's
  // [2, 4, 3] (96 B, the gradient); the expanded one is a temporary. (r, of the input
  // alone, has no gradient.)
  const char* text = R"(
opset 17
input x float32 batch,2,4,4
param v float32 2,4,3
node Relu x -> r @mm
node MatMul r v -> y @mm
output y
)";
  const Analysis a = analyze_sum_loss(text);
  const Estimate e = estimate(a, 2);
  const auto backward = [&](Category c) {
    return allocated_bytes(a, e, Phase::Backward, [&](const Node& n, const Block& b) {
      return n.op == "MatMul" && b.category == c;
    });
  };
  CHECK(backward(Category::Temporaries) == std::vector<int64_t>{192});
  CHECK(backward(Category::Gradients) == std::vector<int64_t>{96});
}

TEST_CASE("a node whose outputs reach the loss through no gradient keeps nothing for backward") {
  // DeepSeek V3.2's sparse-attention indexer: scores computed under no_grad pick top-k
  // indices. s = Softmax(h) reaches the loss only through TopK's indices, so autograd
  // does not keep s (no gradient comes back to it): it goes after its last use in
  // forward. The same Softmax on the path to the loss keeps its output into backward.
  const auto softmax_freed_in = [](const char* tail) {
    const std::string text = std::string(R"(
opset 17
input x float32 batch,8
param w float32 8,8
const k int64 1 = 2
node MatMul x w -> h @proj
node Softmax h -> s axis=-1 @index
node TopK s k -> vals idx axis=-1 @index
)") + tail;
    const Analysis a = analyze_sum_loss(text.c_str());
    const int softmax = a.graph.tensors[a.graph.find_tensor("s")].producer;
    const auto freed = std::find_if(a.program.events.begin(), a.program.events.end(), [&](const Event& ev) {
      return ev.kind == Event::Free && ev.iter == 0 && a.program.blocks[ev.block].node == softmax;
    });
    REQUIRE(freed != a.program.events.end());
    return freed->phase;
  };
  CHECK(softmax_freed_in("node GatherElements h idx -> y axis=-1 @pick\noutput y\n") == Phase::Forward);
  CHECK(softmax_freed_in("node Mul s h -> y @pick\noutput y\n") == Phase::Backward);
}

namespace {

// Temporaries a node of module `module` allocates in iteration 1's phase `phase`, in bytes at
// batch 2, in order.
std::vector<int64_t> temporaries(const Analysis& a, const Estimate& e, Phase phase, const std::string& module) {
  std::vector<int64_t> out;
  for (const Event& ev : a.program.events) {
    const Block& b = a.program.blocks[ev.block];
    if (ev.iter != 1 || ev.phase != phase || ev.kind != Event::Alloc || b.category != Category::Temporaries) continue;
    if (b.node < 0 || a.graph.nodes[static_cast<size_t>(b.node)].module != module) continue;
    out.push_back(b.bytes.eval(e.bindings));
  }
  return out;
}

}  // namespace

TEST_CASE("a 1-D convolution copies a strided input, and in backward a strided gradient") {
  // data2vec-audio's feature extractor: conv -> transpose -> LayerNorm -> transpose -> act
  // -> conv. c1 reads the ReLU of a transposed LayerNorm output ([B, 16, 32] with the
  // channel innermost): at::_convolution makes it contiguous first (Convolution.cpp, k ==
  // 3), 2 x 16 x 32 x 4 = 4,096 B at batch 2, and convolution_backward again for the saved
  // input. c0's output reaches the LayerNorm through a transpose; the LayerNorm's dX is
  // contiguous (empty_like of its contiguous X), so c0's gradient arrives strided and
  // cuDNN copies it (grad_output.contiguous()): 4,096 B. c0's input and c1's gradient (from
  // the loss) are contiguous: no copies. seqtrace34: the GPU's copies, in this order.
  const char* text = R"(
opset 17
input x float32 batch,8,32
param c0.weight float32 16,8,3
param ln.weight float32 16
param ln.bias float32 16
param c1.weight float32 16,16,3
node Conv x c0.weight -> a pads=[1,1] kernel_shape=[3] @c0
node Transpose a -> at perm=[0,2,1] @blk
node LayerNormalization at ln.weight ln.bias -> l axis=-1 @ln
node Transpose l -> lt perm=[0,2,1] @blk
node Relu lt -> r @act
node Conv r c1.weight -> y pads=[1,1] kernel_shape=[3] @c1
output y
)";
  TrainConfig cfg;
  cfg.loss = Loss::Sum;
  const Analysis a = analyze_text(text, cfg);
  const Estimate e = estimate(a, 2);
  CHECK(temporaries(a, e, Phase::Forward, "c1") == std::vector<int64_t>{4096});
  CHECK(temporaries(a, e, Phase::Forward, "c0").empty());
  // c1's backward: the saved input's copy, then r's gradient (a temporary too).
  CHECK(temporaries(a, e, Phase::Backward, "c1") == std::vector<int64_t>{4096, 4096});
  CHECK(temporaries(a, e, Phase::Backward, "c0") == std::vector<int64_t>{4096});
}
