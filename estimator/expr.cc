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

void throw_overflow() { throw Error("size arithmetic overflows 64 bits"); }

Expr Expr::symbol(const std::string& name) { return symbol(intern_symbol(name)); }

Expr Expr::symbol(SymbolId id) { return Expr(1, id); }

size_t Expr::hash_terms() const {
  size_t h = terms_->size();
  for (const Term& t : *terms_) {
    h = h * 31 + static_cast<size_t>(t.coeff);
    for (SymbolId s : t.syms) h = h * 31 + s;
  }
  return h;
}

Expr::Terms Expr::terms() const {
  if (terms_) return *terms_;
  if (coeff_ == 0) return {};
  if (sym_ == kNoSymbol) return {{coeff_, {}}};
  return {{coeff_, {sym_}}};
}

Expr Expr::from_terms(Terms t) {
  std::sort(t.begin(), t.end(), [](const Term& a, const Term& b) { return a.syms < b.syms; });
  Terms merged;
  merged.reserve(t.size());
  for (auto& x : t) {
    if (!merged.empty() && merged.back().syms == x.syms) {
      merged.back().coeff = checked_add(merged.back().coeff, x.coeff);
    } else {
      merged.push_back(std::move(x));
    }
  }
  merged.erase(std::remove_if(merged.begin(), merged.end(), [](const Term& x) { return x.coeff == 0; }),
               merged.end());
  if (merged.empty()) return Expr();
  if (merged.size() == 1 && merged[0].syms.empty()) return Expr(merged[0].coeff);
  if (merged.size() == 1 && merged[0].syms.size() == 1) return Expr(merged[0].coeff, merged[0].syms[0]);
  Expr e;
  e.terms_ = std::make_unique<Terms>(std::move(merged));
  return e;
}

