// Sizes for people (cli/units.cc): a unit is needed below 1 MiB; and the budget's
// margin (cli/fit.cc).
#include <doctest/doctest.h>

#include "cli/fit.h"
#include "cli/units.h"
#include "estimator/error.h"

using namespace memest;

TEST_CASE("sizes: units, bytes, and a bare number that is surely a forgotten unit") {
  CHECK(parse_size("24GiB") == 24ll << 30);
  CHECK(parse_size("24GB") == 24000000000ll);
  CHECK(parse_size("512MiB") == 512ll << 20);
  CHECK(parse_size("24B") == 24);  // an explicit B is bytes, however few
  CHECK(parse_size("25769803776") == 24ll << 30);  // a real byte count still works
  CHECK(parse_size("1048576") == 1048576);
  CHECK_THROWS_WITH_AS(parse_size("24"), doctest::Contains("24GiB, 24GB or 24MiB (24B for bytes)"), Error);
  CHECK_THROWS_WITH_AS(parse_size("1048575"), doctest::Contains("has no unit"), Error);
  CHECK_THROWS_AS(parse_size("lots"), Error);
}

TEST_CASE("budget: --margin leaves a share free; the default is none") {
  BudgetOptions b;
  b.budget = "10GiB";
  CHECK(b.margin_fraction() == 0);
  CHECK(b.bytes() == 10ll << 30);
  b.margin = "5%";
  CHECK(b.margin_fraction() == doctest::Approx(0.05));
  CHECK(b.bytes() == static_cast<int64_t>((10ll << 30) * 0.95));
  CHECK(b.describe() == "10.00 GiB, less a 5% margin = 9.50 GiB");
  b.margin = "5";  // a bare number is a percentage too
  CHECK(b.margin_fraction() == doctest::Approx(0.05));
  for (const char* bad : {"lots", "100%", "-5%", "5%%", ""}) {
    b.margin = bad;
    CHECK_THROWS_WITH_AS(b.margin_fraction(), doctest::Contains("--margin"), Error);
  }
}

TEST_CASE("budget: --gpu names the profile and what is assumed on another card") {
  BudgetOptions b;
  const Target& t = find_target("");
  CHECK(profile_note(b, t).empty());
  b.gpu = "h200";
  CHECK(profile_note(b, t) == "h200-torch2.11, measured on this GPU");
  b.gpu = "a100-40gb";
  const std::string note = profile_note(b, t);
  CHECK(note.find("h200-torch2.11 (measured: NVIDIA H200, torch 2.11)") == 0);
  CHECK(note.find("a100-40gb is not profiled") != std::string::npos);
  CHECK(note.find("only the capacity changes") != std::string::npos);
}
