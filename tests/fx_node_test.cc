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
