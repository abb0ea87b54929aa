// The in-place policy (estimator/inplace.cc): tiny graphs whose allocations are counted by hand.
#include <doctest/doctest.h>

#include "estimator/analysis.h"
#include "estimator/inplace.h"
#include "estimator/ops/registry.h"
#include "frontends/text_reader.h"
#include "tests/simulate_test_util.h"

using namespace memest;
using namespace memest::testing;

TEST_CASE("a ReLU after a convolution or batch norm runs in place; after a linear layer it allocates") {
  // torchvision's conv-bn-relu blocks use nn.ReLU(inplace=True): the ReLU overwrites the
  // batch norm's output, which batch norm's backward never reads. A ReLU on a Linear's
  // output (nn.TransformerEncoderLayer's F.relu), or on a tensor read twice, allocates.
  const char* text = R"(
opset 17
input x float32 batch,3,8,8
param c.weight float32 4,3,3,3
param bn.weight float32 4
param bn.bias float32 4
buffer bn.mean float32 4
buffer bn.var float32 4
param fc.weight float32 16,256
node Conv x c.weight -> h pads=1,1,1,1 @c
node BatchNormalization h bn.weight bn.bias bn.mean bn.var -> n @bn
node Relu n -> r @relu1
node Flatten r -> f @flat
node memest::Linear f fc.weight -> l @fc
node Relu l -> r2 @relu2
node Relu h -> r3 @relu3
node Add r2 r2 -> s @sum
output s
output r3
)";
  TrainConfig cfg;
  cfg.loss = Loss::Sum;
  Analysis a = analyze_text(text, cfg);
  CHECK(outputs_allocated_by(a, "relu1") == 0);  // in place on batch norm's output
  CHECK(outputs_allocated_by(a, "relu2") == 3);  // on a Linear's output: one per iteration
  CHECK(outputs_allocated_by(a, "relu3") == 3);  // the conv's output is also read by batch norm
  // In place, the ReLU's output is batch norm's block: [batch, 4, 8, 8] fp32, 1024 B per
  // sample, which the Linear keeps anyway (through the Flatten view). So in forward the
  // in-place ReLU costs nothing: without it, each iteration's forward peaks at the same
  // bytes. (Its backward does allocate: threshold_backward writes a new gradient.)
  std::string without(text);
  without.replace(without.find("node Relu n -> r @relu1\n"), std::string("node Relu n -> r @relu1\n").size(), "");
  without.replace(without.find("node Flatten r -> f"), std::string("node Flatten r -> f").size(), "node Flatten n -> f");
  const Analysis b = analyze_text(without.c_str(), cfg);
  for (int64_t batch : {2, 64}) {
    const PeakResult with_relu = estimate(a, batch).peak, no_relu = estimate(b, batch).peak;
    REQUIRE(with_relu.phases.size() == no_relu.phases.size());
    int forwards = 0;
    for (size_t i = 0; i < with_relu.phases.size(); ++i) {
      if (with_relu.phases[i].phase != Phase::Forward) continue;
      ++forwards;
      CHECK(with_relu.phases[i].peak == no_relu.phases[i].peak);
    }
    CHECK(forwards == 3);
  }
}

TEST_CASE("a ReLU after a residual Add runs in place, unless the sum is read again") {
  // torchvision's residual blocks: out += identity; out = self.relu(out) (inplace=True).
  // The GPU allocates for neither (traces7 regnet_y_400mf, traces9 resnext50_32x4d); the
  // Add's backward never reads its output, so the ReLU may overwrite it. A sum that is
  // also the next block's shortcut stays apart.
  const char* text = R"(
opset 17
input x float32 batch,4,8,8
param c.weight float32 4,4,3,3
node Conv x c.weight -> h pads=1,1,1,1 @c
node Add h x -> s @blk
node Relu s -> r @blk.relu1
node Add r x -> s2 @blk2
node Relu s2 -> r2 @blk2.relu2
node Add r2 s2 -> out @tail
output out
)";
  TrainConfig cfg;
  cfg.loss = Loss::Sum;
  Analysis a = analyze_text(text, cfg);
  CHECK(outputs_allocated_by(a, "blk.relu1") == 0);  // in place on the sum
  CHECK(outputs_allocated_by(a, "blk2.relu2") == 3);  // s2 is also read by the tail's Add
  // The next block's first activation is its own module's, not the add's: timm's
  // NF-ResNet (stages.1.0.act1 = nn.ReLU() reads stages.0.1's sum; traces20 nf_resnet26
  // allocated it): one output block per iteration, three.
  Analysis next = analyze_text(R"(
opset 17
input x float32 batch,4,8,8
param c.weight float32 4,4,3,3
node Conv x c.weight -> h pads=1,1,1,1 @stages.0.conv
node Add h x -> s @stages.0
node Relu s -> r @stages.1.act1
node Conv r c.weight -> out pads=1,1,1,1 @stages.1.conv
output out
)",
                               cfg);
  CHECK(outputs_allocated_by(next, "stages.1.act1") == 3);
}

