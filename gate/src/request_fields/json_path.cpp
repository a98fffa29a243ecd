#include "request_fields/json_path.hpp"

#include <algorithm>
#include <cctype>

namespace gate::request_fields {
namespace {

struct Segment {
    enum Kind { member, quoted, index } kind = member;
    std::string text{};
    std::size_t number = 0;
};

constexpr std::string_view LEFT_QUOTE = "\xE2\x80\x98";   // U+2018, as the seed's blog post prints '
constexpr std::string_view RIGHT_QUOTE = "\xE2\x80\x99";  // U+2019

bool starts_with(std::string_view text, std::size_t at, std::string_view prefix) {
    return text.substr(at, prefix.size()) == prefix;
}

// Splits "$.a.b['c'][0]" into segments; nothing (and *error) on a syntax error.
std::optional<std::vector<Segment>> tokenize(std::string_view text, std::string *error) {
    if (text.empty() || text[0] != '$') {
        *error = "a request field starts with \"$\"";
        return std::nullopt;
    }
    std::vector<Segment> out;
    std::size_t at = 1;
    while (at < text.size()) {
        if (text[at] == '.') {
            const std::size_t start = ++at;
            while (at < text.size() &&
                   (std::isalnum(static_cast<unsigned char>(text[at])) || text[at] == '_' || text[at] == '-')) {
                ++at;
            }
            if (at == start) {
                *error = "a name is expected after '.' at offset " + std::to_string(start);
                return std::nullopt;
            }
            out.push_back({Segment::member, std::string(text.substr(start, at - start)), 0});
        } else if (text[at] == '[') {
            ++at;
            std::string_view close;
            if (at < text.size() && (text[at] == '\'' || text[at] == '"')) {
                close = text.substr(at, 1);
                ++at;
            } else if (starts_with(text, at, LEFT_QUOTE) || starts_with(text, at, RIGHT_QUOTE)) {
                close = RIGHT_QUOTE;
                at += LEFT_QUOTE.size();
            }
            if (!close.empty()) {
                std::string name;
                while (at < text.size() && !starts_with(text, at, close) &&
                       !(close == RIGHT_QUOTE && starts_with(text, at, LEFT_QUOTE))) {
                    if (text[at] == '\\' && at + 1 < text.size()) ++at;
                    name += text[at++];
                }
                if (at >= text.size()) {
                    *error = "an unterminated quoted name";
                    return std::nullopt;
                }
                at += close.size();
                if (at >= text.size() || text[at] != ']') {
                    *error = "']' expected after the quoted name \"" + name + "\"";
                    return std::nullopt;
                }
                ++at;
                if (name.empty()) {
                    *error = "an empty name in brackets";
                    return std::nullopt;
                }
                out.push_back({Segment::quoted, name, 0});
            } else {
                const std::size_t start = at;
                while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) ++at;
                if (at == start || at >= text.size() || text[at] != ']' || at - start > 6) {
                    *error = "a quoted name or an index (0, 1, ...) is expected in brackets at offset " +
                             std::to_string(start);
                    return std::nullopt;
                }
                out.push_back({Segment::index, "", std::stoul(std::string(text.substr(start, at - start)))});
                ++at;
            }
        } else {
            *error = "unexpected '" + std::string(1, text[at]) + "' at offset " + std::to_string(at);
            return std::nullopt;
        }
    }
    return out;
}

bool is_member(const std::vector<Segment> &s, std::size_t i, std::string_view name) {
    return i < s.size() && s[i].kind == Segment::member && s[i].text == name;
}

const char *const SUPPORTED =
    " (supported: $.request.http.headers['Name'][0], $.request.http.cookies['name'], "
    "$.request.http.query['name'], $.request.http.path, $.request.http.method, $.request.http.host, "
    "$.request.client.ip, $.request.parsed_token.payload.<claim>)";

}  // namespace

std::optional<FieldPath> parse_field_path(std::string_view text, std::string *error) {
    std::string why;
    auto segments = tokenize(text, &why);
    if (!segments) {
        *error = "bad request field \"" + std::string(text) + "\": " + why;
        return std::nullopt;
    }
    const auto &s = *segments;
    FieldPath out;
    out.text = std::string(text);
    const auto unsupported = [&](const std::string &detail) {
        *error = "unsupported request field \"" + std::string(text) + "\": " + detail + SUPPORTED;
        return std::nullopt;
    };
    if (!is_member(s, 0, "request")) return unsupported("it must start with $.request");
    if (is_member(s, 1, "http")) {
        if (s.size() == 3 && (is_member(s, 2, "path") || is_member(s, 2, "method") || is_member(s, 2, "host"))) {
            out.kind = s[2].text == "path"     ? FieldKind::path
                       : s[2].text == "method" ? FieldKind::method
                                               : FieldKind::host;
            return out;
        }
        const bool header = is_member(s, 2, "headers");
        const bool cookie = is_member(s, 2, "cookies");
        const bool query = is_member(s, 2, "query");
        if (!header && !cookie && !query) return unsupported("unknown member of $.request.http");
        if (s.size() < 4 || s[3].kind != Segment::quoted)
            return unsupported("a quoted name is expected after " + s[2].text);
        out.kind = header ? FieldKind::header : cookie ? FieldKind::cookie : FieldKind::query;
        out.name = s[3].text;
        if (header)
            std::transform(out.name.begin(), out.name.end(), out.name.begin(),
                           [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (s.size() == 5 && s[4].kind == Segment::index && !cookie) {
            out.index = s[4].number;
            return out;
        }
        if (s.size() != 4)
            return unsupported("nothing may follow " + s[2].text + "['" + s[3].text + "']" + (cookie ? "" : "[n]"));
        return out;
    }
    if (is_member(s, 1, "client") && is_member(s, 2, "ip") && s.size() == 3) {
        out.kind = FieldKind::client_ip;
        return out;
    }
    if (is_member(s, 1, "parsed_token") && is_member(s, 2, "payload")) {
        if (s.size() < 4) return unsupported("name a claim: $.request.parsed_token.payload.sub");
        out.kind = FieldKind::claim;
        for (std::size_t i = 3; i < s.size(); ++i) {
            if (s[i].kind == Segment::index) return unsupported("claims are named, not indexed");
            out.claim.push_back(s[i].text);
        }
        return out;
    }
    return unsupported("unknown member of $.request");
}

}  // namespace gate::request_fields
