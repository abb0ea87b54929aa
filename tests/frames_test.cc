// Python frames: which tensors a module call's caller holds past their last use.
#include <doctest/doctest.h>

#include "estimator/frames.h"
#include "frontends/dynamo_repair.h"
#include "frontends/pystack.h"
#include "frontends/text_reader.h"

using namespace memest;

namespace {

Graph linked(const char* text) {
  Graph g = read_text_graph(text);
  g.relink();
  return g;
}

int node_index(const Graph& g, const std::string& module) {
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (g.nodes[k].module == module) return static_cast<int>(k);
  }
  return -1;
}

}  // namespace

TEST_CASE("an argument lives until the module it was passed to returns") {
  // stem -> body(scale, act, fc) -> head: h goes into body, whose first op is its last
  // use; body's caller holds it until body.fc, body's last node, has run.
  const Graph g = linked(R"(
opset 17
input x float32 batch,8
const two float32 - = 2
node Relu x -> h @stem
node Mul h two -> m @body.scale
node Relu m -> r @body.act
node Relu r -> y @body.fc
node Relu y -> z @head
output z
)");
  const std::vector<int> release = frame_release_nodes(g);
  CHECK(release[g.find_tensor("h")] == node_index(g, "body.fc"));
  // Passed from one of body's children to the next: held by the call to body.act,
  // which ends at its only node, the last use.
  CHECK(release[g.find_tensor("m")] == -1);
  CHECK(release[g.find_tensor("r")] == -1);
  // y goes into head, which ends where y is used.
  CHECK(release[g.find_tensor("y")] == -1);
  // Only activations: the graph input is held by the training loop anyway.
  CHECK(release[g.find_tensor("x")] == -1);
}

TEST_CASE("a numbered path component is a container element: the call is the element, not the list") {
  // for block in self.blocks: x = block(x). blocks.0's output goes into blocks.1 and is
  // held until blocks.1 returns, not until the end of "blocks" (which is never called).
  const Graph g = linked(R"(
opset 17
input x float32 batch,8
const two float32 - = 2
node Relu x -> a @blocks.0.fc
node Mul a two -> b @blocks.1.scale
node Relu b -> c @blocks.1.fc
node Relu c -> d @blocks.2.fc
node Relu d -> e @blocks.2.out
output e
)");
  const std::vector<int> release = frame_release_nodes(g);
  CHECK(release[g.find_tensor("a")] == node_index(g, "blocks.1.fc"));
  // c goes into blocks.2 and is used by its first node; blocks.2 ends at blocks.2.out.
  CHECK(release[g.find_tensor("c")] == node_index(g, "blocks.2.out"));
}

TEST_CASE("a container the file shows called as a whole holds its argument until it returns") {
  // x = self.stem(x); x = self.blocks(x) with blocks an nn.Sequential: the caller's x,
  // the stem's output, stays bound while blocks runs (timm's MobileNetV3: the stem's
  // HardSwish output, held by nothing else, was memest's whole gap; seqtrace33b).
  Graph g = linked(R"(
opset 17
input x float32 batch,8
const two float32 - = 2
node Relu x -> s @stem
node Mul s two -> a @blocks.0.fc
node Relu a -> b @blocks.1.fc
node Relu b -> c @blocks.1.out
node Relu c -> z @head
output z
)");
  // As a list (for blk in self.blocks): held until blocks.0 returns, its only node.
  CHECK(frame_release_nodes(g)[g.find_tensor("s")] == -1);
  g.called_containers = {"blocks"};
  const std::vector<int> release = frame_release_nodes(g);
  CHECK(release[g.find_tensor("s")] == node_index(g, "blocks.1.out"));
  // blocks.0's output goes into blocks.1 (Sequential.forward's `input = module(input)`):
  // held until blocks.1 returns, not to the end of blocks.
  CHECK(release[g.find_tensor("a")] == node_index(g, "blocks.1.out"));
  CHECK(release[g.find_tensor("b")] == -1);
}

TEST_CASE("a module called twice is two calls: each argument is held to the end of its own call") {
  // self.drop used after attn and again after mlp ("drop" twice, apart).
  const Graph g = linked(R"(
opset 17
input x float32 batch,8
node Relu x -> a @attn
node Relu a -> b @drop.inner
node Relu b -> c @drop.out
node Relu c -> d @mlp
node Relu d -> e @drop.inner
node Relu e -> f @drop.out
output f
)");
  const std::vector<int> release = frame_release_nodes(g);
  const int first_out = node_index(g, "drop.out");
  CHECK(release[g.find_tensor("a")] == first_out);
  CHECK(release[g.find_tensor("d")] == 5);  // the second call's drop.out, node 5
  CHECK(release[g.find_tensor("c")] == -1);  // mlp is one node
}