TEST_CASE("LeakyReLU runs in place only as its norm module's own activation") {
  // timm's BatchNormAct2d builds `self.act` with inplace=True and applies it to the norm's
  // output (module x.bn.act after x.bn): no allocation (cspdarknet53's GPU trace). A sibling
  // LeakyReLU (nn.LeakyReLU() in a Sequential, inplace=False by default) and a block's
  // activation after its residual Add (timm's act3, inplace left False) allocate.
  const char* text = R"(
opset 17
input x float32 batch,4,8,8
param c.conv.weight float32 4,4,3,3
param c.bn.weight float32 4
param c.bn.bias float32 4
buffer c.bn.mean float32 4
buffer c.bn.var float32 4
param d.weight float32 4
param d.bias float32 4
buffer d.mean float32 4
buffer d.var float32 4
node Conv x c.conv.weight -> h pads=1,1,1,1 @c.conv
node BatchNormalization h c.bn.weight c.bn.bias c.bn.mean c.bn.var -> n @c.bn
node LeakyRelu n -> r alpha=0.1 @c.bn.act
node BatchNormalization r d.weight d.bias d.mean d.var -> n2 @d
node LeakyRelu n2 -> r2 alpha=0.1 @act
node Add r2 x -> s @blk
node LeakyRelu s -> r3 alpha=0.1 @blk.act3
output r3
)";
  CHECK(is_child_module("c.bn.act", "c.bn"));
  CHECK_FALSE(is_child_module("c.bn.act", "c"));
  CHECK_FALSE(is_child_module("c.bnx", "c.bn"));
  CHECK(is_child_module("act", ""));
  TrainConfig cfg;
  cfg.loss = Loss::Sum;
  Analysis a = analyze_text(text, cfg);
  CHECK(outputs_allocated_by(a, "c.bn.act") == 0);   // overwrites c.bn's output
  CHECK(outputs_allocated_by(a, "act") == 3);        // a sibling of d: one per iteration
  CHECK(outputs_allocated_by(a, "blk.act3") == 3);   // after the block's Add
}

TEST_CASE("x += y is told from x = x + y by the statement a dynamo export traced it in") {
  // timm's BasicBlock: `x += shortcut` (an in-place add on the batch norm's output, which
  // keeps that output's dtype under autocast); `x += self.gamma * y` too, where only the
  // Add updates x: the Mul feeds the Add within the same statement.
  Graph g = read_text_graph(R"(
opset 17
input x float32 batch,8
input y float32 batch,8
input s float32 batch,8
param gamma float32 8
node Mul gamma y -> m @blk
node Add x m -> a @blk
node Add a s -> b @blk
node Relu b -> r @blk
output r
)");
  g.relink();
  for (Node& n : g.nodes) n.info = find_op(n.domain.str(), n.op.str());
  g.python.statements = {{"blk.py:1", {0}, true, '+'}, {"blk.py:2", {0}, true, '+'}, {"blk.py:3", {0}, true, 0}};
  g.python.names = {"x"};
  g.python.stacks = {{{0, 0}}, {{1, 0}}, {{2, 0}}};
  g.nodes[0].py_stack = 0;  // x += self.gamma * y: the Mul ...
  g.nodes[1].py_stack = 0;  // ... and the Add that updates x
  g.nodes[2].py_stack = 1;  // x += s
  g.nodes[3].py_stack = 2;  // x = self.act(x)
  CHECK_FALSE(written_in_place(g, g.nodes[0], g.nodes[0].info));  // '*' is not the statement's '+'
  CHECK(written_in_place(g, g.nodes[1], g.nodes[1].info));
  CHECK(written_in_place(g, g.nodes[2], g.nodes[2].info));
  CHECK_FALSE(written_in_place(g, g.nodes[3], g.nodes[3].info));  // Relu has no augmented spelling
  g.nodes[0].py_stack = 1;  // the Mul in x += s's statement: the Add there feeds...
  g.nodes[2].py_stack = 0;  // ... an Add of the same statement: not the update itself
  CHECK_FALSE(written_in_place(g, g.nodes[1], g.nodes[1].info));
  g.nodes[1].py_stack = -1;  // no stack trace (a legacy export): x + y
  CHECK_FALSE(written_in_place(g, g.nodes[1], g.nodes[1].info));
}

