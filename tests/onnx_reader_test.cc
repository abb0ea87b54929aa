// The ONNX reader on models written byte by byte: what it lowers, what protobuf
// semantics it keeps (packed or unpacked repeated fields, unknown fields skipped,
// merged messages, oneofs), and the one error it gives every malformed file.
#include "frontends/onnx_reader.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "estimator/error.h"
#include "frontends/onnx_schema.h"
#include "tests/wire_builder.h"

namespace memest {
namespace {

using namespace testing;

const char* const kCorrupt = "not a valid ONNX model (the protobuf is truncated or corrupt)";

std::string node(const std::string& op, const std::string& in, const std::string& out, const std::string& more = "") {
  return lfield(1, in) + lfield(2, out) + lfield(4, op) + more;
}
std::string model(const std::string& graph, const std::string& more = "") {
  return vfield(1, 8) + lfield(7, graph) + lfield(8, lfield(1, "") + vfield(2, 17)) + more;
}
// x[batch, 4] -> Relu -> y, with a weight w whose dims are written as `dims`.
std::string relu_model(const std::string& dims, const std::string& graph_more = "", const std::string& node_more = "") {
  const std::string w = dims + vfield(2, 1) + lfield(8, "w");
  return model(lfield(1, node("Relu", "x", "y", node_more)) + lfield(5, w) +
               lfield(11, value_info("x", tensor_type(1, dim_param("batch") + dim_value(4)))) +
               lfield(12, value_info("y", tensor_type(1, dim_param("batch") + dim_value(4)))) + graph_more);
}

std::string error_of(const std::string& bytes) {
  try {
    read_onnx_bytes(bytes, "m.onnx");
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

TEST_CASE("onnx reader: dims packed, unpacked and mixed") {
  for (const std::string& dims : {lfield(1, varint(3) + varint(5)), vfield(1, 3) + vfield(1, 5),
                                  vfield(1, 3) + lfield(1, varint(5)), lfield(1, "") + lfield(1, varint(3) + varint(5))}) {
    const Graph g = read_onnx_bytes(relu_model(dims), "m.onnx");
    const Tensor& w = g.tensors[g.find_tensor("w")];
    CHECK(w.kind == TensorKind::Parameter);
    CHECK(shape_str(*w.shape) == "[3, 5]");
  }
}

TEST_CASE("onnx reader: a model and what it lowers to") {
  const Graph g = read_onnx_bytes(relu_model(lfield(1, varint(2))), "m.onnx");
  CHECK(g.opset == 17);
  REQUIRE(g.nodes.size() == 1);
  CHECK(g.nodes[0].op == "Relu");
  const Tensor& x = g.tensors[g.find_tensor("x")];
  CHECK(x.kind == TensorKind::Input);
  CHECK(shape_str(*x.shape) == "[batch, 4]");
  CHECK(x.consumers == std::vector<int>{0});
  CHECK(g.tensors[g.find_tensor("y")].graph_output);
  CHECK(g.tensors[g.find_tensor("y")].producer == 0);
}

TEST_CASE("onnx reader: the containers the node scopes show called as a whole") {
  // x = self.stem(x); x = self.blocks(x) (an nn.Sequential: "blocks" is a scope of its
  // own around "blocks.0", "blocks.0.1" a Sequential inside it); for layer in
  // self.layers: x = layer(x) (a ModuleList: no "layers" scope).
  auto chain = [](const std::vector<std::string>& nodes_more) {
    std::string graph;
    const char* names[] = {"x", "a", "b", "c", "y"};
    for (size_t i = 0; i < nodes_more.size(); ++i) graph += lfield(1, node("Relu", names[i], names[i + 1], nodes_more[i]));
    return model(graph + lfield(11, value_info("x", tensor_type(1, dim_param("batch") + dim_value(4)))) +
                 lfield(12, value_info("y", tensor_type(1, dim_param("batch") + dim_value(4)))));
  };
  auto named = [](const std::string& n) { return lfield(3, n); };
  const Graph legacy = read_onnx_bytes(chain({named("/stem/Relu"), named("/blocks/blocks.0/blocks.0.1/fc/Relu"),
                                              named("/layers.0/fc/Relu"), named("/head/Relu")}),
                                       "m.onnx");
  CHECK(legacy.nodes[1].module == "blocks.0.1.fc");
  CHECK(legacy.called_containers == std::vector<std::string>{"blocks", "blocks.0"});

  auto ns = [](const std::string& v) { return lfield(9, lfield(1, "namespace") + lfield(2, v)); };
  const std::string relu = "relu: aten.relu.default";
  const Graph dynamo = read_onnx_bytes(
      chain({ns(": pkg.Root/stem: torch.nn.ReLU/" + relu),
             ns(": pkg.Root/blocks: torch.nn.Sequential/blocks.0: pkg.Block/blocks.0.fc: torch.nn.ReLU/" + relu),
             ns(": pkg.Root/layers.0: pkg.Block/layers.0.fc: torch.nn.ReLU/" + relu),
             ns(": pkg.Root/head: torch.nn.ReLU/" + relu)}),
      "m.onnx");
  CHECK(dynamo.nodes[1].module == "blocks.0.fc");
  CHECK(dynamo.called_containers == std::vector<std::string>{"blocks"});
}

TEST_CASE("onnx reader: unknown fields of every wire type are skipped") {
  const std::string unknown =
      vfield(40, 300) + fixed64(41, 1) + lfield(42, "\x0a\x05garbage") + group(43, vfield(1, 2) + group(44, "")) +
      fixed32(45, 7);
  const Graph plain = read_onnx_bytes(relu_model(lfield(1, varint(2))), "m.onnx");
  // At the model, graph and node level, and as known numbers with the wrong wire type.
  for (const std::string& bytes :
       {relu_model(lfield(1, varint(2))) + unknown, relu_model(lfield(1, varint(2)), unknown),
        relu_model(lfield(1, varint(2)), "", unknown), relu_model(lfield(1, varint(2)), "", vfield(3, 5) + fixed32(1, 0))}) {
    const Graph g = read_onnx_bytes(bytes, "m.onnx");
    CHECK(g.tensors.size() == plain.tensors.size());
    REQUIRE(g.nodes.size() == 1);
    CHECK(g.nodes[0].inputs == plain.nodes[0].inputs);
    CHECK(g.nodes[0].name.empty());
  }
}

TEST_CASE("onnx reader: protobuf semantics") {
  SUBCASE("a singular message seen twice merges") {
    const std::string g1 = lfield(1, node("Relu", "x", "h"));
    const std::string g2 = lfield(1, node("Relu", "h", "y"));
    const Graph g = read_onnx_bytes(vfield(1, 8) + lfield(7, g1) + lfield(7, g2), "m.onnx");
    CHECK(g.nodes.size() == 2);
    CHECK(g.opset == 1);  // no opset_import
  }
  SUBCASE("the last of a singular field wins; a oneof's last member") {
    const std::string n = node("Relu", "x", "y", lfield(3, "first") + lfield(3, "second"));
    const std::string in = value_info("x", tensor_type(1, lfield(1, lfield(2, "batch") + vfield(1, 3)) + dim_value(4)));
    const Graph g = read_onnx_bytes(model(lfield(1, n) + lfield(11, in)), "m.onnx");
    CHECK(g.nodes[0].name == "second");
    CHECK(shape_str(*g.tensors[g.find_tensor("x")].shape) == "[3, 4]");
  }
  SUBCASE("an attribute type outside the enum is unknown; untyped attributes infer") {
    const std::string attrs = lfield(5, lfield(1, "a") + vfield(3, 5) + vfield(20, 2) + vfield(20, 99)) +
                              lfield(5, lfield(1, "b") + lfield(8, varint(1) + varint(2)) + vfield(8, 3));
    const Graph g = read_onnx_bytes(model(lfield(1, node("Relu", "x", "y", attrs))), "m.onnx");
    CHECK(g.nodes[0].attr_int("a", 0) == 5);
    CHECK(g.nodes[0].attr_ints("b") == std::vector<int64_t>{1, 2, 3});
  }
}

TEST_CASE("onnx reader: malformed protobuf is one error") {
  const std::string good = relu_model(lfield(1, varint(2)));
  CHECK(error_of(good).empty());
  SUBCASE("truncated at every offset: parses (ends between fields) or the one message") {
    for (size_t cut = 1; cut < good.size(); ++cut) {
      const std::string e = error_of(good.substr(0, cut));
      CHECK_MESSAGE((e == kCorrupt || e.find("not an ONNX model") == 0 || e.empty()), "cut at " << cut << ": " << e);
    }
  }
  SUBCASE("framing") {
    CHECK(error_of(good + tag(40, 2) + varint(10) + "abc") == kCorrupt);           // a length past the end
    CHECK(error_of(good + tag(40, 0) + std::string(10, '\x80') + "\x01") == kCorrupt);  // a varint of 11 bytes
    CHECK(error_of(good + tag(40, 7)) == kCorrupt);                                 // wire type 7
    CHECK(error_of(good + tag(40, 6)) == kCorrupt);                                 // wire type 6
    CHECK(error_of(good + tag(0, 1) + std::string(8, 'x')) == kCorrupt);            // field number 0
    CHECK(error_of(good + bytes({0})) == kCorrupt);                                 // a zero tag
    CHECK(error_of(good + tag(40, 4)) == kCorrupt);                                 // a group end, no group
    CHECK(error_of(good + tag(40, 3) + tag(41, 4)) == kCorrupt);                    // a mismatched group end
    CHECK(error_of(good + tag(40, 3)) == kCorrupt);                                 // an unterminated group
    CHECK(error_of(good + tag(40, 2) + bytes({0xff, 0xff, 0xff, 0xff, 0x0f})) == kCorrupt);  // a negative length
  }
  SUBCASE("inside known messages, not inside unknown ones") {
    CHECK(error_of(relu_model(lfield(1, varint(2)), lfield(14, "\x0a\x09x"))) == kCorrupt);  // quantization_annotation
    CHECK(error_of(relu_model(lfield(1, varint(2)), lfield(40, "\x0a\x09x"))).empty());
    CHECK(error_of(relu_model(lfield(1, varint(2) + bytes({0x80})))) == kCorrupt);  // packed dims, last varint cut
    CHECK(error_of(relu_model(lfield(1, varint(2)), "", lfield(5, lfield(7, "12345")))) == kCorrupt);  // floats: 5 bytes
  }
  SUBCASE("nesting deeper than protobuf's limit of 64") {
    auto nested = [](int depth) {
      std::string g;
      for (int i = 0; i < depth; ++i) g += tag(50, 3);
      for (int i = 0; i < depth; ++i) g += tag(50, 4);
      return g;
    };
    CHECK(error_of(good + nested(64)).empty());
    CHECK(error_of(good + nested(65)) == kCorrupt);
    CHECK(error_of(good + nested(100000)) == kCorrupt);  // and no stack overflow on the way
  }
}

TEST_CASE("onnx reader: functions that call each other over and over are an error, not a hang") {
  // F's body calls F three times: 3^16 calls before the depth limit stops it.
  const std::string call = node("F", "a", "b", lfield(7, "memest"));
  const std::string f = lfield(1, "F") + lfield(4, "a") + lfield(5, "b") + lfield(7, call) + lfield(7, call) +
                        lfield(7, call) + lfield(10, "memest");
  const std::string m = model(lfield(1, node("F", "x", "y", lfield(7, "memest"))), lfield(25, f));
  CHECK(error_of(m).find("model-local functions expand to more than") == 0);
}

// An If as symbolic_opset11.squeeze writes `x.squeeze(1)` of a dim the trace did not fix:
// then Squeeze(x, axes) with axes a Constant [1] in the branch, else Identity(x).
std::string squeeze_if_model(const std::string& else_op) {
  auto attr_graph = [](const std::string& name, const std::string& graph) {
    return lfield(1, name) + lfield(6, graph) + vfield(20, 5);  // type GRAPH
  };
  const std::string axes = lfield(1, "value") + lfield(5, vfield(1, 1) + vfield(2, 7) + vfield(7, 1)) + vfield(20, 4);
  const std::string then_g = lfield(1, lfield(2, "ax") + lfield(4, "Constant") + lfield(5, axes)) +
                             lfield(1, node("Squeeze", "x", "sq") + lfield(1, "ax")) + lfield(12, value_info("sq", ""));
  const std::string else_g = lfield(1, node(else_op, "x", "id")) + lfield(12, value_info("id", ""));
  const std::string iff = node("If", "c", "s", lfield(5, attr_graph("then_branch", then_g)) +
                                                   lfield(5, attr_graph("else_branch", else_g)));
  return model(lfield(1, iff) + lfield(1, node("Relu", "s", "y")) +
               lfield(11, value_info("x", tensor_type(1, dim_param("batch") + dim_value(1) + dim_value(4)))) +
               lfield(11, value_info("c", tensor_type(9, ""))) +
               lfield(12, value_info("y", tensor_type(1, dim_param("batch") + dim_value(4)))));
}

TEST_CASE("onnx reader: the legacy exporter's If of a dynamic squeeze is one op reading x") {
  const Graph g = read_onnx_bytes(squeeze_if_model("Identity"), "m.onnx");
  REQUIRE(g.nodes.size() == 2);
  CHECK(g.nodes[0].op == "SqueezeIf");
  CHECK(g.nodes[0].domain == "memest");
  CHECK(g.nodes[0].inputs[0] == g.find_tensor("x"));  // x's gradient has a way back
  CHECK(g.nodes[0].attr_ints("axes") == std::vector<int64_t>{1});
  // Any other else-branch: an If as before, its subgraphs unread.
  const Graph other = read_onnx_bytes(squeeze_if_model("Relu"), "m.onnx");
  CHECK(other.nodes[0].op == "If");
}

TEST_CASE("onnx schema: the census sizes the IR") {
  const auto check = onnx_schema::check_model(relu_model(lfield(1, varint(2))));
  REQUIRE(check);
  CHECK(check->node_outputs == 1);
  CHECK(onnx_schema::check_entry(lfield(1, "k") + lfield(2, "v")));
  CHECK(!onnx_schema::check_entry(lfield(1, "k") + bytes({0})));
}

}  // namespace
}  // namespace memest
