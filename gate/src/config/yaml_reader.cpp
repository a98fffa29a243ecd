#include "config/yaml_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <vector>

namespace gate::config {
namespace {

std::string quoted(const std::string &key) { return "\"" + key + "\""; }

std::string unknown_key(const std::string &key, const std::string &what, std::initializer_list<const char *> allowed) {
    std::string problem = "unknown key " + quoted(key) + " in " + what + " (expected one of: ";
    bool first = true;
    for (const char *name : allowed) {
        if (!first) problem += ", ";
        problem += name;
        first = false;
    }
    return problem + ")";
}

}  // namespace

YAML::Node YamlReader::load() const {
    std::ifstream in(file_);
    if (!in) throw ConfigError(file_ + ": cannot read the file");
    try {
        return YAML::Load(in);
    } catch (const YAML::ParserException &e) {
        fail_line(e.mark.line + 1, "YAML syntax error: " + e.msg);
    }
}

void YamlReader::fail(const YAML::Node &at, const std::string &problem) const { fail_line(line(at), problem); }

void YamlReader::fail_line(int line, const std::string &problem) const {
    throw ConfigError(file_ + ":" + std::to_string(line < 1 ? 1 : line) + ": " + problem);
}

void YamlReader::expect_map(const YAML::Node &node, const std::string &what,
                            std::initializer_list<const char *> allowed) const {
    if (!node.IsMap()) fail(node, what + " must be a mapping (key: value lines)");
    std::vector<std::string> seen;
    for (const auto &entry : node) {
        const std::string key = entry.first.Scalar();
        // yaml-cpp keeps the first of two equal keys: the second would be ignored without a word.
        if (std::find(seen.begin(), seen.end(), key) != seen.end())
            fail(entry.first, quoted(key) + " appears twice in " + what);
        seen.push_back(key);
        bool known = false;
        for (const char *name : allowed) known = known || key == name;
        if (known) continue;
        fail(entry.first, unknown_key(key, what, allowed));
    }
}

void YamlReader::expect_sequence(const YAML::Node &node, const std::string &what) const {
    if (!node.IsSequence()) fail(node, what + " must be a list (lines starting with '-')");
}

std::string YamlReader::scalar(const YAML::Node &node, const std::string &what) const {
    if (!node.IsScalar()) fail(node, what + " must be a single value");
    return node.Scalar();
}

bool YamlReader::boolean(const YAML::Node &node, const std::string &what) const {
    const std::string text = scalar(node, what);
    if (text == "true") return true;
    if (text == "false") return false;
    fail(node, what + " must be true or false, not \"" + text + "\"");
}

double YamlReader::number(const YAML::Node &node, const std::string &what) const {
    const std::string text = scalar(node, what);
    char *end = nullptr;
    errno = 0;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(value)) {
        fail(node, what + " must be a number, not \"" + text + "\"");
    }
    return value;
}

long YamlReader::integer(const YAML::Node &node, const std::string &what, long min, long max) const {
    const std::string text = scalar(node, what);
    char *end = nullptr;
    errno = 0;
    const long value = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 || value < min || value > max) {
        fail(node, what + " must be a whole number from " + std::to_string(min) + " to " + std::to_string(max) +
                       ", not \"" + text + "\"");
    }
    return value;
}

}  // namespace gate::config
