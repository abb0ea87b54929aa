// Casts a float32 export dropped, put back (norm_casts.h): transformers' RMSNorm, the
// legacy spelling of `x.float() ... .to(x_dtype)`, and timm's EvoNorm.
//
// RMSNorm's code (modeling_llama.py LlamaRMSNorm.forward; Qwen3, OLMo2, Mistral and the rest
// copy it):
//     input_dtype = hidden_states.dtype
//     hidden_states = hidden_states.to(torch.float32)
//     variance = hidden_states.pow(2).mean(-1, keepdim=True)
//     hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
//     return self.weight * hidden_states.to(input_dtype)
// PyTorch keeps the float32 copy (pow's and the product's backward), rstd, and the rows
// cast back (the weight's gradient); the output is float32 (a float32 weight times half
// rows). The export keeps Pow(x) ... Mul(x, rstd) -> Mul(weight, .). Measured under bf16
// autocast, run as exported: sh_qwen3_cls +2.5%, sh_olmo2_cls +2.5%, sh_olmo2_lm and
// sh_olmo3_lm +0.9%, sh_exaone4_lm +1.9% (q_norm and k_norm read q_proj's bf16 output),
// sh_deepseek_v3_cls +5.3%, every one of them within 0.1% in float32; with the casts put
// back, within 0.1% in bf16 too.
#include "estimator/norm_casts.h"

#include "estimator/ops/op_info.h"
#include "estimator/ops/registry.h"

