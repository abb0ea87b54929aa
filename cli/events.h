// The simulated allocation sequence as a table, one request or free a line: what a
// torch memory snapshot's trace (torch.cuda.memory._record_memory_history) lists on the
// GPU, to compare the two side by side (tools/sequence_diff.py).
#pragma once

#include <string>

#include "estimator/analysis.h"

namespace memest {

/// Writes the program's events at the estimate's sizes to `path` as tab-separated lines:
/// iteration (from 1), phase, A or F, bytes (the request rounded as the caching allocator
/// rounds it), category, the node that made the block ("-" for setup and the optimizer),
/// and the block's id. Throws Error when the file cannot be written.
void write_events(const std::string& path, const Analysis& a, const Estimate& e);

}  // namespace memest
