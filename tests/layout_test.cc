// Memory layouts (estimator/layout.cc): TensorIterator's output order for broadcasting
// elementwise ops, and the attention backend a mask's layout picks (ops/fused.cc).
// A layout lists each logical dim's memory position (0: outermost); {} is contiguous.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "estimator/analysis.h"
#include "estimator/ops/registry.h"
#include "estimator/simulate.h"
#include "frontends/text_reader.h"
#include "ops_test_util.h"
#include "tests/simulate_test_util.h"

using namespace memest;

namespace {

using Layouts = std::vector<std::vector<int8_t>>;
const std::vector<int8_t> kHeadsInnermost = {0, 3, 1, 2};  // also channels-last

// Layouts for every tensor of g: contiguous, except those named.
Layouts layouts_with(const Graph& g, const std::vector<std::pair<std::string, std::vector<int8_t>>>& strided) {
  Layouts l(g.tensors.size());
  for (const auto& [name, layout] : strided) l[g.find_tensor(name)] = layout;
  return l;
}

std::vector<int8_t> layout_of(const Graph& g, const std::string& out, const Layouts& l) {
  return elementwise_layout(g, testing::producer(g, out), l);
}

}  // namespace

TEST_CASE("layout: a permuted bias plus a broadcast mask keeps the bias's heads innermost") {
  // T5's position bias: a [128, 128, 8] embedding permuted (2, 0, 1) is [8, 128, 128]
  // with layout {2, 0, 1}; unsqueezed, [1, 8, 128, 128] with {0, 3, 1, 2}. Its operand
  // positions (size-1 dims skipped) are [-, 3, 1, 2]; the mask's [B, 1, 1, 128] are
  // [0, -, -, 3]. Insertion sort, innermost first, from [3, 2, 1, 0]: x says 3 before 2
  // (2 > 1); 1 before 2 and before 3 (3 > 1, 3 > 2): [1, 3, 2, 0]; 0 against 2 is
  // ambiguous (x broadcast, mask broadcast in 2), 0 against 3: the mask keeps 3 first.
  // So heads innermost: {0, 3, 1, 2}, and stride(-1) != 1.
  for (const char* batch : {"batch", "4", "1"}) {
    CAPTURE(batch);
    const Graph g = testing::infer(std::string(R"(
opset 17
input x float32 1,8,128,128
input m float32 )") + batch + R"(,1,1,128
node Add x m -> y
)");
    const Layouts l = layouts_with(g, {{"x", kHeadsInnermost}});
    const std::vector<int8_t> y = layout_of(g, "y", l);
    CHECK(testing::shape(g, "y") == std::string("[") + batch + ", 8, 128, 128]");
    CHECK(y == kHeadsInnermost);
    CHECK_FALSE(last_dim_innermost(*testing::tensor(g, "y").shape, y));
  }
}

TEST_CASE("layout: the unsqueezed bias as the simulator writes it gives the same sum") {
  // Unsqueeze is reshape's rule (UnitDims): [8, 128, 128] {2, 0, 1} -> [1, 8, 128, 128].
  // Memory runs: heads alone, then (T, T); the new unit dim sits just before the dim
  // after it (heads), so the order is T, T, unit, heads: {2, 3, 0, 1}, the same strides
  // as {0, 3, 1, 2} once the size-1 dim is set aside.
  const Graph g = testing::infer(R"(
opset 17
input p float32 8,128,128
input m float32 batch,1,1,128
const zero int64 1 = 0
node Unsqueeze p zero -> x
node Add x m -> y
)");
  const auto x = reshape_layout(*testing::tensor(g, "p").shape, {2, 0, 1}, *testing::tensor(g, "x").shape);
  REQUIRE(x);
  CHECK(*x == std::vector<int8_t>{2, 3, 0, 1});
  CHECK_FALSE(last_dim_innermost(*testing::tensor(g, "x").shape, *x));
  // Positions [-, 3, 0, 1] order the dims as {0, 3, 1, 2} did: heads innermost again.
  CHECK(layout_of(g, "y", layouts_with(g, {{"p", {2, 0, 1}}, {"x", *x}})) == kHeadsInnermost);
}

TEST_CASE("layout: channels-last plus a per-channel bias stays channels-last; of two full operands the first decides") {
  const Graph g = testing::infer(R"(
opset 17
input x float32 batch,16,8,8
input y float32 batch,16,8,8
input b float32 1,16,1,1
node Add x b -> xb
node Add y x -> yx
node Add x y -> xy
)");
  // x channels-last: positions [0, 3, 1, 2]; the bias is broadcast in all but C, so it
  // never decides a pair: x's order, {0, 3, 1, 2}.
  CHECK(layout_of(g, "xb", layouts_with(g, {{"x", kHeadsInnermost}})) == kHeadsInnermost);
  // Contiguous first, channels-last second, same shape: every pair is decided strictly
  // by the first operand's strides (no fast path: the two disagree), so contiguous.
  CHECK(layout_of(g, "yx", layouts_with(g, {{"x", kHeadsInnermost}})).empty());
  // And the other way round: the channels-last operand first makes it channels-last.
  CHECK(layout_of(g, "xy", layouts_with(g, {{"x", kHeadsInnermost}})) == kHeadsInnermost);
  // Channels-last's last dim (W, position 2) is not innermost (C at 3 is further in).
  CHECK_FALSE(last_dim_innermost(*testing::tensor(g, "x").shape, kHeadsInnermost));
  CHECK(last_dim_innermost(*testing::tensor(g, "x").shape, {}));
  CHECK(last_dim_innermost(*testing::tensor(g, "x").shape, {-1}));  // unknown counts as yes
}

TEST_CASE("layout: Where with a one-element fill is masked_fill (contiguous); with a tensor fill, TensorIterator's") {
  const Graph g = testing::infer(R"(
opset 17
input c bool batch,1,1,16
input x float32 1,4,16,16
const f float32 - = -1e9
const f1 float32 1 = -1e9
node Where c f x -> filled
node Where c f1 x -> filled1
node Where c x f -> kept
)");
  const Layouts l = layouts_with(g, {{"x", kHeadsInnermost}});
  // masked_fill clones x with MemoryFormat::Contiguous whatever x's strides: a scalar
  // fill, or a one-element [1] one, gives {}.
  CHECK(layout_of(g, "filled", l).empty());
  CHECK(layout_of(g, "filled1", l).empty());
  // torch.where(c, x, scalar): operands c [0, -, -, 3], x [-, 3, 1, 2], f all broadcast.
  // c is asked first but is broadcast in every pair but (0, 3), so x orders 3, 2, 1 as in
  // the Add above, and c keeps 3 before 0: [1, 3, 2, 0], heads innermost.
  CHECK(testing::shape(g, "kept") == "[batch, 4, 16, 16]");
  CHECK(layout_of(g, "kept", l) == kHeadsInnermost);
}

TEST_CASE("layout: an operand of unknown strides that decides makes the output unknown") {
  const Graph g = testing::infer(R"(
opset 17
input x float32 batch,4,16,16
input y float32 batch,4,16,16
node Add x y -> s
node Add y x -> t
)");
  const Layouts l = layouts_with(g, {{"x", {-1}}});
  CHECK(layout_of(g, "s", l) == std::vector<int8_t>{-1});  // the first full operand is x
  CHECK(layout_of(g, "t", l).empty());                     // y decides, contiguous
}

namespace {

// Self-attention with a [1, H, T, T] mask: H = 4, T = 16, D = 8. `gather` is a 4-D
// lookup of a [32, 4] table by [1, T, T] buckets, [1, T, T, H], permuted (0, 3, 1, 2):
// heads innermost, stride(-1) == H. `reshaped` reads the table by a flat [T*T] index and
// views the lookup back to [1, T, T, H] first (timm's and transformers' relative
// position tables, which call .contiguous() after the permute that ONNX drops).
const char* kAttention = R"(
opset 17
input q float32 batch,4,16,8
input k float32 batch,4,16,8
input v float32 batch,4,16,8
input idx int64 1,16,16
input flat int64 256
param table float32 32,4
const shp int64 4 = 1,16,16,4
node Gather table idx -> g4
node Transpose g4 -> gather perm=0,3,1,2
node Gather table flat -> g2
node Reshape g2 shp -> g2r
node Transpose g2r -> reshaped perm=0,3,1,2
node memest::Attention q k v gather -> o_gather
node memest::Attention q k v reshaped -> o_reshaped
node memest::Attention q k v -> o_none
)";

}  // namespace