TEST_CASE("graphs without module paths hold nothing") {
  const Graph g = linked(R"(
opset 17
input x float32 batch,8
node Relu x -> a
node Relu a -> b
output b
)");
  for (int r : frame_release_nodes(g)) CHECK(r == -1);
}

TEST_CASE("the pieces of a split are locals: as views they keep the split tensor until the call returns") {
  // q, k, v = self.qkv(x).split(d, 2) ... return self.proj(y): qkv's storage goes when
  // attn returns, after attn.proj, not after the last piece is read (GPU trace of
  // gpt_mini at batch 119: the qkv block is freed right after proj's output is made).
  const Graph g = linked(R"(
opset 17
input x float32 batch,12
const sizes int64 3 = 4,4,4
node Relu x -> qkv @attn.qkv
node Split qkv sizes -> q k v axis=1 @attn
node Mul q k -> s @attn
node Add s v -> y @attn
node Relu y -> out @attn.proj
node Relu out -> z @head
output z
)");
  const std::vector<int> release = frame_release_nodes(g);
  CHECK(release[g.find_tensor("qkv")] == node_index(g, "attn.proj"));
}

TEST_CASE("without stacks, a value whose own reader feeds a child call is held until that call returns") {
  //   att = att.masked_fill(...)            # own: s
  //   att = self.drop(F.softmax(att))       # own softmax, then the child drop: s is the old
  //   y = att @ v                           #   `att`, bound until drop returns
  const char* text = R"(
opset 17
input x float32 batch,8
node Relu x -> s @attn
node Softmax s -> p @attn
node Relu p -> d @attn.drop
node Relu d -> y @attn
node Relu x -> s2 @other
node Softmax s2 -> p2 @other
node Relu p2 -> y2 @other
node Add y y2 -> z @head
output z
)";
  Graph g = linked(text);
  std::vector<int> release = frame_release_nodes(g);
  CHECK(release[g.find_tensor("s")] == node_index(g, "attn.drop"));
  // Its reader's result goes to another own op, not into a child: freed at its last use.
  CHECK(release[g.find_tensor("s2")] == -1);
  // With Python stacks the statements decide instead (here: none, so no hold).
  g.python.names = {"a"};
  g.python.statements = {{"m.py:1", {0}, true}};
  g.python.stacks = {{{0, 0}}};
  release = frame_release_nodes(g);
  CHECK(release[g.find_tensor("s")] == -1);
}

TEST_CASE("in a module that keeps submodule results in locals, a named child's result lives until it returns") {
  // GPT2Model.forward: inputs_embeds = self.wte(ids); h = inputs_embeds + pos; ...; the
  // embedding stays until the transformer returns (GPU trace of gpt2_hf, batch 114).
  // Not through a list element: `for block in self.h: h = block(h)` rebinds h.
  Graph g = linked(R"(
opset 17
input x float32 batch,8
node Relu x -> emb @transformer.wte
node Relu x -> pos @transformer.wpe
node Add emb pos -> h0 @transformer
node Relu h0 -> h1 @transformer.h.0.mlp
node Relu h1 -> h2 @transformer.h.1.mlp
node Relu h2 -> y @transformer.ln_f
node Relu y -> z @head
output z
)");
  CHECK(frame_release_nodes(g)[g.find_tensor("emb")] == -1);  // without the flag: a temporary
  for (Node& n : g.nodes) n.keeps_locals = n.module.rfind("transformer", 0) == 0;
  const std::vector<int> release = frame_release_nodes(g);
  CHECK(release[g.find_tensor("emb")] == node_index(g, "transformer.ln_f"));
  CHECK(release[g.find_tensor("pos")] == node_index(g, "transformer.ln_f"));
  CHECK(release[g.find_tensor("h1")] == -1);  // h.0's result, read by h.1: a list element
}

