// The test text format: declarations, nodes, attributes, and errors with line numbers.
#include "frontends/text_reader.h"

#include <doctest/doctest.h>

#include "estimator/error.h"

namespace memest {
namespace {

const Node& node_named(const Graph& g, const std::string& name) {
  for (const auto& n : g.nodes) {
    if (n.name == name) return n;
  }
  throw Error("no node " + name);
}

TEST_CASE("text reader: declarations") {
  Graph g = read_text_graph(R"(
    # a comment line
    opset 13
    input x float32 batch,3,32,32   # trailing comment
    input s int64 -
    param layer1.conv.weight fp16 8,3,3,3
    buffer bn.running_mean float32 8
    const shp int64 2 = 0,-1
    const sym int64 2 = batch,4
    const scales float32 4 = 1,1,2,2.5
    declare y float32 batch,8
    output y
  )", "model.txt");
  CHECK(g.file == "model.txt");
  CHECK(g.opset == 13);
  REQUIRE(g.inputs.size() == 2);
  const Tensor& x = g.tensors[g.find_tensor("x")];
  CHECK(x.kind == TensorKind::Input);
  CHECK(x.dtype == DType::F32);
  CHECK(shape_str(*x.shape) == "[batch, 3, 32, 32]");
  CHECK(shape_str(*g.tensors[g.find_tensor("s")].shape) == "[]");
  const Tensor& w = g.tensors[g.find_tensor("layer1.conv.weight")];
  CHECK(w.kind == TensorKind::Parameter);
  CHECK(w.dtype == DType::F16);
  CHECK(w.module == "layer1.conv");
  CHECK(g.tensors[g.find_tensor("bn.running_mean")].kind == TensorKind::Buffer);
  const Tensor& shp = g.tensors[g.find_tensor("shp")];
  CHECK(shp.kind == TensorKind::Constant);
  CHECK(shape_str(*shp.value) == "[0, -1]");
  CHECK(shape_str(*g.tensors[g.find_tensor("sym")].value) == "[batch, 4]");
  CHECK(*g.tensors[g.find_tensor("scales")].fvalue == std::vector<double>{1, 1, 2, 2.5});
  const Tensor& y = g.tensors[g.find_tensor("y")];
  CHECK(!y.shape);
  CHECK(shape_str(*y.declared) == "[batch, 8]");
  CHECK(y.graph_output);
  CHECK(g.outputs == std::vector<int>{g.find_tensor("y")});
}

TEST_CASE("text reader: default opset") { CHECK(read_text_graph("input x float32 1").opset == 17); }

TEST_CASE("text reader: nodes and attributes") {
  Graph g = read_text_graph(R"(
    input x float32 1,3,8,8
    param w float32 8,3,3,3
    node Conv x w - -> y kernel_shape=3,3 pads=[1] group=1 alpha=0.5 scales=1.5,2 mode=nearest s="a b" :c1 @layer1.conv
    node Dropout y -> z - ratio=0.1 empty=[] names=a,b
    node memest::Linear z w -> q
    node Constant -> k value=tensor:int64:2:4,5 scalar=tensor:float32:-:0.5 shapeonly=tensor:float16:2,3
    node Einsum x x -> e equation="bhqd,bhkd->bhqk"
  )");
  REQUIRE(g.nodes.size() == 5);
  const Node& c = node_named(g, "c1");
  CHECK(c.op == "Conv");
  CHECK(c.domain == "");
  CHECK(c.module == "layer1.conv");
  CHECK(c.inputs == std::vector<int>{g.find_tensor("x"), g.find_tensor("w"), -1});
  CHECK(c.outputs == std::vector<int>{g.find_tensor("y")});
  CHECK(c.attr("kernel_shape")->kind == Attribute::Ints);
  CHECK(c.attr_ints("kernel_shape") == std::vector<int64_t>{3, 3});
  CHECK(c.attr_ints("pads") == std::vector<int64_t>{1});
  CHECK(c.attr("group")->kind == Attribute::Int);
  CHECK(c.attr_int("group", 0) == 1);
  CHECK(c.attr("alpha")->kind == Attribute::Float);
  CHECK(c.attr_float("alpha", 0) == 0.5);
  CHECK(c.attr("scales")->kind == Attribute::Floats);
  CHECK(c.attr("scales")->extra().floats == std::vector<double>{1.5, 2});
  CHECK(c.attr_string("mode", "") == "nearest");
  CHECK(c.attr_string("s", "") == "a b");

  const Node& d = g.nodes[1];
  CHECK(d.name.empty());
  CHECK(d.outputs == std::vector<int>{g.find_tensor("z"), -1});
  CHECK(d.attr("empty")->kind == Attribute::Ints);
  CHECK(d.attr("empty")->ints.empty());
  CHECK(d.attr("names")->extra().strings == std::vector<std::string>{"a", "b"});

  CHECK(g.nodes[2].domain == "memest");
  CHECK(g.nodes[2].op == "Linear");

  const Attribute* v = g.nodes[3].attr("value");
  CHECK(v->kind == Attribute::Tensor);
  CHECK(v->extra().t_dtype == DType::I64);
  CHECK(v->extra().t_dims == std::vector<int64_t>{2});
  CHECK(*v->extra().t_ints == std::vector<int64_t>{4, 5});
  const Attribute* sc = g.nodes[3].attr("scalar");
  CHECK(sc->extra().t_dims.empty());
  CHECK(*sc->extra().t_floats == std::vector<double>{0.5});
  CHECK(!g.nodes[3].attr("shapeonly")->extra().t_floats);

  CHECK(g.nodes[4].attr_string("equation", "") == "bhqd,bhkd->bhqk");
}

TEST_CASE("text reader: errors name the line") {
  CHECK_THROWS_WITH_AS(read_text_graph("opset 17\nfrobnicate x"), "<text>: line 2: unknown keyword 'frobnicate'",
                       Error);
  CHECK_THROWS_WITH_AS(read_text_graph("input x float99 1"), "<text>: line 1: unknown dtype 'float99'", Error);
  CHECK_THROWS_WITH_AS(read_text_graph("input x float32 1,?"),
                       "<text>: line 1: bad dimension '?': expected an integer, a symbol name or a product like 64*batch", Error);
  CHECK_THROWS_WITH_AS(read_text_graph("input x float32 1\ninput x float32 2"),
                       "<text>: line 2: tensor 'x' is declared twice", Error);
  CHECK_THROWS_WITH_AS(read_text_graph("const c int64 3 = 1,2"),
                       "<text>: line 1: 'c' has 2 values for shape [3]", Error);
  CHECK_THROWS_WITH_AS(read_text_graph("node Relu x y"), "<text>: line 1: node Relu needs '->' before its outputs",
                       Error);
  CHECK_THROWS_AS(read_text_graph("node Relu x k=1 -> y"), Error);
  CHECK_THROWS_AS(read_text_graph("node Relu x -> y k=\"open"), Error);
  CHECK_THROWS_AS(read_text_graph("node Constant -> y value=tensor:int64:2:1"), Error);
  CHECK_THROWS_AS(read_text_graph("opset x"), Error);
}

}  // namespace
}  // namespace memest