TEST_CASE("attention backend: a mask whose last dim is not innermost runs the math backend") {
  const Graph g = testing::infer(kAttention);
  const OpInfo* attention = find_op("memest", "Attention");
  const OpInfo* math = find_op("memest", "AttentionMath");
  REQUIRE(attention);
  REQUIRE(math);
  REQUIRE(static_cast<bool>(attention->variant));
  CHECK(testing::shape(g, "gather") == "[1, 4, 16, 16]");
  CHECK(testing::shape(g, "reshaped") == "[1, 4, 16, 16]");
  auto backend = [&](const char* out, const Layouts& l, DType run = DType::F32) {
    return attention->variant(g, testing::producer(g, out), Dispatch{run, &l});
  };
  // The Transposes' outputs: dim i is the input's dim perm[i], so layout = perm.
  const Layouts permuted = layouts_with(g, {{"gather", kHeadsInnermost}, {"reshaped", kHeadsInnermost}});

  // T5: a permuted lookup never made contiguous. stride(-1) = H != 1, so no fused kernel
  // (check_last_dim_stride_equals_1_dense), in fp32 and in half.
  CHECK(backend("o_gather", permuted) == math);
  CHECK(backend("o_gather", permuted, DType::F16) == math);
  // A permute of a reshaped lookup counts as made contiguous: the fused kernel (nullptr).
  CHECK(backend("o_reshaped", permuted) == nullptr);
  // A contiguous mask, no mask, or no layouts at all: fused.
  const Layouts contiguous(g.tensors.size());
  CHECK(backend("o_gather", contiguous) == nullptr);
  CHECK(backend("o_reshaped", contiguous) == nullptr);
  CHECK(backend("o_none", permuted) == nullptr);
  CHECK(attention->variant(g, testing::producer(g, "o_gather"), Dispatch{DType::F32}) == nullptr);
  // Unknown strides ({-1}) count as contiguous.
  CHECK(backend("o_gather", layouts_with(g, {{"gather", {-1}}})) == nullptr);
}