TEST_CASE("a named child's result passed to a sibling lives until the caller's next own statement") {
  // GPT2Block.forward: h = self.ln_2(h); ff = self.mlp(h); h = residual + ff. The local h
  // holds ln_2's output through mlp and is rebound by the Add: freed after the Add, not
  // when mlp returns (GPU trace of gpt2_hf at batch 128, gtrace2: ln_2's 64 MiB is freed
  // right after the block's last Add, and ln_f's output lands in that hole).
  Graph g = linked(R"(
opset 17
input x float32 batch,8
node Relu x -> n2 @h.0.ln_2
node Relu n2 -> a @h.0.mlp.fc
node Relu a -> ff @h.0.mlp.proj
node Add x ff -> h1 @h.0
node Relu h1 -> n3 @h.0.ln_3
node Relu n3 -> z @head
output z
)");
  // Without the flag, only the argument rule: held until mlp returns (mlp.proj).
  CHECK(frame_release_nodes(g)[g.find_tensor("n2")] == node_index(g, "h.0.mlp.proj"));
  for (Node& n : g.nodes) n.keeps_locals = n.module.rfind("h.0", 0) == 0;
  const std::vector<int> release = frame_release_nodes(g);
  CHECK(release[g.find_tensor("n2")] == node_index(g, "h.0"));
  // ff is mlp's result read by the block's own Add: held until the block returns, at
  // its last node, ln_3.
  CHECK(release[g.find_tensor("ff")] == node_index(g, "h.0.ln_3"));
}

TEST_CASE("with Python stacks (dynamo exports), a statement's names hold its value until rebound or return") {
  //   def forward(self, x):        # block
  //       h = self.ln(x)           # b.py:20
  //       a = self.fc(h)           # b.py:21
  //       h = x + a                # b.py:22  rebinds h: ln's output goes after the Add
  //       return self.out(h)       # b.py:23  a is never rebound: held until the return
  Graph g = linked(R"(
opset 17
input x float32 batch,8
node Relu x -> n @block.ln
node Relu n -> f @block.fc
node Add x f -> h1 @block
node Relu h1 -> z @block.out
node Relu z -> w @head
output w
)");
  PySource& py = g.python;
  py.names = {"h", "a"};
  py.statements = {{"m.py:10", {0}, true}, {"b.py:20", {0}, true}, {"b.py:21", {1}, true},
                   {"b.py:22", {0}, true}, {"b.py:23", {}, false}, {"m.py:11", {}, false}};
  py.stacks = {{{0, 0}, {1, 1}}, {{0, 0}, {2, 1}}, {{0, 0}, {3, 1}}, {{0, 0}, {4, 1}}, {{5, 0}}};
  for (int k = 0; k < 5; ++k) g.nodes[k].py_stack = k;
  const std::vector<int> release = frame_release_nodes(g);
  CHECK(release[g.find_tensor("n")] == node_index(g, "block"));
  CHECK(release[g.find_tensor("f")] == node_index(g, "block.out"));
  CHECK(release[g.find_tensor("h1")] == -1);  // read by the return statement itself
}

TEST_CASE("with Python stacks, a tuple written over several lines holds its elements until the return") {
  //   def forward(self, x):                   # attn
  //       q = self.norm(x)                    # a.py:40
  //       rot, keep = (                       # a.py:41  no op runs on this line
  //           q[..., :4],                     # a.py:42  the stack names these lines,
  //           q[..., 4:],                     # a.py:43  which assign nothing themselves
  //       )
  //       rot = self.rope(rot)                # a.py:45
  //       out = torch.cat((rot, keep), -1)    # a.py:46
  //       return self.proj(                   # a.py:47
  //           out.relu(),                     # a.py:48  an argument: read by the call above
  //       )
  // Persimmon's partial rotary (seqtrace29): keep, a view of the norm's fp32 output, holds
  // it until the attention returns. The names are unknown, so nothing rebinds them.
  Graph g = linked(R"(
opset 17
input x float32 batch,8
node Relu x -> q @attn.norm
node Relu q -> r @attn
node Relu q -> kp @attn
node Relu r -> r2 @attn.rope
node Add r2 kp -> o @attn
node Relu o -> o2 @attn
node Relu o2 -> z @attn.proj
node Relu z -> w @head
output w
)");
  PySource& py = g.python;
  py.names = {"q", "out"};
  py.statements = {{"m.py:10", {}, false}, {"a.py:40", {0}, true}, {"a.py:42", {}, false},
                   {"a.py:43", {}, false}, {"a.py:45", {}, false}, {"a.py:46", {1}, true},
                   {"a.py:48", {}, false}, {"a.py:47", {}, false}, {"m.py:11", {}, false}};
  for (size_t i = 2; i < py.statements.size() - 1; ++i) {
    PyStatement& st = py.statements[i];
    st.line = std::stoi(st.where.substr(5));
    st.continuation = st.line == 42 || st.line == 43 || st.line == 48;
  }
  py.stacks = {{{0, 0}, {1, 1}}, {{0, 0}, {2, 1}}, {{0, 0}, {3, 1}}, {{0, 0}, {4, 1}},
               {{0, 0}, {5, 1}}, {{0, 0}, {6, 1}}, {{0, 0}, {7, 1}}, {{8, 0}}};
  for (int k = 0; k < 8; ++k) g.nodes[k].py_stack = k;
  const std::vector<int> release = frame_release_nodes(g);
  CHECK(release[g.find_tensor("kp")] == node_index(g, "attn.proj"));
  CHECK(release[g.find_tensor("r")] == node_index(g, "attn.proj"));
  CHECK(release[g.find_tensor("o2")] == -1);  // read by the call on the line above it
  CHECK(assigned_names("    q[..., 4:],").continuation);
  CHECK_FALSE(assigned_names("q[..., 4:]").continuation);
  CHECK_FALSE(assigned_names("dim=-1,").continuation);  // a keyword argument assigns (as before)
}

