// Matrix products: MatMul (numpy semantics), Gemm, and Einsum's general equations.
#include <cctype>
#include <map>

#include "estimator/ops/registry.h"
#include "estimator/ops/shape_util.h"

namespace memest {
namespace {

void check_inner(const ShapeContext& ctx, const Expr& k1, const Expr& k2) {
  auto a = k1.as_const(), b = k2.as_const();
  if (a && b && *a != *b) {
    ctx.fail("inner dimensions differ: " + shape_str(ctx.in_shape(0)) + " x " + shape_str(ctx.in_shape(1)));
  }
}

// A 1-D left operand gets a leading 1 and a 1-D right operand a trailing 1,
// both removed from the result; batch dims broadcast.
void matmul(ShapeContext& ctx) {
  Shape a = ctx.in_shape(0), b = ctx.in_shape(1);
  if (a.empty() || b.empty()) ctx.fail("operands must have rank >= 1");
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), Expr(1));
  if (b_vec) b.push_back(Expr(1));
  check_inner(ctx, a.back(), b[b.size() - 2]);
  Shape out = broadcast(ctx, Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  if (!a_vec) out.push_back(a[a.size() - 2]);
  if (!b_vec) out.push_back(b.back());
  ctx.set_output(0, promote(ctx.in_dtype(0), ctx.in_dtype(1)), out);
}

void gemm(ShapeContext& ctx) {
  const Shape& a = ctx.in_shape(0);
  const Shape& b = ctx.in_shape(1);
  if (a.size() != 2 || b.size() != 2) {
    ctx.fail("operands must be matrices, got " + shape_str(a) + " and " + shape_str(b));
  }
  const bool ta = ctx.attr_int("transA", 0) != 0, tb = ctx.attr_int("transB", 0) != 0;
  check_inner(ctx, a[ta ? 0 : 1], b[tb ? 1 : 0]);
  ctx.set_output(0, promote(ctx.in_dtype(0), ctx.in_dtype(1)), {a[ta ? 1 : 0], b[tb ? 0 : 1]});
}

// One side of an einsum equation: letters, and where "..." sits (-1 for nowhere).
struct Term {
  std::string letters;
  int ellipsis = -1;
};

Term parse_term(const ShapeContext& ctx, const std::string& s) {
  Term t;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 3, "...") == 0) {
      if (t.ellipsis >= 0) ctx.fail("more than one '...' in an einsum term");
      t.ellipsis = static_cast<int>(t.letters.size());
      i += 2;
    } else if (std::isalpha(static_cast<unsigned char>(s[i]))) {
      t.letters += s[i];
    } else {
      ctx.fail(std::string("unexpected '") + s[i] + "' in einsum equation");
    }
  }
  return t;
}

void einsum(ShapeContext& ctx) {
  std::string eq;
  for (char c : ctx.attr_string("equation", "")) {
    if (!std::isspace(static_cast<unsigned char>(c))) eq += c;
  }
  if (eq.empty()) ctx.fail("missing attribute 'equation'");
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);

  std::vector<Term> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(parse_term(ctx, lhs.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ctx.num_inputs()) {
    ctx.fail("equation has " + std::to_string(terms.size()) + " operands but the node has " +
             std::to_string(ctx.num_inputs()) + " inputs");
  }

  std::map<char, Expr> dim;
  std::map<char, int> uses;
  Shape ellipsis;
  bool any_ellipsis = false;
  DType dtype = DType::Undefined;
  for (size_t i = 0; i < terms.size(); ++i) {
    const Shape& s = ctx.in_shape(i);
    dtype = promote(dtype, ctx.in_dtype(i));
    const Term& t = terms[i];
    const size_t named = t.letters.size();
    if (s.size() < named || (t.ellipsis < 0 && s.size() != named)) {
      ctx.fail("term '" + t.letters + "' does not match operand " + std::to_string(i) + " of shape " + shape_str(s));
    }
    const size_t spread = s.size() - named;  // dims the ellipsis covers
    if (t.ellipsis >= 0) {
      const auto first = s.begin() + t.ellipsis;
      ellipsis = any_ellipsis ? broadcast(ctx, ellipsis, Shape(first, first + spread)) : Shape(first, first + spread);
      any_ellipsis = true;
    }
    for (size_t k = 0; k < named; ++k) {
      const char c = t.letters[k];
      const Expr& d = s[t.ellipsis >= 0 && static_cast<int>(k) >= t.ellipsis ? k + spread : k];
      ++uses[c];
      auto it = dim.find(c);
      if (it == dim.end()) {
        dim.emplace(c, d);
      } else if (it->second != d) {
        it->second = broadcast(ctx, {it->second}, {d})[0];
      }
    }
  }

  // Implicit output: the ellipsis dims, then letters used once, alphabetically.
  Term out;
  if (arrow == std::string::npos) {
    if (any_ellipsis) out.ellipsis = 0;
    for (const auto& [c, n] : uses) {
      if (n == 1) out.letters += c;
    }
  } else {
    out = parse_term(ctx, eq.substr(arrow + 2));
  }
  Shape result;
  for (size_t k = 0; k <= out.letters.size(); ++k) {
    if (out.ellipsis == static_cast<int>(k)) result.insert(result.end(), ellipsis.begin(), ellipsis.end());
    if (k == out.letters.size()) break;
    auto it = dim.find(out.letters[k]);
    if (it == dim.end()) ctx.fail(std::string("output letter '") + out.letters[k] + "' is not in any operand");
    result.push_back(it->second);
  }
  ctx.set_output(0, dtype, result);
}

constexpr const char* kFamily = "matmul";

const OpInfo kOps[] = {
    {.op = "MatMul", .family = kFamily, .shape = matmul, .autocast = Autocast::Lower, .saved_if_other = bits({0, 1}),
     .grads = "AA", .contiguous_inputs = true, .bmm_operands = true, .cublas = true,
     .note = "each operand kept for the other's gradient; batched operands that are not contiguous are copied"},
    {.op = "Gemm", .family = kFamily, .shape = gemm, .autocast = Autocast::Lower, .saved_if_other = bits({0, 1}),
     .grads = "AAA", .cublas = true, .sums_broadcast_grads = true,
     .note = "addmm; A and B kept for each other's gradient, C's is a reduction"},
    {.op = "Einsum", .family = kFamily, .shape = einsum, .autocast = Autocast::Lower,
     .saved_if_other = bits({0, 1, 2, 3, 4, 5, 6, 7}), .grads = "A", .contiguous_inputs = true,
     .einsum_operands = true, .cublas = true,
     .note = "runs as permutes and bmm; each operand kept for the others' gradients"},
};

}  // namespace

OpTable matmul_ops() { return {kOps, sizeof(kOps) / sizeof(kOps[0])}; }

}  // namespace memest
