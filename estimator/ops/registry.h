// The op registry: every op family's table, looked up by (domain, op type).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "estimator/ops/op_info.h"

namespace memest {

/// The entry for an op, or nullptr when memest does not know it.
/// "ai.onnx" and "" are the same domain.
const OpInfo* find_op(const std::string& domain, const std::string& op);
/// Every registered op, sorted by family then op, for `memest ops`.
std::vector<const OpInfo*> all_ops();
/// Whether a module class (its qualified name, as the dynamo exporter records it)
/// runs its forward with autocast disabled (ops/modules.cc).
bool module_disables_autocast(std::string_view module_class);
/// Whether a module class's forward keeps its submodules' results in local variables
/// until it returns (ops/modules.cc; frames.h).
bool module_keeps_locals(std::string_view module_class);
/// Whether the module's forward computes its statistics on `x.float()`, casts them back
/// to x's dtype and casts its parameters to x's dtype (`.to(x_dtype)`): casts a float32
/// export drops (norm_casts.h restore_module_casts).
bool module_casts_to_input(std::string_view module_class);
/// The fused op of a custom torch.autograd.Function applied by the statement at `where`
/// ("file:line") reading `code`: one memest knows (BLOOM's GeLUFunction: "BloomGelu"),
/// else "CustomFunction".
const char* custom_function_op(std::string_view where, std::string_view code);
/// A Dropout node's ratio when the graph says it (ops/norm.cc), and whether it drops
/// anything in the simulated training step (ratio > 0, training mode).
std::optional<double> dropout_ratio(const Graph& g, const Node& n);
bool dropout_active(const Graph& g, const Node& n);

// Each family file defines one of these; registry.cc lists them all.
struct OpTable {
  const OpInfo* begin;
  size_t size;
};
OpTable conv_ops();
OpTable pool_ops();
OpTable matmul_ops();
OpTable elementwise_ops();
OpTable activation_ops();
OpTable norm_ops();
OpTable reduce_ops();
OpTable shape_ops();      // Reshape, Transpose, Concat, Slice, Gather, ... (layout and indexing)
OpTable resample_ops();   // Resize, Upsample, GridSample, DepthToSpace, SpaceToDepth
OpTable arith_ops();      // Shape, Constant, Range, ConstantOfShape, ... (shape arithmetic sources)
OpTable rnn_ops();
OpTable fused_ops();      // memest's own: Linear, Attention, Gelu, LayerNorm patterns, losses

}  // namespace memest
