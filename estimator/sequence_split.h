// A pass: the legacy exporter's tensor_split over a Loop, back into the Slices it makes.
#pragma once

#include "estimator/ir.h"

namespace memest {

/// torch.tensor_split(x, indices, dim) whose pieces Python unpacks (torchvision's MViT:
/// `class_token, x = torch.tensor_split(x, indices=(1,), dim=2)`) reaches the legacy
/// exporter as a sequence (symbolic_opset11.tensor_split): c = Concat([0], indices); a
/// Loop over len(indices) inserting Slice(x, c[i], c[i + 1], dim) into a SequenceEmpty;
/// a SequenceInsert of the last piece, Slice(x, c[-1], size, dim); and a SequenceAt per
/// piece. memest does not look inside a Loop, so each SequenceAt becomes the Slice it
/// reads (the last piece: that Slice itself, through an Identity), where c's values are
/// constants; the Loop, its sequences and what only they read are left unread. Runs
/// before sorting; returns how many SequenceAt nodes it rewrote.
int split_sequence_loops(Graph& g);

}  // namespace memest
