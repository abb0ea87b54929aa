// The caching-allocator model against allocation sequences recorded on the GPU
// (validate/results/cases-*.jsonl: `python3 -m validate kernels --parts cases`,
// whole protocol.md cases under a 24 GiB cap). Feeding the measured requests in the
// measured order checks the allocator model alone, apart from the simulator.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "estimator/allocator.h"

namespace memest {
namespace {

struct Case {
  std::string name;
  std::vector<RawRequest> requests;
  int64_t budget = 0;
  bool measured_ok = false;
  int64_t peak_allocated = 0, peak_reserved = 0;
};

std::vector<Case> load_cases(const std::string& path) {
  std::vector<Case> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    Case c;
    c.name = j["case"].get<std::string>();
    c.budget = j["budget_bytes"].get<int64_t>();
    c.measured_ok = j["status"].get<std::string>() == "ok";
    c.peak_allocated = j["peak_allocated"].get<int64_t>();
    c.peak_reserved = j["peak_reserved"].get<int64_t>();
    std::map<int64_t, int> live;  // address -> request id
    int next = 0;
    // An "oom" event is a request the allocator refused even after freeing its cache:
    // the last one ended a case that failed; the others were cuDNN asking for an
    // algorithm's workspace, refused, before it tried a cheaper algorithm.
    const auto& events = j["events"];
    size_t last_oom = events.size();
    if (!c.measured_ok) {
      for (size_t i = 0; i < events.size(); ++i) {
        if (events[i][0] == "oom") last_oom = i;
      }
    }
    for (size_t i = 0; i < events.size() && i <= last_oom; ++i) {
      const auto& e = events[i];
      const std::string a = e[0].get<std::string>();
      const int64_t addr = e[1].get<int64_t>(), size = e[2].get<int64_t>();
      if (a == "a") {
        live[addr] = next;
        c.requests.push_back({true, next++, size});
      } else if (a == "f") {
        auto it = live.find(addr);
        if (it == live.end()) continue;  // allocated before the recording began
        c.requests.push_back({false, it->second, size});
        live.erase(it);
      } else if (a == "oom") {
        c.requests.push_back({true, next++, size, /*may_fail=*/i != last_oom});
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

TEST_CASE("allocator model replays measured request sequences") {
  const auto cases = load_cases(MEMEST_SOURCE_DIR "/validate/results/cases-h200-torch2.11.jsonl");
  REQUIRE(cases.size() >= 6);
  for (const Case& c : cases) {
    const AllocatorResult free_run = replay_requests(c.requests);
    const AllocatorResult capped = replay_requests(c.requests, c.budget);
    INFO(c.name);
    // Under the cap, the model must reproduce the measured outcome (the run fits or
    // fails) and the measured max_memory_reserved to the byte; the allocated peak is
    // the requests' own sum (the model may count a reused unsplit block whole).
    CHECK(capped.out_of_memory == !c.measured_ok);
    if (c.measured_ok) {
      CHECK(capped.peak_reserved == c.peak_reserved);
      CHECK(capped.peak_allocated == doctest::Approx(c.peak_allocated).epsilon(1e-5));
    }
  }
}

}  // namespace memest

namespace memest {

TEST_CASE("allocator model on uncapped sequences of the CNN and LSTM cases") {
  // validate/results/rtrace-*.jsonl: the cases whose reserved memory memest missed most
  // (python3 -m validate kernels --parts cases, no cap). 6 of 8 replay to the byte;
  // resnet18 fp32 (-100 MiB of 2676) and convnext_tiny fp32 (-20 MiB) do not.
  const auto cases = load_cases(MEMEST_SOURCE_DIR "/validate/results/rtrace-h200-torch2.11.jsonl");
  REQUIRE(cases.size() == 8);
  int exact = 0;
  for (const Case& c : cases) {
    const AllocatorResult r = replay_requests(c.requests);
    INFO(c.name);
    CHECK(!r.out_of_memory);
    CHECK(r.peak_reserved == doctest::Approx(c.peak_reserved).epsilon(0.04));
    CHECK(r.peak_allocated == doctest::Approx(c.peak_allocated).epsilon(1e-4));
    exact += r.peak_reserved == c.peak_reserved;
  }
  CHECK(exact >= 6);
}

}  // namespace memest
