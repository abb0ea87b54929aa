// Pattern fusion of normalisations and their statistics as PyTorch runs them: layer
// and RMS norms spelled out, torch.var, torch.rsqrt, F.group_norm (see fuse.cc).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "estimator/fuse_impl.h"
#include "estimator/ops/registry.h"

namespace memest {

// Below opset 17 torch.onnx spells layer_norm out: ReduceMean, Sub, Pow(2),
// ReduceMean, Add(eps), Sqrt, Div, then Mul(weight), Add(bias). PyTorch runs
// native_layer_norm, one kernel that keeps its input, the weight and fp32 mean and
// rstd per row; left spelled out, memest kept the centred input, its square, the
// root and the normalised copy (a small transformer at opset 14 read 7.7% high).
// From opset 17 on both exporters write nn.LayerNorm as LayerNormalization, so the
// pattern there is the model's own arithmetic (I-BERT's IntLayerNorm outside quant mode:
// mean, centre, square, mean, sqrt, divide), which autograd runs op by op and whose
// intermediates it keeps: fused, its legacy export read 11% low at batch 8 and its
// largest batch under 24 GiB came out 19% over (blind7-compare-h200-torch2.11.txt).
constexpr int64_t kLayerNormOpset = 17;
void Fuser::layer_norm(int k) {
  if (g_.opset >= kLayerNormOpset) return;
  const Node& mean = g_.nodes[k];
  if (mean.dead || mean.op != "ReduceMean" || mean.inputs.empty()) return;
  const int x = mean.inputs[0];
  if (x < 0 || !T(x).shape || T(x).shape->empty()) return;
  const size_t rank = T(x).shape->size();
  const std::vector<int64_t> axes = mean_axes(mean, rank);
  if (axes.empty()) return;
  for (size_t i = 0; i < axes.size(); ++i) {  // the trailing axes
    if (axes[i] != static_cast<int64_t>(rank - axes.size() + i)) return;
  }
  const int sub = only_op(mean.outputs[0], "Sub");
  if (sub < 0 || g_.nodes[sub].inputs[0] != x || g_.nodes[sub].inputs[1] != mean.outputs[0]) return;
  const int centred = g_.nodes[sub].outputs[0];
  if (T(centred).graph_output || uses_[centred] != 2) return;
  int pow = -1, div = -1;
  for (int c : consumers(centred)) {
    if (g_.nodes[c].op == "Pow" && g_.nodes[c].inputs[0] == centred) pow = c;
    if (g_.nodes[c].op == "Div" && g_.nodes[c].inputs[0] == centred) div = c;
  }
  if (pow < 0 || div < 0 || scalar_value(g_.nodes[pow].inputs[1]) != 2.0) return;
  const int var = only_op(g_.nodes[pow].outputs[0], "ReduceMean");
  if (var < 0 || mean_axes(g_.nodes[var], rank) != axes) return;
  const int add = only_op(g_.nodes[var].outputs[0], "Add");
  if (add < 0) return;
  const auto eps = scalar_value(other_input(g_.nodes[add], g_.nodes[var].outputs[0]));
  if (!eps) return;
  const int sqrt = only_op(g_.nodes[add].outputs[0], "Sqrt");
  if (sqrt < 0 || only_consumer(g_.nodes[sqrt].outputs[0]) != div || g_.nodes[div].inputs[1] != g_.nodes[sqrt].outputs[0]) {
    return;
  }
  std::vector<int> dead = {k, sub, pow, var, add, sqrt, div};
  std::vector<int> inputs = {x};
  int last = div;
  // An affine LayerNorm's weight and bias: parameters shaped like the normalised dims.
  const Shape norm_dims(T(x).shape->end() - static_cast<int64_t>(axes.size()), T(x).shape->end());
  auto affine = [&](int t) { return is_param(t) && T(t).shape && *T(t).shape == norm_dims; };
  if (const int mul = only_op(g_.nodes[div].outputs[0], "Mul"); mul >= 0) {
    const int w = other_input(g_.nodes[mul], g_.nodes[div].outputs[0]);
    if (affine(w)) {
      inputs.push_back(w);
      dead.push_back(mul);
      last = mul;
      if (const int badd = only_op(g_.nodes[mul].outputs[0], "Add"); badd >= 0) {
        const int b = other_input(g_.nodes[badd], g_.nodes[mul].outputs[0]);
        if (affine(b)) {
          inputs.push_back(b);
          dead.push_back(badd);
          last = badd;
        }
      }
    }
  }
  replace(last, "LayerNormalization", inputs, dead);
  Node& ln = g_.nodes[last];
  ln.domain.clear();  // ONNX's own op, as opset 17 writes it
  ln.info = find_op("", "LayerNormalization");
  Attribute axis;
  axis.i = static_cast<int64_t>(rank - axes.size());
  ln.attrs["axis"] = axis;
  Attribute epsilon;
  epsilon.kind = Attribute::Float;
  epsilon.f = *eps;
  ln.attrs["epsilon"] = epsilon;
}

// F.rms_norm as torch.export decomposes it, Pow(x, 2) -> ReduceMean(trailing axes) ->
// Add(eps) -> Sqrt -> Reciprocal -> Mul(x, .) [-> Mul(weight)], every node traced to the
// call (from_rms_norm, dynamo_repair.cc): one RMSNormalization, as CUDA runs it
// (aten._fused_rms_norm keeps the input and an fp32 rstd per row). A hand-written RMSNorm
// (transformers' LlamaRMSNorm) is the same graph without the mark and runs as written.
void Fuser::rms_norm(int k) {
  const Node& mean = g_.nodes[k];
  auto marked = [&](int node) { return node >= 0 && g_.nodes[node].attr_int("from_rms_norm", 0) == 1; };
  if (mean.dead || mean.inputs.empty() || !marked(k)) return;
  const int pow = T(mean.inputs[0]).producer;
  if (!marked(pow) || g_.nodes[pow].op != "Pow" || scalar_value(g_.nodes[pow].inputs[1]) != 2.0) return;
  if (only_consumer(mean.inputs[0]) != k) return;
  const int x = g_.nodes[pow].inputs[0];
  if (x < 0 || !T(x).shape || T(x).shape->empty()) return;
  const size_t rank = T(x).shape->size();
  const std::vector<int64_t> axes = mean_axes(mean, rank);
  if (axes.empty()) return;
  for (size_t i = 0; i < axes.size(); ++i) {  // the trailing axes
    if (axes[i] != static_cast<int64_t>(rank - axes.size() + i)) return;
  }
  const int add = only_op(mean.outputs[0], "Add");
  if (!marked(add)) return;
  const auto eps = scalar_value(other_input(g_.nodes[add], mean.outputs[0]));
  const int sqrt = eps ? only_op(g_.nodes[add].outputs[0], "Sqrt") : -1;
  const int rec = marked(sqrt) ? only_op(g_.nodes[sqrt].outputs[0], "Reciprocal") : -1;
  const int mul = marked(rec) ? only_op(g_.nodes[rec].outputs[0], "Mul") : -1;
  if (!marked(mul) || other_input(g_.nodes[mul], g_.nodes[rec].outputs[0]) != x) return;
  std::vector<int> dead = {pow, k, add, sqrt, rec, mul};
  std::vector<int> inputs = {x};
  int last = mul;
  const Shape norm_dims(T(x).shape->end() - static_cast<int64_t>(axes.size()), T(x).shape->end());
  if (const int scale = only_op(g_.nodes[mul].outputs[0], "Mul"); marked(scale)) {
    const int w = other_input(g_.nodes[scale], g_.nodes[mul].outputs[0]);
    if (is_param(w) && T(w).shape && *T(w).shape == norm_dims) {
      inputs.push_back(w);
      dead.push_back(scale);
      last = scale;
    }
  }
  replace(last, "RMSNormalization", inputs, dead);
  Node& rms = g_.nodes[last];
  rms.domain.clear();  // ONNX's own op (opset 23)
  rms.info = find_op("", "RMSNormalization");
  Attribute axis;
  axis.i = static_cast<int64_t>(rank - axes.size());
  rms.attrs["axis"] = axis;
  Attribute epsilon;
  epsilon.kind = Attribute::Float;
  epsilon.f = *eps;
  rms.attrs["epsilon"] = epsilon;
}

// torch.var as both exporters write it: ReduceMean(x) -> Sub(x, mean) -> Mul(d, d) ->
// ReduceMean, then, for a correction other than 0, Mul(count) -> Div(count - correction),
// the count a scalar (the legacy exporter's from Shape, the dynamo exporter's a constant;
// symbolic_opset9's _var_mean writes no scaling for correction 0). Autograd runs one kernel whose
// backward keeps x alone (derivatives.yaml var.correction: var_backward(grad, self, ...),
// which makes self - self.mean() and then the gradient); spelled out, memest kept the
// centred copy d for the square's gradient: an input-sized tensor per call too many (timm's
// SimpleNorm2d, `x * rsqrt(var(x) + eps)`, in blind28's st_convnext_zepto_rms: +12.4% in
// fp32, the GPU's trace holding no such copy; timm's EvoNorm group_std, `var(unbiased=False)`,
// the count-free form: seqtrace32c). A hand-written variance, `((x - m) ** 2).mean()`, squares
// with Pow and runs as written; one written `d * d` would be taken for torch.var.
void Fuser::variance(int k) {
  const Node& mean = g_.nodes[k];
  if (mean.dead || mean.inputs.empty()) return;
  const int x = mean.inputs[0];
  if (x < 0 || !T(x).shape || T(x).shape->empty()) return;
  const size_t rank = T(x).shape->size();
  const std::vector<int64_t> axes = mean_axes(mean, rank);
  if (axes.empty()) return;
  const int sub = only_op(mean.outputs[0], "Sub");
  if (sub < 0 || g_.nodes[sub].inputs[0] != x || g_.nodes[sub].inputs[1] != mean.outputs[0]) return;
  const int centred = g_.nodes[sub].outputs[0];
  if (T(centred).graph_output || uses_[centred] != 2 || use_sum_[centred] % 2 != 0) return;
  const int square = static_cast<int>(use_sum_[centred] / 2);  // the one node reading it twice
  if (g_.nodes[square].op != "Mul" || g_.nodes[square].inputs[0] != centred || g_.nodes[square].inputs[1] != centred) {
    return;
  }
  const int var = only_op(g_.nodes[square].outputs[0], "ReduceMean");
  if (var < 0 || mean_axes(g_.nodes[var], rank, false) != axes) return;
  std::vector<int> fused = {k, sub, square, var};
  // The count's scaling, where a correction asks for it.
  if (const int scale = only_op(g_.nodes[var].outputs[0], "Mul");
      scale >= 0 && one_element(other_input(g_.nodes[scale], g_.nodes[var].outputs[0]))) {
    const int div = only_op(g_.nodes[scale].outputs[0], "Div");
    if (div >= 0 && g_.nodes[div].inputs[0] == g_.nodes[scale].outputs[0] && one_element(g_.nodes[div].inputs[1])) {
      fused.insert(fused.end(), {scale, div});
    }
  }
  const int64_t keepdims = g_.nodes[var].attr_int("keepdims", 1);
  const int last = fused.back();
  replace(last, "Variance", {x}, fused);
  Node& n = g_.nodes[last];
  Attribute a;
  a.kind = Attribute::Ints;
  a.ints = axes;
  n.attrs["axes"] = a;
  Attribute kd;
  kd.i = keepdims;
  n.attrs["keepdims"] = kd;
}

// torch.rsqrt as the legacy exporter writes it (symbolic_opset9.rsqrt): Div(ones(1),
// Sqrt(x)). rsqrt is on autocast's fp32 list, so under AMP its result is fp32 and a norm's
// `x * rsqrt(var + eps)` promotes to an fp32 copy of x; spelled out, the Div ran in half
// and so did the product (blind28's st_convnext_zepto_rms, legacy bf16: 4.7% under where
// the dynamo export, whose Reciprocal is on the list too, was exact). Python's `1 / t` is
// t.reciprocal() * 1 and exports as Reciprocal, so the Div of a one is rsqrt's own.
void Fuser::rsqrt(int k) {
  const Node& sqrt = g_.nodes[k];
  if (sqrt.dead || sqrt.inputs.empty() || sqrt.outputs.empty()) return;
  const int div = only_op(sqrt.outputs[0], "Div");
  if (div < 0 || g_.nodes[div].inputs.size() != 2 || g_.nodes[div].inputs[1] != sqrt.outputs[0]) return;
  if (scalar_value(g_.nodes[div].inputs[0]) != 1.0) return;
  replace(div, "Rsqrt", {sqrt.inputs[0]}, {k, div});
}

// F.group_norm, which both exporters write as Reshape(x, [N, G, -1]) ->
// InstanceNormalization (unit scale, zero bias) -> Reshape back -> Mul(weight) ->
// Add(bias): PyTorch runs native_group_norm, one kernel that saves the input and
// per-(n, group) statistics. Left apart, each Reshape, the instance norm and the
// affine Mul kept their own tensors (poolformer_s12 13% over, GroupNorm UNets 20%).
void Fuser::group_norm(int k) {
  Node& in = g_.nodes[k];
  if (in.dead || in.op != "InstanceNormalization") return;
  Node* r1 = producer(in.inputs[0]);
  if (!r1 || r1->op != "Reshape" || !read_once(in.inputs[0])) return;
  const int x = r1->inputs[0];
  const auto& xs = T(x).shape;
  const auto& gs = T(in.inputs[0]).shape;
  if (!xs || !gs || xs->size() < 3 || gs->size() != 3) return;
  const auto groups = (*gs)[1].as_const();
  if (!groups || *groups <= 0) return;
  const int r2k = only_consumer(in.outputs[0]);
  if (r2k < 0 || g_.nodes[r2k].op != "Reshape") return;
  const auto& ys = T(g_.nodes[r2k].outputs[0]).shape;
  if (!ys || *ys != *xs) return;
  std::vector<int> dead = {T(in.inputs[0]).producer, k, r2k};
  int last = r2k;
  int weight = -1, bias = -1;
  const int mk = only_consumer(g_.nodes[r2k].outputs[0]);
  if (mk >= 0 && g_.nodes[mk].op == "Mul") {
    const Node& mul = g_.nodes[mk];
    const int other = mul.inputs[0] == g_.nodes[r2k].outputs[0] ? mul.inputs[1] : mul.inputs[0];
    if (const int w = param_behind(other); w >= 0) {
      weight = w;
      dead.push_back(mk);
      last = mk;
      const int ak = only_consumer(mul.outputs[0]);
      if (ak >= 0 && g_.nodes[ak].op == "Add") {
        const Node& add = g_.nodes[ak];
        const int b = add.inputs[0] == mul.outputs[0] ? add.inputs[1] : add.inputs[0];
        if (const int bp = param_behind(b); bp >= 0) {
          bias = bp;
          dead.push_back(ak);
          last = ak;
        }
      }
    }
  }
  std::vector<int> inputs = {x};
  if (weight >= 0) inputs.push_back(weight);
  if (bias >= 0) inputs.push_back(bias);
  replace(last, "GroupNorm", std::move(inputs), dead);
  Attribute a;
  a.kind = Attribute::Int;
  a.i = *groups;
  g_.nodes[last].attrs.emplace("num_groups", std::move(a));
}

}  // namespace memest
