// `memest ops`: the op table, straight from the registry.
#include <cstdio>
#include <iostream>
#include <set>

#include "cli/commands.h"
#include "estimator/error.h"
#include "estimator/ops/registry.h"

namespace memest {

std::function<int()> setup_ops(CLI::App& app) {
  auto family = std::make_shared<std::string>();
  app.add_option("--family", *family, "only this family (conv, matmul, norm, ...)");
  return [family]() {
    std::set<std::string> families;
    for (const OpInfo* op : all_ops()) families.insert(op->family);
    if (!family->empty() && !families.count(*family)) {
      std::string list;
      for (const auto& f : families) list += (list.empty() ? "" : ", ") + f;
      throw Error("--family takes one of " + list + "; not '" + *family + "'");
    }
    std::printf("%-12s %-26s %-8s %-6s %-6s %-6s %s\n", "family", "op", "autocast", "saves", "grads", "view", "note");
    for (const OpInfo* op : all_ops()) {
      if (!family->empty() && *family != op->family) continue;
      std::string saves;
      for (int i = 0; i < 8; ++i) {
        if (op->saves_input(i)) saves += "i" + std::to_string(i);
        else if ((op->saved_if_other >> i) & 1u) saves += "(i" + std::to_string(i) + ")";
      }
      for (int i = 0; i < 4; ++i) {
        if (op->saves_output(i)) saves += "o" + std::to_string(i);
      }
      if (op->saved_extra) saves += "+x";
      std::string name = std::string(op->domain).empty() ? op->op : std::string(op->domain) + "::" + op->op;
      std::printf("%-12s %-26s %-8s %-6s %-6s %-6s %s\n", op->family, name.c_str(), autocast_name(op->autocast),
                  saves.empty() ? "--" : saves.c_str(), *op->grads ? op->grads : "--", op->view ? "yes" : "--",
                  op->note);
    }
    std::printf("\nsaves: iN input kept for backward, (iN) kept only when another input needs a gradient,\n"
                "oN output kept, +x extra tensors (masks, indices, statistics). grads per input: A allocates,\n"
                "V passes the output's gradient through, N none.\n");
    return 0;
  };
}

}  // namespace memest