TEST_CASE("with Python stacks, an unpacking's `_` holds nothing a later statement reads") {
  //   def forward(self, x):        # layer
  //       h = self.ln(x)           # l.py:30
  //       h, _ = self.attn(h)      # l.py:31  transformers' decoder layers (attn weights to _)
  //       h = x + h                # l.py:32  rebinds h: the attention's output goes at the Add
  //       return self.mlp(h)       # l.py:33
  // With a second real name instead of `_` (h, w = ...), which of the two holds the
  // attention's output is unknown: it is held until both are rebound, here the return.
  for (const bool underscore : {true, false}) {
    CAPTURE(underscore);
    Graph g = linked(R"(
opset 17
input x float32 batch,8
node Relu x -> n @layer.ln
node Relu n -> a @layer.attn
node Add x a -> h1 @layer
node Relu h1 -> z @layer.mlp
node Relu z -> w @head
output w
)");
    PySource& py = g.python;
    py.names = {"h", underscore ? "_" : "w"};
    py.statements = {{"m.py:10", {0}, true}, {"l.py:30", {0}, true}, {"l.py:31", {0, 1}, true},
                     {"l.py:32", {0}, true}, {"l.py:33", {}, false}, {"m.py:11", {}, false}};
    py.stacks = {{{0, 0}, {1, 1}}, {{0, 0}, {2, 1}}, {{0, 0}, {3, 1}}, {{0, 0}, {4, 1}}, {{5, 0}}};
    for (int k = 0; k < 5; ++k) g.nodes[k].py_stack = k;
    const std::vector<int> release = frame_release_nodes(g);
    // Released by the Add that reads it (-1: no hold past its last use), or at the return.
    CHECK(release[g.find_tensor("a")] == (underscore ? -1 : node_index(g, "layer.mlp")));
  }
}

