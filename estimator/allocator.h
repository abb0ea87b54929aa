// A model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp),
// replayed over a program's allocations to predict max_memory_reserved.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "estimator/simulate.h"

namespace memest {

struct AllocatorResult {
  int64_t peak_reserved = 0;   ///< max_memory_reserved
  int64_t peak_allocated = 0;  ///< max_memory_allocated, with unsplit blocks counted whole
  PeakResult peak;             ///< where that peak is and what is alive then (block sizes as allocated)
  bool out_of_memory = false;  ///< a request failed even after freeing cached segments
  /// The cap made the allocator free its cache at least once; until then a capped
  /// replay does exactly what an uncapped one does.
  bool released_cache = false;
  int64_t failed_request = 0;
  /// Peak of the requests alone (rounded, before block reuse): evaluate()'s peak, as
  /// long as the replay neither released its cache nor failed. Only a replay that
  /// locates its peak counts it (0 otherwise).
  int64_t requested_peak = 0;
  std::vector<int64_t> granted;  ///< bytes handed out for each block, as counted above (0: never allocated)
  /// probe_allocator() stopped early: the requests left could not take the reserved
  /// bytes past the cap, so none fails and the cache is never released. The peaks and
  /// `granted` above are then only those of the events replayed.
  bool fits_for_certain = false;
};

/// Which of two free blocks of one size the allocator takes: the lower address. The
/// addresses cudaMalloc hands out decide it, and they run one way or the other from one
/// process to the next (two GPU runs of one model in one process went opposite ways).
/// The model places each new segment below the ones before it (NewestFirst), as in 2 of
/// 3 traced runs; OldestFirst is the other way.
enum class SegmentOrder { NewestFirst, OldestFirst };

/// Replays the program's events for concrete dims. With `limit`, segments are
/// capped as set_per_process_memory_fraction caps them: on a failed cudaMalloc
/// the allocator frees its cached segments and retries once, then fails.
/// Without `locate`, only peak.peak_bytes of `peak` is filled: a batch probe needs
/// no more, and following phases and categories is a tenth of a replay.
AllocatorResult replay_allocator(const Program& p, const Bindings& b, int64_t round = 512,
                                 std::optional<int64_t> limit = std::nullopt, bool locate = true);
/// The same, for sizes block_sizes(p, b, round) has evaluated.
AllocatorResult replay_allocator(const Program& p, const std::vector<int64_t>& size,
                                 std::optional<int64_t> limit = std::nullopt, bool locate = true);

/// A batch probe's capped replay (replay_allocator(p, size, limit, false)), stopped as
/// soon as the reserved bytes plus a new segment for every request still to come are
/// within `limit`: from there on nothing can fail or make the allocator release its
/// cache, so the step fits. Far below the cap that is early (a small batch of a CNN
/// decides before the first event), near it late or never.
AllocatorResult probe_allocator(const Program& p, const std::vector<int64_t>& size, int64_t limit);
/// probe_allocator(), without `granted`, and where the cap makes the allocator release
/// its cache and `uncapped_wanted()` (asked then, once) says so, and the replay then runs
/// to the end without failing, the uncapped replay's peak allocated in `uncapped_peak`
/// (replay_allocator(p, size, nullopt, false).peak.peak_bytes). The two replays are one
/// up to that first release: the uncapped one goes on from a copy of the state there.
/// `most_added` is request_bounds()'s: the first form's own bound for stopping early.
AllocatorResult probe_allocator(const Program& p, const std::vector<int64_t>& size, int64_t limit,
                                int64_t most_added, const std::function<bool()>& uncapped_wanted,
                                std::optional<int64_t>& uncapped_peak);

/// What a batch probe asks of a program's requests before replaying them, in one pass:
/// committed_peak(p, size); the most they can add to the reserved bytes, a new segment
/// each (probe_allocator()'s bound for stopping early); and most_allocated(p, size).
/// The last two are left out where they overflow (where their own functions throw).
struct RequestBounds {
  int64_t committed_peak = 0;
  std::optional<int64_t> most_added;
  std::optional<int64_t> most_allocated;
};
RequestBounds request_bounds(const Program& p, const std::vector<int64_t>& size);

/// At least the peak allocated of the uncapped replay (replay_allocator(p, size)'s
/// peak.peak_bytes), without replaying: every block counted with the most the allocator
/// may hand out for it, the request and the rest of a block it does not split. A batch
/// probe whose capped replay released its cache fits when this is within the budget.
int64_t most_allocated(const Program& p, const std::vector<int64_t>& size);

/// One request of a raw sequence: an allocation of `size` bytes (already rounded as
/// the allocator rounds) under the caller's `id`, or the free of that id. A request
/// that `may_fail` is an attempt whose failure ends nothing (cuDNN asks for an
/// algorithm's workspace and, refused, tries the next algorithm); a failed attempt
/// has already made the allocator free its cache, as the real one does.
struct RawRequest {
  bool alloc;
  int id;
  int64_t size;
  bool may_fail = false;
  /// Where the GPU put the segment this request made, when it made one (a trace's
  /// segment_alloc); -1: where SegmentOrder puts it.
  int64_t segment_address = -1;
};

/// Replays a raw request sequence, e.g. one recorded on the GPU, through the same
/// model: checks the allocator model apart from the simulator that feeds it.
/// `granted` is indexed by request id.
AllocatorResult replay_requests(const std::vector<RawRequest>& requests, std::optional<int64_t> limit = std::nullopt,
                                SegmentOrder order = SegmentOrder::NewestFirst);

}  // namespace memest
