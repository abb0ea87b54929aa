// Symbolic integer dimensions: polynomials in named symbols (batch, seq, ...).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memest {

using SymbolId = uint32_t;

/// Interns a symbol name ("batch") and returns its id; ids are process-wide.
SymbolId intern_symbol(const std::string& name);
/// The name an id was interned with.
const std::string& symbol_name(SymbolId id);
/// Number of symbols interned so far.
size_t symbol_count();

/// Values for symbols; a symbol without a value makes eval() throw.
class Bindings {
 public:
  void set(SymbolId id, int64_t value);
  void set(const std::string& name, int64_t value) { set(intern_symbol(name), value); }
  std::optional<int64_t> get(SymbolId id) const;

 private:
  std::vector<int64_t> values_;
  std::vector<bool> bound_;
};

/// 64-bit arithmetic that throws memest::Error on overflow.
int64_t checked_add(int64_t a, int64_t b);
int64_t checked_mul(int64_t a, int64_t b);

/// An integer polynomial: a sum of coefficient * product-of-symbols terms.
/// Shapes stay in this form until a number is asked for, so a batch sweep
/// evaluates the same expressions instead of re-running the shape pass.
class Expr {
 public:
  Expr() = default;
  Expr(int64_t constant);  // NOLINT: implicit, so shapes read as {batch, 3, 224}
  static Expr symbol(const std::string& name);
  static Expr symbol(SymbolId id);

  bool is_const() const;
  std::optional<int64_t> as_const() const;
  bool is_zero() const { return terms_.empty(); }
  /// True when the leading term is a lone symbol with coefficient 1.
  std::optional<SymbolId> as_symbol() const;
  /// Symbols that occur in the expression, sorted, without repeats.
  std::vector<SymbolId> symbols() const;

  friend Expr operator+(const Expr& a, const Expr& b);
  friend Expr operator-(const Expr& a, const Expr& b);
  friend Expr operator*(const Expr& a, const Expr& b);
  friend bool operator==(const Expr& a, const Expr& b) { return a.terms_ == b.terms_; }
  friend bool operator!=(const Expr& a, const Expr& b) { return !(a == b); }
  Expr& operator+=(const Expr& o) { return *this = *this + o; }
  Expr& operator*=(const Expr& o) { return *this = *this * o; }

  /// a / b when it is exact term by term (b a single term); nullopt otherwise.
  std::optional<Expr> div_exact(const Expr& b) const;
  /// floor(a / d) for a constant d > 0: exact for constants and for
  /// polynomials whose coefficients d divides; nullopt otherwise.
  std::optional<Expr> floordiv(int64_t d) const;
  /// Replaces every occurrence of symbol `s` by the expression `with`.
  Expr replace(SymbolId s, const Expr& with) const;
  /// Substitutes bound symbols with their values (unbound ones stay).
  Expr substitute(const Bindings& b) const;
  /// The value under the bindings; throws Error on an unbound symbol or overflow.
  int64_t eval(const Bindings& b) const;
  /// Readable form: "64*batch + 3".
  std::string str() const;

 private:
  struct Term {
    int64_t coeff;
    std::vector<SymbolId> syms;  // sorted, repeated for powers
    bool operator==(const Term& o) const { return coeff == o.coeff && syms == o.syms; }
  };
  void normalize();
  std::vector<Term> terms_;  // sorted by syms, no zero coefficients
};

/// Product of dims (element count); a scalar (no dims) is 1.
Expr product(const std::vector<Expr>& dims);
/// "[batch, 3, 224, 224]".
std::string shape_str(const std::vector<Expr>& dims);

}  // namespace memest
