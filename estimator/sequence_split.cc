// The legacy exporter's tensor_split loops as Slices (see sequence_split.h).
#include "estimator/sequence_split.h"

#include <optional>
#include <string>
#include <vector>

namespace memest {
namespace {

const Node* producer_of(const Graph& g, int t) {
  if (t < 0 || g.tensors[t].producer < 0) return nullptr;
  const Node& n = g.nodes[static_cast<size_t>(g.tensors[t].producer)];
  return n.dead || !n.domain.empty() ? nullptr : &n;
}

// A tensor's integer contents where the file fixes them before any shape is known: an
// initializer, a Constant, and Unsqueeze/Squeeze/Identity of one or a Concat of such
// along axis 0 (the sorting pass has not run: producers are read from the links).
std::optional<std::vector<int64_t>> static_ints(const Graph& g, int t, int depth = 0) {
  if (t < 0 || depth > 8) return std::nullopt;
  if (auto known = constant_ints(g, t)) return known;
  const Node* p = producer_of(g, t);
  if (!p) return std::nullopt;
  if ((p->op == "Unsqueeze" || p->op == "Squeeze" || p->op == "Identity") && p->has_input(0)) {
    return static_ints(g, p->inputs[0], depth + 1);
  }
  if (p->op == "Concat" && p->attr_int("axis", 0) == 0) {
    std::vector<int64_t> out;
    for (int in : p->inputs) {
      const auto part = static_ints(g, in, depth + 1);
      if (!part) return std::nullopt;
      out.insert(out.end(), part->begin(), part->end());
    }
    return out;
  }
  return std::nullopt;
}

// The split points c of a last piece's Slice: its start is Unsqueeze(Gather(c, -1)).
std::optional<std::vector<int64_t>> split_points(const Graph& g, const Node& last) {
  const Node* p = producer_of(g, last.inputs[1]);
  if (p && p->op == "Unsqueeze") p = producer_of(g, p->inputs[0]);
  if (!p || p->op != "Gather" || !p->has_input(0)) return std::nullopt;
  return static_ints(g, p->inputs[0]);
}

// A fresh 1-D int64 constant tensor.
int ints_tensor(Graph& g, const std::string& hint, int64_t v) {
  const int id = g.new_tensor(hint);
  Tensor& t = g.tensors[id];
  t.kind = TensorKind::Constant;
  t.dtype = DType::I64;
  t.shape = Shape{Expr(1)};
  t.value = std::vector<Expr>{Expr(v)};
  return id;
}

// The piece SequenceAt `at` reads, as a Slice of x or the last piece: false where the
// pattern is not the tensor_split loop's.
bool rewrite(Graph& g, Node& at) {
  if (at.inputs.size() != 2) return false;
  const Node* insert = producer_of(g, at.inputs[0]);
  if (!insert || insert->op != "SequenceInsert" || insert->inputs.size() != 2) return false;
  const Node* loop = producer_of(g, insert->inputs[0]);
  if (!loop || loop->op != "Loop" || loop->inputs.size() != 3) return false;
  const Node* empty = producer_of(g, loop->inputs[2]);
  const Node* last = producer_of(g, insert->inputs[1]);
  if (!empty || empty->op != "SequenceEmpty" || !last || last->op != "Slice" || last->inputs.size() < 4) return false;
  const auto c = split_points(g, *last);
  const auto k = static_ints(g, at.inputs[1]);
  if (!c || c->size() < 2 || !k || k->size() != 1) return false;
  const int64_t pieces = static_cast<int64_t>(c->size());
  const int64_t i = (*k)[0] < 0 ? (*k)[0] + pieces : (*k)[0];
  if (i < 0 || i >= pieces) return false;
  const int last_out = insert->inputs[1];
  const int x = last->inputs[0], axes = last->inputs[3];
  const std::string base = at.name.empty() ? "sequence_at" : at.name.str();
  at.attrs = Attrs();
  if (i == pieces - 1) {
    at.op = "Identity";
    at.inputs = {last_out};
    return true;
  }
  at.op = "Slice";
  at.inputs = {x, ints_tensor(g, base + "_start", (*c)[static_cast<size_t>(i)]),
               ints_tensor(g, base + "_end", (*c)[static_cast<size_t>(i) + 1]), axes};
  return true;
}

}  // namespace

int split_sequence_loops(Graph& g) {
  bool any = false;
  for (const Node& n : g.nodes) any |= !n.dead && n.op == "SequenceAt";
  if (!any) return 0;
  g.relink();
  int rewritten = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    Node& n = g.nodes[k];
    if (!n.dead && n.domain.empty() && n.op == "SequenceAt" && rewrite(g, n)) ++rewritten;
  }
  if (rewritten == 0) return 0;
  // The Loops and sequences nothing reads any more, and what only they read.
  g.relink();
  bool dropped = true;
  while (dropped) {
    dropped = false;
    for (Node& n : g.nodes) {
      if (n.dead || (n.op != "Loop" && n.op != "SequenceInsert" && n.op != "SequenceEmpty")) continue;
      bool read = false;
      for (int o : n.outputs) read |= o >= 0 && (!g.tensors[o].consumers.empty() || g.tensors[o].graph_output);
      if (read) continue;
      n.dead = true;
      dropped = true;
    }
    if (dropped) g.relink();
  }
  return rewritten;
}

}  // namespace memest