TEST_CASE("with Python stacks, a method collapsed into one statement keeps the locals it returns with") {
  //   def forward(self, x):
  //       x = self.forward_features(x)   # m.py:10, the only frame of forward_features' nodes
  //       return self.head(x)            # m.py:11
  //   def forward_features(self, x):     # (no frame: not named forward)
  //       x1 = self.embed1(x)
  //       for blk in self.blocks1: x1 = blk(x1)
  //       x1_nocls = x1.relu()           # own code, read by a named child
  //       x2 = self.embed2(x1_nocls)
  //       x2 = x2.relu()                 # rebinds x2
  //       for blk in self.blocks2: x2 = blk(x2)
  //       return x2
  // timm's CoaT (seqtrace session40): x1 and x1_nocls stay until forward_features
  // returns, at blocks2.0, the statement's last node; what a loop or a rebinding lets go
  // is not held.
  const char* text = R"(
opset 17
input x float32 batch,8
node Relu x -> e1 @embed1
node Relu e1 -> b0 @blocks1.0
node Relu b0 -> b1 @blocks1.1
node Relu b1 -> n1 @
node Relu n1 -> e2 @embed2
node Relu e2 -> c2 @
node Relu c2 -> d0 @blocks2.0
node Relu d0 -> z @head
output z
)";
  for (const bool method : {true, false}) {
    CAPTURE(method);
    Graph g = linked(text);
    PySource& py = g.python;
    py.names = {"x"};
    // A statement that is no method call (a nested expression of child calls) returns
    // with its temporaries: nothing is held.
    const std::string code = method ? "x = self.forward_features(x)" : "x = self.blocks2(self.embed2(x))";
    py.statements = {{"m.py:10", {0}, true}, {"e.py:5", {0}, true}, {"b.py:7", {0}, true},
                     {"m.py:11", {}, false}, {"h.py:3", {}, false}};
    py.statements[0].code = code;
    py.stacks = {{{0, 0}, {1, 1}}, {{0, 0}, {2, 2}}, {{0, 0}, {2, 3}}, {{0, 0}},
                 {{0, 0}, {1, 4}}, {{0, 0}}, {{0, 0}, {2, 5}}, {{3, 0}, {4, 6}}};
    for (int k = 0; k < 8; ++k) g.nodes[k].py_stack = k;
    const std::vector<int> release = frame_release_nodes(g);
    const int end = method ? node_index(g, "blocks2.0") : -1;
    CHECK(release[g.find_tensor("b1")] == end);  // the loop's result, read on the way to embed2
    CHECK(release[g.find_tensor("n1")] == end);  // own result passed to a named child
    CHECK(release[g.find_tensor("b0")] == -1);   // rebound by the loop
    CHECK(release[g.find_tensor("e2")] == -1);   // rebound by own code
    CHECK(release[g.find_tensor("c2")] == -1);   // passed to a list element: the loop's name
  }
}

TEST_CASE("dynamo export: a node written without metadata runs in the statement of the traced node before it") {
  //   x = self.blk(x)                            # m.py:5
  //     x = x + self.attn(self.ln(x))            # b.py:20   (blk)
  //       q, k = self.qkv(x).split(4, 1)         # a.py:10   (attn; the exporter writes the
  //       y = q * k                              # a.py:11    Split with no metadata at all)
  //       return self.proj(y)                    # a.py:12
  //     return self.out(x)                       # b.py:21
  Graph g = linked(R"(
opset 17
input x float32 batch,8
const sizes int64 2 = 4,4
node Relu x -> h @blk.ln
node Relu h -> qkv @blk.attn.qkv
node Split qkv sizes -> q k axis=1
node Mul q k -> y @blk.attn
node Relu y -> o @blk.attn.proj
node Add x o -> x1 @blk
node Relu x1 -> z @blk.out
output z
)");
  PySource& py = g.python;
  py.names = {"x", "q", "k", "y"};
  py.statements = {{"m.py:5", {0}, true},  {"b.py:20", {0}, true}, {"a.py:10", {1, 2}, true}, {"a.py:11", {3}, true},
                   {"a.py:12", {}, false}, {"b.py:21", {}, false}, {"l.py:1", {}, false}};
  // Instances: 0 root, 1 blk, 2 ln, 3 attn, 4 qkv, 5 proj, 6 out.
  py.stacks = {{{0, 0}, {1, 1}, {6, 2}},         {{0, 0}, {1, 1}, {2, 3}, {6, 4}}, {{0, 0}, {1, 1}, {3, 3}},
               {{0, 0}, {1, 1}, {4, 3}, {6, 5}}, {{0, 0}, {1, 1}},                 {{0, 0}, {5, 1}, {6, 6}}};
  const int traced[] = {0, 1, -1, 2, 3, 4, 5};
  REQUIRE(g.nodes.size() == 7);
  for (int k = 0; k < 7; ++k) g.nodes[k].py_stack = traced[k];
  const int split = 2;
  REQUIRE(g.nodes[split].op == "Split");
  // As read, the pieces look made at the top level and held until blk returns.
  CHECK(frame_release_nodes(g)[g.find_tensor("q")] == node_index(g, "blk.out"));
  place_untraced_nodes(g);
  CHECK(g.nodes[split].module == "blk.attn");
  REQUIRE(g.nodes[split].py_stack >= 0);
  const std::vector<PyFrame>& st = py.stacks[static_cast<size_t>(g.nodes[split].py_stack)];
  REQUIRE(st.size() == 3);  // qkv's frames down to attn's statement, not into qkv
  CHECK(py.statements[st[2].statement].where == "a.py:10");
  // Now q and k are attn's locals: held until attn returns (proj), as is qkv's storage.
  const std::vector<int> release = frame_release_nodes(g);
  CHECK(release[g.find_tensor("q")] == node_index(g, "blk.attn.proj"));
  CHECK(release[g.find_tensor("qkv")] == node_index(g, "blk.attn.proj"));
  // Traced nodes are left as they were.
  CHECK(g.nodes[split + 1].py_stack == 2);
  CHECK(g.nodes[split + 1].module == "blk.attn");
}

