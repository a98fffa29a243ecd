// Which URL entry a request goes to: the first whose pattern (a glob on the path, '*' matching '/' too, as
// the seed's '*/hello' does) and optional host glob match.
#pragma once

#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace gate::http {

// The index of the first matching route, or -1.
int match_route(const std::vector<config::RouteConfig> &routes, std::string_view path, std::string_view host);

// fnmatch(3) without FNM_PATHNAME: '*' and '?' match any byte, '/' included; [...] classes.
bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace gate::http
