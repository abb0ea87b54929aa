// A pass: the copies of an op that sibling modules each ran, which the exporter merged.
#pragma once

#include "estimator/ir.h"

namespace memest {

/// Both torch.onnx exporters merge nodes that run the same op on the same inputs (the
/// TorchScript exporter's _jit_pass_cse in _optimize_graph, onnxscript's common
/// subexpression elimination behind dynamo=True). Eager PyTorch does not: where several
/// branches each open with their own parameterless op on one input, every branch
/// allocates its own output and the autograd graph keeps each (timm's NASNet: five
/// BranchSeparables of a cell each run `self.act_1 = nn.ReLU()` on one of the cell's two
/// inputs; the file holds one Relu per input; DiT's per-block `adaLN_modulation =
/// Sequential(SiLU(), Linear)` on one conditioning tensor).
///
/// The merge shows in the module paths. A module's first op (a node of module `O.r` that
/// reads nothing made inside O) whose output O goes on to read itself is not what O
/// returns, so in PyTorch no code outside O could have read it; a reader outside O read
/// its own branch's copy of it. Each sibling branch B (the child of O's and the reader's
/// deepest common module that holds the reader: "cell_0.comb_iter_1_left" beside
/// "cell_0.comb_iter_0_right", "cell_1" for cell_0's `conv_1x1.act` that cell_1's
/// `conv_prev_1x1` opens with too) gets one copy, of module `B.r`, which every reader in B
/// reads. A module that returns its first op's output as well as its result would be
/// taken for a merge and cost one output more: none in the corpus does. Returns how many
/// copies it made. Runs before the explicit-pads pass (a copy's Pad is its own) and
/// before sorting; relinks the graph.
int restore_branch_copies(Graph& g);

}  // namespace memest