TEST_CASE("x += y writes into x's block; x *= y and a broadcasting x += y allocate") {
  // Tensor.__iadd__ calls add_: the sum lands in x's storage. traces8's resnet18
  // b2-fp32-adamw (torchvision's `out += identity`): after each block's second batch norm
  // the next allocation is the next convolution's output, never a 205.5 MB sum. Add's and
  // Sub's gradients read neither operand. x *= y needs x's old value for y's gradient, and
  // an in-place op cannot broadcast its self: those two stay as written (a new block).
  Graph g = read_text_graph(R"(
opset 17
input x float32 batch,8
input y float32 batch,8
input v float32 8
param w float32 8,8
node MatMul x w -> h @blk.fc
node Add h y -> s @blk
node Sub s y -> d @blk
node Mul d y -> m @blk
node MatMul v w -> hv @blk.fc2
node Add hv y -> b @blk
node Add m b -> out @tail
output out
)");
  g.relink();
  g.python.statements = {{"blk.py:1", {0}, true, '+'}, {"blk.py:2", {0}, true, '-'}, {"blk.py:3", {0}, true, '*'},
                         {"blk.py:4", {0}, true, 0}};
  g.python.names = {"h"};
  g.python.stacks = {{{0, 0}}, {{1, 0}}, {{2, 0}}, {{3, 0}}};
  g.nodes[1].py_stack = 0;  // h += y
  g.nodes[2].py_stack = 1;  // h -= y
  g.nodes[3].py_stack = 2;  // h *= y
  g.nodes[5].py_stack = 0;  // hv += y, hv [8] and y [batch, 8]: torch refuses in place
  AnalysisOptions o;
  o.train.loss = Loss::Sum;
  const Analysis a = analyze(std::move(g), o);
  auto allocated_by = [&](const char* name) {
    int count = 0;
    for (const Block& b : a.program.blocks) {
      count += b.node >= 0 && b.category == Category::Activations && a.graph.nodes[b.node].outputs[0] >= 0 &&
               a.graph.tensors[a.graph.nodes[b.node].outputs[0]].name == name;
    }
    return count;
  };
  CHECK(allocated_by("h") == 3);  // the matmul's output, one per iteration
  CHECK(allocated_by("s") == 0);  // h += y: into h
  CHECK(allocated_by("d") == 0);  // h -= y: into h
  CHECK(allocated_by("m") == 3);  // h *= y: a new block
  CHECK(allocated_by("b") == 3);  // broadcast: a new [batch, 8] block
  // The first forward's outputs at batch 4, in order: h (4 x 8 fp32 = 128 B), the one
  // block of h, s and d; m (128 B); hv (32 B); b (128 B); out (128 B); the loss (4 B).
  // Written x = x + y and x = x - y, s and d would be two more 128-byte blocks.
  const Estimate e = estimate(a, 4);
  const auto fwd = allocated_bytes(a, e, Phase::Forward, [](const Node&, const Block& b) {
    return b.category == Category::Activations;
  });
  CHECK(fwd == std::vector<int64_t>{128, 128, 32, 128, 128, 4});
}

TEST_CASE("without a stack trace, a norm's output plus a shortcut read by the block's activation keeps the norm's dtype") {
  // HRNet's BasicBlock in a legacy export: `x = self.bn2(x); x += shortcut; x = self.act2(x)`
  // with an fp32 shortcut under autocast (the stage's fuse sum, upsampled in fp32). add_
  // keeps the batch norm's bf16; read by a Conv instead (timm's inverted residual:
  // `x = self.drop_path(x) + shortcut`, out of place), the sum takes the wider fp32.
  // [2, 4, 8, 8] at batch 2: 512 elements, 1024 B in bf16, 2048 B in fp32.
  const char* text = R"(
opset 17
input x float32 batch,4,8,8
input y float32 batch,4,8,8
param blk.conv1.weight float32 4,4,3,3
param blk.bn2.weight float32 4
param blk.bn2.bias float32 4
buffer blk.bn2.mean float32 4
buffer blk.bn2.var float32 4
param next.weight float32 4,4,1,1
node Conv x blk.conv1.weight -> h pads=1,1,1,1 @blk.conv1
node BatchNormalization h blk.bn2.weight blk.bn2.bias blk.bn2.mean blk.bn2.var -> n @blk.bn2
node Add n y -> s @blk
node Relu s -> r @blk.act2
output r
)";
  auto sum_bytes = [](const char* graph) {
    TrainConfig cfg;
    cfg.loss = Loss::Sum;
    cfg.amp = Amp::BF16;
    const Analysis a = analyze_text(graph, cfg);
    return allocated_bytes(a, estimate(a, 2), Phase::Forward, [](const Node& n, const Block& b) {
      return n.module == "blk" && b.category == Category::Activations;
    });
  };
  CHECK(sum_bytes(text) == std::vector<int64_t>{1024});
  std::string conv(text);
  conv.replace(conv.find("node Relu s -> r @blk.act2"), std::string("node Relu s -> r @blk.act2").size(),
               "node Conv s next.weight -> r @blk.conv3");
  CHECK(sum_bytes(conv.c_str()) == std::vector<int64_t>{2048});
  std::string outside(text);  // an activation outside the block: not its own act2
  outside.replace(outside.find("@blk.act2"), std::string("@blk.act2").size(), "@tail");
  CHECK(sum_bytes(outside.c_str()) == std::vector<int64_t>{2048});
}
