// The arithmetic both data-parallel wrappers share: the reducer's bucket assignment,
// FSDP2's shard sizes and groups, and the choice of model (ddp.cc, fsdp.cc).
#include "estimator/parallel.h"

#include <algorithm>
#include <limits>
#include <map>

#include "estimator/error.h"
#include "estimator/parallel_impl.h"

namespace memest {

std::vector<std::vector<size_t>> assign_buckets(const std::vector<BucketTensor>& tensors,
                                                const std::vector<int64_t>& limits, bool sort_by_min_index) {
  if (limits.empty()) throw Error("assign_buckets: no bucket size limits");
  struct Open {
    std::vector<size_t> indices;
    int64_t bytes = 0;
    size_t limit = 0;  // index into limits
  };
  // One open bucket per dtype (reducer.cpp's BucketKey is dtype and device; one device here).
  std::map<DType, Open> open;
  std::vector<std::vector<size_t>> closed;
  for (size_t i = 0; i < tensors.size(); ++i) {
    Open& b = open[tensors[i].dtype];
    b.indices.push_back(i);
    b.bytes = checked_add(b.bytes, tensors[i].bytes);
    if (b.bytes >= limits[b.limit]) {
      closed.push_back(std::move(b.indices));
      const size_t next = std::min(b.limit + 1, limits.size() - 1);
      b = Open{};
      b.limit = next;
    }
  }
  // The remaining open buckets follow in BucketKey order (an unordered_map there; the
  // order only matters for the constructor's call, which sorts).
  for (auto& [dtype, b] : open) {
    if (!b.indices.empty()) closed.push_back(std::move(b.indices));
  }
  if (sort_by_min_index) {
    std::sort(closed.begin(), closed.end(), [](const auto& x, const auto& y) {
      return *std::min_element(x.begin(), x.end()) < *std::min_element(y.begin(), y.end());
    });
  }
  return closed;
}

std::vector<int64_t> bucket_bytes(const std::vector<BucketTensor>& tensors,
                                  const std::vector<std::vector<size_t>>& buckets) {
  std::vector<int64_t> out;
  for (const auto& b : buckets) {
    int64_t sum = 0;
    for (size_t i : b) sum = checked_add(sum, tensors.at(i).bytes);
    out.push_back(sum);
  }
  return out;
}

int64_t fsdp_shard_rows(int64_t dim0, int world) {
  if (world < 1) throw Error("fsdp: world size must be at least 1");
  if (dim0 <= 0) return 0;
  return (dim0 + world - 1) / world;
}

namespace {

// Rows and the elements of one row: a 0-dim parameter is one row of one element.
std::pair<int64_t, int64_t> rows_and_row(const std::vector<int64_t>& shape) {
  if (shape.empty()) return {1, 1};
  int64_t row = 1;
  for (size_t i = 1; i < shape.size(); ++i) row = checked_mul(row, shape[i]);
  return {shape[0], row};
}

}  // namespace

int64_t fsdp_shard_numel(const std::vector<int64_t>& shape, int world) {
  auto [rows, row] = rows_and_row(shape);
  return checked_mul(fsdp_shard_rows(rows, world), row);
}

int64_t fsdp_unsharded_numel(const std::vector<int64_t>& shape, int world) {
  return checked_mul(fsdp_shard_numel(shape, world), world);
}

std::vector<FsdpGroup> fsdp_groups(const Graph& g) {
  // A block that checkpoint_segments splits into several runs (interleaved with other
  // nodes) is still one module: one group spanning all its runs.
  std::vector<FsdpGroup> groups;
  std::map<std::string, size_t> index;
  for (const Segment& s : checkpoint_segments(g, Checkpoint::Blocks)) {
    auto [it, fresh] = index.emplace(s.module, groups.size());
    if (fresh) {
      groups.push_back({s.module, s.first, s.last, {}});
    } else {
      groups[it->second].first = std::min(groups[it->second].first, s.first);
      groups[it->second].last = std::max(groups[it->second].last, s.last);
    }
  }
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<int> group_of(g.nodes.size(), -1);
  for (size_t i = 0; i < groups.size(); ++i) {
    for (int k = groups[i].first; k <= groups[i].last; ++k) {
      if (group_of[k] < 0) group_of[k] = static_cast<int>(i);
    }
  }
  FsdpGroup root{"", -1, -1, {}};
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const Tensor& ten = g.tensors[t];
    if (ten.kind != TensorKind::Parameter || ten.consumers.empty()) continue;
    int owner = -2;  // -2: no live consumer yet; -1: the root
    for (int k : ten.consumers) {
      if (g.nodes[k].dead) continue;
      const int here = group_of[k];
      owner = owner == -2 ? here : owner == here ? owner : -1;
    }
    if (owner >= 0) {
      groups[owner].params.push_back(static_cast<int>(t));
    } else {
      root.params.push_back(static_cast<int>(t));
    }
  }
  groups.push_back(std::move(root));
  return groups;
}

std::vector<int64_t> constant_shape(const Tensor& t) {
  std::vector<int64_t> dims;
  if (!t.shape) throw Error("", t.name, "a parameter without a known shape cannot be sharded or bucketed");
  for (const Expr& d : *t.shape) {
    const std::optional<int64_t> v = d.as_const();
    if (!v) throw Error("", t.name, "a parameter with a symbolic shape cannot be sharded or bucketed");
    dims.push_back(*v);
  }
  return dims;
}

int64_t constant_bytes(const Tensor& t) {
  int64_t n = 1;
  for (int64_t d : constant_shape(t)) n = checked_mul(n, d);
  return checked_mul(n, dtype_size(t.dtype));
}

const char* parallel_name(Parallel p) {
  return p == Parallel::DDP ? "ddp" : p == Parallel::FSDP ? "fsdp" : "none";
}

std::unique_ptr<ParallelModel> make_parallel(const Graph& g, const TrainConfig& cfg, StepMemory& mem,
                                             std::vector<std::string>& notes) {
  if (cfg.parallel == Parallel::None) return nullptr;
  if (cfg.world_size < 1) throw Error(std::string("--") + parallel_name(cfg.parallel) + " takes a world size of at least 1");
  if (cfg.parallel == Parallel::DDP) return make_ddp(g, cfg, mem, notes);
  return make_fsdp(g, cfg, mem, notes);
}

}  // namespace memest
