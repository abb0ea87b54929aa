// fx_node.h: arguments of the FX call the dynamo exporter records per node.
#include <doctest/doctest.h>

#include "frontends/fx_node.h"

using namespace memest;

TEST_CASE("fx_node: scaled_dot_product_attention's dropout_p, positional or by keyword") {
  // gpt_bigcode's export (transformers, torch 2.11): dropout_p is the fifth argument.
  const char* bigcode =
      "%scaled_dot_product_attention : [num_users=1] = call_function[target=torch.ops.aten."
      "scaled_dot_product_attention.default](args = (%transpose, %view_1, %view_2, %expand_1, 0.1), "
      "kwargs = {scale: 0.125})";
  CHECK(fx_sdpa_dropout(bigcode) == 0.1);
  CHECK(fx_number_arg(bigcode, 0, "") == std::nullopt);  // a tensor, not a number
  CHECK(fx_number_arg(bigcode, 9, "scale") == 0.125);    // no 10th argument: the keyword
  // falcon's: four arguments, no dropout.
  CHECK(fx_sdpa_dropout("%sdpa = call_function[target=torch.ops.aten.scaled_dot_product_attention.default]"
                        "(args = (%a, %b, %c, %expand), kwargs = {})") == std::nullopt);
  CHECK(fx_sdpa_dropout("%sdpa = call_function[target=torch.ops.aten.scaled_dot_product_attention.default]"
                        "(args = (%a, %b, %c), kwargs = {dropout_p: 0.25, is_causal: True})") == 0.25);
  // Nested brackets do not split arguments; another op is not read.
  CHECK(fx_number_arg("f(args = (%x, [1, 2], (3, 4), 0.5), kwargs = {})", 3, "") == 0.5);
  CHECK(fx_sdpa_dropout("%d = call_function[target=torch.ops.aten.native_dropout.default](args = (%x, 0.1, True))") ==
        std::nullopt);
}

TEST_CASE("fx_node: the FX values a call takes, which name the parameters it reads") {
  // focalnet's final norm (torch 2.11): the placeholders of norm.weight and norm.bias.
  const char* norm =
      "%layer_norm_28 : [num_users=1] = call_function[target=torch.ops.aten.layer_norm.default](args = "
      "(%permute_56, [768], %p_norm_weight, %p_norm_bias, 1e-05, False), kwargs = {})";
  const std::vector<std::string_view> args = fx_value_args(norm);
  REQUIRE(args.size() == 3);
  CHECK(args[0] == "permute_56");
  CHECK(args[1] == "p_norm_weight");
  CHECK(args[2] == "p_norm_bias");
  // The call's own name before "args" is not an argument; kwargs' values are.
  CHECK(fx_value_args("%y : [num_users=1] = call_function[target=f](args = (), kwargs = {w: %p_w})") ==
        std::vector<std::string_view>{"p_w"});
  CHECK(fx_value_args("not an FX call %x").empty());
}

TEST_CASE("fx_node: the call's own name") {
  // GPT-NeoX's post-attention LayerNorm, which the exporter merged into the input one:
  // its readers still take %layer_norm_1, and restore_merged_modules compares that with
  // the names of the calls that remain.
  CHECK(fx_call_name("%layer_norm_1 : [num_users=1] = call_function[target=torch.ops.aten.layer_norm.default]("
                     "args = (%add_3, [512], %p_w, %p_b, 1e-05), kwargs = {})") == "layer_norm_1");
  CHECK(fx_call_name("layer_norm_1 : no percent sign").empty());
  CHECK(fx_call_name("%no_colon").empty());
}

TEST_CASE("fx_node: a convolution's own padding, which a Pad the exporter folded in adds to") {
  // timm's BlurPool2d in st_mobilenetv4_conv_blur_medium (torch 2.11 dynamo export): the
  // Conv's ONNX pads are [1, 1, 1, 1], the call's own padding [0, 0] (the rest was F.pad).
  const char* blur =
      "%conv2d_2 : [num_users=1] = call_function[target=torch.ops.aten.conv2d.default](args = "
      "(%pad, %b_blocks_0_0_aa_filt, None, [2, 2], [0, 0], [1, 1], 128), kwargs = {})";
  CHECK(fx_conv_padding(blur) == std::vector<int64_t>{0, 0});
  CHECK(fx_int_list_arg(blur, 3) == std::vector<int64_t>{2, 2});
  CHECK(fx_int_list_arg(blur, 6) == std::nullopt);  // 128: a number, not a list
  CHECK(fx_int_list_arg(blur, 2) == std::nullopt);  // None
  CHECK(fx_int_list_arg("f(args = (%x, [], [3]), kwargs = {})", 1) == std::vector<int64_t>{});
  CHECK(fx_int_list_arg("f(args = (%x, [], [3]), kwargs = {})", 2) == std::vector<int64_t>{3});
  CHECK(fx_int_list_arg("f(args = (%x, [1.5]), kwargs = {})", 1) == std::nullopt);
  // aten.convolution: padding is the 5th argument too.
  CHECK(fx_conv_padding("%c : [num_users=1] = call_function[target=torch.ops.aten.convolution.default](args = "
                        "(%x, %w, None, [1], [3], [1], False, [0], 1), kwargs = {})") == std::vector<int64_t>{3});
  // A string padding ("same") and other calls: nothing.
  CHECK(fx_conv_padding("%c : [num_users=1] = call_function[target=torch.ops.aten.conv2d.padding](args = "
                        "(%x, %w, None, [1, 1], same), kwargs = {})") == std::nullopt);
  CHECK(fx_conv_padding("%m : [num_users=1] = call_function[target=torch.ops.aten.max_pool2d.default](args = "
                        "(%x, [3, 3], [2, 2], [1, 1]), kwargs = {})") == std::nullopt);
}