TEST_CASE("a dynamo stack trace: frames, the names each statement assigns, the module instance") {
  PySource py;
  PyStackReader reader(py);
  const char* trace =
      "File \"/m.py\", line 10, in forward\n    h = self.block(x)\n"
      "  File \"/b.py\", line 21, in forward\n    attn_output, w = self.attn(\n"
      "  File \"/b.py\", line 40, in helper\n    return torch.relu(y)";
  const std::string ns = ": pkg.Root/block: pkg.Block/block.attn: pkg.Attn/relu: aten.relu.default";
  const int s = reader.read(trace, ns);
  REQUIRE(s == 0);
  const std::vector<PyFrame>& st = py.stacks[0];
  REQUIRE(st.size() == 3);
  CHECK(py.statements[st[0].statement].where == "/m.py:10");
  CHECK(py.statements[st[1].statement].targets.size() == 2);
  CHECK(py.statements[st[1].statement].binds);
  CHECK_FALSE(py.statements[st[2].statement].binds);  // return
  // Frame 1 runs block's forward, frame 2 a function it calls: the same instance.
  CHECK(st[0].instance != st[1].instance);
  CHECK(st[1].instance == st[2].instance);
  CHECK(reader.read(trace, ns) == 0);  // the same trace again: the same stack
  CHECK(reader.read("", ns) == -1);
}

TEST_CASE("a higher-order op's body (generated code) binds no names: its values go at their last use") {
  // DeepSeek-V3.2's indexer runs under @torch.no_grad(), which torch.export makes a
  // wrap_with_set_grad_enabled body; its nodes' only frame is the body's generated
  // forward, which sets each value to None after its last use.
  PySource py;
  PyStackReader reader(py);
  const char* body = "File \"<eval_with_key>.176\", line 43, in forward\n"
                     "    relu_1 = torch.ops.aten.relu.default(mul_49);  mul_49 = None";
  const std::string ns = ": pkg.Root/model.layers.1.self_attn.indexer: pkg.Indexer/relu_1: aten.relu.default";
  const int s = reader.read(body, ns);
  REQUIRE(s == 0);
  REQUIRE(py.stacks[0].size() == 1);
  const PyStatement& st = py.statements[py.stacks[0][0].statement];
  CHECK(st.targets.size() == 1);  // it assigns relu_1 ...
  CHECK_FALSE(st.binds);          // ... and lets it go at its last use
  // The same statement in a module's own code binds.
  const int own = reader.read("File \"/m.py\", line 43, in forward\n    relu_1 = torch.relu(mul_49)", ns);
  CHECK(py.statements[py.stacks[static_cast<size_t>(own)][0].statement].binds);

  // In a graph: a body's value read by a later body statement is not held past its
  // reader (the frame is the stack's only one, the top level's, which returns last).
  Graph g = linked(R"(
opset 17
input x float32 batch,8
node Relu x -> a @idx
node Relu a -> b @idx
node Relu b -> c @idx
node Relu c -> z @head
output z
)");
  PySource& gp = g.python;
  PyStackReader greader(gp);
  const char* lines[] = {"a = torch.ops.aten.relu.default(x)", "b = torch.ops.aten.relu.default(a);  a = None",
                         "c = torch.ops.aten.relu.default(b);  b = None"};
  for (int k = 0; k < 3; ++k) {
    const std::string t = "File \"<eval_with_key>.5\", line " + std::to_string(10 + k) + ", in forward\n    " + lines[k];
    g.nodes[k].py_stack = greader.read(t, ": pkg.Root/idx: pkg.Idx/relu: aten.relu.default");
  }
  const std::vector<int> release = frame_release_nodes(g);
  CHECK(release[g.find_tensor("a")] == -1);
  CHECK(release[g.find_tensor("b")] == -1);
}

