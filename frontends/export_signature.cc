// What a dynamo export's graph signature and a TorchScript helper's metadata say about
// the initializers (export_signature.h).
#include "frontends/export_signature.h"

#include <unordered_map>
#include <unordered_set>

#include "frontends/fx_node.h"
#include "frontends/onnx_schema.h"

namespace memest {
namespace {

using namespace onnx_views;

// The dynamo exporter's graph signature (GraphProto.metadata_props, field 16 of
// onnx >= 1.18, under "pkg.torch.export.ExportedProgram.graph_signature"), one input
// a line: "p_fc_weight: PARAMETER target='fc.weight'". Calls `fn(placeholder, target)`
// for each input of `kind` (PARAMETER, BUFFER, CONSTANT_TENSOR); false without a signature.
template <typename Fn>
bool each_signature_input(const ModelView& model, std::string_view kind, Fn fn) {
  bool found = false;
  std::string tag = ": ";
  tag.append(kind).append(" target='");
  model.graph.each_field([&](const wire::Field& f) {
    if (f.number != 16 || f.type != wire::kLen || !onnx_schema::check_entry(f.data)) return;
    const EntryView e = read_entry(f.data);
    if (e.key != "pkg.torch.export.ExportedProgram.graph_signature") return;
    found = true;
    for (size_t at = e.value.find(tag); at != std::string_view::npos; at = e.value.find(tag, at + 1)) {
      const size_t start = at + tag.size();
      const size_t end = e.value.find('\'', start);
      if (end == std::string_view::npos) break;
      const size_t line = e.value.rfind('\n', at);
      const size_t from = line == std::string_view::npos ? 0 : line + 1;
      fn(e.value.substr(from, at - from), e.value.substr(start, end - start));
    }
  });
  return found;
}

}  // namespace

// The targets the signature lists as `kind`, when the file has one; it also lifts buffers
// and folded constants to initializers (llama's rotary inv_freq, as "expand_2"), which
// must not get gradients.
std::optional<std::vector<std::string_view>> exported_targets(const ModelView& model, std::string_view kind) {
  std::vector<std::string_view> out;
  if (!each_signature_input(model, kind, [&](std::string_view, std::string_view target) { out.push_back(target); })) {
    return std::nullopt;
  }
  return out;
}

// Per node, the parameters (and the buffers and constants) its FX call takes as
// arguments (fx_calls[k]: node k's "pkg.torch.onnx.fx_node" metadata), by the
// signature's placeholder names.
ParameterReads parameter_reads(const ModelView& model, const std::vector<std::string_view>& fx_calls) {
  std::unordered_map<std::string_view, std::string_view> target_of, buffer_of;
  each_signature_input(model, "PARAMETER", [&](std::string_view placeholder, std::string_view target) {
    target_of.emplace(placeholder, target);
  });
  for (std::string_view kind : {"BUFFER", "CONSTANT_TENSOR"}) {
    each_signature_input(model, kind, [&](std::string_view placeholder, std::string_view target) {
      buffer_of.emplace(placeholder, target);
    });
  }
  ParameterReads reads;
  if (target_of.empty()) return reads;
  // The user inputs are placeholders too ("x: USER_INPUT"), with no target.
  std::unordered_set<std::string_view> placeholders;
  model.graph.each_field([&](const wire::Field& f) {
    if (f.number != 16 || f.type != wire::kLen || !onnx_schema::check_entry(f.data)) return;
    const EntryView e = read_entry(f.data);
    if (e.key != "pkg.torch.export.ExportedProgram.graph_signature") return;
    for (size_t at = e.value.find(": USER_INPUT"); at != std::string_view::npos; at = e.value.find(": USER_INPUT", at + 1)) {
      const size_t line = e.value.rfind('\n', at);
      const size_t from = line == std::string_view::npos ? 0 : line + 1;
      placeholders.insert(e.value.substr(from, at - from));
    }
  });
  reads.by_node.resize(fx_calls.size());
  reads.buffers_by_node.resize(fx_calls.size());
  reads.name_by_node.resize(fx_calls.size());
  reads.values_by_node.resize(fx_calls.size());
  for (size_t k = 0; k < fx_calls.size(); ++k) {
    reads.name_by_node[k] = fx_call_name(fx_calls[k]);
    for (std::string_view arg : fx_value_args(fx_calls[k])) {
      if (auto it = target_of.find(arg); it != target_of.end()) {
        reads.by_node[k].push_back(it->second);
      } else if (auto b = buffer_of.find(arg); b != buffer_of.end()) {
        reads.buffers_by_node[k].push_back(b->second);
      } else if (!placeholders.count(arg)) {
        reads.values_by_node[k].push_back(arg);
      }
    }
  }
  return reads;
}

// The names the TorchScript helper lists as buffers (it knows exactly which initializers are).
std::vector<std::string> declared_buffers(const ModelView& model) {
  std::vector<std::string> names;
  for (std::string_view bytes : model.metadata_props) {
    const EntryView p = read_entry(bytes);
    if (p.key != "memest.buffers") continue;
    size_t start = 0;
    while (start < p.value.size()) {
      const size_t comma = p.value.find(',', start);
      names.emplace_back(p.value.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
  }
  return names;
}

}  // namespace memest
