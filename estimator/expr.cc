// Integer polynomials over interned symbols, with overflow-checked arithmetic.
#include "estimator/expr.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "estimator/error.h"

namespace memest {
namespace {

struct SymbolTable {
  std::mutex mu;
  std::vector<std::string> names;
  std::unordered_map<std::string, SymbolId> ids;
};

SymbolTable& table() {
  static SymbolTable t;
  return t;
}

}  // namespace

SymbolId intern_symbol(const std::string& name) {
  auto& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.ids.find(name);
  if (it != t.ids.end()) return it->second;
  SymbolId id = static_cast<SymbolId>(t.names.size());
  t.names.push_back(name);
  t.ids.emplace(name, id);
  return id;
}

const std::string& symbol_name(SymbolId id) {
  auto& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.names.at(id);
}

size_t symbol_count() {
  auto& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.names.size();
}

void Bindings::set(SymbolId id, int64_t value) {
  if (id >= values_.size()) {
    values_.resize(id + 1, 0);
    bound_.resize(id + 1, false);
  }
  values_[id] = value;
  bound_[id] = true;
}

std::optional<int64_t> Bindings::get(SymbolId id) const {
  if (id < bound_.size() && bound_[id]) return values_[id];
  return std::nullopt;
}

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw Error("size arithmetic overflows 64 bits");
  return r;
}

int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw Error("size arithmetic overflows 64 bits");
  return r;
}

Expr::Expr(int64_t constant) {
  if (constant != 0) terms_.push_back({constant, {}});
}

Expr Expr::symbol(const std::string& name) { return symbol(intern_symbol(name)); }

Expr Expr::symbol(SymbolId id) {
  Expr e;
  e.terms_.push_back({1, {id}});
  return e;
}

bool Expr::is_const() const { return terms_.empty() || (terms_.size() == 1 && terms_[0].syms.empty()); }

std::optional<int64_t> Expr::as_const() const {
  if (terms_.empty()) return 0;
  if (terms_.size() == 1 && terms_[0].syms.empty()) return terms_[0].coeff;
  return std::nullopt;
}

std::optional<SymbolId> Expr::as_symbol() const {
  if (terms_.size() == 1 && terms_[0].coeff == 1 && terms_[0].syms.size() == 1) return terms_[0].syms[0];
  return std::nullopt;
}

