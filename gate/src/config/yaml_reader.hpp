// Reading the YAML file with errors that name the file, the 1-based line and the problem.
#pragma once

#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <stdexcept>
#include <string>

namespace gate::config {

// "FILE:LINE: problem".
class ConfigError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

class YamlReader {
  public:
    explicit YamlReader(std::string file) : file_(std::move(file)) {}

    // The parsed document; a YAML syntax error or an unreadable file throws ConfigError.
    YAML::Node load() const;

    [[noreturn]] void fail(const YAML::Node &at, const std::string &problem) const;
    [[noreturn]] void fail_line(int line, const std::string &problem) const;
    static int line(const YAML::Node &node) { return node.Mark().line + 1; }

    // A mapping with no key outside `allowed` (a misspelt key is an error, not silently ignored).
    void expect_map(const YAML::Node &node, const std::string &what, std::initializer_list<const char *> allowed) const;
    void expect_sequence(const YAML::Node &node, const std::string &what) const;

    std::string scalar(const YAML::Node &node, const std::string &what) const;
    bool boolean(const YAML::Node &node, const std::string &what) const;
    double number(const YAML::Node &node, const std::string &what) const;
    long integer(const YAML::Node &node, const std::string &what, long min, long max) const;

    [[nodiscard]] const std::string &file() const { return file_; }

  private:
    std::string file_;
};

}  // namespace gate::config
