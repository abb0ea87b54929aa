// The registry: every family's table in one place, looked up by op name.
#include "estimator/ops/registry.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace memest {
namespace {

// Every op family. A new family adds one line here and one file in ops/.
OpTable (*const kFamilies[])() = {
    conv_ops, pool_ops,  matmul_ops, elementwise_ops, activation_ops, norm_ops,
    reduce_ops, shape_ops, arith_ops, rnn_ops,        fused_ops, resample_ops,
};

struct Registry {
  std::unordered_map<std::string, const OpInfo*> by_key;
  std::vector<const OpInfo*> all;
  Registry() {
    for (auto family : kFamilies) {
      OpTable t = family();
      for (size_t i = 0; i < t.size; ++i) {
        const OpInfo* info = t.begin + i;
        by_key.emplace(std::string(info->domain) + "::" + info->op, info);
        all.push_back(info);
      }
    }
    std::sort(all.begin(), all.end(), [](const OpInfo* a, const OpInfo* b) {
      int f = std::strcmp(a->family, b->family);
      return f != 0 ? f < 0 : std::strcmp(a->op, b->op) < 0;
    });
  }
};

const Registry& registry() {
  static const Registry r;
  return r;
}

}  // namespace

const OpInfo* find_op(const std::string& domain, const std::string& op) {
  const std::string d = domain == "ai.onnx" ? "" : domain;
  auto& r = registry().by_key;
  auto it = r.find(d + "::" + op);
  return it == r.end() ? nullptr : it->second;
}

std::vector<const OpInfo*> all_ops() { return registry().all; }

}  // namespace memest
