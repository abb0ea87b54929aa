// Python stack traces of a dynamo export (pystack.h).
#include "frontends/pystack.h"

#include <cctype>
#include <charconv>

namespace memest {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// Calls f(i, c) for each character of s outside brackets and string literals, until f
// returns true; returns that i, or npos.
template <typename F>
size_t find_top_level(std::string_view s, F f) {
  int depth = 0;
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') quote = c;
    else if (c == '(' || c == '[' || c == '{') ++depth;
    else if (c == ')' || c == ']' || c == '}') --depth;
    else if (depth == 0 && f(i, c)) return i;
  }
  return std::string_view::npos;
}

}  // namespace

Assignment assigned_names(std::string_view code) {
  Assignment a;
  code = trim(code);
  // The first '=' at the top level that is not part of ==, !=, <=, >= or :=.
  const size_t eq = find_top_level(code, [&](size_t i, char c) {
    if (c != '=') return false;
    const char prev = i > 0 ? code[i - 1] : ' ';
    const char next = i + 1 < code.size() ? code[i + 1] : ' ';
    return next != '=' && prev != '=' && prev != '!' && prev != '<' && prev != '>' && prev != ':';
  });
  if (eq == std::string_view::npos) {
    a.continuation = !code.empty() && code.back() == ',';
    return a;
  }
  std::string_view lhs = code.substr(0, eq);
  // x += y, x //= y, x **= y: the operator's characters end the target.
  const std::string_view ops("+-*/%&|^@");
  if (!lhs.empty() && ops.find(lhs.back()) != std::string_view::npos &&
      (lhs.size() < 2 || ops.find(lhs[lhs.size() - 2]) == std::string_view::npos)) {
    a.augmented = lhs.back();  // one character: not //= or **=
  }
  while (!lhs.empty() && std::string_view("+-*/%&|^@").find(lhs.back()) != std::string_view::npos) lhs.remove_suffix(1);
  // x: Type = ...: the annotation goes.
  if (const size_t colon = find_top_level(lhs, [](size_t, char c) { return c == ':'; }); colon != std::string_view::npos) {
    lhs = lhs.substr(0, colon);
  }
  lhs = trim(lhs);
  if (lhs.size() >= 2 && ((lhs.front() == '(' && lhs.back() == ')') || (lhs.front() == '[' && lhs.back() == ']'))) {
    lhs = lhs.substr(1, lhs.size() - 2);
  }
  a.binds = true;
  while (true) {
    const size_t comma = find_top_level(lhs, [](size_t, char c) { return c == ','; });
    std::string_view target = trim(lhs.substr(0, comma));
    if (!target.empty() && target.front() == '*') target.remove_prefix(1);
    if (!target.empty()) {
      if (!identifier(target)) a.binds = false;  // self.x, out[i]: not a local
      a.names.emplace_back(target);
    }
    if (comma == std::string_view::npos) break;
    lhs = lhs.substr(comma + 1);
  }
  if (a.names.empty()) a.binds = false;
  return a;
}

HopCall hop_call(std::string_view trace) {
  HopCall h;
  const size_t frame = trace.find("File \"<eval_with_key>");
  if (frame == std::string_view::npos) return h;
  h.in_body = true;
  // The frame's code line: "matmul = torch.ops.aten.matmul.default(transpose_1, to_2);  ..."
  const size_t eol = trace.find('\n', frame);
  if (eol == std::string_view::npos) return h;
  std::string_view code = trace.substr(eol + 1);
  code = code.substr(0, code.find('\n'));
  const size_t call = code.find("torch.ops.aten.");
  const size_t open = call == std::string_view::npos ? call : code.find('(', call);
  if (open == std::string_view::npos) return h;
  std::string_view args = code.substr(open + 1);
  // The call's closing parenthesis: the first that leaves the depth the call opened.
  int depth = 1;
  size_t close = 0;
  for (; close < args.size() && depth > 0; ++close) depth += args[close] == '(' ? 1 : args[close] == ')' ? -1 : 0;
  args = args.substr(0, depth == 0 ? close - 1 : args.size());
  for (uint32_t i = 0; i < 16 && !args.empty(); ++i) {
    const size_t comma = find_top_level(args, [](size_t, char c) { return c == ','; });
    const std::string_view arg = trim(args.substr(0, comma));
    const std::string_view suffix = arg.starts_with("to_") ? arg.substr(3) : std::string_view("0");
    const bool digits = !suffix.empty() && suffix.find_first_not_of("0123456789") == std::string_view::npos;
    if (arg == "to" || (arg.starts_with("to_") && digits)) h.cast_args = static_cast<uint16_t>(h.cast_args | 1u << i);
    if (comma == std::string_view::npos) break;
    args = args.substr(comma + 1);
  }
  return h;
}

