// The legacy exporter's squeeze of a dim of unknown size: an If, read as one op.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "frontends/onnx_views.h"

namespace memest {

/// What an If node squeezes, where it is symbolic_opset11.squeeze's: torch's
/// `x.squeeze(d)` on a dim whose size the trace did not fix becomes If(Shape(x)[d] == 1)
/// with a then-branch Squeeze(x, [d]) and an else-branch Identity(x) (torchvision's MViT
/// pool_skip). memest looks inside no other subgraph: read as one op, memest::SqueezeIf(x,
/// cond) with axes [d] (ops/shape_ops.cc), x's gradient flows through it; left an If, x
/// was out of the graph's sight and the Linear before it trained nothing.
struct DynamicSqueeze {
  std::string_view input;  ///< the tensor squeezed (a name of the enclosing graph)
  int64_t axis = 0;
};
std::optional<DynamicSqueeze> dynamic_squeeze(const onnx_views::NodeView& n);

}  // namespace memest
