// The test text format: one declaration or node per line, parsed into a Graph.
#include "frontends/text_reader.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <vector>

#include "estimator/error.h"

namespace memest {
namespace {

// A graph with no `opset` line gets a recent opset, so short tests need not say it.
constexpr int64_t kDefaultOpset = 17;

std::optional<int64_t> parse_int(const std::string& s) {
  if (s.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_float(const std::string& s) {
  if (s.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') return false;
  }
  return true;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

class LineParser {
 public:
  LineParser(Graph& g, const std::string& file) : g_(g), file_(file) {}

  void parse(const std::string& line, int number) {
    line_ = number;
    std::vector<std::string> tok = tokenize(line);
    if (tok.empty()) return;
    const std::string& kw = tok[0];
    if (kw == "opset") {
      want(tok.size() == 2, "expected `opset N`");
      auto v = parse_int(tok[1]);
      want(v && *v > 0, "opset must be a positive integer, got '" + tok[1] + "'");
      g_.opset = *v;
    } else if (kw == "input" || kw == "param" || kw == "buffer" || kw == "const") {
      declare_tensor(kw, tok);
    } else if (kw == "declare") {
      want(tok.size() == 4, "expected `declare NAME DTYPE DIMS`");
      Tensor& t = g_.tensors[g_.tensor_id(tok[1])];
      t.dtype = dtype(tok[2]);
      t.declared = dims(tok[3]);
    } else if (kw == "node") {
      node(tok);
    } else if (kw == "output") {
      want(tok.size() == 2, "expected `output NAME`");
      int id = g_.tensor_id(tok[1]);
      g_.tensors[id].graph_output = true;
      g_.outputs.push_back(id);
    } else {
      fail("unknown keyword '" + kw + "'");
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(file_, "", "line " + std::to_string(line_) + ": " + what);
  }
  void want(bool ok, const std::string& what) const {
    if (!ok) fail(what);
  }

  // Whitespace-separated tokens; double quotes protect spaces, '#' starts a comment.
  std::vector<std::string> tokenize(const std::string& line) const {
    std::vector<std::string> out;
    std::string cur;
    bool quoted = false, any = false;
    for (char c : line) {
      if (c == '"') {
        quoted = !quoted;
        cur += c;
        any = true;
      } else if (!quoted && c == '#') {
        break;
      } else if (!quoted && std::isspace(static_cast<unsigned char>(c))) {
        if (any) out.push_back(cur);
        cur.clear();
        any = false;
      } else {
        cur += c;
        any = true;
      }
    }
    want(!quoted, "unterminated string");
    if (any) out.push_back(cur);
    return out;
  }

  DType dtype(const std::string& s) const {
    auto t = dtype_from_name(s);
    if (!t) fail("unknown dtype '" + s + "'");
    return *t;
  }

  Expr dim(const std::string& s) const {
    if (auto v = parse_int(s)) return Expr(*v);
    if (is_identifier(s)) return Expr::symbol(s);
    auto e = parse_expr(s);
    want(e.has_value(), "bad dimension '" + s + "': expected an integer, a symbol name or a product like 64*batch");
    return *e;
  }

  Shape dims(const std::string& s) const {
    if (s == "-") return {};
    Shape out;
    for (const auto& part : split(s, ',')) out.push_back(dim(part));
    return out;
  }

  void declare_tensor(const std::string& kw, const std::vector<std::string>& tok) {
    bool has_value = tok.size() == 6 && tok[4] == "=";
    want(tok.size() == 4 || (kw == "const" && has_value),
         "expected `" + kw + " NAME DTYPE DIMS`" + (kw == "const" ? " [= V,V,...]" : ""));
    want(g_.find_tensor(tok[1]) < 0, "tensor '" + tok[1] + "' is declared twice");
    int id = g_.tensor_id(tok[1]);
    Tensor& t = g_.tensors[id];
    t.dtype = dtype(tok[2]);
    t.shape = dims(tok[3]);
    if (kw == "input") {
      t.kind = TensorKind::Input;
      g_.inputs.push_back(id);
    } else if (kw == "param" || kw == "buffer") {
      t.kind = kw == "param" ? TensorKind::Parameter : TensorKind::Buffer;
      t.module = module_from_param_name(t.name);
    } else {
      t.kind = TensorKind::Constant;
    }
    if (!has_value) return;
    std::vector<std::string> parts = split(tok[5], ',');
    auto numel = product(*t.shape).as_const();
    want(numel && *numel == static_cast<int64_t>(parts.size()),
         "'" + t.name + "' has " + std::to_string(parts.size()) + " values for shape " + shape_str(*t.shape));
    if (is_floating(t.dtype)) {
      std::vector<double> v;
      for (const auto& p : parts) {
        auto f = parse_float(p);
        want(f.has_value(), "bad float value '" + p + "'");
        v.push_back(*f);
      }
      t.fvalue = std::move(v);
    } else {
      std::vector<Expr> v;
      for (const auto& p : parts) v.push_back(dim(p));
      t.value = std::move(v);
    }
  }

  // "3,4" or "[3]" or "[]": Ints when every part is an integer, else Floats, else Strings.
  Attribute list(const std::string& s) const {
    Attribute a;
    a.kind = Attribute::Ints;
    if (s.empty()) return a;
    std::vector<std::string> parts = split(s, ',');
    bool ints = true, floats = true;
    for (const auto& p : parts) {
      ints = ints && parse_int(p).has_value();
      floats = floats && parse_float(p).has_value();
    }
    for (const auto& p : parts) {
      if (ints) {
        a.ints.push_back(*parse_int(p));
      } else if (floats) {
        a.kind = Attribute::Floats;
        a.extra().floats.push_back(*parse_float(p));
      } else {
        a.kind = Attribute::Strings;
        a.extra().strings.push_back(p);
      }
    }
    return a;
  }

  // tensor:DTYPE:DIMS[:CONTENTS]
  Attribute tensor(const std::string& s) const {
    std::vector<std::string> f = split(s, ':');
    want(f.size() == 3 || f.size() == 4, "expected tensor:DTYPE:DIMS[:V,V,...], got '" + s + "'");
    Attribute a;
    a.kind = Attribute::Tensor;
    a.extra().t_dtype = dtype(f[1]);
    int64_t numel = 1;
    if (f[2] != "-") {
      for (const auto& d : split(f[2], ',')) {
        auto v = parse_int(d);
        want(v && *v >= 0, "tensor attribute dims must be integers, got '" + d + "'");
        a.extra().t_dims.push_back(*v);
        numel = checked_mul(numel, *v);
      }
    }
    if (f.size() == 4) {
      Attribute contents = list(f[3]);
      bool fl = is_floating(a.extra().t_dtype);
      size_t n = contents.kind == Attribute::Ints ? contents.ints.size() : contents.extra().floats.size();
      want(contents.kind != Attribute::Strings && (fl || contents.kind == Attribute::Ints),
           "bad tensor contents '" + f[3] + "'");
      want(static_cast<int64_t>(n) == numel, "tensor attribute has " + std::to_string(n) + " values for " +
                                                 std::to_string(numel) + " elements");
      if (fl) {
        std::vector<double> v(contents.extra().floats.begin(), contents.extra().floats.end());
        if (contents.kind == Attribute::Ints) v.assign(contents.ints.begin(), contents.ints.end());
        a.extra().t_floats = std::move(v);
      } else {
        a.extra().t_ints = contents.ints;
      }
    }
    return a;
  }

  Attribute attribute(const std::string& v) const {
    if (!v.empty() && v.front() == '"') {
      want(v.size() >= 2 && v.back() == '"', "bad string attribute " + v);
      Attribute a;
      a.kind = Attribute::String;
      a.s = v.substr(1, v.size() - 2);
      return a;
    }
    if (!v.empty() && v.front() == '[') {
      want(v.back() == ']', "unterminated list '" + v + "'");
      return list(v.substr(1, v.size() - 2));
    }
    if (v.rfind("tensor:", 0) == 0) return tensor(v);
    if (v.find(',') != std::string::npos) return list(v);
    Attribute a;
    if (auto i = parse_int(v)) {
      a.kind = Attribute::Int;
      a.i = *i;
    } else if (auto f = parse_float(v)) {
      a.kind = Attribute::Float;
      a.f = *f;
    } else {
      a.kind = Attribute::String;
      a.s = v;
    }
    return a;
  }

  int tensor_ref(const std::string& name) {
    if (name == "-") return -1;
    return g_.tensor_id(name);
  }

  void node(const std::vector<std::string>& tok) {
    want(tok.size() >= 2, "expected `node OP INPUTS -> OUTPUTS [k=v] [:name] [@module]`");
    Node n;
    const std::string& op = tok[1];
    size_t colons = op.rfind("::");
    if (colons != std::string::npos) {
      n.domain = op.substr(0, colons);
      n.op = op.substr(colons + 2);
    } else {
      n.op = op;
    }
    want(!n.op.empty(), "empty op name");
    size_t i = 2;
    for (; i < tok.size() && tok[i] != "->"; ++i) {
      want(tok[i].find('=') == std::string::npos && tok[i][0] != ':' && tok[i][0] != '@',
           "'" + tok[i] + "' before '->': inputs come first, then '->', outputs and attributes");
      n.inputs.push_back(tensor_ref(tok[i]));
    }
    want(i < tok.size(), "node " + n.op + " needs '->' before its outputs");
    for (++i; i < tok.size(); ++i) {
      const std::string& t = tok[i];
      size_t eq = t.find('=');
      if (t[0] == ':') {
        n.name = t.substr(1);
      } else if (t[0] == '@') {
        n.module = t.substr(1);
      } else if (eq != std::string::npos) {
        std::string key = t.substr(0, eq);
        want(!key.empty(), "attribute without a name: '" + t + "'");
        want(!n.attrs.count(key), "attribute '" + key + "' given twice");
        n.attrs.emplace(key, attribute(t.substr(eq + 1)));
      } else {
        n.outputs.push_back(tensor_ref(t));
      }
    }
    g_.nodes.push_back(std::move(n));
  }

  Graph& g_;
  const std::string& file_;
  int line_ = 0;
};

}  // namespace

Graph read_text_graph(const std::string& text, const std::string& file) {
  Graph g;
  g.file = file;
  g.opset = kDefaultOpset;
  LineParser p(g, file);
  int number = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    p.parse(text.substr(start, end - start), ++number);
    start = end + 1;
  }
  g.relink();  // producers and consumers, as the ONNX reader leaves them
  return g;
}

}  // namespace memest
