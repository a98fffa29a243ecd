#include "http/routes.hpp"

#include <fnmatch.h>

#include <cctype>
#include <string>

#include "request_fields/query.hpp"

namespace gate::http {
namespace {

using request_fields::hex_value;

bool unreserved(unsigned char c) { return std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~'; }

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
    if (text.size() < prefix.size()) return false;
    for (std::size_t i = 0; i < prefix.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
    }
    return true;
}

// RFC 3986 5.2.4 on a decoded path that starts with '/', empty segments dropped as well; nothing when ".."
// would climb above the root.
std::optional<std::string> remove_dot_segments(const std::string &path) {
    std::vector<std::string_view> kept;
    bool trailing_slash = false;
    std::size_t at = 1;  // past the leading '/'
    const std::string_view all(path);
    while (true) {
        const auto slash = all.find('/', at);
        const bool last = slash == std::string_view::npos;
        const std::string_view segment = all.substr(at, last ? std::string_view::npos : slash - at);
        trailing_slash = false;
        if (segment.empty() || segment == ".") {
            trailing_slash = last;
        } else if (segment == "..") {
            if (kept.empty()) return std::nullopt;
            kept.pop_back();
            trailing_slash = last;
        } else {
            kept.push_back(segment);
        }
        if (last) break;
        at = slash + 1;
    }
    std::string out;
    for (const auto segment : kept) out.append("/").append(segment);
    if (out.empty() || trailing_slash) out += '/';
    return out;
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view text, bool ignore_case) {
    return fnmatch(std::string(pattern).c_str(), std::string(text).c_str(), ignore_case ? FNM_CASEFOLD : 0) == 0;
}

int match_route(const std::vector<config::RouteConfig> &routes, std::string_view path, std::string_view host) {
    // The Host field without its port.
    std::string_view bare = host;
    if (!bare.empty() && bare.front() == '[') {
        bare = bare.substr(1, bare.find(']') == std::string_view::npos ? bare.size() : bare.find(']') - 1);
    } else if (bare.find(':') != std::string_view::npos) {
        bare = bare.substr(0, bare.find(':'));
    }
    // "api.example." names the same host as "api.example" (a fully qualified name).
    if (bare.size() > 1 && bare.back() == '.') bare.remove_suffix(1);
    std::string lower(bare);
    for (auto &c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (std::size_t i = 0; i < routes.size(); ++i) {
        const auto &route = routes[i];
        // Host names are case-insensitive (RFC 9110 4.2.3): the pattern's case does not matter either.
        if (!route.host_pattern.empty() && !glob_match(route.host_pattern, lower, true)) continue;
        if (glob_match(route.pattern, path)) return static_cast<int>(i);
    }
    return -1;
}

std::optional<NormalizedTarget> normalize_target(std::string_view target, std::string *why) {
    NormalizedTarget out;
    if (target == "*") {
        out.target = out.path = "*";
        return out;
    }
    std::string_view rest = target;
    if (starts_with_nocase(rest, "http://") || starts_with_nocase(rest, "https://")) {
        rest.remove_prefix(rest.find("://") + 3);
        const auto end = rest.find_first_of("/?#");
        out.authority = std::string(rest.substr(0, end));
        rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end);
        if (out.authority.empty() || out.authority.find('@') != std::string::npos) {
            *why = "an absolute-form target without a host, or with userinfo";
            return std::nullopt;
        }
        if (rest.empty() || rest.front() == '?') {
            // "http://host?q" is the path "/" (RFC 9112 3.2.1).
            out.target = "/";
        }
    }
    if (out.target.empty() && (rest.empty() || rest.front() != '/')) {
        *why = "a target that is neither origin-form (/path) nor absolute-form (http://host/path)";
        return std::nullopt;
    }
    if (rest.find('#') != std::string_view::npos) {
        *why = "a fragment in the target";
        return std::nullopt;
    }
    const auto question = rest.find('?');
    const std::string_view raw_path = rest.substr(0, question);
    const std::string_view query = question == std::string_view::npos ? std::string_view{} : rest.substr(question);
    std::string decoded = out.target;  // "/" for "http://host?q", else empty
    decoded.reserve(raw_path.size());
    for (std::size_t i = 0; i < raw_path.size(); ++i) {
        const char c = raw_path[i];
        if (c == '\\') {
            *why = "a '\\' in the path";
            return std::nullopt;
        }
        if (c != '%') {
            decoded += c;
            continue;
        }
        if (i + 2 >= raw_path.size() || hex_value(raw_path[i + 1]) < 0 || hex_value(raw_path[i + 2]) < 0) {
            *why = "a bad percent-escape in the path";
            return std::nullopt;
        }
        const auto value = static_cast<unsigned char>(hex_value(raw_path[i + 1]) * 16 + hex_value(raw_path[i + 2]));
        i += 2;
        if (value == '/' || value == '\\') {
            *why = "an escaped '/' or '\\' (%2F, %5C) in the path";
            return std::nullopt;
        }
        if (unreserved(value)) {
            decoded += static_cast<char>(value);
        } else {
            static const char HEX[] = "0123456789ABCDEF";
            decoded += '%';
            decoded += HEX[value >> 4];
            decoded += HEX[value & 15];
        }
    }
    auto path = remove_dot_segments(decoded);
    if (!path) {
        *why = "'..' above the root of the path";
        return std::nullopt;
    }
    out.path = std::move(*path);
    out.target = out.path + std::string(query);
    return out;
}

}  // namespace gate::http
