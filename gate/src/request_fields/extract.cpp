#include "request_fields/extract.hpp"

#include <cctype>
#include <nlohmann/json.hpp>

#include "request_fields/cookies.hpp"
#include "request_fields/query.hpp"

namespace gate::request_fields {
namespace {

std::optional<std::string> header(const FieldPath &path, const RequestView &request) {
    std::vector<std::string_view> values;
    if (request.header_values) request.header_values(path.name, values);
    if (path.index) {
        if (*path.index >= values.size()) return std::nullopt;
        return std::string(values[*path.index]);
    }
    if (values.empty()) return std::nullopt;
    std::string joined(values[0]);
    for (std::size_t i = 1; i < values.size(); ++i) joined.append(", ").append(values[i]);
    return joined;
}

std::optional<std::string> cookie(const FieldPath &path, const RequestView &request) {
    std::vector<std::string_view> values;
    if (request.header_values) request.header_values("cookie", values);
    for (const auto value : values) {
        if (auto found = find_cookie(value, path.name)) return found;
    }
    return std::nullopt;
}

std::optional<std::string> claim(const FieldPath &path, const RequestView &request) {
    if (request.claims == nullptr) return std::nullopt;
    const nlohmann::json *at = request.claims;
    for (const auto &member : path.claim) {
        if (!at->is_object()) return std::nullopt;
        const auto found = at->find(member);
        if (found == at->end()) return std::nullopt;
        at = &*found;
    }
    if (at->is_string()) return at->get<std::string>();
    if (at->is_boolean() || at->is_number()) return at->dump();
    return std::nullopt;  // an object, an array or null names no one
}

std::string_view without_port(std::string_view host) {
    if (!host.empty() && host.front() == '[') return host.substr(0, host.find(']') + 1);
    const auto colon = host.rfind(':');
    return colon == std::string_view::npos ? host : host.substr(0, colon);
}

}  // namespace

std::optional<std::string> extract(const FieldPath &path, const RequestView &request) {
    switch (path.kind) {
        case FieldKind::header:
            return header(path, request);
        case FieldKind::cookie:
            return cookie(path, request);
        case FieldKind::query:
            return find_query_parameter(request.target, path.name, path.index.value_or(0));
        case FieldKind::path:
            return std::string(target_path(request.target));
        case FieldKind::method:
            return std::string(request.method);
        case FieldKind::host: {
            if (request.host.empty()) return std::nullopt;
            // One spelling per host: lower case, no trailing dot ("API.Example." is "api.example").
            std::string host(without_port(request.host));
            if (host.size() > 1 && host.back() == '.') host.pop_back();
            for (auto &c : host) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            return host;
        }
        case FieldKind::client_ip:
            return std::string(request.client_ip);
        case FieldKind::claim:
            return claim(path, request);
    }
    return std::nullopt;
}

}  // namespace gate::request_fields