void mark_autocast_block(std::string_view trace, Node& node) {
  if (const HopCall h = hop_call(trace); h.in_body) {
    node.body_autocast_off = !node.autocast_off;
    node.autocast_off = true;
    node.float_inputs = h.cast_args;
  }
}

int PyStackReader::name(const std::string& n) {
  auto [it, fresh] = names_.try_emplace(n, static_cast<int>(out_.names.size()));
  if (fresh) out_.names.push_back(n);
  return it->second;
}

int PyStackReader::instance(std::string_view module_path) {
  return instances_.try_emplace(std::string(module_path), static_cast<int>(instances_.size())).first->second;
}

int PyStackReader::statement(std::string_view file, std::string_view line, std::string_view code) {
  std::string where;
  where.reserve(file.size() + line.size() + 1);
  where.append(file).append(":").append(line);
  auto [it, fresh] = statements_.try_emplace(where, static_cast<int>(out_.statements.size()));
  if (fresh) {
    PyStatement s;
    s.where = std::move(where);
    const Assignment a = assigned_names(code);
    // A higher-order op's body is generated code (torch.fx's GraphModule: File
    // "<eval_with_key>.N") that lets each value go at its last use ("relu_1 =
    // aten.relu(mul_49);  mul_49 = None"): its names hold nothing longer. Its frame is
    // the stack's only one, so it would otherwise pass for the top-level forward's and
    // hold the body's values to the forward's end (DeepSeek-V3.2's no_grad indexer:
    // 68 MB blocks held past lm_head).
    s.binds = a.binds && !file.starts_with("<eval_with_key>");
    s.augmented = a.augmented;
    s.continuation = a.continuation;
    std::from_chars(line.data(), line.data() + line.size(), s.line);
    s.code = std::string(trim(code));
    for (const std::string& n : a.names) s.targets.push_back(name(n));
    out_.statements.push_back(std::move(s));
  }
  return it->second;
}

int PyStackReader::read(std::string_view trace, std::string_view ns) {
  if (trace.empty()) return -1;
  // The namespace's last component is the op; its scope is the same for a module's ops.
  const std::string_view scope = ns.substr(0, ns.rfind('/') == std::string_view::npos ? 0 : ns.rfind('/'));
  std::string key;
  key.reserve(trace.size() + scope.size() + 1);
  key.append(trace).push_back('\x1f');
  key.append(scope);
  if (auto it = stacks_.find(key); it != stacks_.end()) return it->second;

  // The modules whose forward()s the stack passes through, outermost first: the
  // namespace's components ("name: type") that are not ops.
  std::vector<std::string_view> modules;
  for (size_t start = 0; start <= ns.size();) {
    const size_t slash = ns.find('/', start);
    const std::string_view part = ns.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    const size_t colon = part.find(": ");
    const std::string_view type = colon == std::string_view::npos ? std::string_view() : part.substr(colon + 2);
    if (!type.starts_with("aten.") && !type.starts_with("prims.")) modules.push_back(part.substr(0, colon));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }

  std::vector<PyFrame> stack;
  size_t forwards = 0;
  int current = instance(modules.empty() ? std::string_view() : modules.front());
  size_t pos = 0;
  while (pos < trace.size()) {
    size_t eol = trace.find('\n', pos);
    if (eol == std::string_view::npos) eol = trace.size();
    const std::string_view line = trim(trace.substr(pos, eol - pos));
    pos = eol + 1;
    // File "path", line N, in function
    if (!line.starts_with("File \"")) continue;
    const size_t close = line.find('"', 6);
    const size_t at = line.find(", line ", close == std::string_view::npos ? 0 : close);
    const size_t in = line.find(", in ", at == std::string_view::npos ? 0 : at);
    if (close == std::string_view::npos || at == std::string_view::npos || in == std::string_view::npos) continue;
    const std::string_view file = line.substr(6, close - 6);
    const std::string_view number = line.substr(at + 7, in - at - 7);
    const std::string_view function = line.substr(in + 5);
    std::string_view code;
    if (pos < trace.size()) {
      size_t next = trace.find('\n', pos);
      if (next == std::string_view::npos) next = trace.size();
      const std::string_view candidate = trim(trace.substr(pos, next - pos));
      if (!candidate.starts_with("File \"")) {
        code = candidate;
        pos = next + 1;
      }
    }
    if (function == "forward" && !modules.empty()) current = instance(modules[std::min(forwards++, modules.size() - 1)]);
    stack.push_back({statement(file, number, code), current});
  }
  const int id = stack.empty() ? -1 : static_cast<int>(out_.stacks.size());
  if (id >= 0) out_.stacks.push_back(std::move(stack));
  stacks_.emplace(std::move(key), id);
  return id;
}

}  // namespace memest
