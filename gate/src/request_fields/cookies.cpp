#include "request_fields/cookies.hpp"

namespace gate::request_fields {
namespace {

std::string_view trim(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
    return text;
}

}  // namespace

std::optional<std::string> find_cookie(std::string_view cookie_header, std::string_view name) {
    while (!cookie_header.empty()) {
        const auto semicolon = cookie_header.find(';');
        const std::string_view pair = trim(cookie_header.substr(0, semicolon));
        cookie_header = semicolon == std::string_view::npos ? std::string_view{} : cookie_header.substr(semicolon + 1);
        const auto equals = pair.find('=');
        if (equals == std::string_view::npos || trim(pair.substr(0, equals)) != name) continue;
        std::string_view value = trim(pair.substr(equals + 1));
        if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
        return std::string(value);
    }
    return std::nullopt;
}

}  // namespace gate::request_fields
