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