TEST_CASE("attention backend: the lookup is found through the unsqueeze and the mask add of T5's bias") {
  // T5: embedding [T, T] -> [T, T, H], permute (2, 0, 1) {2, 0, 1}, unsqueeze(0)
  // {2, 3, 0, 1} (the case above), plus the [B, 1, 1, T] mask: {0, 3, 1, 2}. The walk
  // follows the strided operand back to the Transpose, whose source is the Gather itself.
  const Graph g = testing::infer(R"(
opset 17
input q float32 batch,4,16,8
input m float32 batch,1,1,16
input idx int64 16,16
param table float32 32,4
const zero int64 1 = 0
node Gather table idx -> e
node Transpose e -> p perm=2,0,1
node Unsqueeze p zero -> bias
node Add bias m -> mask
node memest::Attention q q q mask -> o
)");
  const Layouts l = layouts_with(g, {{"p", {2, 0, 1}}, {"bias", {2, 3, 0, 1}}, {"mask", kHeadsInnermost}});
  CHECK(testing::shape(g, "mask") == "[batch, 4, 16, 16]");
  CHECK(layout_of(g, "mask", l) == kHeadsInnermost);
  const OpInfo* attention = find_op("memest", "Attention");
  REQUIRE(attention);
  CHECK(attention->variant(g, testing::producer(g, "o"), Dispatch{DType::F16, &l}) ==
        find_op("memest", "AttentionMath"));
}

