// Layout and indexing ops, and symbolic shape arithmetic flowing through them.
#include <doctest/doctest.h>

#include "tests/ops_test_util.h"

namespace memest {
namespace {

using testing::dtype;
using testing::infer;
using testing::shape;
using testing::value;

TEST_CASE("shape: symbolic batch through Shape -> Gather -> Unsqueeze -> Concat -> Reshape") {
  Graph g = infer(R"(
    opset 13
    input x float32 batch,3,4,64
    node Shape x -> s
    const zero int64 - = 0
    node Gather s zero -> b
    const ax int64 1 = 0
    node Unsqueeze b ax -> b1
    const neg int64 1 = -1
    node Concat b1 neg -> shp axis=0
    node Reshape x shp -> y
  )");
  CHECK(value(g, "s") == "[batch, 3, 4, 64]");
  CHECK(shape(g, "b") == "[]");
  CHECK(value(g, "b") == "[batch]");
  CHECK(value(g, "shp") == "[batch, -1]");
  CHECK(shape(g, "y") == "[batch, 768]");
  CHECK(g.warnings.empty());
}

TEST_CASE("shape: whole-number float contents join integer ones, so a Range sized from them is known") {
  // Funnel's relative positions (legacy exporter): a range of positions cast to float,
  // sliced, concatenated after the constant -1.0, then picked, subtracted and cast back
  // to int64 for Range's start. Concat dropped contents that mixed float constants and
  // integers cast to float, the Range's output fell back to its scalar start's shape, and
  // the Unsqueeze after it failed ("axis 1 is out of range for rank 1").
  Graph g = infer(R"(
    opset 13
    input x float32 batch,4,8
    node Shape x -> s
    const two int64 - = 2
    node Gather s two -> n
    const zero int64 - = 0
    const one int64 - = 1
    node Range zero n one -> r
    node Cast r -> rf to=1
    const neg float32 1 = -1
    node Concat neg rf -> c axis=0
    const last int64 - = 8
    node Gather c last -> hi
    const fone float32 - = 1
    node Sub hi fone -> start_f
    node Cast start_f -> start to=7
    node Range zero start one -> r2
    node Unsqueeze r2 -> u axes=[1]
  )");
  CHECK(value(g, "c") == "[-1, 0, 1, 2, 3, 4, 5, 6, 7]");
  CHECK(value(g, "start") == "[6]");
  CHECK(shape(g, "r2") == "[6]");
  CHECK(shape(g, "u") == "[6, 1]");
}

TEST_CASE("shape: a constant float power folds into a Reshape target") {
  // dinov2's legacy export reshapes its position embeddings to a grid of side
  // int(256 ** 0.5): Pow of two constants, cast to int64. Pow folded nothing, the Reshape
  // target stayed unknown, its output fell back to its input's rank 3, and the Transpose
  // to NCHW after it failed ("perm has 4 entries for rank 3").
  Graph g = infer(R"(
    opset 13
    input x float32 batch,256,384
    const n float32 - = 256
    const half float32 - = 0.5
    node Pow n half -> side_f
    node Cast side_f -> side to=7
    node Unsqueeze side -> s1 axes=[0]
    const one int64 1 = 1
    const c int64 1 = 384
    node Concat one s1 s1 c -> shp axis=0
    const pos float32 1,256,384
    node Reshape pos shp -> grid
    node Transpose grid -> nchw perm=0,3,1,2
  )");
  CHECK(value(g, "side") == "[16]");
  CHECK(shape(g, "grid") == "[1, 16, 16, 384]");
  CHECK(shape(g, "nchw") == "[1, 384, 16, 16]");
}

TEST_CASE("shape: attention head split stays symbolic") {
  Graph g = infer(R"(
    input x float32 batch,seq,768
    node Shape x -> s
    const i0 int64 1 = 0
    const i1 int64 1 = 1
    const i2 int64 - = 2
    node Gather s i0 -> b
    node Gather s i1 -> t
    node Gather s i2 -> hidden
    const heads int64 - = 12
    node Div hidden heads -> hd
    node Unsqueeze hd -> hd1 axes=[0]
    const h1 int64 1 = 12
    node Concat b t h1 hd1 -> shp axis=0
    node Reshape x shp -> y
    node Transpose y -> yt perm=0,2,1,3
    node Transpose y -> rev
  )");
  CHECK(value(g, "hd") == "[64]");
  CHECK(value(g, "shp") == "[batch, seq, 12, 64]");
  CHECK(shape(g, "y") == "[batch, seq, 12, 64]");
  CHECK(shape(g, "yt") == "[batch, 12, seq, 64]");
  CHECK(shape(g, "rev") == "[64, 12, seq, batch]");
}

TEST_CASE("shape: Reshape") {
  Graph g = infer(R"(
    input x float32 batch,seq,768
    input z float32 0,3
    const a int64 4 = 0,0,12,-1
    const b int64 2 = -1,768
    const c int64 2 = 0,3
    node Reshape x a -> heads
    node Reshape x b -> rows
    node Reshape z c -> keep0 allowzero=1
  )");
  CHECK(shape(g, "heads") == "[batch, seq, 12, 64]");
  CHECK(shape(g, "rows") == "[batch*seq, 768]");
  CHECK(shape(g, "keep0") == "[0, 3]");
  // Shared dims cancel before dividing: (768*b*s + 768*b) / (12*b*s + 12*b) is not a monomial division.
  Graph plus = infer(R"(
    input x float32 batch,seq,768
    input cls float32 batch,1,768
    node Concat cls x -> wide axis=1
    const heads int64 4 = 0,0,12,-1
    node Reshape wide heads -> y
  )");
  CHECK(shape(plus, "wide") == "[batch, seq + 1, 768]");
  CHECK(shape(plus, "y") == "[batch, seq + 1, 12, 64]");
  CHECK_THROWS_WITH_AS(infer("input x float32 2,5\nconst s int64 2 = 3,-1\nnode Reshape x s -> y :r"),
                       "<text>: node 'r': Reshape: cannot reshape [2, 5] to [3, -1]: 10 elements do not divide by 3",
                       Error);
  CHECK_THROWS_AS(infer("input x float32 2,5\nconst s int64 2 = 3,4\nnode Reshape x s -> y"), Error);
  CHECK_THROWS_AS(infer("input x float32 2,5\nconst s int64 2 = -1,-1\nnode Reshape x s -> y"), Error);
  // Not exact for a symbolic count: fall back with a warning rather than fail.
  Graph sym = infer("input x float32 batch,5\nconst s int64 2 = 3,-1\nnode Reshape x s -> y");
  CHECK(!sym.warnings.empty());
  // An unknown target leaves the output to the driver's fallback.
  Graph unknown = infer("input x float32 2,5\ninput s int64 2\nnode Reshape x s -> y");
  CHECK(!unknown.warnings.empty());
}

TEST_CASE("shape: Flatten, Squeeze, Unsqueeze") {
  Graph g = infer(R"(
    opset 13
    input x float32 batch,3,4,5
    input o float32 1,batch,1,7
    const ax int64 2 = 0,-1
    const ax0 int64 1 = 0
    node Flatten x -> f1
    node Flatten x -> f0 axis=0
    node Flatten x -> fm axis=-1
    node Flatten x -> f4 axis=4
    node Squeeze o -> sq_all
    node Squeeze o ax0 -> sq0
    node Unsqueeze x ax -> un
  )");
  CHECK(shape(g, "f1") == "[batch, 60]");
  CHECK(shape(g, "f0") == "[1, 60*batch]");
  CHECK(shape(g, "fm") == "[12*batch, 5]");
  CHECK(shape(g, "f4") == "[60*batch, 1]");
  CHECK(shape(g, "sq_all") == "[batch, 7]");
  CHECK(shape(g, "sq0") == "[batch, 1, 7]");
  CHECK(shape(g, "un") == "[1, batch, 3, 4, 5, 1]");
  Graph old = infer("opset 11\ninput x float32 1,4,1\nnode Squeeze x -> s axes=[2]\nnode Unsqueeze x -> u axes=[1]");
  CHECK(shape(old, "s") == "[1, 4]");
  CHECK(shape(old, "u") == "[1, 1, 4, 1]");
  CHECK_THROWS_AS(infer("opset 11\ninput x float32 2,4\nnode Squeeze x -> s axes=[0]"), Error);
}

TEST_CASE("shape: Concat and Split") {
  Graph g = infer(R"(
    opset 13
    input a float32 batch,3
    input b float32 batch,5
    input c float32 2,3
    const sizes int64 2 = 3,5
    node Concat a b -> ab axis=1
    node Concat a c -> ac axis=0
    node Split ab sizes -> s1 s2 axis=1
    node Split ab -> e1 e2 axis=1
  )");
  CHECK(shape(g, "ab") == "[batch, 8]");
  CHECK(shape(g, "ac") == "[batch + 2, 3]");
  CHECK(shape(g, "s1") == "[batch, 3]");
  CHECK(shape(g, "s2") == "[batch, 5]");
  CHECK(shape(g, "e1") == "[batch, 4]");
  CHECK(shape(g, "e2") == "[batch, 4]");
  Graph o18 = infer("opset 18\ninput x float32 10,2\nnode Split x -> p q r num_outputs=3");
  CHECK(shape(o18, "p") == "[4, 2]");
  CHECK(shape(o18, "r") == "[2, 2]");
  Graph o11 = infer("opset 11\ninput x float32 10,2\nnode Split x -> p q split=3,7");
  CHECK(shape(o11, "q") == "[7, 2]");
  CHECK_THROWS_AS(infer("input a float32 2,3\ninput b float32 2,4\nnode Concat a b -> c axis=0"), Error);
  CHECK_THROWS_AS(infer("opset 11\ninput x float32 10,2\nnode Split x -> p q split=3,6"), Error);
}

TEST_CASE("shape: a Split by sizes the data decides takes equal parts, which add up to the input") {
  // A mixture of experts splits its [batch * 256, 64] routed tokens by each expert's
  // count (a graph input here: nothing folds it). Four experts get batch * 64 rows each.
  Graph g = infer(R"(
    opset 13
    input x float32 batch,256,64
    input counts int64 4
    const flat int64 2 = -1,64
    node Reshape x flat -> t
    node Split t counts -> e1 e2 e3 e4 axis=0
  )");
  CHECK(shape(g, "e1") == "[64*batch, 64]");
  CHECK(shape(g, "e4") == "[64*batch, 64]");
  CHECK(g.warnings.size() == 1);
}

TEST_CASE("shape: Slice") {
  Graph g = infer(R"(
    input x float32 batch,seq,768
    input v float32 10
    const z int64 1 = 0
    const one int64 1 = 1
    const m1 int64 1 = -1
    const big int64 1 = 9223372036854775807
    const small int64 1 = -9223372036854775808
    const ax1 int64 1 = 1
    const ax2 int64 1 = 2
    const s2 int64 1 = 2
    const ten int64 1 = 10
    const m100 int64 1 = -100
    const p100 int64 1 = 100
    const five int64 1 = 5
    node Slice x z big ax1 -> all
    node Slice x one big ax1 -> tail
    node Slice x m1 big ax1 -> last
    node Slice x z m1 ax1 -> init
    node Slice x m1 small ax1 m1 -> reversed
    node Slice x z ten ax1 -> head
    node Slice x z big ax2 s2 -> even
    node Slice v one ten z s2 -> odd
    node Slice v m100 p100 -> clamped
    node Slice v five s2 -> empty
    node Slice v m1 small z m1 -> rev
    node Slice v s2 m100 z m1 -> down
  )");
  CHECK(shape(g, "all") == "[batch, seq, 768]");
  CHECK(shape(g, "tail") == "[batch, seq - 1, 768]");
  CHECK(shape(g, "last") == "[batch, 1, 768]");
  CHECK(shape(g, "init") == "[batch, seq - 1, 768]");
  CHECK(shape(g, "reversed") == "[batch, seq, 768]");
  CHECK(shape(g, "head") == "[batch, 10, 768]");  // a constant bound is taken to lie inside seq
  CHECK(shape(g, "even") == "[batch, seq, 384]");
  CHECK(shape(g, "odd") == "[5]");
  CHECK(shape(g, "clamped") == "[10]");
  CHECK(shape(g, "empty") == "[0]");
  CHECK(shape(g, "rev") == "[10]");
  CHECK(shape(g, "down") == "[3]");
  CHECK(g.warnings.empty());

  // From 3 before the end to index 8 is "8 - (seq - 3)": not a size for long sequences.
  Graph odd = infer(R"(
    input x float32 seq
    const s int64 1 = -3
    const e int64 1 = 8
    node Slice x s e -> y
  )");
  CHECK(!odd.warnings.empty());

  Graph old = infer("opset 9\ninput x float32 20,10\nnode Slice x -> y starts=[0] ends=[5] axes=[1]");
  CHECK(shape(old, "y") == "[20, 5]");
  CHECK_THROWS_AS(infer("input x float32 4\nconst z int64 1 = 0\nnode Slice x z z z z -> y"), Error);
}

TEST_CASE("shape: Slice folds shape contents") {
  Graph g = infer(R"(
    input x float32 batch,seq,12,64
    node Shape x -> s
    const a int64 1 = 1
    const b int64 1 = 3
    const m2 int64 1 = -2
    const big int64 1 = 9223372036854775807
    const z int64 1 = 0
    const two int64 1 = 2
    node Slice s a b -> mid
    node Slice s m2 big -> last2
    node Slice s z big z two -> stepped
  )");
  CHECK(value(g, "mid") == "[seq, 12]");
  CHECK(value(g, "last2") == "[12, 64]");
  CHECK(value(g, "stepped") == "[batch, 12]");
}

TEST_CASE("shape: Gather family and scatters") {
  Graph g = infer(R"(
    input ids int64 batch,seq
    param emb.weight float16 30522,768
    input d float32 2,3,4
    input ie int64 2,3,1
    input ind int64 2,1,2
    input ib int64 2,1
    input upd float32 2,1,4
    const col int64 - = 1
    node Gather emb.weight ids -> e
    node Gather d col -> g1 axis=1
    node GatherElements d ie -> ge axis=2
    node GatherND d ind -> gnd
    node GatherND d ib -> gb batch_dims=1
    node ScatterND d ind upd -> snd
    node ScatterElements d ie ie -> se axis=2
  )");
  CHECK(shape(g, "e") == "[batch, seq, 768]");
  CHECK(dtype(g, "e") == "float16");
  CHECK(shape(g, "g1") == "[2, 4]");
  CHECK(shape(g, "ge") == "[2, 3, 1]");
  CHECK(shape(g, "gnd") == "[2, 1, 4]");
  CHECK(shape(g, "gb") == "[2, 4]");
  CHECK(shape(g, "snd") == "[2, 3, 4]");
  CHECK(shape(g, "se") == "[2, 3, 4]");
  CHECK_THROWS_AS(infer("const v int64 3 = 1,2,3\nconst i int64 - = 3\nnode Gather v i -> y"), Error);
}

TEST_CASE("shape: Expand, Tile, Pad") {
  Graph g = infer(R"(
    opset 18
    input x float32 batch,1,64
    input m float32 batch,10
    const tgt int64 3 = 1,12,1
    const reps int64 2 = 2,3
    const pads int64 4 = 0,1,0,2
    const pads1 int64 2 = 1,1
    const ax int64 1 = 1
    node Expand x tgt -> ex
    node Shape x -> s
    node Expand x s -> same
    node Tile m reps -> t
    node Pad m pads -> p
    node Pad m pads1 - ax -> pa
    const one int64 - = 1
    node Expand one tgt -> ones
  )");
  CHECK(shape(g, "ex") == "[batch, 12, 64]");
  CHECK(shape(g, "same") == "[batch, 1, 64]");
  CHECK(shape(g, "t") == "[2*batch, 30]");
  CHECK(shape(g, "p") == "[batch, 13]");
  CHECK(shape(g, "pa") == "[batch, 12]");
  CHECK(value(g, "ones") == "[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]");
  Graph old = infer("opset 2\ninput x float32 3,4\nnode Pad x -> y pads=1,0,1,0 mode=reflect");
  CHECK(shape(old, "y") == "[5, 4]");
}

// torch 1.13's legacy exporter spells F.pad(x, (2, 0)) on [batch, 128, seq] as a pad
// table: [2, 0] padded with zeros to 2 * rank entries, reshaped to [rank, 2], read
// backwards (Slice step -1), transposed and flattened. Hand-derived: the table rows
// (2,0),(0,0),(0,0) reversed are (0,0),(0,0),(2,0); transposed [[0,0,2],[0,0,0]].
TEST_CASE("shape: legacy F.pad's pad table folds through Reshape, Slice -1 and Transpose") {
  Graph g = infer(R"(
    opset 13
    input x float32 batch,128,seq
    const p int64 2 = 2,0
    const rank2 int64 - = 6
    node Shape p -> ps
    const z int64 1 = 0
    node Gather ps z -> plen
    node Sub rank2 plen -> nz
    node Unsqueeze nz z -> nz1
    node ConstantOfShape nz1 -> zeros value=tensor:int64:1:0
    node Concat p zeros -> all axis=0
    const rows int64 2 = -1,2
    node Reshape all rows -> tab
    const st int64 1 = -1
    const en int64 1 = -9223372036854775807
    const ax int64 1 = 0
    const step int64 1 = -1
    node Slice tab st en ax step -> rev
    node Transpose rev -> tr perm=1,0
    const flat int64 1 = -1
    node Reshape tr flat -> pads
    node Pad x pads -> y
  )");
  CHECK(value(g, "tab") == "[2, 0, 0, 0, 0, 0]");
  CHECK(shape(g, "rev") == "[3, 2]");
  CHECK(value(g, "rev") == "[0, 0, 0, 0, 2, 0]");
  CHECK(value(g, "tr") == "[0, 0, 2, 0, 0, 0]");
  CHECK(shape(g, "y") == "[batch, 128, seq + 2]");
  CHECK(g.warnings.empty());
}

TEST_CASE("shape: contents of small tensors fold through every indexing op") {
  Graph g = infer(R"(
    input x float32 batch,seq,64
    node Shape x -> s
    const rs int64 2 = 1,3
    node Reshape s rs -> row
    node Concat row row -> two axis=0
    const i1 int64 1 = 1
    node Gather two i1 -> g1 axis=1
    const tgt int64 2 = 2,3
    node Expand row tgt -> ex
    const reps int64 2 = 2,1
    node Tile row reps -> ti
    node ReduceSum two i1 -> rsum keepdims=0
    const i0 int64 1 = 0
    node ReduceProd two i0 -> rprod keepdims=1
    const idx int64 2,1 = 2,0
    node GatherND s idx -> gnd
    const sidx int64 1,1 = 1
    const upd int64 1 = 7
    node ScatterND s sidx upd -> snd
    const two2 int64 - = 2
    node Mul row two2 -> dbl
    const c int64 3 = 1,0,1
    node Where c row dbl -> w
    const col int64 2,1 = 1,0
    node Mul row col -> outer
  )");
  CHECK(value(g, "two") == "[batch, seq, 64, batch, seq, 64]");
  CHECK(shape(g, "g1") == "[2, 1]");
  CHECK(value(g, "g1") == "[seq, seq]");
  CHECK(value(g, "ex") == "[batch, seq, 64, batch, seq, 64]");
  CHECK(value(g, "ti") == "[batch, seq, 64, batch, seq, 64]");
  CHECK(value(g, "rsum") == "[seq + batch + 64, seq + batch + 64]");
  CHECK(value(g, "rprod") == "[batch*batch, seq*seq, 4096]");
  CHECK(value(g, "gnd") == "[64, batch]");
  CHECK(value(g, "snd") == "[batch, 7, 64]");
  CHECK(shape(g, "outer") == "[2, 3]");
  CHECK(value(g, "outer") == "[batch, seq, 64, 0, 0, 0]");
  CHECK(value(g, "w") == "[batch, 2*seq, 64]");
}

TEST_CASE("shape: integer division of a dim expression floors") {
  Graph g = infer(R"(
    input x float32 batch,seq
    node Shape x -> s
    const one int64 1 = 1
    node Add s one -> s1
    const two int64 - = 2
    node Div s1 two -> half
    node Cast s1 -> f to=1
    node Div f two -> fhalf
  )");
  CHECK(value(g, "s1") == "[batch + 1, seq + 1]");
  CHECK(value(g, "half") == "?");  // batch + 1 over 2 is not a polynomial
  Graph e = infer(R"(
    input x float32 batch,seq
    node Shape x -> s
    const two int64 1 = 2
    node Mul s two -> d
    const one int64 1 = 1
    node Add d one -> d1
    node Div d1 two -> half
  )");
  CHECK(value(e, "half") == "[batch, seq]");  // floor((2*batch + 1) / 2)
}

TEST_CASE("shape: a dim written as a product is an expression, not a name") {
  Graph g = infer(R"(
    input x float32 batch,seq,64
    declare y float32 64*batch,seq
    node Unknown x -> y
  )");
  CHECK(shape(g, "y") == "[64*batch, seq]");
  CHECK(parse_expr("64*batch")->str() == "64*batch");
  CHECK(parse_expr("s0*s1 + 1")->str() == parse_expr("1 + s1*s0")->str());
  CHECK(parse_expr("2*(seq - 1)")->str() == "2*seq - 2");
  CHECK(parse_expr("-batch + 3")->str() == "-batch + 3");
  CHECK_FALSE(parse_expr("floor(seq/2)").has_value());
  CHECK_FALSE(parse_expr("s0//2").has_value());
  CHECK_FALSE(parse_expr("Max(1, s0)").has_value());
  CHECK_FALSE(parse_expr("batch**2").has_value());
  CHECK_FALSE(parse_expr("").has_value());
  CHECK_FALSE(parse_expr("(((((").has_value());
}

TEST_CASE("shape: DepthToSpace, OneHot, NonZero") {
  Graph g = infer(R"(
    input x float32 batch,16,h,w
    input y float32 1,4,8,8
    input ids int64 batch,seq
    const depth int64 - = 10
    const vals float16 2 = 0,1
    input nz float32 3,4
    node DepthToSpace x -> d2s blocksize=2
    node SpaceToDepth y -> s2d blocksize=2
    node OneHot ids depth vals -> oh
    node OneHot ids depth vals -> oh0 axis=0
    node NonZero nz -> where :nzero
    node NonZero ids -> where_ids
  )");
  CHECK(shape(g, "d2s") == "[batch, 4, 2*h, 2*w]");
  CHECK(shape(g, "s2d") == "[1, 16, 4, 4]");
  CHECK(shape(g, "oh") == "[batch, seq, 10]");
  CHECK(dtype(g, "oh") == "float16");
  CHECK(shape(g, "oh0") == "[10, batch, seq]");
  // At most every element is nonzero: 3 * 4, and batch * seq (an upper bound, warned).
  CHECK(shape(g, "where") == "[2, 12]");
  CHECK(shape(g, "where_ids") == "[2, batch*seq]");
  CHECK(dtype(g, "where") == "int64");
  CHECK(g.warnings.size() == 2);
  CHECK_THROWS_AS(infer("input x float32 1,6,2,2\nnode DepthToSpace x -> y blocksize=2"), Error);
}

TEST_CASE("shape: unsupported ops fall back with a warning") {
  Graph g = infer("input x float32 batch,8\nnode FooBar x -> y\nnode Relu y -> z");
  CHECK(shape(g, "y") == "[batch, 8]");
  CHECK(shape(g, "z") == "[batch, 8]");
  REQUIRE(!g.warnings.empty());
  CHECK(g.warnings[0].find("FooBar") != std::string::npos);
}

TEST_CASE("shape: a circular pad's backward holds a padded-size copy of the gradient") {
  // _pad_circular's copies into slices are CopySlices nodes; each clones the padded
  // gradient while the input's is made (traces37 rnd21_157).
  Graph g = infer(R"(
    input x float32 2,3,8,8
    const pads int64 8 = 0,0,1,2,0,0,1,2
    node Pad x pads -> y mode=wrap
  )");
  CHECK(shape(g, "y") == "[2, 3, 10, 12]");
  const Node& pad = testing::producer(g, "y");
  const OpInfo* circular = find_op("", "Pad")->variant(g, pad, Dispatch{DType::F32});
  REQUIRE(circular != nullptr);
  CHECK(circular->saved_inputs == 0);
  CHECK(circular->scratch_is_temporary);
  // 2 x 3 x 10 x 12 elements of the padded gradient, in fp32: 2,880 B.
  CHECK(circular->bwd_data_workspace(g, pad, DType::F32, true, false).bytes.str() == "2880");
  // Reflect keeps its input instead; constant mode is the plain entry.
  Graph r = infer("input x float32 2,3,8,8\nconst pads int64 8 = 0,0,1,1,0,0,1,1\nnode Pad x pads -> y mode=reflect");
  CHECK(find_op("", "Pad")->variant(r, testing::producer(r, "y"), Dispatch{DType::F32})->saves_input(0));
}

TEST_CASE("shape: training facts") {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Expand", "Slice", "Split"}) {
    CAPTURE(op);
    CHECK(find_op("", op)->view);
  }
  CHECK(find_op("", "Reshape")->grad_of(0) == 'V');
  CHECK(find_op("", "Reshape")->grad_of(1) == 'N');
  CHECK(find_op("", "Expand")->grad_of(0) == 'A');
  CHECK(find_op("", "Slice")->grad_of(0) == 'A');
  CHECK(!find_op("", "Concat")->view);
  CHECK(find_op("", "Concat")->grad_of(3) == 'V');
  CHECK(find_op("", "Concat")->autocast == Autocast::Promote);
  CHECK(find_op("", "Gather")->saves_input(1));
  CHECK(find_op("", "Gather")->grad_of(1) == 'N');
  CHECK(find_op("", "GatherElements")->saved_inputs == bits({0, 1}));
}

}  // namespace
TEST_CASE("shape: SqueezeIf drops its axis where it is 1, keeps a symbolic or larger one") {
  // The legacy exporter's x.squeeze(d) of a dim of unknown size (frontends/squeeze_if.h).
  Graph g = infer(R"(
    opset 17
    input x float32 batch,1,4
    input z float32 batch,3,4
    input c bool -
    node memest::SqueezeIf x c -> a axes=[1]
    node memest::SqueezeIf z c -> b axes=[1]
    node memest::SqueezeIf x c -> d axes=[0]
  )");
  CHECK(shape(g, "a") == "[batch, 4]");
  CHECK(shape(g, "b") == "[batch, 3, 4]");
  CHECK(shape(g, "d") == "[batch, 1, 4]");
}

}  // namespace memest
