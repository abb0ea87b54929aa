#include "frontends/fx_node.h"

#include <algorithm>
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

// The text of the positional argument at `position` ("" when the call has fewer).
std::string_view positional(std::string_view fx_node, size_t position) {
  // Top-level commas split the positional arguments; nested (), [] and {} do not.
  const std::string_view args = enclosed(fx_node, "args = ", '(', ')');
  size_t index = 0, start = 0;
  int depth = 0;
  for (size_t i = 0; i <= args.size(); ++i) {
    const char c = i < args.size() ? args[i] : ',';
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c != ',' || depth != 0) continue;
    if (index++ == position) return trim(args.substr(start, i - start));
    start = i + 1;
  }
  return {};
}

}  // namespace

std::optional<double> fx_number_arg(std::string_view fx_node, size_t position, std::string_view keyword) {
  if (const std::string_view arg = positional(fx_node, position); !arg.empty()) return number(arg);
  const std::string_view kwargs = enclosed(fx_node, "kwargs = ", '{', '}');
  const std::string key = std::string(keyword) + ": ";
  const size_t at = kwargs.find(key);
  if (keyword.empty() || at == std::string_view::npos) return std::nullopt;
  const std::string_view rest = kwargs.substr(at + key.size());
  return number(rest.substr(0, rest.find(',')));
}

std::optional<std::vector<int64_t>> fx_int_list_arg(std::string_view fx_node, size_t position) {
  std::string_view arg = positional(fx_node, position);
  if (arg.size() < 2 || arg.front() != '[' || arg.back() != ']') return std::nullopt;
  arg = arg.substr(1, arg.size() - 2);
  std::vector<int64_t> out;
  while (!arg.empty()) {
    const size_t comma = arg.find(',');
    const std::optional<double> v = number(arg.substr(0, comma));
    if (!v || *v != static_cast<double>(static_cast<int64_t>(*v))) return std::nullopt;
    out.push_back(static_cast<int64_t>(*v));
    if (comma == std::string_view::npos) break;
    arg.remove_prefix(comma + 1);
  }
  return out;
}

std::optional<std::vector<int64_t>> fx_conv_padding(std::string_view fx_node) {
  for (std::string_view call : {"aten.conv1d.default", "aten.conv2d.default", "aten.conv3d.default",
                                "aten.convolution.default"}) {
    if (fx_node.find(call) != std::string_view::npos) return fx_int_list_arg(fx_node, 4);
  }
  return std::nullopt;
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

std::string_view fx_call_op(std::string_view name) {
  while (!name.empty() && name.back() >= '0' && name.back() <= '9') name.remove_suffix(1);
  if (name.ends_with('_')) name.remove_suffix(1);
  return name;
}

bool fx_layout_call(std::string_view name) {
  static constexpr std::string_view kLayout[] = {"permute", "t",        "transpose", "view",   "_unsafe_view",
                                                 "reshape", "_to_copy", "unsqueeze", "squeeze"};
  const std::string_view op = fx_call_op(name);
  return std::find(std::begin(kLayout), std::end(kLayout), op) != std::end(kLayout);
}

bool fx_exporter_value(std::string_view name) { return name.starts_with("val_"); }

std::optional<double> fx_sdpa_dropout(std::string_view fx_node) {
  if (fx_node.find("aten.scaled_dot_product_attention") == std::string_view::npos) return std::nullopt;
  return fx_number_arg(fx_node, 4, "dropout_p");
}

}  // namespace memest