namespace {

// timm's CPUBone / LowFormer attention: a [N, H, 3D, L] projection permuted to
// [N, H, L, 3D] (`qkv.permute(0, 1, 3, 2)`) and split on the last axis into q, k and v,
// whose stride(-1) is then L, not 1. H = 4, L = 16, D = 8.
const char* kStridedQkv = R"(
opset 17
input x float32 batch,4,24,16
const sizes int64 3 = 8,8,8
node Transpose x -> qkv perm=0,1,3,2
node Split qkv sizes -> q k v axis=-1
node memest::Attention q k v -> o
)";

// A dynamo export's stack: statement 0 for the permute and the split, `call` for the
// attention; the permute's statement is `permute` (a code line).
Graph traced_qkv(const std::string& permute, const std::string& call) {
  Graph g = testing::infer(kStridedQkv);
  PyStatement p, c;
  p.where = "cpubone.py:372";
  p.code = permute;
  c.where = "cpubone.py:376";
  c.code = call;
  g.python.statements = {p, c};
  g.python.stacks = {{PyFrame{0, 0}}, {PyFrame{1, 0}}};
  for (Node& n : g.nodes) n.py_stack = n.op == "Attention" ? 1 : 0;
  return g;
}

}  // namespace

TEST_CASE("attention backend: q, k, v split off a permuted qkv run the math backend unless the code made them contiguous") {
  const OpInfo* attention = find_op("memest", "Attention");
  const OpInfo* math = find_op("memest", "AttentionMath");
  REQUIRE(attention);
  REQUIRE(math);
  auto backend = [&](const Graph& g, const Layouts& l, DType run) {
    return attention->variant(g, testing::producer(g, "o"), Dispatch{run, &l});
  };
  // Logical dim 2 (L) is innermost in memory, dim 3 (3D) next: {0, 1, 3, 2}.
  const std::vector<int8_t> l_innermost = {0, 1, 3, 2};
  auto strided = [&](const Graph& g) {
    return layouts_with(g, {{"qkv", l_innermost}, {"q", l_innermost}, {"k", l_innermost}, {"v", l_innermost}});
  };
  // The dynamo export of CPUBone: no .contiguous() on the way, so every fused kernel is
  // ruled out (check_last_dim_stride_equals_1_dense), in half and in fp32.
  const Graph cpubone = traced_qkv("qkv = qkv.permute(0, 1, 3, 2)", "values = F.scaled_dot_product_attention(q, k, v)");
  CHECK(testing::shape(cpubone, "q") == "[batch, 4, 16, 8]");
  CHECK(backend(cpubone, strided(cpubone), DType::BF16) == math);
  CHECK(backend(cpubone, strided(cpubone), DType::F32) == math);
  // Only one of the three strided is enough.
  CHECK(backend(cpubone, layouts_with(cpubone, {{"qkv", l_innermost}, {"v", l_innermost}}), DType::F16) == math);
  // Contiguous q, k, v: fused.
  CHECK(backend(cpubone, Layouts(cpubone.tensors.size()), DType::BF16) == nullptr);
  // CoAtNet's `q.transpose(-1, -2).contiguous(),` (an argument line of the call), or the
  // call's own line: ONNX dropped the copy, the statement shows it: fused.
  const Graph coatnet = traced_qkv("q.transpose(-1, -2).contiguous(),", "x = torch.nn.functional.scaled_dot_product_attention(");
  CHECK(backend(coatnet, strided(coatnet), DType::BF16) == nullptr);
  const Graph inline_call = traced_qkv("qkv = qkv.permute(0, 1, 3, 2)", "o = F.scaled_dot_product_attention(q.contiguous(), k, v)");
  CHECK(backend(inline_call, strided(inline_call), DType::BF16) == nullptr);
  // No stack trace (the legacy exporter): the graph cannot say; the fused kernel stays.
  const Graph legacy = testing::infer(kStridedQkv);
  CHECK(backend(legacy, strided(legacy), DType::BF16) == nullptr);
}

