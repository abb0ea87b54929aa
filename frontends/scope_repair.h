// Repairs of the legacy ONNX exporter's scope names (torch.onnx.export(dynamo=False)),
// from the parameter names, which always carry the full module path.
#pragma once

#include "estimator/ir.h"

namespace memest {

/// The legacy exporter names a node's scope after the modules whose forward ran. A
/// module reached without calling its container (`blocks[i]["ln1"](x)`: a ModuleDict
/// inside a ModuleList) is scoped from the nearest called ancestor, and repeats get a
/// "_1", "_2" suffix: `ln1`, `ln1_1`, `ff.0_2` where the parameters say `blocks.0.ln1`,
/// `blocks.1.ln1`, `blocks.2.ff.0`. A scope whose nodes read parameters of one module
/// whose path ends with the scope (less that suffix) takes that path; a scope without
/// parameters whose parent is one a sibling's repair lengthened ("ff.1_1", GELU, next
/// to "ff.0_1" -> "blocks.1.ff.0") takes the same prefix. Other scopes are left as they
/// are. Returns how many scopes were renamed.
int recover_module_paths(Graph& g);

}  // namespace memest
