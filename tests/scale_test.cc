// Scale: a Llama-2-70B-shaped graph (80 layers, d 8192, GQA 64/8 heads, FFN 28672) at
// sequence 32k. The bytes must be exact at 70B parameters and nothing may overflow; the
// time it takes is bench/'s business, not a test's.
#include <doctest/doctest.h>

#include <numeric>
#include <string>

#include "estimator/analysis.h"
#include "frontends/text_reader.h"

using namespace memest;

namespace {

constexpr int kLayers = 80;

// One decoder layer as text: RMSNorm as a scale, q/k/v/o and the SwiGLU MLP as Linears
// (torch's [out, in] weights), attention over 64 query heads with the 8 key/value heads
// tiled to 64, residual adds.
std::string layer(int i) {
  const std::string L = "l" + std::to_string(i), P = "layers." + std::to_string(i);
  std::string s;
  auto line = [&](const std::string& x) { s += x + "\n"; };
  line("param " + P + ".input_layernorm.weight float32 8192");
  line("param " + P + ".post_attention_layernorm.weight float32 8192");
  for (const char* w : {"q_proj 8192,8192", "k_proj 1024,8192", "v_proj 1024,8192", "o_proj 8192,8192"}) {
    const std::string spec(w);
    line("param " + P + ".self_attn." + spec.substr(0, 6) + ".weight float32 " + spec.substr(7));
  }
  line("param " + P + ".mlp.gate_proj.weight float32 28672,8192");
  line("param " + P + ".mlp.up_proj.weight float32 28672,8192");
  line("param " + P + ".mlp.down_proj.weight float32 8192,28672");
  const std::string h = "h" + std::to_string(i), next = "h" + std::to_string(i + 1);
  line("node Mul " + h + " " + P + ".input_layernorm.weight -> " + L + "n1 @" + P + ".input_layernorm");
  for (const char* p : {"q", "k", "v"}) {
    line("node memest::Linear " + L + "n1 " + P + ".self_attn." + p + "_proj.weight -> " + L + p + " @" + P +
         ".self_attn." + p + "_proj");
  }
  line("node Reshape " + L + "q heads64 -> " + L + "q4 @" + P + ".self_attn");
  line("node Transpose " + L + "q4 -> " + L + "qh perm=0,2,1,3 @" + P + ".self_attn");
  for (const char* p : {"k", "v"}) {
    line("node Reshape " + L + p + " heads8 -> " + L + p + "4 @" + P + ".self_attn");
    line("node Transpose " + L + p + "4 -> " + L + p + "t perm=0,2,1,3 @" + P + ".self_attn");
    line("node Tile " + L + p + "t repeat8 -> " + L + p + "h @" + P + ".self_attn");
  }
  line("node memest::Attention " + L + "qh " + L + "kh " + L + "vh -> " + L + "att is_causal=1 @" + P + ".self_attn");
  line("node Transpose " + L + "att -> " + L + "att2 perm=0,2,1,3 @" + P + ".self_attn");
  line("node Reshape " + L + "att2 hidden -> " + L + "att3 @" + P + ".self_attn");
  line("node memest::Linear " + L + "att3 " + P + ".self_attn.o_proj.weight -> " + L + "o @" + P + ".self_attn.o_proj");
  line("node Add " + h + " " + L + "o -> " + L + "r1 @" + P);
  line("node Mul " + L + "r1 " + P + ".post_attention_layernorm.weight -> " + L + "n2 @" + P + ".post_attention_layernorm");
  line("node memest::Linear " + L + "n2 " + P + ".mlp.gate_proj.weight -> " + L + "g @" + P + ".mlp.gate_proj");
  line("node Sigmoid " + L + "g -> " + L + "gs @" + P + ".mlp.act_fn");
  line("node Mul " + L + "g " + L + "gs -> " + L + "silu @" + P + ".mlp.act_fn");
  line("node memest::Linear " + L + "n2 " + P + ".mlp.up_proj.weight -> " + L + "u @" + P + ".mlp.up_proj");
  line("node Mul " + L + "silu " + L + "u -> " + L + "gu @" + P + ".mlp");
  line("node memest::Linear " + L + "gu " + P + ".mlp.down_proj.weight -> " + L + "d @" + P + ".mlp.down_proj");
  line("node Add " + L + "r1 " + L + "d -> " + next + " @" + P);
  return s;
}

std::string llama70b() {
  std::string s = R"(opset 17
input input_ids int64 batch,seq
param embed_tokens.weight float32 32000,8192
param norm.weight float32 8192
param lm_head.weight float32 32000,8192
const heads64 int64 4 = 0,0,64,128
const heads8 int64 4 = 0,0,8,128
const repeat8 int64 4 = 1,8,1,1
const hidden int64 3 = 0,0,8192
node Gather embed_tokens.weight input_ids -> h0 @embed_tokens
)";
  for (int i = 0; i < kLayers; ++i) s += layer(i);
  s += "node Mul h" + std::to_string(kLayers) + " norm.weight -> hn @norm\n";
  s += "node memest::Linear hn lm_head.weight -> logits @lm_head\noutput logits\n";
  return s;
}

}  // namespace

TEST_CASE("a 70B-parameter decoder at sequence 32k: exact parameter bytes, no overflow") {
  AnalysisOptions o;
  o.train.optim = Optim::AdamW;
  o.train.amp = Amp::BF16;
  o.dims["seq"] = 32768;
  const Analysis a = analyze(read_text_graph(llama70b()), o);
  // Llama-2-70B's count: embeddings and head 2 x 32000 x 8192, 80 layers of 855,654,400,
  // the final norm 8192.
  const int64_t params = 2ll * 32000 * 8192 + 80ll * 855'654'400 + 8192;
  CHECK(params == 68'976'648'192);
  CHECK(a.accounting.parameter_count == params);
  CHECK(a.accounting.parameter_bytes == params * 4);
  CHECK(a.unsupported.empty());
  CHECK(a.fallback_bytes.is_zero());  // every shape derived, none assumed
  const Estimate e = estimate(a, 1);
  // Parameters, gradients and AdamW's two states are 16 bytes a parameter (1.1 TB): the
  // peak holds at least those, and its components add up to it exactly.
  CHECK(e.peak.peak_bytes > 16 * params);
  CHECK(std::accumulate(e.peak.components.begin(), e.peak.components.end(), int64_t{0}) == e.peak.peak_bytes);
  CHECK(e.reserved_bytes >= e.peak.peak_bytes);
  // The logits alone are [1, 32768, 32000] in bf16 and their fp32 log-softmax: the
  // estimate is over 2 TB of bytes, and a batch of 64 is 64x the activations, still exact.
  MESSAGE("70B, seq 32768, batch 1: peak " << e.peak.peak_bytes << " B");
  const Estimate big = estimate(a, 64);
  CHECK(big.peak.peak_bytes > e.peak.peak_bytes);
  CHECK(big.peak.peak_bytes < (int64_t{1} << 62));
}
