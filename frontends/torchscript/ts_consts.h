// Constant folding of the TorchScript helper: scalar and shape arithmetic whose
// operands are all known is evaluated with libtorch's own operator (so `C // heads`
// or `len(x.size())` fold exactly), before the op table is consulted.
#pragma once

#include <optional>
#include <vector>

#include "ts_lower.h"

namespace memest::ts {

/// Tensors up to this many elements are constants the helper may compute with
/// and emit with their contents; larger ones are described by dims only.
constexpr int64_t kMaxConstElems = 64;

/// The outputs of `n` when every input is a known constant and running the op
/// is cheap and pure (no tensor is created from nothing, nothing is random or
/// mutated); nullopt otherwise.
std::optional<std::vector<Val>> fold_constant(torch::jit::Node* n, const std::vector<Val>& in);

/// The items of a list or tuple value (a constant one's as constants); empty otherwise.
std::vector<Val> list_items(const Val& v);
/// Whether v is a list or tuple, known or not.
bool is_list(const Val& v);

}  // namespace memest::ts
