#include "frontends/fx_node.h"

#include <charconv>
#include <string>

namespace memest {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

std::optional<double> number(std::string_view s) {
  s = trim(s);
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// The text between `open` and its matching `close` after `marker`, or "" when absent.
std::string_view enclosed(std::string_view s, std::string_view marker, char open, char close) {
  const size_t at = s.find(marker);
  if (at == std::string_view::npos) return {};
  size_t i = at + marker.size();
  if (i >= s.size() || s[i] != open) return {};
  int depth = 0;
  for (size_t j = i; j < s.size(); ++j) {
    if (s[j] == open) ++depth;
    if (s[j] == close && --depth == 0) return s.substr(i + 1, j - i - 1);
  }
  return {};
}

}  // namespace

std::optional<double> fx_number_arg(std::string_view fx_node, size_t position, std::string_view keyword) {
  // Top-level commas split the positional arguments; nested (), [] and {} do not.
  const std::string_view args = enclosed(fx_node, "args = ", '(', ')');
  size_t index = 0, start = 0;
  int depth = 0;
  for (size_t i = 0; i <= args.size(); ++i) {
    const char c = i < args.size() ? args[i] : ',';
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c != ',' || depth != 0) continue;
    if (index++ == position) return number(args.substr(start, i - start));
    start = i + 1;
  }
  const std::string_view kwargs = enclosed(fx_node, "kwargs = ", '{', '}');
  const std::string key = std::string(keyword) + ": ";
  const size_t at = kwargs.find(key);
  if (keyword.empty() || at == std::string_view::npos) return std::nullopt;
  const std::string_view rest = kwargs.substr(at + key.size());
  return number(rest.substr(0, rest.find(',')));
}

std::vector<std::string_view> fx_value_args(std::string_view fx_node) {
  std::vector<std::string_view> out;
  const size_t args = fx_node.find("](args = ");
  if (args == std::string_view::npos) return out;
  // FX names are Python identifiers; "%" appears nowhere else in the call's text.
  auto ident = [](char c) { return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  for (size_t i = fx_node.find('%', args); i != std::string_view::npos; i = fx_node.find('%', i)) {
    size_t end = ++i;
    while (end < fx_node.size() && ident(fx_node[end])) ++end;
    if (end > i) out.push_back(fx_node.substr(i, end - i));
    i = end;
  }
  return out;
}

std::string_view fx_call_name(std::string_view fx_node) {
  if (!fx_node.starts_with('%')) return {};
  const size_t end = fx_node.find(" : ");
  return end == std::string_view::npos ? std::string_view() : fx_node.substr(1, end - 1);
}

std::optional<double> fx_sdpa_dropout(std::string_view fx_node) {
  if (fx_node.find("aten.scaled_dot_product_attention") == std::string_view::npos) return std::nullopt;
  return fx_number_arg(fx_node, 4, "dropout_p");
}

}  // namespace memest