#include <optional>
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace memest {
namespace {

// The one live node reading tensor t (consumer links as the reader made them), or -1.
int sole_reader(const Graph& g, int t) {
  if (t < 0 || g.tensors[t].graph_output || g.tensors[t].consumers.size() != 1) return -1;
  const int c = g.tensors[t].consumers[0];
  return g.nodes[c].dead ? -1 : c;
}

// The node making t when it is a live `op`, else -1.
int made_by(const Graph& g, int t, std::string_view op) {
  const int p = t >= 0 ? g.tensors[t].producer : -1;
  return p >= 0 && !g.nodes[p].dead && g.nodes[p].op == op ? p : -1;
}

bool is_two(const Graph& g, int t) {
  if (t < 0) return false;
  const Tensor& c = g.tensors[t];
  if (c.fvalue && c.fvalue->size() == 1) return (*c.fvalue)[0] == 2.0;
  if (c.value && c.value->size() == 1) return (*c.value)[0] == Expr(2);
  return false;
}

// The source line of the statement node n was traced in ("" without a trace).
const std::string& statement_code(const Graph& g, const Node& n) {
  static const std::string kNone;
  const PyStatement* s = g.python.statement_of(n.py_stack);
  return s ? s->code : kNone;
}

// Where the weight's statement casts back, by its last `.to(`: 'o' on an operand (`weight *
// x.to(input_dtype)`), 'p' on the product (`(weight * x).to(input_dtype)`; Helium's
// `(self.weight.to(torch.float32) * x).to(input_dtype)`), 0 when it does not. A cast to
// float32 is an upcast, not the cast back to the input's dtype.
char cast_back(const std::string& code) {
  const size_t at = code.rfind(".to(");
  if (at == std::string::npos || at == 0) return 0;
  const std::string_view arg = std::string_view(code).substr(at + 4, code.find(')', at) - at - 4);
  if (arg.find("float32") != std::string_view::npos || arg == "torch.float") return 0;
  return code[at - 1] == ')' ? 'p' : 'o';
}

// Gemma's RMSNorm normalises `x.float()`, its argument cast by the statement that calls
// the norm (`output = self._norm(x.float())`, the Pow's own frame or its caller's), and
// casts back with `return output.type_as(x)`, a statement that makes no node: the
// exporter names the weight's product after that call (`type_as_1`).
bool upcast_by_caller(const Graph& g, const Node& n) {
  for (size_t up = 0; up < 2; ++up) {
    const PyStatement* s = g.python.statement_of(n.py_stack, up);
    if (s && s->code.find(".float())") != std::string::npos) return true;
  }
  return false;
}

// A weight the rows are scaled by: a parameter, or Gemma's `1.0 + self.weight` (an Add
// of a parameter and a constant).
bool scales_by_weight(const Graph& g, int t) {
  if (t < 0) return false;
  if (g.tensors[t].kind == TensorKind::Parameter) return true;
  const int add = made_by(g, t, "Add");
  if (add < 0 || g.nodes[add].inputs.size() != 2) return false;
  const int a = g.nodes[add].inputs[0], b = g.nodes[add].inputs[1];
  auto param = [&](int u) { return u >= 0 && g.tensors[u].kind == TensorKind::Parameter; };
  auto constant = [&](int u) { return u >= 0 && (g.tensors[u].fvalue || g.tensors[u].value); };
  return (param(a) && constant(b)) || (param(b) && constant(a));
}

struct Norm {
  int pow, scale, weight_mul, x;
  char back;  ///< where the cast back is: 'o' operand, 'p' product, 'u' none (upcast only)
};

// The norm whose weight's Mul is node k: Pow(x, 2) -> ReduceMean -> Add(eps) -> Sqrt ->
// Reciprocal -> Mul(x, rstd) -> Mul(weight, .), each step read once, none of it from
// F.rms_norm (fuse.cc fuses that call as one kernel).
std::optional<Norm> norm_at(const Graph& g, int k) {
  const Node& wm = g.nodes[k];
  if (wm.dead || wm.op != "Mul" || wm.inputs.size() != 2) return std::nullopt;
  const int w = scales_by_weight(g, wm.inputs[0]) ? 0 : 1;
  if (!scales_by_weight(g, wm.inputs[w])) return std::nullopt;
  const int scale = made_by(g, wm.inputs[1 - w], "Mul");
  if (scale < 0 || sole_reader(g, wm.inputs[1 - w]) != k) return std::nullopt;
  const Node& sm = g.nodes[scale];
  if (sm.inputs.size() != 2) return std::nullopt;
  for (int r = 0; r < 2; ++r) {
    const int rec = made_by(g, sm.inputs[r], "Reciprocal");
    const int sqrt = rec >= 0 ? made_by(g, g.nodes[rec].inputs[0], "Sqrt") : -1;
    const int add = sqrt >= 0 ? made_by(g, g.nodes[sqrt].inputs[0], "Add") : -1;
    if (add < 0 || sole_reader(g, sm.inputs[r]) != scale) continue;
    int mean = -1;
    for (int in : g.nodes[add].inputs) mean = mean >= 0 ? mean : made_by(g, in, "ReduceMean");
    const int pow = mean >= 0 ? made_by(g, g.nodes[mean].inputs[0], "Pow") : -1;
    if (pow < 0 || g.nodes[pow].inputs.size() != 2 || !is_two(g, g.nodes[pow].inputs[1])) continue;
    const int x = g.nodes[pow].inputs[0];
    if (x != sm.inputs[1 - r] || g.nodes[pow].attr_int("from_rms_norm", 0) == 1) continue;
    char back = cast_back(statement_code(g, wm));
    if (back == 0 && upcast_by_caller(g, g.nodes[pow])) {
      back = std::string_view(g.tensors[wm.outputs[0]].name).starts_with("type_as") ? 'p' : 'u';
    }
    if (back == 0) return std::nullopt;
    return Norm{pow, scale, k, x, back};
  }
  return std::nullopt;
}

// The graph's nodes with before[k] put in front of node k and after[k] behind it (the
// passes here add casts around the nodes they read; the sort pass orders them anyway).
void splice(Graph& g, std::vector<std::vector<Node>>& before, std::vector<std::vector<Node>>& after) {
  size_t added = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) added += before[k].size() + after[k].size();
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size() + added);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    for (Node& n : before[k]) nodes.push_back(std::move(n));
    nodes.push_back(std::move(g.nodes[k]));
    for (Node& n : after[k]) nodes.push_back(std::move(n));
  }
  g.nodes = std::move(nodes);
  g.relink();
}

