// Neural-network ops: convolution, pooling, normalisation, dropout, activations,
// embedding, recurrent layers and attention. Arguments are read by schema name,
// so conv2d, convolution and _convolution share one handler. What TorchScript
// keeps and ONNX loses travels as attributes: dropout's probability and training
// flag, batch_norm's training flag, attention's dropout and causality.
#include "ts_ops.h"

#include "ts_consts.h"

namespace memest::ts {
namespace {

// A named int-list argument expanded to `n` spatial dims, or `dflt` when absent.
std::vector<int64_t> spatial_arg(Call& c, const char* name, size_t n, int64_t dflt) {
  int i = c.arg(name);
  if (i < 0 || c.none(static_cast<size_t>(i))) return std::vector<int64_t>(n, dflt);
  auto v = c.ints(static_cast<size_t>(i), n);
  if (!v) c.fail(std::string("'") + name + "' must be known when the model is loaded");
  if (v->empty()) return std::vector<int64_t>(n, dflt);
  if (v->size() != n) c.fail(std::string("'") + name + "' has " + std::to_string(v->size()) + " values for " +
                             std::to_string(n) + " spatial dims");
  return *v;
}

std::vector<int64_t> twice(const std::vector<int64_t>& p) {
  std::vector<int64_t> out = p;
  out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::optional<double> named_num(Call& c, const char* name) {
  int i = c.arg(name);
  return i < 0 ? std::nullopt : c.num(static_cast<size_t>(i));
}

std::optional<bool> named_flag(Call& c, const char* name) {
  int i = c.arg(name);
  return i < 0 ? std::nullopt : c.flag(static_cast<size_t>(i));
}

// A graph input of the wrong kind of dtype (float token ids, integer images)
// means --input-shape gave the wrong dtype: say so where torch would fail too.
void require_input_dtype(Call& c, size_t i, bool floating, const char* what) {
  const Val& v = c.in(i);
  const std::string spec = v.is_tensor() ? c.lowerer().input_spec(v.name) : "";
  if (spec.empty() || v.dtype == at::ScalarType::Undefined || c10::isFloatingType(v.dtype) == floating) return;
  c.fail("input '" + v.name + "' is " + dtype_name(v.dtype) + " but feeds " + what + "; give it --input-shape " +
         spec + (floating ? ":float32" : ":int64"));
}

// ---- Convolution -------------------------------------------------------------

bool lower_conv(Call& c) {
  require_input_dtype(c, 0, true, "a convolution");
  const int wrank = c.rank(1);
  if (wrank < 3) return false;
  const size_t n = static_cast<size_t>(wrank - 2);
  Attrs attrs = {attr_ints("strides", spatial_arg(c, "stride", n, 1)),
                 attr_ints("dilations", spatial_arg(c, "dilation", n, 1))};
  int pi = c.arg("padding");
  if (auto mode = pi >= 0 ? c.str(static_cast<size_t>(pi)) : std::nullopt) {
    attrs.push_back(attr_s("auto_pad", *mode == "same" ? "SAME_UPPER" : "VALID"));
  } else {
    attrs.push_back(attr_ints("pads", twice(spatial_arg(c, "padding", n, 0))));
  }
  int gi = c.arg("groups");
  attrs.push_back(attr_i("group", gi >= 0 ? c.int_(static_cast<size_t>(gi)).value_or(1) : 1));
  const Val& w = c.in(1);
  if (w.dims.size() == static_cast<size_t>(wrank)) attrs.push_back(attr_ints("kernel_shape", {w.dims.begin() + 2, w.dims.end()}));
  const std::string name = c.node()->kind().toUnqualString();
  const bool transposed = named_flag(c, "transposed").value_or(name.find("transpose") != std::string::npos);
  if (transposed) {
    auto op = spatial_arg(c, "output_padding", n, 0);
    if (op != std::vector<int64_t>(n, 0)) attrs.push_back(attr_ints("output_padding", op));
  }
  std::vector<std::string> ins = {c.tensor(0), c.tensor(1)};
  if (!c.none(2)) ins.push_back(c.tensor(2));
  c.set(0, c.emit1(transposed ? "ConvTranspose" : "Conv", ins, attrs)).rank = c.rank(0);
  return true;
}

// ---- Pooling -----------------------------------------------------------------

size_t pool_dims(Call& c) {
  const std::string name = c.node()->kind().toUnqualString();
  auto d = name.find("1d") != std::string::npos ? 1u : name.find("3d") != std::string::npos ? 3u : 2u;
  return d;
}

bool lower_max_pool(Call& c) {
  const size_t n = pool_dims(c);
  auto kernel = spatial_arg(c, "kernel_size", n, 1);
  auto stride = spatial_arg(c, "stride", n, 0);
  if (stride == std::vector<int64_t>(n, 0)) stride = kernel;  // torch: stride defaults to the kernel
  Attrs attrs = {attr_ints("kernel_shape", kernel), attr_ints("strides", stride),
                 attr_ints("pads", twice(spatial_arg(c, "padding", n, 0))),
                 attr_ints("dilations", spatial_arg(c, "dilation", n, 1)),
                 attr_i("ceil_mode", named_flag(c, "ceil_mode").value_or(false))};
  const int outs = c.num_outputs() > 1 ? 2 : 1;  // max_pool2d_with_indices
  auto names = c.emit("MaxPool", {c.tensor(0)}, attrs, outs);
  for (int k = 0; k < outs; ++k) c.set(static_cast<size_t>(k), names[static_cast<size_t>(k)]);
  if (outs > 1) c.out(1).dtype = at::kLong;
  return true;
}

bool lower_avg_pool(Call& c) {
  const size_t n = pool_dims(c);
  auto kernel = spatial_arg(c, "kernel_size", n, 1);
  auto stride = spatial_arg(c, "stride", n, 0);
  if (stride == std::vector<int64_t>(n, 0)) stride = kernel;
  Attrs attrs = {attr_ints("kernel_shape", kernel), attr_ints("strides", stride),
                 attr_ints("pads", twice(spatial_arg(c, "padding", n, 0))),
                 attr_i("ceil_mode", named_flag(c, "ceil_mode").value_or(false)),
                 attr_i("count_include_pad", named_flag(c, "count_include_pad").value_or(true))};
  c.set(0, c.emit1("AveragePool", {c.tensor(0)}, attrs));
  return true;
}

// Adaptive pooling to 1x1 is a global pool. Average pooling to another size is
// spelled Resize to that size: the same output, and like adaptive_avg_pool's
// backward, Resize keeps nothing (memest would need the input's dims to pick a
// kernel; the helper has none). Max pooling to another size, which keeps its
// indices, is left to the generic op.
bool lower_adaptive_pool(Call& c) {
  const size_t n = pool_dims(c);
  auto size = c.ints(1, n);
  if (!size) return false;
  bool global = true;
  for (int64_t s : *size) global &= s == 1;
  if (global) {
    c.set(0, c.emit1(c.entry().onnx, {c.tensor(0)}));
    if (c.num_outputs() > 1) c.out(1) = Val();  // indices
    return true;
  }
  if (std::string(c.entry().onnx) != "GlobalAveragePool" || c.rank(0) != static_cast<int>(n) + 2) return false;
  std::string x = c.tensor(0);
  auto head = c.emit1("Shape", {x}, {attr_i("start", 0), attr_i("end", 2)});
  auto sizes = c.emit1("Concat", {head, c.ints_const(*size)}, {attr_i("axis", 0)});
  c.set(0, c.emit1("Resize", {x, "", "", sizes}, {attr_s("mode", "linear")}));
  return true;
}

// ---- Normalisation -----------------------------------------------------------

// A float tensor of `value` shaped by `shape` (a 1-D int64 tensor).
std::string filled(Call& c, const std::string& shape, double value) {
  onnx::AttributeProto v;
  v.set_name("value");
  v.set_type(onnx::AttributeProto::TENSOR);
  v.mutable_t()->set_data_type(kFloat);
  v.mutable_t()->add_dims(1);
  v.mutable_t()->add_float_data(static_cast<float>(value));
  return c.emit1("ConstantOfShape", {shape}, {v});
}

// A per-channel constant (scale 1, bias 0) for a norm without affine weights:
// sized by whichever per-channel input has known dims, else by the input's dim 1.
std::string per_channel(Call& c, double value) {
  for (size_t i = 1; i <= 4; ++i) {
    if (!c.none(i) && c.in(i).dims.size() == 1) return filled(c, c.ints_const(c.in(i).dims), value);
  }
  return filled(c, c.emit1("Shape", {c.tensor(0)}, {attr_i("start", 1), attr_i("end", 2)}), value);
}

bool lower_batch_norm(Call& c) {
  // batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled)
  const bool training = c.flag(5).value_or(true);
  std::vector<std::string> ins = {
      c.tensor(0),
      c.none(1) ? per_channel(c, 1.0) : c.tensor(1),
      c.none(2) ? per_channel(c, 0.0) : c.tensor(2),
      c.none(3) ? per_channel(c, 0.0) : c.tensor(3),
      c.none(4) ? per_channel(c, 1.0) : c.tensor(4),
  };
  Attrs attrs = {attr_f("epsilon", c.num(7).value_or(1e-5)), attr_f("momentum", 1.0 - c.num(6).value_or(0.1)),
                 attr_i("training_mode", training)};
  // In training, ONNX's BatchNormalization also outputs the updated running stats.
  auto names = c.emit("BatchNormalization", ins, attrs, training ? 3 : 1);
  c.set(0, names[0]);
  return true;
}

bool lower_instance_norm(Call& c) {
  // instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled)
  std::vector<std::string> ins = {c.tensor(0), c.none(1) ? per_channel(c, 1.0) : c.tensor(1),
                                  c.none(2) ? per_channel(c, 0.0) : c.tensor(2)};
  c.set(0, c.emit1("InstanceNormalization", ins, {attr_f("epsilon", c.num(7).value_or(1e-5))}));
  return true;
}

bool lower_group_norm(Call& c) {
  // group_norm(input, num_groups, weight, bias, eps, cudnn_enabled)
  auto groups = c.int_(1);
  if (!groups) return false;
  std::vector<std::string> ins = {c.tensor(0), c.none(2) ? per_channel(c, 1.0) : c.tensor(2),
                                  c.none(3) ? per_channel(c, 0.0) : c.tensor(3)};
  c.set(0, c.emit1("GroupNormalization", ins,
                   {attr_i("num_groups", *groups), attr_f("epsilon", c.num(4).value_or(1e-5))}));
  return true;
}

bool lower_layer_norm(Call& c) {
  // layer_norm(input, normalized_shape, weight, bias, eps, cudnn_enable)
  auto shape = c.ints(1);
  if (!shape) return false;
  const std::string scale = c.none(2) ? filled(c, c.ints_const(*shape), 1.0) : c.tensor(2);
  std::vector<std::string> ins = {c.tensor(0), scale};
  if (!c.none(3)) ins.push_back(c.tensor(3));
  c.set(0, c.emit1("LayerNormalization", ins,
                   {attr_i("axis", -static_cast<int64_t>(shape->size())), attr_f("epsilon", c.num(4).value_or(1e-5))}));
  return true;
}

// dropout(input, p, train): ONNX Dropout with the ratio and training flag as
// inputs, the mask as a second output, as a training-mode ONNX export has it.
bool lower_dropout(Call& c) {
  const double p = c.num(1).value_or(0.5);
  const bool train = c.flag(2).value_or(true);
  if (!train || p <= 0) {
    c.out(0) = c.in(0);
    return true;
  }
  auto names = c.emit("Dropout", {c.tensor(0), c.scalar_const(p, at::kFloat), c.scalar_const(1, at::kBool)}, {}, 2);
  c.set(0, names[0]);
  if (c.num_outputs() > 1) c.set(1, names[1]).dtype = at::kBool;  // native_dropout's mask
  return true;
}

// ---- Activations ---------------------------------------------------------------

// Clip with constant bounds typed like x (relu6, hardtanh, clamp with numbers).
bool clip(Call& c, std::optional<double> lo, std::optional<double> hi) {
  const at::ScalarType t = c.dtype(0) == at::ScalarType::Undefined ? at::kFloat : c.dtype(0);
  std::vector<std::string> ins = {c.tensor(0), lo ? c.scalar_const(*lo, t) : "", hi ? c.scalar_const(*hi, t) : ""};
  while (ins.back().empty()) ins.pop_back();
  c.set(0, c.emit1("Clip", ins));
  return true;
}

bool lower_relu6(Call& c) { return clip(c, 0.0, 6.0); }
bool lower_hardtanh(Call& c) { return clip(c, c.num(1).value_or(-1.0), c.num(2).value_or(1.0)); }

bool lower_leaky_relu(Call& c) {
  c.set(0, c.emit1("LeakyRelu", {c.tensor(0)}, {attr_f("alpha", c.num(1).value_or(0.01))}));
  return true;
}

bool lower_elu(Call& c) {
  c.set(0, c.emit1(c.entry().onnx, {c.tensor(0)}, {attr_f("alpha", c.num(1).value_or(1.0))}));
  return true;
}

bool lower_gelu(Call& c) {
  Attrs attrs;
  if (auto a = c.str(1); a && *a != "none") attrs.push_back(attr_s("approximate", *a));
  c.set(0, c.emit1("Gelu", {c.tensor(0)}, attrs, "memest"));
  return true;
}

bool lower_memest_unary(Call& c) {
  c.set(0, c.emit1(c.entry().onnx, {c.tensor(0)}, {}, "memest"));
  return true;
}

bool lower_hardsigmoid(Call& c) {
  c.set(0, c.emit1("HardSigmoid", {c.tensor(0)}, {attr_f("alpha", 1.0 / 6), attr_f("beta", 0.5)}));
  return true;
}

bool lower_prelu(Call& c) {
  c.set(0, c.emit1("PRelu", {c.tensor(0), c.tensor(1)}));
  return true;
}

// softmax(x, dim, dtype): the dtype, when given, is a cast before.
bool lower_softmax(Call& c) {
  auto dim = c.int_(1);
  if (!dim) return false;
  std::string x = c.tensor(0);
  if (auto t = c.int_(2)) {
    const auto st = static_cast<at::ScalarType>(*t);
    x = c.emit1("Cast", {x}, {attr_i("to", onnx_type(st))});
    c.out(0).dtype = st;
  }
  c.set(0, c.emit1(c.entry().onnx, {x}, {attr_i("axis", *dim)}));
  return true;
}

// ---- Embedding, linear, attention ------------------------------------------------

bool lower_embedding(Call& c) {
  // embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse)
  require_input_dtype(c, 1, false, "an embedding as indices");
  Val& out = c.set(0, c.emit1("Gather", {c.tensor(0), c.tensor(1)}, {attr_i("axis", 0)}));
  out.rank = c.rank(1) >= 0 ? c.rank(1) + 1 : -1;
  out.dtype = c.dtype(0);
  return true;
}

bool lower_linear(Call& c) {
  require_input_dtype(c, 0, true, "a linear layer");
  std::vector<std::string> ins = {c.tensor(0), c.tensor(1)};
  if (!c.none(2)) ins.push_back(c.tensor(2));
  Val& out = c.set(0, c.emit1("Linear", ins, {}, "memest"));
  out.rank = c.rank(0);
  out.dtype = c.dtype(0);
  return true;
}

// scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, *, scale): one
// kernel that never materialises the TxT matrix. TorchScript keeps it; ONNX spells
// it MatMul-Softmax-MatMul.
bool lower_sdpa(Call& c) {
  std::vector<std::string> ins = {c.tensor(0), c.tensor(1), c.tensor(2)};
  if (!c.none(3)) ins.push_back(c.tensor(3));
  Attrs attrs = {attr_f("dropout", named_num(c, "dropout_p").value_or(0.0)),
                 attr_i("is_causal", named_flag(c, "is_causal").value_or(false))};
  if (auto s = named_num(c, "scale")) attrs.push_back(attr_f("scale", *s));
  Val& out = c.set(0, c.emit1("Attention", ins, attrs, "memest"));
  out.rank = c.rank(0);
  out.dtype = c.dtype(0);
  return true;
}

// ---- Recurrent layers --------------------------------------------------------------

struct RnnKind {
  const char* op;
  bool cell;  // LSTM: a cell state besides the hidden state
};

// lstm/gru/rnn_*(input, hx, params, has_biases, num_layers, dropout, train,
// bidirectional, batch_first): one ONNX node per layer over the module's own
// weights, so parameter bytes match the module. A loaded TorchScript module's RNN
// weights are not one flat chunk (only Python's nn.LSTM flattens them when moved
// to the GPU), so cuDNN copies them into a weight buffer every forward and keeps
// it for backward: W, R and B are Concat copies here, kept by the LSTM node.
// Like cuDNN, the layers run sequence-first: a batch_first input is transposed
// on the way in and the output is a transposed view on the way out (which
// F.linear after it does not take as contiguous). The packed-sequence overloads
// are left to the generic op.
bool lower_rnn(Call& c, RnnKind kind) {
  if (c.arg("batch_first") < 0) return false;
  const Val& params = c.in(2);
  auto has_biases = c.flag(3);
  auto layers = c.int_(4);
  auto bidir = c.flag(7);
  auto batch_first = c.flag(8);
  if (params.kind != Val::Kind::List || !has_biases || !layers || !bidir || !batch_first || *layers <= 0) return false;
  const int64_t dirs = *bidir ? 2 : 1;
  const size_t per = params.items.size() / static_cast<size_t>(*layers * dirs);
  if (per < 2 || per * static_cast<size_t>(*layers * dirs) != params.items.size()) return false;
  const double dropout = c.num(5).value_or(0.0);
  const bool train = c.flag(6).value_or(true);
  const Val& w_hh0 = params.items[1];
  if (w_hh0.dims.size() != 2) return false;
  const int64_t hidden = w_hh0.dims[1];

  // [dirs, ...] copies of the per-direction weights: cuDNN's weight buffer.
  auto weight_buffer = [&](std::vector<std::string> parts) {
    for (auto& p : parts) p = c.emit1("Unsqueeze", {p, c.ints_const({0})});
    return c.emit1("Concat", parts, {attr_i("axis", 0)});
  };
  auto seq_first = [&](const std::string& t) { return c.emit1("Transpose", {t}, {attr_ints("perm", {1, 0, 2})}); };
  std::string x = c.tensor(0);
  if (*batch_first) x = seq_first(x);
  std::vector<std::string> hs, cs;
  for (int64_t l = 0; l < *layers; ++l) {
    std::vector<std::string> w, r, b;
    for (int64_t d = 0; d < dirs; ++d) {
      const size_t base = static_cast<size_t>((l * dirs + d)) * per;
      w.push_back(params.items[base].name);
      r.push_back(params.items[base + 1].name);
      if (*has_biases) b.push_back(c.emit1("Concat", {params.items[base + 2].name, params.items[base + 3].name},
                                          {attr_i("axis", 0)}));
    }
    std::vector<std::string> ins = {x, weight_buffer(w), weight_buffer(r)};
    if (*has_biases) ins.push_back(weight_buffer(b));
    Attrs attrs = {attr_i("hidden_size", hidden), attr_s("direction", dirs == 2 ? "bidirectional" : "forward")};
    auto outs = c.emit(kind.op, ins, attrs, kind.cell ? 3 : 2);
    // Y is [T, dirs, B, H]; torch's output is [T, B, dirs*H].
    if (dirs == 1) {
      x = c.emit1("Squeeze", {outs[0], c.ints_const({1})});
    } else {
      x = c.emit1("Reshape", {c.emit1("Transpose", {outs[0]}, {attr_ints("perm", {0, 2, 1, 3})}), c.ints_const({0, 0, -1})});
    }
    hs.push_back(outs[1]);  // [dirs, B, H]: h_n stacks them
    if (kind.cell) cs.push_back(outs[2]);
    if (train && dropout > 0 && l + 1 < *layers) {
      x = c.emit("Dropout", {x, c.scalar_const(dropout, at::kFloat), c.scalar_const(1, at::kBool)}, {}, 2)[0];
    }
  }
  if (*batch_first) x = seq_first(x);
  c.set(0, x).rank = 3;
  auto concat = [&](const std::vector<std::string>& v) {
    return v.size() == 1 ? v[0] : c.emit1("Concat", v, {attr_i("axis", 0)});
  };
  if (c.num_outputs() > 1) c.set(1, concat(hs)).rank = 3;
  if (kind.cell && c.num_outputs() > 2) c.set(2, concat(cs)).rank = 3;
  return true;
}

bool lower_lstm(Call& c) { return lower_rnn(c, {"LSTM", true}); }
bool lower_gru(Call& c) { return lower_rnn(c, {"GRU", false}); }
bool lower_rnn_plain(Call& c) { return lower_rnn(c, {"RNN", false}); }

// ---- Resampling and padding ----------------------------------------------------------

// upsample_*(x, output_size, [align_corners,] scale_factors) -> Resize with sizes or scales.
bool lower_upsample(Call& c) {
  const std::string name = c.node()->kind().toUnqualString();
  const bool nearest = name.find("nearest") != std::string::npos;
  Attrs attrs = {attr_s("mode", nearest ? "nearest" : name.find("cubic") != std::string::npos ? "cubic" : "linear")};
  std::string x = c.tensor(0);
  int oi = c.arg("output_size"), si = c.arg("scale_factors");
  if (oi >= 0 && !c.none(static_cast<size_t>(oi))) {
    auto head = c.emit1("Shape", {x}, {attr_i("start", 0), attr_i("end", 2)});
    auto sizes = c.emit1("Concat", {head, c.shape(static_cast<size_t>(oi))}, {attr_i("axis", 0)});
    c.set(0, c.emit1("Resize", {x, "", "", sizes}, attrs));
    return true;
  }
  if (si >= 0 && c.in(static_cast<size_t>(si)).is_const() && c.in(static_cast<size_t>(si)).value.isDoubleList()) {
    std::vector<double> scales = {1.0, 1.0};
    for (double s : c.in(static_cast<size_t>(si)).value.toDoubleVector()) scales.push_back(s);
    auto sc = c.lowerer().onnx().constant(kFloat, {static_cast<int64_t>(scales.size())}, scales, c.lowerer().module());
    c.set(0, c.emit1("Resize", {x, "", sc}, attrs));
    return true;
  }
  return false;
}

// torch pads the last dim first: [last_begin, last_end, prev_begin, prev_end, ...];
// ONNX wants [x1_begin, ..., xn_begin, x1_end, ..., xn_end]. Amounts computed
// from sizes (swin's window padding) stay run-time values in the pads tensor.
bool lower_pad(Call& c) {
  const int r = c.rank(0);
  std::vector<Val> pad = list_items(c.in(1));
  if (r < 0 || pad.empty() || pad.size() % 2 != 0 || static_cast<int>(pad.size() / 2) > r) return false;
  Val pads;
  pads.kind = Val::Kind::List;
  pads.items.assign(static_cast<size_t>(2 * r), Val::constant(int64_t{0}));
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    const size_t axis = static_cast<size_t>(r) - 1 - i;
    pads.items[axis] = pad[2 * i];
    pads.items[axis + static_cast<size_t>(r)] = pad[2 * i + 1];
  }
  const std::string name = c.node()->kind().toUnqualString();
  std::string mode = name.find("reflection") != std::string::npos    ? "reflect"
                     : name.find("replication") != std::string::npos ? "edge"
                                                                      : "constant";
  if (name == "pad") {
    if (auto m = c.str(2)) mode = *m == "replicate" ? "edge" : *m;
  }
  c.set(0, c.emit1("Pad", {c.tensor(0), c.shape_of(pads)}, {attr_s("mode", mode)}));
  return true;
}

bool lower_pixel_shuffle(Call& c) {
  auto r = c.int_(1);
  if (!r) return false;
  c.set(0, c.emit1("DepthToSpace", {c.tensor(0)}, {attr_i("blocksize", *r), attr_s("mode", "CRD")}));
  return true;
}

const OpEntry kOps[] = {
    {"aten::_convolution", lower_conv, "Conv", "Conv/ConvTranspose: pads, strides, dilations, groups"},
    {"aten::convolution", lower_conv, "Conv", "Conv/ConvTranspose"},
    {"aten::conv1d", lower_conv, "Conv", "Conv (string padding: auto_pad)"},
    {"aten::conv2d", lower_conv, "Conv", "Conv (string padding: auto_pad)"},
    {"aten::conv3d", lower_conv, "Conv", "Conv (string padding: auto_pad)"},
    {"aten::conv_transpose1d", lower_conv, "ConvTranspose", "ConvTranspose with output_padding"},
    {"aten::conv_transpose2d", lower_conv, "ConvTranspose", "ConvTranspose with output_padding"},
    {"aten::conv_transpose3d", lower_conv, "ConvTranspose", "ConvTranspose with output_padding"},
    {"aten::max_pool1d", lower_max_pool, "MaxPool", "MaxPool with ceil_mode"},
    {"aten::max_pool2d", lower_max_pool, "MaxPool", "MaxPool with ceil_mode"},
    {"aten::max_pool3d", lower_max_pool, "MaxPool", "MaxPool with ceil_mode"},
    {"aten::max_pool2d_with_indices", lower_max_pool, "MaxPool", "MaxPool with Indices"},
    {"aten::avg_pool1d", lower_avg_pool, "AveragePool", "AveragePool"},
    {"aten::avg_pool2d", lower_avg_pool, "AveragePool", "AveragePool"},
    {"aten::avg_pool3d", lower_avg_pool, "AveragePool", "AveragePool"},
    {"aten::adaptive_avg_pool1d", lower_adaptive_pool, "GlobalAveragePool", "to 1: GlobalAveragePool; else Resize (same output, nothing kept)"},
    {"aten::adaptive_avg_pool2d", lower_adaptive_pool, "GlobalAveragePool", "to 1x1: GlobalAveragePool; else Resize (same output, nothing kept)"},
    {"aten::adaptive_avg_pool3d", lower_adaptive_pool, "GlobalAveragePool", "to 1: GlobalAveragePool; else Resize (same output, nothing kept)"},
    {"aten::adaptive_max_pool2d", lower_adaptive_pool, "GlobalMaxPool", "to 1x1: GlobalMaxPool; else generic"},
    {"aten::batch_norm", lower_batch_norm, "BatchNormalization", "training flag -> training_mode, 5 inputs"},
    {"aten::instance_norm", lower_instance_norm, "InstanceNormalization", "InstanceNormalization"},
    {"aten::group_norm", lower_group_norm, "GroupNormalization", "GroupNormalization with num_groups"},
    {"aten::layer_norm", lower_layer_norm, "LayerNormalization", "axis from normalized_shape"},
    {"aten::dropout", lower_dropout, "Dropout", "ratio and training_mode kept; identity when off"},
    {"aten::feature_dropout", lower_dropout, "Dropout", "Dropout2d: as Dropout (mask per element)"},
    {"aten::alpha_dropout", lower_dropout, "Dropout", "as Dropout"},
    {"aten::feature_alpha_dropout", lower_dropout, "Dropout", "as Dropout"},
    {"aten::native_dropout", lower_dropout, "Dropout", "Dropout with its mask output"},
    {"aten::relu", lower_unary, "Relu", "Relu (relu_: inplace=1)"},
    {"aten::relu6", lower_relu6, "Clip", "Clip(0, 6)"},
    {"aten::hardtanh", lower_hardtanh, "Clip", "Clip(min, max)"},
    {"aten::leaky_relu", lower_leaky_relu, "LeakyRelu", "LeakyRelu with alpha"},
    {"aten::elu", lower_elu, "Elu", "Elu with alpha"},
    {"aten::celu", lower_elu, "Celu", "Celu with alpha"},
    {"aten::selu", lower_unary, "Selu", "Selu"},
    {"aten::gelu", lower_gelu, "Gelu", "memest::Gelu (approximate kept)"},
    {"aten::silu", lower_memest_unary, "Silu", "memest::Silu"},
    {"aten::mish", lower_unary, "Mish", "Mish"},
    {"aten::sigmoid", lower_unary, "Sigmoid", "Sigmoid"},
    {"aten::tanh", lower_unary, "Tanh", "Tanh"},
    {"aten::hardsigmoid", lower_hardsigmoid, "HardSigmoid", "HardSigmoid(1/6, 0.5)"},
    {"aten::hardswish", lower_unary, "HardSwish", "HardSwish"},
    {"aten::softplus", lower_unary, "Softplus", "Softplus (beta, threshold dropped)"},
    {"aten::softsign", lower_unary, "Softsign", "Softsign"},
    {"aten::prelu", lower_prelu, "PRelu", "PRelu"},
    {"aten::softmax", lower_softmax, "Softmax", "Softmax(axis); dtype as a Cast before"},
    {"aten::log_softmax", lower_softmax, "LogSoftmax", "LogSoftmax(axis); dtype as a Cast before"},
    {"aten::embedding", lower_embedding, "Gather", "Gather(weight, ids)"},
    {"aten::linear", lower_linear, "Linear", "memest::Linear(x, W[out,in], b)"},
    {"aten::scaled_dot_product_attention", lower_sdpa, "Attention", "memest::Attention, dropout and is_causal kept"},
    {"aten::lstm", lower_lstm, "LSTM", "one ONNX LSTM per layer, sequence-first, over cuDNN's weight copy"},
    {"aten::gru", lower_gru, "GRU", "one ONNX GRU per layer"},
    {"aten::rnn_tanh", lower_rnn_plain, "RNN", "one ONNX RNN per layer"},
    {"aten::rnn_relu", lower_rnn_plain, "RNN", "one ONNX RNN per layer"},
    {"aten::upsample_nearest2d", lower_upsample, "Resize", "Resize with sizes or scales"},
    {"aten::upsample_bilinear2d", lower_upsample, "Resize", "Resize with sizes or scales"},
    {"aten::upsample_bicubic2d", lower_upsample, "Resize", "Resize with sizes or scales"},
    {"aten::constant_pad_nd", lower_pad, "Pad", "Pad, torch's last-dim-first order reversed"},
    {"aten::reflection_pad1d", lower_pad, "Pad", "Pad(reflect)"},
    {"aten::reflection_pad2d", lower_pad, "Pad", "Pad(reflect)"},
    {"aten::replication_pad1d", lower_pad, "Pad", "Pad(edge)"},
    {"aten::replication_pad2d", lower_pad, "Pad", "Pad(edge)"},
    {"aten::pad", lower_pad, "Pad", "Pad with its mode"},
    {"aten::pixel_shuffle", lower_pixel_shuffle, "DepthToSpace", "DepthToSpace(CRD)"},
};

}  // namespace

OpTable nn_ops() { return {kOps, sizeof(kOps) / sizeof(kOps[0])}; }

}  // namespace memest::ts