TEST_CASE("what a statement's first line assigns") {
  CHECK(assigned_names("h = self.ln(x)").names == std::vector<std::string>{"h"});
  CHECK(assigned_names("q, k, v = x.split(d, 2)").names == std::vector<std::string>{"q", "k", "v"});
  CHECK(assigned_names("(a, b) = f(x)").names == std::vector<std::string>{"a", "b"});
  CHECK(assigned_names("out: BaseModelOutput = self.transformer(").names == std::vector<std::string>{"out"});
  CHECK(assigned_names("x += self.drop(y)").names == std::vector<std::string>{"x"});
  CHECK(assigned_names("x += self.drop(y)").augmented == '+');
  CHECK(assigned_names("x *= 2").augmented == '*');
  CHECK(assigned_names("x **= 2").augmented == 0);  // pow, not mul
  CHECK(assigned_names("x //= 2").augmented == 0);
  CHECK(assigned_names("x = x + y").augmented == 0);
  CHECK(assigned_names("y = f(x, dim=-1) if a == b else x").names == std::vector<std::string>{"y"});
  CHECK_FALSE(assigned_names("return self.out(h)").binds);
  CHECK_FALSE(assigned_names("self.cache = x").binds);
  CHECK_FALSE(assigned_names("out[0] = x").binds);
  CHECK_FALSE(assigned_names("torch.relu_(x)").binds);
  CHECK_FALSE(assigned_names("if a == b:").binds);
}

TEST_CASE("stack traces that are not what the exporter writes are read without harm") {
  PySource py;
  PyStackReader reader(py);
  // Cut short, unterminated quotes, no line, no code, odd bytes, namespaces without types.
  const char* traces[] = {
      "File \"", "File \"a.py\", line", "File \"a.py\", line 3, in", "File \"a.py\", line 3, in f\n",
      "File \"a.py\", line 3, in forward\n    x = (", "File \"a.py\", line 3, in forward\n    = y",
      "File \"a.py\", line 3, in forward\n    a, = f()\n  File", "\n\n\n", "File \"a.py\", line 3, in forward\n    'x = \"",
      "File \"a.py\", line 3, in forward\n    x[0], y = z\n", "garbage\x01\x02 File \"b\" , line , in forward"};
  const char* namespaces[] = {"", "/", ": /: ", "a: b/c", ": pkg.Root/x: T/y: aten.relu.default"};
  for (const char* t : traces) {
    for (const char* ns : namespaces) {
      const int s = reader.read(t, ns);
      CHECK(s >= -1);
      if (s >= 0) {
        for (const PyFrame& f : py.stacks[static_cast<size_t>(s)]) CHECK(f.statement < static_cast<int>(py.statements.size()));
      }
    }
  }
  CHECK_FALSE(assigned_names("x[0], y = z").binds);  // one target is not a local
  CHECK(assigned_names("a, = f()").names == std::vector<std::string>{"a"});
  CHECK_FALSE(assigned_names("= y").binds);
}

TEST_CASE("hop_call: a node inside a disabled autocast block and its .float() arguments") {
  // timm's EfficientViT LiteMLA._attn: `with torch.autocast(enabled=False): q.float() ...`.
  // torch.export writes the block as a submodule whose generated code is the only frame;
  // the no-op .float() calls are gone from the fp32 graph, but the code names their results.
  const HopCall m = memest::hop_call(
      "File \"<eval_with_key>.672\", line 12, in forward\n"
      "    matmul = torch.ops.aten.matmul.default(transpose_1, to_2);  transpose_1 = to_2 = None");
  CHECK(m.in_body);
  CHECK(m.cast_args == 0b10u);
  const HopCall both = memest::hop_call(
      "File \"<eval_with_key>.9\", line 4, in forward\n    matmul = torch.ops.aten.matmul.default(to, to_11)");
  CHECK(both.cast_args == 0b11u);
  // Names that only start like a cast are not one; nested lists do not shift positions.
  const HopCall none = memest::hop_call(
      "File \"<eval_with_key>.3\", line 2, in forward\n"
      "    cat = torch.ops.aten.cat.default([to_1, x], -1);  tok = torch.ops.aten.add.Tensor(total, to_x)");
  CHECK(none.in_body);
  CHECK(none.cast_args == 0u);
  // An ordinary frame is not a body.
  const HopCall plain = memest::hop_call("File \"model.py\", line 40, in forward\n    x = self.block(x.float())");
  CHECK_FALSE(plain.in_body);
  CHECK(plain.cast_args == 0u);
}