std::vector<SymbolId> Expr::symbols() const {
  std::vector<SymbolId> out;
  for (const auto& t : terms_) out.insert(out.end(), t.syms.begin(), t.syms.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void Expr::normalize() {
  std::sort(terms_.begin(), terms_.end(), [](const Term& a, const Term& b) { return a.syms < b.syms; });
  std::vector<Term> merged;
  for (auto& t : terms_) {
    if (!merged.empty() && merged.back().syms == t.syms) {
      merged.back().coeff = checked_add(merged.back().coeff, t.coeff);
    } else {
      merged.push_back(std::move(t));
    }
  }
  merged.erase(std::remove_if(merged.begin(), merged.end(), [](const Term& t) { return t.coeff == 0; }),
               merged.end());
  terms_ = std::move(merged);
}

Expr operator+(const Expr& a, const Expr& b) {
  if (b.terms_.empty()) return a;
  if (a.terms_.empty()) return b;
  if (a.is_const() && b.is_const()) return Expr(checked_add(*a.as_const(), *b.as_const()));
  Expr r = a;
  r.terms_.insert(r.terms_.end(), b.terms_.begin(), b.terms_.end());
  r.normalize();
  return r;
}

Expr operator-(const Expr& a, const Expr& b) {
  Expr nb = b;
  for (auto& t : nb.terms_) t.coeff = checked_mul(t.coeff, -1);
  return a + nb;
}

Expr operator*(const Expr& a, const Expr& b) {
  if (a.terms_.empty() || b.terms_.empty()) return Expr();
  if (a.is_const() && b.is_const()) return Expr(checked_mul(*a.as_const(), *b.as_const()));
  Expr r;
  r.terms_.reserve(a.terms_.size() * b.terms_.size());
  for (const auto& x : a.terms_) {
    for (const auto& y : b.terms_) {
      Expr::Term t{checked_mul(x.coeff, y.coeff), x.syms};
      t.syms.insert(t.syms.end(), y.syms.begin(), y.syms.end());
      std::sort(t.syms.begin(), t.syms.end());
      r.terms_.push_back(std::move(t));
    }
  }
  r.normalize();
  return r;
}

std::optional<Expr> Expr::div_exact(const Expr& b) const {
  if (b.terms_.size() != 1) {
    if (*this == b && !b.terms_.empty()) return Expr(1);
    return std::nullopt;
  }
  const Term& d = b.terms_[0];
  Expr r;
  for (const auto& t : terms_) {
    if (t.coeff % d.coeff != 0) return std::nullopt;
    // Remove d's symbols (a multiset) from t's.
    std::vector<SymbolId> rest;
    if (!std::includes(t.syms.begin(), t.syms.end(), d.syms.begin(), d.syms.end())) return std::nullopt;
    std::set_difference(t.syms.begin(), t.syms.end(), d.syms.begin(), d.syms.end(), std::back_inserter(rest));
    r.terms_.push_back({t.coeff / d.coeff, std::move(rest)});
  }
  r.normalize();
  return r;
}

std::optional<Expr> Expr::floordiv(int64_t d) const {
  if (d <= 0) return std::nullopt;
  if (auto c = as_const()) {
    int64_t q = *c / d;
    if ((*c % d != 0) && (*c < 0)) --q;
    return Expr(q);
  }
  return div_exact(Expr(d));
}

Expr Expr::replace(SymbolId s, const Expr& with) const {
  Expr r;
  for (const auto& t : terms_) {
    Expr term(t.coeff);
    for (SymbolId x : t.syms) term = term * (x == s ? with : Expr::symbol(x));
    r = r + term;
  }
  return r;
}

Expr Expr::substitute(const Bindings& b) const {
  Expr r;
  for (const auto& t : terms_) {
    Expr::Term nt{t.coeff, {}};
    for (SymbolId s : t.syms) {
      if (auto v = b.get(s)) {
        nt.coeff = checked_mul(nt.coeff, *v);
      } else {
        nt.syms.push_back(s);
      }
    }
    r.terms_.push_back(std::move(nt));
  }
  r.normalize();
  return r;
}

int64_t Expr::eval(const Bindings& b) const {
  int64_t sum = 0;
  for (const auto& t : terms_) {
    int64_t v = t.coeff;
    for (SymbolId s : t.syms) {
      auto x = b.get(s);
      if (!x) throw Error("dimension '" + symbol_name(s) + "' has no value: pass --dim " + symbol_name(s) + "=N");
      v = checked_mul(v, *x);
    }
    sum = checked_add(sum, v);
  }
  return sum;
}

std::string Expr::str() const {
  if (terms_.empty()) return "0";
  std::string out;
  // Highest-degree terms first reads naturally: "64*batch + 3".
  for (auto it = terms_.rbegin(); it != terms_.rend(); ++it) {
    const Term& t = *it;
    int64_t c = t.coeff;
    if (!out.empty()) {
      out += c < 0 ? " - " : " + ";
      c = c < 0 ? -c : c;
    }
    std::string syms;
    for (SymbolId s : t.syms) syms += (syms.empty() ? "" : "*") + symbol_name(s);
    if (syms.empty()) {
      out += std::to_string(c);
    } else if (c == 1) {
      out += syms;
    } else if (c == -1) {
      out += "-" + syms;
    } else {
      out += std::to_string(c) + "*" + syms;
    }
  }
  return out;
}

Expr product(const std::vector<Expr>& dims) {
  Expr p(1);
  for (const auto& d : dims) p = p * d;
  return p;
}

std::string shape_str(const std::vector<Expr>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dims[i].str();
  return s + "]";
}

}  // namespace memest
