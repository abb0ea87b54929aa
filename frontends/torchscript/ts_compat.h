// Files saved by newer torch (up to 2.11) call ops that libtorch 1.13 has never
// heard of; TorchScript's compiler needs their schemas to load the file at all.
#pragma once

namespace memest::ts {

/// Declares (schema only, no kernel) the newer ops the lowering understands.
/// The helper never runs them; it reads their arguments.
void register_newer_ops();

}  // namespace memest::ts