Node cast_node(const Node& like, const std::string& name, std::vector<int> inputs, int output) {
  Node n;
  n.op = inputs.size() == 1 ? "Cast" : "CastLike";
  n.name = name;
  n.module = like.module;
  n.py_stack = like.py_stack;
  n.autocast_off = like.autocast_off;
  n.keeps_locals = like.keeps_locals;
  n.inputs = std::move(inputs);
  n.outputs = {output};
  if (n.op == "Cast") {
    Attribute to;
    to.i = 1;  // TensorProto.FLOAT
    n.attrs.emplace("to", std::move(to));
  }
  return n;
}

// The activation x that tensor t is computed from through one Cast to float (`x.float()`),
// within a few ops whose other inputs are constants or parameters: x, or -1 where there is
// none, or more than one.
int upcast_source(const Graph& g, int t) {
  std::vector<int> stack = {t}, seen;
  int source = -1;
  while (!stack.empty()) {
    const int u = stack.back();
    stack.pop_back();
    if (std::find(seen.begin(), seen.end(), u) != seen.end()) continue;
    seen.push_back(u);
    if (seen.size() > 24) return -1;
    const int p = g.tensors[u].producer;
    if (p < 0 || g.nodes[p].dead) return -1;  // an input: not from an upcast alone
    const Node& n = g.nodes[p];
    if (n.op == "Cast" && n.attr_int("to", 0) == 1 && n.inputs.size() == 1 && n.inputs[0] >= 0 &&
        g.tensors[n.inputs[0]].kind == TensorKind::Activation) {
      if (source >= 0 && source != n.inputs[0]) return -1;
      source = n.inputs[0];
      continue;
    }
    for (int in : n.inputs) {
      if (in >= 0 && g.tensors[in].kind == TensorKind::Activation) stack.push_back(in);
    }
  }
  return source;
}


// Whether the graph has a Cast to float, the one op the legacy passes below rewrite.
bool has_float_cast(const Graph& g) {
  for (const Node& n : g.nodes) {
    if (!n.dead && n.op == "Cast" && n.attr_int("to", 0) == 1) return true;
  }
  return false;
}

// Cast n (one input) becomes CastLike(its input, like): `.to(like.dtype)`.
void cast_like(Node& n, int like) {
  n.op = "CastLike";
  n.attrs = Attrs();
  n.inputs = {n.inputs[0], like};
}

// A view a parameter passes through before an elementwise op reads it
// (`self.weight.view(v_shape)`), by the op tables.
bool is_view(const Node& n) {
  const OpInfo* info = find_op(std::string(n.domain), std::string(n.op));
  return info && info->view;
}

// Whether t is a parameter, or a view of one through at most a few views.
bool from_parameter(const Graph& g, int t) {
  for (int depth = 0; depth < 4 && t >= 0; ++depth) {
    if (g.tensors[t].kind == TensorKind::Parameter) return true;
    const int p = g.tensors[t].producer;
    if (p < 0 || g.nodes[p].dead || !is_view(g.nodes[p]) || g.nodes[p].inputs.empty()) return false;
    t = g.nodes[p].inputs[0];
  }
  return false;
}

bool is_activation(const Graph& g, int t) {
  if (t < 0 || g.tensors[t].kind != TensorKind::Activation) return false;
  const int p = g.tensors[t].producer;
  return p >= 0 && g.nodes[p].op != "Constant";
}

// An op of two operands whose result dtype is their promotion (Autocast::Promote: Add,
// Mul, Div, ...): where a float32 parameter makes a half activation's result float32.
bool promotes(const Node& n) {
  if (n.inputs.size() != 2) return false;
  const OpInfo* info = find_op(std::string(n.domain), std::string(n.op));
  return info && info->autocast == Autocast::Promote;
}

