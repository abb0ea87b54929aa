// Size parsing and formatting.
#include "cli/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>

#include "estimator/error.h"

namespace memest {

int64_t parse_size(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  const std::string num = text.substr(0, i);
  std::string unit = text.substr(i);
  while (!unit.empty() && unit[0] == ' ') unit.erase(0, 1);
  for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::string bad = "size '" + text + "' is not a size: use bytes or a unit, e.g. 24GiB, 24GB, 512MiB";
  if (num.empty() || num.find('.') != num.rfind('.') || num == ".") throw Error(bad);
  double mult = 0;
  static const std::pair<const char*, double> units[] = {
      {"", 1},       {"b", 1},         {"k", 1e3},        {"kb", 1e3},           {"m", 1e6},
      {"mb", 1e6},   {"g", 1e9},       {"gb", 1e9},       {"t", 1e12},           {"tb", 1e12},
      {"kib", 1024.0}, {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0},
  };
  for (const auto& [u, m] : units) {
    if (unit == u) mult = m;
  }
  if (mult == 0) throw Error(bad);
  const double v = std::stod(num) * mult;
  // A bare number is bytes, as the protocol says, but no GPU budget is below 1 MiB:
  // `--budget 24` is a forgotten unit, and answering for 24 bytes would mislead.
  if (unit.empty() && v < kMinBareBytes) {
    throw Error("size '" + text + "' has no unit, so it would be " + text +
                " bytes: write " + num + "GiB, " + num + "GB or " + num + "MiB (" + num + "B for bytes)");
  }
  if (!(v > 0) || v > 9.0e18) throw Error("size '" + text + "' must be positive and below 8 EiB");
  return static_cast<int64_t>(std::llround(v));
}

std::string format_bytes(int64_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (bytes >= (1ll << 30)) {
    std::snprintf(buf, sizeof(buf), "%.2f GiB", b / (1ll << 30));
  } else if (bytes >= (1ll << 20)) {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", b / (1ll << 20));
  } else if (bytes >= 1024) {
    std::snprintf(buf, sizeof(buf), "%.1f KiB", b / 1024);
  } else {
    std::snprintf(buf, sizeof(buf), "%lld B", static_cast<long long>(bytes));
  }
  return buf;
}

std::string thousands(int64_t n) {
  std::string s = std::to_string(n < 0 ? -n : n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return (n < 0 ? "-" : "") + s;
}

}  // namespace memest
