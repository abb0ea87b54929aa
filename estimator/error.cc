// The one error type: formats "file: node 'n': message".
#include "estimator/error.h"

namespace memest {
namespace {
std::string format(const std::string& file, const std::string& node, const std::string& msg) {
  std::string out;
  if (!file.empty()) out += file + ": ";
  if (!node.empty()) out += "node '" + node + "': ";
  return out + msg;
}
}  // namespace

Error::Error(std::string file, std::string node, std::string message)
    : std::runtime_error(format(file, node, message)),
      file_(std::move(file)), node_(std::move(node)), message_(std::move(message)) {}

Error Error::in_file(const std::string& file) const {
  return file_.empty() ? Error(file, node_, message_) : *this;
}

Error Error::at_node(const std::string& node) const {
  return node_.empty() ? Error(file_, node, message_) : *this;
}

}  // namespace memest