std::vector<SymbolId> Expr::symbols() const {
  if (!terms_) return sym_ == kNoSymbol ? std::vector<SymbolId>{} : std::vector<SymbolId>{sym_};
  std::vector<SymbolId> out;
  for (const auto& t : *terms_) out.insert(out.end(), t.syms.begin(), t.syms.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Expr operator+(const Expr& a, const Expr& b) {
  if (b.is_zero()) return a;
  if (a.is_zero()) return b;
  if (!a.terms_ && !b.terms_ && a.sym_ == b.sym_) {
    // Two constants, or two multiples of one symbol.
    const int64_t c = checked_add(a.coeff_, b.coeff_);
    return c == 0 ? Expr() : Expr(c, a.sym_);
  }
  Expr::Terms t = a.terms();
  Expr::Terms bt = b.terms();
  t.insert(t.end(), std::make_move_iterator(bt.begin()), std::make_move_iterator(bt.end()));
  return Expr::from_terms(std::move(t));
}

Expr operator-(const Expr& a, const Expr& b) {
  if (!b.terms_) return a + Expr(checked_mul(b.coeff_, -1), b.sym_);
  Expr::Terms nb = *b.terms_;
  for (auto& t : nb) t.coeff = checked_mul(t.coeff, -1);
  Expr::Terms t = a.terms();
  t.insert(t.end(), std::make_move_iterator(nb.begin()), std::make_move_iterator(nb.end()));
  return Expr::from_terms(std::move(t));
}

Expr operator*(const Expr& a, const Expr& b) {
  if (a.is_zero() || b.is_zero()) return Expr();
  if (!a.terms_ && !b.terms_ && (a.sym_ == Expr::kNoSymbol || b.sym_ == Expr::kNoSymbol)) {
    // A constant times a constant or a monomial: the product of nonzero
    // coefficients is nonzero (or overflows and throws).
    return Expr(checked_mul(a.coeff_, b.coeff_), a.sym_ == Expr::kNoSymbol ? b.sym_ : a.sym_);
  }
  const Expr::Terms at = a.terms(), bt = b.terms();
  Expr::Terms r;
  r.reserve(at.size() * bt.size());
  for (const auto& x : at) {
    for (const auto& y : bt) {
      Expr::Term t{checked_mul(x.coeff, y.coeff), x.syms};
      t.syms.insert(t.syms.end(), y.syms.begin(), y.syms.end());
      std::sort(t.syms.begin(), t.syms.end());
      r.push_back(std::move(t));
    }
  }
  return Expr::from_terms(std::move(r));
}

std::optional<Expr> Expr::div_exact(const Expr& b) const {
  if (!terms_ && !b.terms_ && b.sym_ == kNoSymbol && sym_ == kNoSymbol) {
    // Constants: INT64_MIN / -1 is the one quotient that does not fit.
    if (b.coeff_ == 0) return std::nullopt;
    if (b.coeff_ == -1 && coeff_ == INT64_MIN) throw_overflow();
    if (coeff_ % b.coeff_ != 0) return std::nullopt;
    return Expr(coeff_ / b.coeff_);
  }
  const Terms bt = b.terms();
  if (bt.size() != 1) {
    if (*this == b && !bt.empty()) return Expr(1);
    return std::nullopt;
  }
  const Term& d = bt[0];
  Terms r;
  for (const auto& t : terms()) {
    if (d.coeff == -1 && t.coeff == INT64_MIN) throw_overflow();
    if (t.coeff % d.coeff != 0) return std::nullopt;
    // Remove d's symbols (a multiset) from t's.
    std::vector<SymbolId> rest;
    if (!std::includes(t.syms.begin(), t.syms.end(), d.syms.begin(), d.syms.end())) return std::nullopt;
    std::set_difference(t.syms.begin(), t.syms.end(), d.syms.begin(), d.syms.end(), std::back_inserter(rest));
    r.push_back({t.coeff / d.coeff, std::move(rest)});
  }
  return from_terms(std::move(r));
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
  if (!terms_) return sym_ == s ? Expr(coeff_) * with : *this;
  Expr r;
  for (const auto& t : *terms_) {
    Expr term(t.coeff);
    for (SymbolId x : t.syms) term = term * (x == s ? with : Expr::symbol(x));
    r = r + term;
  }
  return r;
}

Expr Expr::substitute(const Bindings& b) const {
  if (!terms_) {
    if (sym_ == kNoSymbol) return *this;
    if (auto v = b.get(sym_)) return Expr(checked_mul(coeff_, *v));
    return *this;
  }
  Terms r;
  for (const auto& t : *terms_) {
    Term nt{t.coeff, {}};
    for (SymbolId s : t.syms) {
      if (auto v = b.get(s)) {
        nt.coeff = checked_mul(nt.coeff, *v);
      } else {
        nt.syms.push_back(s);
      }
    }
    r.push_back(std::move(nt));
  }
  return from_terms(std::move(r));
}

void Expr::unbound(SymbolId s) {
  throw Error("dimension '" + symbol_name(s) + "' has no value: pass --dim " + symbol_name(s) + "=N");
}

int64_t Expr::eval(const Bindings& b) const {
  if (!terms_) {
    if (sym_ == kNoSymbol) return coeff_;
    auto x = b.get(sym_);
    if (!x) unbound(sym_);
    return checked_mul(coeff_, *x);
  }
  int64_t sum = 0;
  for (const auto& t : *terms_) {
    int64_t v = t.coeff;
    for (SymbolId s : t.syms) {
      auto x = b.get(s);
      if (!x) unbound(s);
      v = checked_mul(v, *x);
    }
    sum = checked_add(sum, v);
  }
  return sum;
}

std::string Expr::str() const {
  const Terms all = terms();
  if (all.empty()) return "0";
  std::string out;
  // Highest-degree terms first reads naturally: "64*batch + 3".
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
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

namespace {

// Recursive descent over sum := term (('+'|'-') term)*, term := factor ('*' factor)*,
// factor := integer | name | '(' sum ')' | '-' factor.
class ExprParser {
 public:
  explicit ExprParser(std::string_view s) : s_(s) {}
  std::optional<Expr> parse() {
    auto e = sum();
    skip();
    if (!e || i_ != s_.size()) return std::nullopt;
    return e;
  }

 private:
  void skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  }
  bool eat(char c) {
    skip();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  std::optional<Expr> sum() {
    auto e = term();
    while (e) {
      if (eat('+')) {
        auto t = term();
        if (!t) return std::nullopt;
        *e = *e + *t;
      } else if (eat('-')) {
        auto t = term();
        if (!t) return std::nullopt;
        *e = *e - *t;
      } else {
        break;
      }
    }
    return e;
  }
  std::optional<Expr> term() {
    auto e = factor();
    while (e && eat('*')) {
      if (i_ < s_.size() && s_[i_] == '*') return std::nullopt;  // '**' is a power: not ours
      auto f = factor();
      if (!f) return std::nullopt;
      *e = *e * *f;
    }
    return e;
  }
  std::optional<Expr> factor() {
    if (++depth_ > 64) return std::nullopt;
    struct Leave {
      int& d;
      ~Leave() { --d; }
    } leave{depth_};
    skip();
    if (i_ >= s_.size()) return std::nullopt;
    const char c = s_[i_];
    if (eat('(')) {
      auto e = sum();
      if (!e || !eat(')')) return std::nullopt;
      return e;
    }
    if (eat('-')) {
      auto f = factor();
      if (!f) return std::nullopt;
      return Expr(0) - *f;
    }
    if (c >= '0' && c <= '9') {
      int64_t v = 0;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s_[i_] - '0', &v)) return std::nullopt;
        ++i_;
      }
      return Expr(v);
    }
    auto word = [](char x, bool first) {
      return x == '_' || (x >= 'a' && x <= 'z') || (x >= 'A' && x <= 'Z') || (!first && ((x >= '0' && x <= '9') || x == '.'));
    };
    if (!word(c, true)) return std::nullopt;
    const size_t start = i_;
    while (i_ < s_.size() && word(s_[i_], false)) ++i_;
    const std::string name(s_.substr(start, i_ - start));
    skip();
    if (i_ < s_.size() && s_[i_] == '(') return std::nullopt;  // a function: floor(...), Max(...)
    return Expr::symbol(name);
  }

  std::string_view s_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

std::optional<Expr> parse_expr(std::string_view text) {
  try {
    return ExprParser(text).parse();
  } catch (const Error&) {
    return std::nullopt;  // overflow
  }
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