TEST_CASE("layout: the dynamo exporter's Transpose back after an index or a slice assignment is no permuted view") {
  // `k[..., :d] = k_nope` (aten.slice_scatter, DeepSeek-V3's expand_kv) and `biases[:, idx]`
  // (aten.index.Tensor) are written Transpose, op, Transpose; the op's result is a new
  // contiguous tensor, so the last Transpose's output is contiguous. aten.permute's is not.
  Graph g = testing::infer(R"(
opset 17
input x float32 2,4,16,8
node Transpose x -> scattered perm=0,1,3,2
node Transpose x -> indexed perm=0,1,3,2
node Transpose x -> permuted perm=0,1,3,2
node Transpose x -> untraced perm=0,1,3,2
)");
  g.calls = {"aten.slice_scatter.default", "aten.index.Tensor", "aten.permute.default"};
  for (int c = 0; c < 3; ++c) g.nodes[static_cast<size_t>(c)].call = c;
  const Layouts in(g.tensors.size());
  auto layout = [&](const char* out) {
    const Node& n = testing::producer(g, out);
    return output_layout(g, n, n.outputs[0], n.info, true, n.inputs[0], in, DType::F32);
  };
  CHECK(layout("scattered").empty());
  CHECK(layout("indexed").empty());
  CHECK(layout("permuted") == std::vector<int8_t>{0, 1, 3, 2});
  CHECK(layout("untraced") == std::vector<int8_t>{0, 1, 3, 2});
}

TEST_CASE("attention math backend: backward scratch of three fp32 score matrices, Tk read from v") {
  // The legacy exporter's k may still be [B, Tk, H, D] (its transpose fused away), so the
  // score size comes from v: q [B, 4, 16, 8], v [B, 4, 16, 8] -> scores [B, 4, 16, 16].
  // During SafeSoftmaxBackward the GPU holds three fp32 score-sized blocks (traces17,
  // rnd9_17 bf16: BmmBackward0's gradient and SafeSoftmaxBackward0's two, 16 MiB each):
  // 3 * 4 bytes * 4 * 16 * 16 = 12288 bytes per batch element.
  const Graph g = testing::infer(R"(
opset 17
input q float32 batch,4,16,8
input k float32 batch,16,4,8
input v float32 batch,4,16,8
node memest::AttentionMath q k v -> o
)");
  const Node& n = testing::producer(g, "o");
  const OpInfo* math = find_op("memest", "AttentionMath");
  REQUIRE(math);
  REQUIRE(static_cast<bool>(math->bwd_workspace));
  CHECK(math->bwd_workspace(g, n, DType::F32, false, false).bytes.str() == "12288*batch");
  // Saved: q and k scaled (4 * 16 * 8 fp32 each), the softmax (4 * 16 * 16) and v
  // (4 * 16 * 8): 512 + 512 + 1024 + 512 elements per batch element, no dropout.
  const auto kept = math->saved_extra(g, n);
  REQUIRE(kept.size() == 4);
  CHECK(kept[1].numel.str() == "512*batch");
  CHECK(kept[2].numel.str() == "1024*batch");
}

TEST_CASE("layout: a Linear over a table expanded to the batch copies it, and keeps the copy") {
  // ConViT's GPSA: pos_proj(rel_indices.expand(B, -1, -1, -1)). The expanded batch dim has
  // stride 0; F.linear flattens [B, 8, 8, 3] to [B * 64, 3], which cannot be a view of it,
  // so it copies, and the copy is what the weight's gradient reads (traces26
  // st_convit_tiny: 14.75 MB a block, -7.3% before). x [batch, 8] only gives the batch.
  const char* text = R"(
opset 17
input x float32 batch,8
buffer rel float32 1,8,8,3
param w float32 4,3
param b float32 4
const zero int64 1 = 0
const rest int64 3 = 8,8,3
node Shape x -> xs @pos
node Gather xs zero -> bdim axis=0 @pos
node Concat bdim rest -> target axis=0 @pos
node Expand rel target -> table @pos
node memest::Linear table w b -> y @pos
output y
)";
  AnalysisOptions o;
  o.train.loss = Loss::Sum;
  const Analysis a = analyze(read_text_graph(text), o);
  const Estimate e = estimate(a, 2);
  std::vector<int64_t> linear;
  for (const Event& ev : a.program.events) {
    const Block& blk = a.program.blocks[ev.block];
    if (ev.kind != Event::Alloc || ev.iter != 0 || ev.phase != Phase::Forward || blk.node < 0) continue;
    if (a.graph.nodes[blk.node].op == "Linear") linear.push_back(blk.bytes.eval(e.bindings));
  }
  // The copy, [2, 8, 8, 3] fp32 = 1,536 B, then the output, [2, 8, 8, 4] fp32 = 2,048 B,
  // then cuBLAS's 32 MiB workspace of the first GEMM.
  CHECK(linear == std::vector<int64_t>{1536, 2048, 33554432});
}

