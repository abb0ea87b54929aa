// Python frames: how long the model's own code holds a tensor, beyond its last use.
//
// Autograd frees an activation when nothing references it, and in eager PyTorch the
// Python frames of the modules' forward() hold references the graph does not show. One
// of them is certain: an argument lives until the module it was passed to returns (the
// caller's variable, or the expression being evaluated, holds it for the whole call,
// whatever the callee does with its parameter). The module paths of the nodes (ir.h,
// Node::module) show the calls. A path component that is a number is an element of a
// ModuleList or Sequential: "blocks" in "blocks.0.attn" is a container, "blocks.0" the
// module called.
//
// Of the locals, two kinds are modelled. The pieces of a Split (`q, k, v =
// qkv.split(d, 2)`) are unpacked into names, and as views they keep the split tensor's
// storage until the call the split is in returns. And in a module whose code keeps
// submodule results in locals (Node::keeps_locals, from the dynamo exporter's module
// classes: transformers'), a named submodule's result is kept until the caller returns
// (`inputs_embeds = self.wte(ids)`); one passed on to a sibling call is the local that
// the caller's next statement of its own rebinds (`h = self.ln_2(h); ff = self.mlp(h);
// h = r + ff`), so it is kept until that statement's node has run. Elsewhere the graph
// cannot tell a local from a temporary (`self.drop(self.attn(x))`): holding every named
// submodule's result to its caller's end fixed gpt2_hf and overestimated
// transformer_encoder's peak by 2.4%. Nor is rebinding of op results modelled
// (`att = self.drop(F.softmax(att))` keeps the old att until the drop returns).
//
// A dynamo export says more: each node's Python stack (Graph::python, frontends/
// pystack.h), so the locals are read, not guessed. A tensor made in one statement and
// read in a later one of the same function call was bound to the names that statement
// assigns, and stays until a later statement assigns them again or the function returns
// (`h = self.ln_2(h); ff = self.mlp(h); h = r + ff`: ln_2's output goes after the Add).
// The keeps_locals guesses are then not used; the argument and split rules still are.
// The stacks keep only frames named `forward`: a method's body (timm's forward_features)
// reads as its caller's one statement, and the locals it keeps to its return are inferred
// from the calls (frames.cc, collapsed_hold).
#pragma once

#include <vector>

#include "estimator/ir.h"

namespace memest {

/// Per tensor: the node after whose forward the frames let go of it, when that is
/// later than its last consumer; -1 otherwise (and for all but activations).
/// Nodes of module "loss" run after the model's forward has returned.
std::vector<int> frame_release_nodes(const Graph& g);

}  // namespace memest
