// Interned strings (estimator/atom.h): equal text is one copy, and an Atom reads
// like the std::string it replaced.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "estimator/atom.h"

using namespace memest;

TEST_CASE("atom: equal text shares one copy; empty is the default") {
  const Atom a("layer1.0.conv1"), b(std::string("layer1.0.conv1")), c("layer1.0.conv2");
  CHECK(a == b);
  CHECK(&a.str() == &b.str());
  CHECK(a != c);
  CHECK(Atom().empty());
  CHECK(Atom("") == Atom());
  CHECK(Atom() == "");
}

TEST_CASE("atom: compares, concatenates and searches like a std::string") {
  Atom op = "Conv";
  CHECK(op == "Conv");
  CHECK(op != "Relu");
  CHECK(op == std::string("Conv"));
  CHECK(std::string("Conv") == op);
  CHECK(op + "_1" == "Conv_1");
  CHECK("fused_" + op == "fused_Conv");
  CHECK(op.size() == 4);
  CHECK(op.starts_with("Co"));
  CHECK(op.rfind('v') == 3);
  CHECK(op.substr(1) == "onv");
  const std::string& s = op;
  CHECK(s == "Conv");
  op = "Relu";
  CHECK(op == "Relu");
  CHECK(Atom("a") < Atom("b"));  // by text, not by address
  std::map<std::string, int> by_op{{"Relu", 1}};
  CHECK(by_op.at(op) == 1);
}