// The other operand of binary node n when `operand` is one of its inputs, else -1.
int other_operand(const Node& n, int operand) {
  if (n.inputs[0] == operand) return n.inputs[1];
  return n.inputs[1] == operand ? n.inputs[0] : -1;
}

// Readers of x in a casts_to_input module that compute a statistic of it: the mean, the
// deviation from a mean of x (`var` decomposed), the square (`x.square()`, Pow(x, 2)).
std::vector<int> statistic_readers(const Graph& g, int x) {
  std::vector<int> out;
  for (int r : g.tensors[x].consumers) {
    const Node& n = g.nodes[r];
    if (n.dead || !n.casts_to_input) continue;
    bool stat = n.op == "ReduceMean" || (n.op == "Pow" && n.inputs.size() == 2 && is_two(g, n.inputs[1]));
    if (n.op == "Mul" && n.inputs.size() == 2) stat = n.inputs[0] == x && n.inputs[1] == x;
    if (n.op == "Sub" && n.inputs.size() == 2 && n.inputs[0] == x) {
      const int mean = made_by(g, n.inputs[1], "ReduceMean");
      stat = mean >= 0 && g.nodes[mean].inputs[0] == x;
    }
    if (stat) out.push_back(r);
  }
  return out;
}

// The Sqrt nodes the statistic of `up` reaches within its module (`.add(eps).sqrt()`,
// after which EvoNorm casts back; FilterResponseNorm's `.rsqrt()`, a Sqrt and a Reciprocal
// or an Rsqrt), walking at most a few nodes forward; `seen` gets the nodes walked.
std::vector<int> statistic_roots(const Graph& g, int up, std::vector<int>& seen) {
  std::vector<int> roots, frontier = {up};
  seen.clear();
  while (!frontier.empty() && seen.size() < 24) {
    const int t = frontier.back();
    frontier.pop_back();
    for (int r : g.tensors[t].consumers) {
      const Node& n = g.nodes[r];
      if (n.dead || !n.casts_to_input || std::find(seen.begin(), seen.end(), r) != seen.end()) continue;
      seen.push_back(r);
      if (n.op == "Sqrt" || n.op == "Rsqrt") {
        // `.rsqrt()` written Sqrt -> Reciprocal (the dynamo exporter's): the cast back follows both.
        const int rec = n.outputs.empty() ? -1 : sole_reader(g, n.outputs[0]);
        const bool then_reciprocal = rec >= 0 && g.nodes[rec].op == "Reciprocal" && g.nodes[rec].casts_to_input;
        roots.push_back(then_reciprocal ? rec : r);
        continue;
      }
      for (int out : n.outputs) {
        if (out >= 0) frontier.push_back(out);
      }
    }
  }
  return roots;
}

}  // namespace

int restore_norm_casts(Graph& g) {
  if (g.python.empty()) return 0;
  std::vector<Norm> norms;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (auto m = norm_at(g, static_cast<int>(k))) norms.push_back(*m);
  }
  if (norms.empty()) return 0;
  // The new nodes go just before the node that first reads them; the sort pass orders
  // the graph after this one anyway.
  std::vector<std::vector<Node>> before(g.nodes.size()), after(g.nodes.size());
  for (const Norm& m : norms) {
    const std::string base = std::string(g.nodes[m.pow].name.view());
    const int up = g.new_tensor(base + "_x_float");
    g.tensors[up].dtype = DType::F32;
    before[static_cast<size_t>(m.pow)].push_back(cast_node(g.nodes[m.pow], base + "_upcast", {m.x}, up));
    for (int* in : {&g.nodes[m.pow].inputs[0], &g.nodes[m.scale].inputs[0], &g.nodes[m.scale].inputs[1]}) {
      if (*in == m.x) *in = up;
    }
    Node& wm = g.nodes[m.weight_mul];
    if (m.back == 'u') continue;  // the upcast alone (Gemma's)
    if (m.back == 'o') {  // weight * rows.to(input_dtype)
      const int rows = g.nodes[m.scale].outputs[0];
      const int down = g.new_tensor(base + "_rows_cast_back");
      g.tensors[down].dtype = g.tensors[m.x].dtype;
      for (int& in : wm.inputs) {
        if (in == rows) in = down;
      }
      before[static_cast<size_t>(m.weight_mul)].push_back(cast_node(wm, base + "_cast_back", {rows, m.x}, down));
    } else {  // (weight * rows).to(input_dtype)
      const int out = wm.outputs[0];
      const int product = g.new_tensor(base + "_product");
      g.tensors[product].dtype = g.tensors[out].dtype;
      wm.outputs[0] = product;
      after[static_cast<size_t>(m.weight_mul)].push_back(cast_node(wm, base + "_cast_back", {product, m.x}, out));
    }
  }
  splice(g, before, after);
  return static_cast<int>(norms.size());
}