TEST_CASE("layout: group and instance norms copy a strided input contiguous and keep the copy") {
  // at::group_norm and at::instance_norm start from input.contiguous(): timm's poolformerv2
  // feeds its GroupNorms channels-last maps, and the GPU keeps two input-sized tensors a
  // norm (traces27: 9,633,792 B twice, then the 512 B mean and rstd; op-probe's contiguous
  // input: one). Channels-last: x [2, 8, 8, 16] fp32 times a per-channel weight, then its
  // NCHW view [2, 16, 8, 8]; contiguous: x [2, 16, 8, 8] times a [16, 1, 1] weight. Either
  // is 2 * 16 * 8 * 8 * 4 = 8,192 B.
  const std::string channels_last = "input x float32 batch,8,8,16\nparam s float32 16\nnode Mul x s -> xs\n"
                                    "node Transpose xs -> xt perm=0,3,1,2\n";
  const std::string contiguous = "input x float32 batch,16,8,8\nparam s float32 16,1,1\nnode Mul x s -> xt\n";
  auto norm_allocs = [](const std::string& input, const std::string& norm) {
    const std::string text = "opset 18\n" + input + "param g float32 4\nparam b float32 4\nparam gi float32 16\n"
                             "param bi float32 16\n" + norm + "\noutput y\n";
    AnalysisOptions o;
    o.train.loss = Loss::Sum;
    const Analysis a = analyze(read_text_graph(text), o);
    const Estimate e = estimate(a, 2);
    std::vector<int64_t> out;
    for (const Event& ev : a.program.events) {
      const Block& blk = a.program.blocks[ev.block];
      if (ev.kind != Event::Alloc || ev.iter != 0 || ev.phase != Phase::Forward || blk.node < 0) continue;
      const std::string& op = a.graph.nodes[blk.node].op;
      if (op == "GroupNormalization" || op == "InstanceNormalization") out.push_back(blk.bytes.eval(e.bindings));
    }
    return out;
  };
  // The copy (strided input only), the output, then mean and rstd: 2 * 4 groups fp32, 32 B.
  const std::string group = "node GroupNormalization xt g b -> y num_groups=4";
  CHECK(norm_allocs(channels_last, group) == std::vector<int64_t>{8192, 8192, 32, 32});
  CHECK(norm_allocs(contiguous, group) == std::vector<int64_t>{8192, 32, 32});
  // instance_norm: the copy, the output, the weight repeated per sample and fp32 mean and
  // invstd per (n, c): 2 * 16 fp32 = 128 B each.
  const std::string inst = "node InstanceNormalization xt gi bi -> y";
  CHECK(norm_allocs(channels_last, inst) == std::vector<int64_t>{8192, 8192, 128, 128, 128});
  CHECK(norm_allocs(contiguous, inst) == std::vector<int64_t>{8192, 128, 128, 128});
}

