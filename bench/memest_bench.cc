// memest's benchmark: per-stage times, sweep time and peak RSS for every bundled
// model and for generated transformer stacks of 10k, 100k and 1M nodes, plus the
// wall time of a whole `memest MODEL --batch 64 --optim adam --json` process and of
// a `memest sweep` process for a budget that batch 64 just fits.
// Each model is measured in a child process of its own, so that its peak RSS is
// that model's alone (the child reads its own VmHWM: a spawned child's ru_maxrss
// starts from its parent's, so graphs are generated in children too).
// Models whose symbolic dims need values (`--dim seq=128`) get the values that
// models/README.md lists for them.
//
//   memest_bench [--sizes 10000,100000,1000000] [--models DIR] [--out DIR]
//                [--memest PATH] [--reps N] [--process-reps N]
//   memest_bench --gen NODES FILE      writes one generated graph
//   memest_bench --one FILE REPS [NAME=VALUE ...]   (internal) measures one model, one line out
//   memest_bench --profile STAGE FILE REPS   repeats parse|analyze|eval|replay|sweep (for perf)
//   memest_bench --protobuf FILE       libprotobuf alone: reads FILE into an onnx::ModelProto,
//                                      the yardstick of issue 22's target (run it as a process)
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "bench/gen_graph.h"
#include "estimator/allocator.h"
#include "estimator/analysis.h"
#include "estimator/error.h"
#include "frontends/onnx_reader.h"
#include "frontends/onnx_schema.h"

extern char** environ;

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace memest::bench {
namespace {

constexpr int64_t kBatch = 64;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// cli/fit.cc's search (memest sweep): doubling, then bisection, each probe a
// fits_budget(); then the answer's estimate once more.
int64_t sweep(const Analysis& a, int64_t budget, int* probes) {
  int64_t lo = 0, hi = 1;
  const int64_t max = 1 << 24;
  auto probe = [&](int64_t b) {
    ++*probes;
    return fits_budget(a, b, budget);
  };
  while (hi <= max && probe(hi)) {
    lo = hi;
    hi *= 2;
  }
  if (hi > max) hi = max + 1;
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    (probe(mid) ? lo : hi) = mid;
  }
  if (lo > 0) {
    ++*probes;
    estimate(a, lo);
  }
  return lo;
}

// A line of /proc/self/status in KiB ("VmHWM:" the peak resident set, "VmRSS:" the
// current one); 0 when /proc says nothing.
int64_t status_kib(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::stoll(line.substr(key.size()));
  }
  return 0;
}
int64_t peak_rss_kib() { return status_kib("VmHWM:"); }

