// The dynamo exporter's optimizer merges equal initializers (onnxscript's constant
// deduplication) and equal calls (its common subexpression elimination); torch still has
// one parameter per module. Undone here from the FX metadata (dynamo_repair.h).
#pragma once

#include <string_view>
#include <vector>

#include "estimator/ir.h"
#include "frontends/dynamo_repair.h"

namespace memest {

/// The last component of a parameter's name, before any '#' a copy's name carries
/// ("weight" of "stem.2.identity.weight#stages.0.norm").
std::string_view param_leaf(std::string_view name);

/// The module a parameter's name belongs to ("a.b" of "a.b.weight"; "" for a bare name).
std::string_view param_module(std::string_view name);

/// The exporter merges initializers of equal contents into one (onnxscript's optimizer):
/// every LayerNorm weight that is still all ones, every zero bias, timm's layer scales
/// become one initializer that all those modules read, so memest saw one shared parameter
/// (and, for a folded one the signature does not list, such as addcmul's alpha, a buffer
/// whose Mul saves nothing for a gradient): resmlp_12_224 read 17% low. Each module
/// instance that reads such a small (at most 65,536 elements) floating initializer gets its
/// own copy, a parameter where the modules scale or shift by it. A weight tied on purpose
/// (ALBERT's layers) is read by one module instance and stays shared; tied embeddings are
/// larger than the limit. With `reads` (the FX metadata), the readers' calls say which
/// parameter each reads, so the copies are one per parameter, at any size, and a module
/// reached from two places (CoaT's shared conv position encoding) keeps one.
/// A reader whose call names no parameter (it takes a value the exporter folded) reads
/// its module's parameter in `parameters` that no call takes and no tensor holds, one per
/// folded value. A BatchNorm's merged scale and bias split like any weight, its running
/// statistics never; one node reading one initializer as two of its call's parameters
/// (levit's zero scale and bias), or one call's nodes reading it as two of its values
/// (GRN's addcmul), read two; a one-element initializer splits only where the calls name it.
void split_deduplicated_initializers(Graph& g, const ParameterReads& reads = {},
                                     const std::vector<std::string_view>& parameters = {});

/// The exporter merges calls that compute the same thing (onnxscript's common
/// subexpression elimination): two norms of one input whose fresh weights are equal,
/// DPN's two BatchNorms of a block's input, GPT-NeoX's input and post-attention LayerNorms
/// of one hidden state, T5's encoder and decoder norms of one embedding. The merged
/// module's parameters are then in no node; torch still has them, computes the norm twice
/// and trains both. A node whose FX call takes a value no node computes (`linear(
/// %layer_norm_1, ...)`) but reads another's output (`layer_norm`) in its place read a
/// merged call: walking back from that output through nodes of one input (an activation)
/// to a node that reads parameters of a module T, the merged module M is the one whose
/// parameters the signature lists, no tensor holds and no call takes, whose path differs
/// from T's in one component, with the same parameter names. That walk is put back as
/// M's, with M's parameters (and running statistics) of the shapes of T's, and the reader
/// reads it. Returns how many modules were put back.
int restore_merged_modules(Graph& g, const std::vector<std::string_view>& parameters,
                           const std::vector<std::string_view>& buffers, const ParameterReads& reads);

}  // namespace memest
