// The one error type of memest: a file, optionally a node, and what is wrong.
#pragma once

#include <stdexcept>
#include <string>

namespace memest {

/// Every failure memest reports. Library code throws it; only main() prints it
/// (one line on stderr) and turns it into exit status 2.
class Error : public std::runtime_error {
 public:
  Error(std::string file, std::string node, std::string message);
  explicit Error(std::string message) : Error("", "", std::move(message)) {}

  const std::string& file() const { return file_; }
  const std::string& node() const { return node_; }
  const std::string& message() const { return message_; }

  /// The same error, attributed to a file (kept if one is already set).
  Error in_file(const std::string& file) const;
  /// The same error, attributed to a node (kept if one is already set).
  Error at_node(const std::string& node) const;

 private:
  std::string file_, node_, message_;
};

}  // namespace memest