TEST_CASE("layout: an expand's broadcast dims have stride 0; a reshape across one copies") {
  // computeStride (TensorUtils.cpp): a run of stride-0 dims merges with itself, never with a
  // dim that has a stride of its own. EvoNorm's group_std: std [B, G, 1, 1, 1] expanded to
  // [B, G, C/G, H, W] and reshaped to [B, C, H, W] merges G with C/G.
  const Expr b = Expr::symbol("batch");
  const Shape in{b, Expr(4), Expr(1), Expr(1), Expr(1)};
  const Shape out{b, Expr(4), Expr(8), Expr(7), Expr(7)};
  const std::vector<int8_t> layout = broadcast_layout(in, out);
  CHECK(layout == std::vector<int8_t>{0, 1, 3, 4, 5});  // a hole at 2
  CHECK_FALSE(reshape_layout(out, layout, Shape{b, Expr(32), Expr(7), Expr(7)}));
  // Merging the broadcast dims among themselves stays a view.
  CHECK(reshape_layout(out, layout, Shape{b, Expr(4), Expr(392)}));
  // A mask [1, 1, T, T] expanded over batch and heads flattens them into one batch dim: a view
  // (both stride 0), as matmul's reshape to [B * H, T, T] is.
  const Shape mask{Expr(1), Expr(1), Expr(16), Expr(16)};
  const Shape heads{b, Expr(8), Expr(16), Expr(16)};
  const std::vector<int8_t> m = broadcast_layout(mask, heads);
  CHECK(m == std::vector<int8_t>{0, 1, 3, 4});
  CHECK(reshape_layout(heads, m, Shape{b * Expr(8), Expr(16), Expr(16)}));
  CHECK_FALSE(reshape_layout(heads, m, Shape{b * Expr(8) * Expr(16), Expr(16)}));
  // Nothing broadcast: contiguous.
  CHECK(broadcast_layout(Shape{b, Expr(4)}, Shape{b, Expr(4)}).empty());
}

TEST_CASE("layout: EvoNorm's group std expanded back and reshaped is a copy the divide keeps") {
  // timm's group_std: x.reshape(B, G, C/G, H, W).float().var(dim=(2, 3, 4), keepdim=True)
  // .add(eps).sqrt() .expand(x.shape).reshape(B, C, H, W); x / std keeps the copy
  // (seqtrace32c, st_test_efficientnet_evos fp32: a std_full block per norm). At batch 2,
  // x [2, 8, 4, 4] fp32 = 1,024 B: the Reshape allocates one such copy.
  const char* text = R"(
opset 18
input x float32 batch,8,4,4
param w float32 8,1,1
const grouped int64 5 = 0,2,4,4,4
const full int64 4 = 0,8,4,4
const axes int64 3 = 2,3,4
const eps float32 - = 0.00001
node Mul x w -> h
node Reshape h grouped -> hg
node ReduceMean hg axes -> mu
node Sub hg mu -> d
node Mul d d -> d2
node ReduceMean d2 axes -> var
node Add var eps -> ve
node Sqrt ve -> sd
node Shape hg -> gs
node Expand sd gs -> sdx
node Reshape sdx full -> sdf
node Div h sdf -> y
output y
)";
  AnalysisOptions o;
  o.train.loss = Loss::Sum;
  const Analysis a = analyze(read_text_graph(text), o);
  const Estimate e = estimate(a, 2);
  const auto reshape = testing::allocated_bytes(a, e, Phase::Forward, [](const Node& n, const Block&) { return n.op == "Reshape"; });
  CHECK(reshape == std::vector<int64_t>{1024});
}

TEST_CASE("layout: einsum copies an operand whose permute to [batch, kept, summed] does not merge") {
  // sumproduct_pair (Linear.cpp): MViTv2's decomposed relative positions. In
  // `byhwc,hkc->byhwk` r_q goes to [h | b, y, w | c]; b, y and w do not sit together in
  // memory (h lies between y and w), so the reshape to [h, b * y * w, c] copies. In
  // `byhwc,wkc->byhwk` it goes to [w | b, y, h | c], and b, y, h merge: a view.
  const Expr b = Expr::symbol("batch");
  const Shape q{b, Expr(2), Expr(7), Expr(7), Expr(96)};
  const Shape rel{Expr(7), Expr(13), Expr(96)};
  CHECK(einsum_reshape_copies("byhwc,hkc->byhwk", 0, q, rel, {}) == std::optional<bool>(true));
  CHECK(einsum_reshape_copies("byhwc,wkc->byhwk", 0, q, rel, {}) == std::optional<bool>(false));
  // The table, [h | c | k] as bmm's right operand: no merging, a view.
  CHECK(einsum_reshape_copies("byhwc,hkc->byhwk", 1, q, rel, {}) == std::optional<bool>(false));
  // A plain batched product, bij,bjk->bik: views both; with the left transposed in memory
  // (layout {0, 2, 1}) still a view, bmm reads it transposed.
  const Shape x{b, Expr(4), Expr(8)}, y{b, Expr(8), Expr(5)};
  CHECK(einsum_reshape_copies("bij,bjk->bik", 0, x, y, {}) == std::optional<bool>(false));
  CHECK(einsum_reshape_copies("bij,bjk->bik", 0, x, y, {0, 2, 1}) == std::optional<bool>(false));
  // An ellipsis or three operands: not modelled.
  CHECK_FALSE(einsum_reshape_copies("...ij,...jk->...ik", 0, x, y, {}).has_value());
}

