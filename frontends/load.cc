// Frontend dispatch by file content: ONNX protobuf or a TorchScript zip archive.
#include "frontends/load.h"

#include <sys/stat.h>

#include <fstream>

#include "estimator/error.h"
#include "frontends/onnx_reader.h"
#include "frontends/torchscript_loader.h"

namespace memest {

InputSpec parse_input_shape(const std::string& text) {
  InputSpec spec;
  std::string dims = text;
  auto colon = text.find(':');
  if (colon != std::string::npos) {
    dims = text.substr(0, colon);
    auto dt = dtype_from_name(text.substr(colon + 1));
    if (!dt) throw Error("--input-shape '" + text + "': unknown dtype '" + text.substr(colon + 1) + "'");
    spec.dtype = *dt;
  }
  if (dims == "-" || dims.empty()) return spec;
  size_t start = 0;
  while (start <= dims.size()) {
    size_t x = dims.find('x', start);
    std::string part = dims.substr(start, x == std::string::npos ? std::string::npos : x - start);
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos || part.size() > 12) {
      throw Error("--input-shape '" + text + "': expected dims like 3x224x224 or 512:int64");
    }
    int64_t d = std::stoll(part);
    if (d <= 0) throw Error("--input-shape '" + text + "': dims must be positive");
    spec.dims.push_back(d);
    if (x == std::string::npos) break;
    start = x + 1;
  }
  return spec;
}

bool torchscript_name(const std::string& path) {
  for (const char* ext : {".pt", ".pth", ".ts", ".jit", ".torchscript"}) {
    const std::string e = ext;
    if (path.size() > e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0) return true;
  }
  return false;
}

Graph load_model(const std::string& path, const std::vector<InputSpec>& inputs) {
  // Anything but a regular file goes to the ONNX reader, which says what it is:
  // opening a FIFO here to sniff the format would block.
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return read_onnx_file(path);
  std::ifstream in(path, std::ios::binary);
  char magic[2] = {0, 0};
  if (in) in.read(magic, 2);
  // TorchScript files are zip archives ("PK").
  if (in && magic[0] == 'P' && magic[1] == 'K') return load_torchscript(path, inputs);
  // Named like a TorchScript file but not a zip archive: say that, not an ONNX parse error.
  if (torchscript_name(path)) {
    throw Error(path, "",
                "not a TorchScript file (torch.jit.save writes a zip archive; this file does not start like one)");
  }
  if (!inputs.empty()) throw Error(path, "", "--input-shape is for TorchScript files; ONNX files declare their inputs");
  return read_onnx_file(path);
}

}  // namespace memest