// One model in this (child) process: medians over `reps` fresh runs.
int measure_one(const std::string& file, int reps, const std::map<std::string, int64_t>& dims) {
  std::map<std::string, std::vector<double>> t;
  int64_t nodes = 0, live = 0, blocks = 0, events = 0, max_batch = 0;
  int probes = 0;
  int64_t budget = 0, rss_graph = 0, rss_analysis = 0;
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    bytes = ss.str();
  }
  for (int r = 0; r < reps; ++r) {
    {
      // The protobuf check alone (part of parse): the one pass over every byte of the
      // file, before the lowering reads what it needs.
      auto td = Clock::now();
      onnx_schema::check_model(bytes);
      t["decode"].push_back(ms_since(td));
    }
    auto t0 = Clock::now();
    Graph g = read_onnx_file(file);
    t["parse"].push_back(ms_since(t0));
    nodes = static_cast<int64_t>(g.nodes.size());
    AnalysisOptions opts;
    opts.train.optim = Optim::Adam;
    opts.dims = dims;
    StageTimes st;
    opts.times = &st;
    rss_graph = status_kib("VmRSS:");  // the file's bytes, the Graph (the protobuf is gone)
    auto t1 = Clock::now();
    Analysis a = analyze(std::move(g), opts);
    t["analyze"].push_back(ms_since(t1));
    rss_analysis = status_kib("VmRSS:");  // the file's bytes, the Graph, the Program
    t["shapes"].push_back(st.bind + st.sort + st.shapes);
    t["fuse"].push_back(st.fuse);
    t["program"].push_back(st.loss + st.program);
    const Bindings b = bind_dims(a, kBatch);
    auto t3 = Clock::now();
    evaluate(a.program, b, a.train.target->alloc_round);
    t["eval"].push_back(ms_since(t3));
    auto t6 = Clock::now();
    replay_allocator(a.program, b, a.train.target->alloc_round);
    t["replay"].push_back(ms_since(t6));
    auto t4 = Clock::now();
    Estimate e = estimate(a, kBatch);
    t["estimate"].push_back(ms_since(t4));
    // What one `memest MODEL --batch N` computes (the stand-alone eval and replay above
    // repeat parts of estimate(), so they are not added).
    t["total"].push_back(t["parse"].back() + t["analyze"].back() + t["estimate"].back());
    // A budget that batch 64 just fits: the search then probes about 13 batches.
    budget = e.reserved_bytes;
    probes = 0;
    auto t5 = Clock::now();
    max_batch = sweep(a, budget, &probes);
    const double search = ms_since(t5);
    t["search"].push_back(search);
    t["sweep"].push_back(t["parse"].back() + t["analyze"].back() + search);
    live = 0;
    for (const auto& n : a.graph.nodes) live += n.dead ? 0 : 1;
    blocks = static_cast<int64_t>(a.program.blocks.size());
    events = static_cast<int64_t>(a.program.events.size());
  }
  std::printf("nodes=%lld live=%lld blocks=%lld events=%lld max_batch=%lld probes=%d", static_cast<long long>(nodes),
              static_cast<long long>(live), static_cast<long long>(blocks), static_cast<long long>(events),
              static_cast<long long>(max_batch), probes);
  for (const auto& [k, v] : t) std::printf(" %s=%.3f", k.c_str(), median(v));
  for (const auto& [k, v] : t) std::printf(" min_%s=%.3f", k.c_str(), *std::min_element(v.begin(), v.end()));
  std::printf(" budget=%lld rss_graph_kib=%lld rss_analysis_kib=%lld hwm_kib=%lld\n", static_cast<long long>(budget),
              static_cast<long long>(rss_graph), static_cast<long long>(rss_analysis),
              static_cast<long long>(peak_rss_kib()));
  return 0;
}

// Repeats one stage of one model, for a profiler to look at.
int profile_stage(const std::string& stage, const std::string& file, int reps) {
  AnalysisOptions opts;
  opts.train.optim = Optim::Adam;
  if (stage == "parse") {
    for (int r = 0; r < reps; ++r) read_onnx_file(file);
    return 0;
  }
  if (stage == "analyze") {
    Graph g = read_onnx_file(file);
    for (int r = 0; r < reps; ++r) analyze(g, opts);
    return 0;
  }
  Analysis a = analyze(read_onnx_file(file), opts);
  Bindings b;
  b.set(a.batch, kBatch);
  const int64_t budget = estimate(a, kBatch).reserved_bytes;
  for (int r = 0; r < reps; ++r) {
    if (stage == "replay") {
      replay_allocator(a.program, b, a.train.target->alloc_round);
    } else if (stage == "eval") {
      evaluate(a.program, b, a.train.target->alloc_round);
    } else if (stage == "sweep") {
      int probes = 0;
      sweep(a, budget, &probes);
    } else {
      throw std::runtime_error("unknown stage " + stage);
    }
  }
  return 0;
}

// What libprotobuf alone takes to read the file (ParseFromString into the generated
// classes, as the reader before a902243 did), in ms; the message is left alive, as
// main() leaves without destructors.
int protobuf_parse(const std::string& file) {
  const auto t0 = Clock::now();
  std::ifstream in(file, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  auto* m = new onnx::ModelProto;
  if (!m->ParseFromString(ss.str())) throw std::runtime_error(file + ": libprotobuf cannot parse it");
  std::printf("nodes=%d protobuf_ms=%.1f\n", m->graph().node_size(), ms_since(t0));
  return 0;
}

struct ChildResult {
  int status = -1;
  std::string out;
  double wall_ms = 0;
  int64_t maxrss_kib = 0;
};

// Runs argv, capturing stdout (or discarding it), with the child's own rusage.
ChildResult spawn(const std::vector<std::string>& args, bool capture) {
  int pipefd[2] = {-1, -1};
  if (capture && pipe(pipefd) != 0) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (capture) {
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
    posix_spawn_file_actions_addclose(&fa, pipefd[0]);
  } else {
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  }
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ChildResult r;
  auto t0 = Clock::now();
  pid_t pid;
  if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) != 0) {
    throw std::runtime_error("cannot run " + args[0]);
  }
  posix_spawn_file_actions_destroy(&fa);
  if (capture) {
    close(pipefd[1]);
    char buf[4096];
    ssize_t n;
    while ((n = read(pipefd[0], buf, sizeof buf)) > 0) r.out.append(buf, static_cast<size_t>(n));
    close(pipefd[0]);
  }
  struct rusage ru;
  wait4(pid, &r.status, 0, &ru);
  r.wall_ms = ms_since(t0);
  r.maxrss_kib = ru.ru_maxrss;
  return r;
}