TEST_CASE("layout: the einsum copy is allocated in forward and kept for the table's gradient") {
  // q [batch, 1, 7, 7, 8] fp32 from a product (it needs a gradient; a second product keeps
  // it, as MViTv2's attention keeps its q), a trained table [7, 13, 8]. At batch 2 q is
  // 2 * 49 * 8 * 4 = 3,136 B: byhwc,hkc copies it (then the output, [2, 1, 7, 7, 13] fp32
  // = 5,096 B); byhwc,wkc only makes its output.
  auto einsum_blocks = [](const char* equation) {
    const std::string text = std::string(R"(
opset 17
input x float32 batch,1,7,7,8
param s float32 8
param rel float32 7,13,8
node Mul x s -> q
node Mul q s -> z
node Einsum q rel -> y equation=")") + equation + R"("
output y
output z
)";
    AnalysisOptions o;
    o.train.loss = Loss::Sum;
    const Analysis a = analyze(read_text_graph(text), o);
    const Estimate e = estimate(a, 2);
    std::vector<int64_t> out = testing::allocated_bytes(a, e, Phase::Forward, [](const Node& n, const Block& b) {
      return n.op == "Einsum" && b.category == Category::Activations;
    });
    for (const PhasePeak& p : e.peak.phases) {
      if (p.iter == 1 && p.phase == Phase::Forward) out.push_back(p.end);  // what forward leaves
    }
    return out;
  };
  const std::vector<int64_t> copied = einsum_blocks("byhwc,hkc->byhwk"), viewed = einsum_blocks("byhwc,wkc->byhwk");
  REQUIRE(copied.size() == 3);
  REQUIRE(viewed.size() == 2);
  CHECK(copied[0] == 3136);
  CHECK(copied[1] == 5096);
  CHECK(viewed[0] == 5096);
  // The copy is still held when forward ends (512-byte blocks: 3,136 B take 3,584).
  CHECK(copied[2] - viewed[1] == 3584);
}

TEST_CASE("layout: a batched matmul operand spans the product's batch dims, is broadcast over all, or a mix") {
  const Expr b = Expr::symbol("batch");
  const Shape batch{b, Expr(4)};  // the product's batch dims [B, 4]
  // [B, 4, n, m]: its own strides decide (bmm_operand).
  CHECK(bmm_batch(Shape{b, Expr(4), Expr(3), Expr(5)}, batch) == BmmBatch::Spanned);
  // [1, 1, n, m] and [n, m]-like [1, n, m]: all stride 0, the batch dims merge as a view.
  CHECK(bmm_batch(Shape{Expr(1), Expr(1), Expr(3), Expr(5)}, batch) == BmmBatch::Broadcast);
  CHECK(bmm_batch(Shape{Expr(1), Expr(3), Expr(5)}, batch) == BmmBatch::Broadcast);
  // [B, 1, n, m] (timm's LambdaLayer v.unsqueeze(1)) and [4, n, m]: part of each, a copy.
  CHECK(bmm_batch(Shape{b, Expr(1), Expr(3), Expr(5)}, batch) == BmmBatch::Mixed);
  CHECK(bmm_batch(Shape{Expr(4), Expr(3), Expr(5)}, batch) == BmmBatch::Mixed);
  // A batch dim of one element has no say: [B, 1] products need no expansion.
  CHECK(bmm_batch(Shape{b, Expr(1), Expr(3), Expr(5)}, Shape{b, Expr(1)}) == BmmBatch::Spanned);
}
