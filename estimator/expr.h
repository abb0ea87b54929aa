// Symbolic integer dimensions: polynomials in named symbols (batch, seq, ...).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
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
  std::optional<int64_t> get(SymbolId id) const {
    if (id < bound_.size() && bound_[id]) return values_[id];
    return std::nullopt;
  }

 private:
  std::vector<int64_t> values_;
  std::vector<bool> bound_;
};

/// Throws memest::Error: "size arithmetic overflows 64 bits".
[[noreturn]] void throw_overflow();

/// 64-bit arithmetic that throws memest::Error on overflow.
inline int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw_overflow();
  return r;
}
inline int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw_overflow();
  return r;
}

/// An integer polynomial: a sum of coefficient * product-of-symbols terms.
/// Shapes stay in this form until a number is asked for, so a batch sweep
/// evaluates the same expressions instead of re-running the shape pass.
class Expr {
 public:
  Expr() = default;
  Expr(int64_t constant) : coeff_(constant) {}  // NOLINT: implicit, so shapes read as {batch, 3, 224}
  Expr(const Expr& o) : coeff_(o.coeff_), sym_(o.sym_), terms_(o.terms_ ? new Terms(*o.terms_) : nullptr) {}
  Expr(Expr&&) noexcept = default;
  Expr& operator=(const Expr& o) {
    if (this != &o) *this = Expr(o);
    return *this;
  }
  Expr& operator=(Expr&&) noexcept = default;
  ~Expr() = default;

  static Expr symbol(const std::string& name);
  static Expr symbol(SymbolId id);

  bool is_const() const { return !terms_ && sym_ == kNoSymbol; }
  std::optional<int64_t> as_const() const {
    if (is_const()) return coeff_;
    return std::nullopt;
  }
  bool is_zero() const { return is_const() && coeff_ == 0; }
  /// True when the leading term is a lone symbol with coefficient 1.
  std::optional<SymbolId> as_symbol() const {
    if (!terms_ && sym_ != kNoSymbol && coeff_ == 1) return sym_;
    return std::nullopt;
  }
  /// Symbols that occur in the expression, sorted, without repeats.
  std::vector<SymbolId> symbols() const;

  friend Expr operator+(const Expr& a, const Expr& b);
  friend Expr operator-(const Expr& a, const Expr& b);
  friend Expr operator*(const Expr& a, const Expr& b);
  friend bool operator==(const Expr& a, const Expr& b) {
    // Canonical forms: a polynomial that fits the inline form is never stored as terms.
    if (!a.terms_ && !b.terms_) return a.coeff_ == b.coeff_ && a.sym_ == b.sym_;
    return a.terms_ && b.terms_ && *a.terms_ == *b.terms_;
  }
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
  /// A hash that agrees with ==.
  size_t hash() const {
    if (terms_) return hash_terms();
    return static_cast<size_t>(coeff_) * 0x9E3779B97F4A7C15ull ^ sym_;
  }

 private:
  struct Term {
    int64_t coeff;
    std::vector<SymbolId> syms;  // sorted, repeated for powers
    bool operator==(const Term& o) const { return coeff == o.coeff && syms == o.syms; }
  };
  using Terms = std::vector<Term>;
  static constexpr SymbolId kNoSymbol = ~SymbolId{0};

  Expr(int64_t coeff, SymbolId sym) : coeff_(coeff), sym_(sym) {}
  /// The term list of either form (sorted by syms, no zero coefficients).
  Terms terms() const;
  /// Sorts and merges `t`, then stores it inline when it fits.
  static Expr from_terms(Terms t);
  [[noreturn]] static void unbound(SymbolId s);
  size_t hash_terms() const;

  // Nearly every dim is a constant or c*symbol ("64*batch"); those live inline
  // (coeff_ * sym_, or the constant coeff_ when sym_ is kNoSymbol, with coeff_ != 0
  // whenever sym_ is set) and cost no allocation. Anything else is a term list.
  int64_t coeff_ = 0;
  SymbolId sym_ = kNoSymbol;
  std::unique_ptr<Terms> terms_;
};

/// Parses a dimension written as a polynomial: integers, symbol names, + - * and
/// parentheses ("64*batch", "s0*s1 + 1", "2*(seq - 1)"); nullopt for anything else
/// (division, Max(...), floor(...)), which an exporter writes for values it could
/// not simplify. What str() prints parses back to the same expression.
std::optional<Expr> parse_expr(std::string_view text);

/// Product of dims (element count); a scalar (no dims) is 1.
Expr product(const std::vector<Expr>& dims);
/// "[batch, 3, 224, 224]".
std::string shape_str(const std::vector<Expr>& dims);

}  // namespace memest