std::map<std::string, std::string> parse_kv(const std::string& line) {
  std::map<std::string, std::string> m;
  std::istringstream in(line);
  std::string tok;
  while (in >> tok) {
    auto eq = tok.find('=');
    if (eq != std::string::npos) m[tok.substr(0, eq)] = tok.substr(eq + 1);
  }
  return m;
}

std::string with_commas(int64_t v) {
  std::string s = std::to_string(v), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

std::string fmt(const std::string& ms) {
  char buf[32];
  const double v = std::stod(ms);
  std::snprintf(buf, sizeof buf, v < 10 ? "%.2f" : v < 100 ? "%.1f" : "%.0f", v);
  return buf;
}

int run_all(int argc, char** argv) {
  std::vector<int64_t> sizes = {10000, 100000, 1000000};
  std::string models = "models", out = "bench/out", memest_bin;
  int reps = 5, process_reps = 10;
  const std::string self = fs::canonical("/proc/self/exe").string();
  memest_bin = (fs::path(self).parent_path().parent_path() / "memest").string();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--sizes") {
      sizes.clear();
      std::stringstream ss(next());
      std::string x;
      while (std::getline(ss, x, ',')) sizes.push_back(std::stoll(x));
    } else if (a == "--models") {
      models = next();
    } else if (a == "--out") {
      out = next();
    } else if (a == "--memest") {
      memest_bin = next();
    } else if (a == "--reps") {
      reps = std::stoi(next());
    } else if (a == "--process-reps") {
      process_reps = std::stoi(next());
    } else {
      throw std::runtime_error("unknown argument " + a);
    }
  }
  fs::create_directories(out);
  // models/README.md's table names the --dim each export needs ("`gpt_mini.onnx` | ... `--dim seq=256`").
  std::map<std::string, std::vector<std::string>> model_dims;  // file name -> NAME=VALUE
  {
    std::ifstream readme(models + "/README.md");
    const std::regex row(R"(^\| `([^`/]+\.onnx)` \|.*--dim ([A-Za-z_]+=[0-9]+))");
    std::string line;
    std::smatch m;
    while (std::getline(readme, line)) {
      if (std::regex_search(line, m, row)) model_dims[m[1]].push_back(m[2]);
    }
  }
  std::vector<std::pair<std::string, std::string>> files;  // label, path
  if (fs::is_directory(models)) {
    std::vector<fs::path> found;
    for (const auto& e : fs::directory_iterator(models)) {
      if (e.path().extension() == ".onnx") found.push_back(e.path());
    }
    std::sort(found.begin(), found.end());
    for (const auto& p : found) files.push_back({p.filename().string(), p.string()});
  }
  for (int64_t n : sizes) {
    const std::string path = out + "/transformer_" + std::to_string(n) + ".onnx";
    if (!fs::exists(path)) {
      // In a child: a graph generated here would raise every later child's ru_maxrss.
      ChildResult gen = spawn({self, "--gen", std::to_string(n), path}, false);
      if (gen.status != 0) throw std::runtime_error("cannot generate " + path);
      std::cerr << "generated " << path << " in " << gen.wall_ms << " ms\n";
    }
    files.push_back({"generated " + with_commas(n), path});
  }

  std::printf("| model | nodes | file | parse | shapes | fusion | program | eval | estimate | analysis total | sweep (probes) "
              "| sweep / estimate | peak RSS | `memest` process (RSS) | `memest sweep` process |\n");
  std::printf("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
  for (const auto& [label, path] : files) {
    const int64_t size = static_cast<int64_t>(fs::file_size(path));
    const int r = size > 20'000'000 ? 1 : size > 2'000'000 ? std::max(1, reps / 2) : reps;
    const std::string name = fs::path(path).filename().string();
    const std::vector<std::string> dims = model_dims.count(name) ? model_dims[name] : std::vector<std::string>{};
    std::vector<std::string> one = {self, "--one", path, std::to_string(r)};
    one.insert(one.end(), dims.begin(), dims.end());
    ChildResult c = spawn(one, true);
    auto kv = parse_kv(c.out);
    if (c.status != 0 || !kv.count("total")) {
      std::printf("| %s | failed (status %d) |\n", label.c_str(), c.status);
      std::fflush(stdout);
      continue;
    }
    std::vector<double> walls, sweep_walls;
    int64_t proc_rss = 0;
    const int pr = size > 20'000'000 ? 1 : size > 2'000'000 ? 3 : process_reps;
    bool proc_ok = true;
    for (int k = 0; k < pr; ++k) {
      std::vector<std::string> cmd = {memest_bin, path, "--batch", std::to_string(kBatch), "--optim", "adam", "--json"};
      for (const auto& d : dims) cmd.insert(cmd.end(), {"--dim", d});
      ChildResult p = spawn(cmd, false);
      proc_ok &= p.status == 0;
      walls.push_back(p.wall_ms);
      proc_rss = std::max(proc_rss, p.maxrss_kib);
      std::vector<std::string> sweep_cmd = {memest_bin, "sweep", path, "--optim", "adam", "--budget", kv["budget"]};
      for (const auto& d : dims) sweep_cmd.insert(sweep_cmd.end(), {"--dim", d});
      ChildResult q = spawn(sweep_cmd, false);
      proc_ok &= q.status == 0;
      sweep_walls.push_back(q.wall_ms);
    }
    char proc[64];
    std::snprintf(proc, sizeof proc, "%s ms (%lld MiB)%s", fmt(std::to_string(median(walls))).c_str(),
                  static_cast<long long>(proc_rss / 1024), proc_ok ? "" : " exit!=0");
    const double ratio = std::stod(kv["sweep"]) / std::stod(kv["total"]);
    const int64_t hwm = std::stoll(kv.count("hwm_kib") ? kv["hwm_kib"] : "0");
    const std::string shown = label + (dims.empty() ? "" : " (" + dims[0] + ")");
    std::printf("| %s | %s | %.1f MB | %s | %s | %s | %s | %s | %s | %s | %s (%s) | %.2f | %lld MiB | %s | %s ms |\n",
                shown.c_str(), with_commas(std::stoll(kv["nodes"])).c_str(), size / 1e6, fmt(kv["parse"]).c_str(),
                fmt(kv["shapes"]).c_str(), fmt(kv["fuse"]).c_str(), fmt(kv["program"]).c_str(),
                fmt(kv["eval"]).c_str(), fmt(kv["estimate"]).c_str(), fmt(kv["total"]).c_str(),
                fmt(kv["sweep"]).c_str(), kv["probes"].c_str(), ratio, static_cast<long long>(hwm / 1024),
                proc, fmt(std::to_string(median(sweep_walls))).c_str());
    std::fflush(stdout);
    std::fprintf(stderr, "%s: %s\n", label.c_str(), c.out.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace memest::bench

int main(int argc, char** argv) {
  using namespace memest::bench;
  try {
    if (argc >= 4 && std::string(argv[1]) == "--one") {
      std::map<std::string, int64_t> dims;
      for (int i = 4; i < argc; ++i) {
        const std::string d = argv[i];
        const size_t eq = d.find('=');
        if (eq == std::string::npos) throw std::runtime_error("--one: NAME=VALUE expected, got " + d);
        dims[d.substr(0, eq)] = std::stoll(d.substr(eq + 1));
      }
      return measure_one(argv[2], std::stoi(argv[3]), dims);
    }
    if (argc == 5 && std::string(argv[1]) == "--profile") return profile_stage(argv[2], argv[3], std::stoi(argv[4]));
    if (argc == 3 && std::string(argv[1]) == "--protobuf") return protobuf_parse(argv[2]);
    if (argc == 4 && std::string(argv[1]) == "--gen") {
      GenOptions o;
      o.nodes = std::stoll(argv[2]);
      std::ofstream(argv[3], std::ios::binary) << generate_transformer(o);
      return 0;
    }
    return run_all(argc, argv);
  } catch (const memest::Error& e) {
    std::fprintf(stderr, "memest_bench: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "memest_bench: %s\n", e.what());
    return 2;
  }
}
