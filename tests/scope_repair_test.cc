// Module paths recovered from parameter names (frontends/scope_repair.cc).
#include "frontends/scope_repair.h"

#include <doctest/doctest.h>

#include "frontends/text_reader.h"

namespace memest {
namespace {

std::string module_of(const Graph& g, const std::string& node) {
  for (const Node& n : g.nodes) {
    if (n.name == node) return n.module;
  }
  return "?";
}

TEST_CASE("scope repair: a ModuleDict inside a ModuleList gets its block index back") {
  // The legacy exporter's scopes for blocks[i]["ln1"], blocks[i]["ff"][0..2]: ln1, ln1_1;
  // ff.0, ff.0_1; the GELU between (ff.1_1) reads no parameter.
  Graph g = read_text_graph(R"(
    input x float32 batch,8
    param blocks.0.ln1.weight float32 8
    param blocks.1.ln1.weight float32 8
    param blocks.0.ff.0.weight float32 8,8
    param blocks.1.ff.0.weight float32 8,8
    param head.weight float32 8,8
    node Mul x blocks.0.ln1.weight -> a :n0 @ln1
    node Mul a a -> a2 :n0b @ln1
    node MatMul a2 blocks.0.ff.0.weight -> b :n1 @ff.0
    node Relu b -> c :n2 @ff.1
    node Mul c blocks.1.ln1.weight -> d :n3 @ln1_1
    node MatMul d blocks.1.ff.0.weight -> e :n4 @ff.0_1
    node Relu e -> f :n5 @ff.1_1
    node MatMul f head.weight -> y :n6 @head
    node Relu y -> z :n7 @act_1
  )");
  CHECK(recover_module_paths(g) == 6);
  CHECK(module_of(g, "n0") == "blocks.0.ln1");
  CHECK(module_of(g, "n0b") == "blocks.0.ln1");
  CHECK(module_of(g, "n1") == "blocks.0.ff.0");
  CHECK(module_of(g, "n2") == "blocks.0.ff.1");
  CHECK(module_of(g, "n3") == "blocks.1.ln1");
  CHECK(module_of(g, "n4") == "blocks.1.ff.0");
  CHECK(module_of(g, "n5") == "blocks.1.ff.1");
  CHECK(module_of(g, "n6") == "head");    // already right
  CHECK(module_of(g, "n7") == "act_1");  // nothing says where it belongs
}

TEST_CASE("scope repair: a tied weight or a right scope changes nothing") {
  Graph g = read_text_graph(R"(
    input x int64 batch,8
    param wte.weight float32 100,16
    node Gather wte.weight x -> h :n0 @wte
    node Transpose wte.weight -> wt :n1 @lm_head perm=1,0
    node MatMul h wt -> y :n2 @lm_head
  )");
  CHECK(recover_module_paths(g) == 0);
  CHECK(module_of(g, "n1") == "lm_head");
}

}  // namespace
}  // namespace memest
