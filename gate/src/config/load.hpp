// Loading and checking the configuration file.
#pragma once

#include <string>

#include "config/config.hpp"
#include "config/yaml_reader.hpp"

namespace gate::config {

// The checked configuration of `file`; ConfigError ("FILE:LINE: problem") for the first problem found.
GateConfig load_config(const std::string &file);

}  // namespace gate::config