int restore_cast_backs(Graph& g) {
  if (!has_float_cast(g)) return 0;
  g.relink();
  int changed = 0;
  for (Node& n : g.nodes) {
    if (n.dead || n.op != "Cast" || !n.domain.empty() || n.inputs.size() != 1 || n.attr_int("to", 0) != 1) continue;
    const int source = upcast_source(g, n.inputs[0]);
    if (source < 0) continue;
    cast_like(n, source);
    ++changed;
  }
  if (changed > 0) g.relink();
  return changed;
}

int restore_squares(Graph& g) {
  if (!has_float_cast(g)) return 0;
  g.relink();
  int changed = 0;
  int two = -1;
  for (Node& n : g.nodes) {
    if (n.dead || n.op != "Cast" || !n.domain.empty() || n.inputs.size() != 1 || n.attr_int("to", 0) != 1) continue;
    const int square = n.inputs[0];
    const int sq = made_by(g, square, "Mul");
    if (sq < 0 || g.tensors[square].graph_output) continue;
    Node& m = g.nodes[static_cast<size_t>(sq)];
    if (m.inputs.size() != 2 || m.inputs[0] != m.inputs[1] || !is_activation(g, m.inputs[0])) continue;
    // Read by this Cast, and by restore_cast_backs' casts back for their dtype alone.
    std::vector<int> backs;
    bool only_casts = true;
    for (int c : g.tensors[square].consumers) {
      const Node& r = g.nodes[static_cast<size_t>(c)];
      if (c == static_cast<int>(&n - g.nodes.data())) continue;
      const bool back = r.op == "CastLike" && r.inputs.size() == 2 && r.inputs[1] == square && r.inputs[0] != square;
      only_casts &= back;
      if (back) backs.push_back(c);
    }
    if (!only_casts) continue;
    const int x = m.inputs[0];
    for (int c : backs) g.nodes[static_cast<size_t>(c)].inputs[1] = x;  // `.to(x.dtype)`: x's, not the float square's
    if (two < 0) {
      two = g.new_tensor("memest_square_exponent");
      Tensor& t = g.tensors[static_cast<size_t>(two)];
      t.kind = TensorKind::Constant;
      t.dtype = DType::F32;
      t.shape = Shape{};
      t.fvalue = std::vector<double>{2.0};
    }
    m.op = "Pow";
    m.inputs[1] = two;
    ++changed;
  }
  if (changed > 0) g.relink();
  return changed;
}

