// Which URL entry a request goes to: the first whose pattern (a glob on the path, '*' matching '/' too, as
// the seed's '*/hello' does) and optional host glob match. Patterns are matched against the normalised
// target (normalize_target), never the raw one, so that spellings of one path that a backend takes for the
// same resource ("//api/x", "/%61pi/x", "/./api/x", "/z/../api/x") cannot dodge a pattern.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace gate::http {

// The index of the first matching route, or -1. host: the Host field (or the absolute-form's authority);
// compared without its port, in lower case, without a trailing dot (host names are case-insensitive, and
// "api.example." is "api.example").
int match_route(const std::vector<config::RouteConfig> &routes, std::string_view path, std::string_view host);

// fnmatch(3) without FNM_PATHNAME: '*' and '?' match any byte, '/' included; [...] classes.
bool glob_match(std::string_view pattern, std::string_view text, bool ignore_case = false);

// A request target made canonical before routing, deciding and forwarding.
struct NormalizedTarget {
    std::string target{};     // origin-form: the normalised path, then '?' and the query as received
    std::string path{};       // the normalised path alone
    std::string authority{};  // an absolute-form target's host[:port] (it replaces the Host field); else empty
};

// The path part of origin-form ("/a/b?q") and absolute-form ("http://host/a/b?q", RFC 9112 3.2.2) targets:
// percent-escapes of unreserved characters decoded (RFC 3986 2.3; others kept, their hex in upper case),
// empty segments ("//") collapsed, dot segments removed (RFC 3986 5.2.4). The query is kept as received.
// "*" (OPTIONS *) is kept. Nothing, and *why, for a target that cannot be normalised safely (answered
// 400): an escaped '/' or '\' (%2F, %5C) or a raw '\' (a backend may take them for a separator, and the
// pattern would see another path), a bad escape, ".." above the root, a fragment, userinfo, another form.
std::optional<NormalizedTarget> normalize_target(std::string_view target, std::string *why);

}  // namespace gate::http
