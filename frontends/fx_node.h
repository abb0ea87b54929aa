// The dynamo exporter's "pkg.torch.onnx.fx_node" metadata: the FX call a node came from,
// e.g. "%sdpa : [num_users=1] = call_function[target=torch.ops.aten.scaled_dot_product_attention.default](
// args = (%q, %k, %v, %mask, 0.1), kwargs = {scale: 0.125})". Some arguments never reach the
// ONNX graph (the exporter's scaled_dot_product_attention drops dropout_p); they are read here.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace memest {

/// The numeric argument of the FX call at `position` (0-based, positional) or named
/// `keyword`; nullopt when the call has neither or it is not a number (a %tensor, None).
std::optional<double> fx_number_arg(std::string_view fx_node, size_t position, std::string_view keyword);

/// The list-of-integers argument of the FX call at `position` ("[0, 0]" of a conv2d's
/// padding); nullopt when absent or not such a list (a string, a %tensor, None).
std::optional<std::vector<int64_t>> fx_int_list_arg(std::string_view fx_node, size_t position);

/// A convolution's padding as its FX call gave it (aten.conv1d/2d/3d and aten.convolution:
/// the 5th argument); nullopt for another call or a string padding ("same").
std::optional<std::vector<int64_t>> fx_conv_padding(std::string_view fx_node);

/// The FX values the call takes (the `%name`s of its args and kwargs), in order: the
/// graph signature's placeholders among them (`%p_fc_weight`) name the parameters it reads.
std::vector<std::string_view> fx_value_args(std::string_view fx_node);

/// The FX node's own name ("sdpa" of "%sdpa : [num_users=1] = ..."); "" when absent.
std::string_view fx_call_name(std::string_view fx_node);

/// The op an FX node's name was made from: its counter dropped ("permute_3" -> "permute",
/// "_to_copy_2" -> "_to_copy", "index" stays). The exporter names folded values so.
std::string_view fx_call_op(std::string_view name);

/// Whether an FX node's name is that of a call that only lays a tensor out or casts it
/// ("permute_3", "t", "_to_copy_2", "squeeze").
bool fx_layout_call(std::string_view name);

/// Whether a name in the exporter's notes is a value it made itself ("val_58") rather
/// than a call of the traced program ("arange", "sub_63").
bool fx_exporter_value(std::string_view name);

/// scaled_dot_product_attention's dropout_p (5th argument) when `fx_node` is that call.
std::optional<double> fx_sdpa_dropout(std::string_view fx_node);

}  // namespace memest
