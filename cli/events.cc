// `memest MODEL --events FILE`: the simulated allocation sequence, one event a line.
#include "cli/events.h"

#include <fstream>

#include "cli/report.h"
#include "estimator/error.h"

namespace memest {
namespace {

// A node label on one line of a tab-separated table.
std::string one_field(std::string s) {
  for (char& c : s) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

}  // namespace

void write_events(const std::string& path, const Analysis& a, const Estimate& e) {
  const Program& p = a.program;
  const std::vector<int64_t> size = block_sizes(p, e.bindings, a.train.target->alloc_round);
  std::ofstream f(path, std::ios::binary);
  f << "iteration\tphase\tevent\tbytes\tcategory\tnode\tblock\n";
  for (const Event& ev : p.events) {
    const Block& b = p.blocks[ev.block];
    if (size[ev.block] == 0) continue;  // nothing reaches the allocator
    f << ev.iter + 1 << '\t' << phase_name(ev.phase) << '\t' << (ev.kind == Event::Alloc ? 'A' : 'F') << '\t'
      << size[ev.block] << '\t' << category_key(b.category) << '\t'
      << (b.node >= 0 ? one_field(node_label(a, b.node)) : std::string("-")) << '\t' << ev.block << '\n';
  }
  f.close();
  if (!f) throw Error("cannot write the events file '" + path + "'");
}

}  // namespace memest
