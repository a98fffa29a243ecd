#include "http/routes.hpp"

#include <fnmatch.h>

#include <string>

namespace gate::http {

bool glob_match(std::string_view pattern, std::string_view text) {
    return fnmatch(std::string(pattern).c_str(), std::string(text).c_str(), 0) == 0;
}

int match_route(const std::vector<config::RouteConfig> &routes, std::string_view path, std::string_view host) {
    // The Host field without its port.
    std::string_view bare = host;
    if (!bare.empty() && bare.front() == '[') {
        bare = bare.substr(1, bare.find(']') == std::string_view::npos ? bare.size() : bare.find(']') - 1);
    } else if (bare.find(':') != std::string_view::npos) {
        bare = bare.substr(0, bare.find(':'));
    }
    for (std::size_t i = 0; i < routes.size(); ++i) {
        const auto &route = routes[i];
        if (!route.host_pattern.empty() && !glob_match(route.host_pattern, bare)) continue;
        if (glob_match(route.pattern, path)) return static_cast<int>(i);
    }
    return -1;
}

}  // namespace gate::http
