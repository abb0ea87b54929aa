// Arena-held names (estimator/name.h): they read like the std::string they replaced,
// and compare by their characters.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <string_view>

#include "estimator/name.h"

using namespace memest;

TEST_CASE("name: empty by default; compares by characters") {
  CHECK(Name().empty());
  CHECK(Name() == "");
  CHECK(std::string(Name().c_str()).empty());
  const Name a("/blocks.7/attn/q/MatMul_output_0"), b(std::string("/blocks.7/attn/q/MatMul_output_0"));
  CHECK(a == b);
  CHECK(a.size() == 32);
  CHECK(std::string_view(a.c_str()) == a.view());  // NUL-terminated
  CHECK(a != Name("x"));
  CHECK(Name("a") < Name("b"));
}

TEST_CASE("name: concatenates, searches and converts like a std::string") {
  Name n = "layer1.0.conv1.weight";
  CHECK(n == std::string("layer1.0.conv1.weight"));
  CHECK(n + "#1" == "layer1.0.conv1.weight#1");
  CHECK("w:" + n == "w:layer1.0.conv1.weight");
  CHECK(n.rfind('.') == 14);
  CHECK(n.substr(0, 6) == "layer1");
  CHECK(n.starts_with("layer1."));
  const std::string copy = n;
  CHECK(copy == "layer1.0.conv1.weight");
  n = n + "_2";
  CHECK(n == "layer1.0.conv1.weight_2");
  std::map<std::string, int> by_name{{"layer1.0.conv1.weight_2", 3}};
  CHECK(by_name.at(n) == 3);
}
