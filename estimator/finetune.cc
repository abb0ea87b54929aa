// Which parameters train under --train / --freeze (protocol.md "Fine-tuning").
#include "estimator/finetune.h"

#include "estimator/error.h"

namespace memest {

namespace {

// Glob with `*` only; iterative, backtracking to the last star (linear for one star).
bool glob(std::string_view p, std::string_view s) {
  size_t i = 0, j = 0, star = std::string_view::npos, mark = 0;
  while (j < s.size()) {
    if (i < p.size() && p[i] == '*') {
      star = i++;
      mark = j;
    } else if (i < p.size() && p[i] == s[j]) {
      ++i;
      ++j;
    } else if (star != std::string_view::npos) {
      i = star + 1;
      j = ++mark;
    } else {
      return false;
    }
  }
  while (i < p.size() && p[i] == '*') ++i;
  return i == p.size();
}

}  // namespace

bool pattern_matches(std::string_view pattern, std::string_view name) {
  if (pattern.empty()) return false;
  if (name.size() > pattern.size() && name.substr(0, pattern.size()) == pattern && name[pattern.size()] == '.') {
    return true;
  }
  return glob(pattern, name);
}

std::string parameter_name(const Graph& g, int tensor) {
  const Tensor& t = g.tensors[tensor];
  if (t.name.find('.') != std::string::npos) return t.name;
  for (int c : t.consumers) {
    if (!g.nodes[c].module.empty()) return g.nodes[c].module + ".weight";
  }
  return t.name;
}

std::vector<bool> trainable_parameters(const Graph& g, const std::vector<std::string>& train,
                                       const std::vector<std::string>& freeze) {
  const size_t n = g.tensors.size();
  std::vector<bool> out(n, false);
  const std::vector<std::string>& patterns = train.empty() ? freeze : train;
  std::vector<bool> used(patterns.size(), false);
  for (size_t t = 0; t < n; ++t) {
    if (g.tensors[t].kind != TensorKind::Parameter) continue;
    if (patterns.empty()) {
      out[t] = true;
      continue;
    }
    const std::string name = parameter_name(g, static_cast<int>(t));
    bool hit = false;
    for (size_t i = 0; i < patterns.size(); ++i) {
      if (pattern_matches(patterns[i], name)) hit = used[i] = true;
    }
    out[t] = train.empty() ? !hit : hit;
  }
  for (size_t i = 0; i < patterns.size(); ++i) {
    if (!used[i]) {
      throw Error(g.file, "", std::string(train.empty() ? "--freeze" : "--train") + " '" + patterns[i] +
                                  "' matches no parameter (names are the graph's initializer names, e.g. fc.weight)");
    }
  }
  return out;
}

}  // namespace memest