int restore_parameter_casts(Graph& g) {
  // Modules that cast a statistic back to their input's dtype (restore_cast_backs's
  // CastLike, or the file's own): code written for autocast, where a parameter's `.to(`
  // follows the input. Elsewhere a parameter's Cast is as likely `.to(device)` (BART's
  // `final_logits_bias.to(lm_logits.device)`, whose sum with half logits is float32).
  std::vector<Atom> aware;
  for (const Node& n : g.nodes) {
    if (!n.dead && n.op == "CastLike" && std::find(aware.begin(), aware.end(), n.module) == aware.end()) {
      aware.push_back(n.module);
    }
  }
  if (aware.empty()) return 0;
  g.relink();
  int changed = 0;
  for (Node& n : g.nodes) {
    if (n.dead || n.op != "Cast" || !n.domain.empty() || n.inputs.size() != 1 || n.outputs.empty() ||
        n.attr_int("to", 0) != 1 || !from_parameter(g, n.inputs[0]) ||
        std::find(aware.begin(), aware.end(), n.module) == aware.end()) {
      continue;
    }
    const int reader = sole_reader(g, n.outputs[0]);
    if (reader < 0 || !promotes(g.nodes[reader])) continue;
    const int x = other_operand(g.nodes[reader], n.outputs[0]);
    if (!is_activation(g, x)) continue;
    cast_like(n, x);
    ++changed;
  }
  if (changed > 0) g.relink();
  return changed;
}

int restore_module_casts(Graph& g) {
  bool any = false;
  for (const Node& n : g.nodes) any |= !n.dead && n.casts_to_input;
  if (!any) return 0;
  g.relink();
  std::vector<std::vector<Node>> before(g.nodes.size()), after(g.nodes.size());
  int changed = 0;
  // `self.weight.view(v_shape).to(x_dtype)`: the parameter operand follows x.
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    Node& n = g.nodes[k];
    if (n.dead || !n.casts_to_input || !promotes(n)) continue;
    for (int i = 0; i < 2; ++i) {
      const int p = n.inputs[i], x = n.inputs[1 - i];
      if (!from_parameter(g, p) || !is_activation(g, x)) continue;
      const std::string base = std::string(n.name.view()) + "_param" + std::to_string(i);
      const int cast = g.new_tensor(base + "_to_input");
      g.tensors[cast].dtype = g.tensors[x].dtype;
      before[k].push_back(cast_node(n, base + "_cast", {p, x}, cast));
      n.inputs[i] = cast;
      ++changed;
    }
  }
  // `x.float().var(...).add(eps).sqrt().to(x_dtype)`: one float copy that the statistic
  // reads, and its root cast back to x's dtype.
  std::vector<bool> in_statistic(g.nodes.size(), false);  // what a statistic's walk took
  std::vector<int> walked;
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const int x = static_cast<int>(t);
    // Not x's copy, nor what is computed from it (a second run: upcast_source).
    if (!is_activation(g, x) || made_by(g, x, "Cast") >= 0 || in_statistic[g.tensors[x].producer] ||
        upcast_source(g, x) >= 0) {
      continue;
    }
    const std::vector<int> readers = statistic_readers(g, x);
    if (readers.empty()) continue;
    const int first = *std::min_element(readers.begin(), readers.end());
    const std::string base = std::string(g.nodes[first].name.view());
    const int up = g.new_tensor(base + "_x_float");
    g.tensors[up].dtype = DType::F32;
    before[static_cast<size_t>(first)].push_back(cast_node(g.nodes[first], base + "_upcast", {x}, up));
    for (int r : readers) {
      for (int& in : g.nodes[r].inputs) {
        if (in == x) in = up;
      }
    }
    g.tensors[up].consumers = readers;  // read by statistic_roots before the relink below
    const std::vector<int> roots = statistic_roots(g, up, walked);
    for (int w : walked) in_statistic[static_cast<size_t>(w)] = true;
    for (int root : roots) {
      Node& sq = g.nodes[root];
      const int out = sq.outputs[0];
      const int fp = g.new_tensor(std::string(sq.name.view()) + "_float");
      g.tensors[fp].dtype = DType::F32;
      sq.outputs[0] = fp;
      after[static_cast<size_t>(root)].push_back(cast_node(sq, std::string(sq.name.view()) + "_cast_back", {fp, x}, out));
    }
    ++changed;
  }
  if (changed == 0) return 0;
  splice(g, before, after);
  return changed;
}

}  // namespace memest
