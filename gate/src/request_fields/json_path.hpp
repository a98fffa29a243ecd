// The JSONPath subset that names a request field (the seed's <Limit Request Field>), over this view of a
// request:
//   $.request.http.headers['Name'][0]     a header's first value (name case-insensitive); [n]: the n-th;
//                                          no index: every value joined by ", "
//   $.request.http.cookies['name']        a cookie of the Cookie header
//   $.request.http.query['name']          a query parameter, percent-decoded ([n]: its n-th occurrence)
//   $.request.http.path | .method | .host the path (no query), the method, the Host field without its port
//   $.request.client.ip                   the peer's address (never X-Forwarded-For, which a client can forge)
//   $.request.parsed_token.payload.<claim>[.<member>...]   a claim of the verified JWT (payload['claim'] too)
// Names are quoted with ' or " (or the typographic quotes the seed's blog post prints).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gate::request_fields {

enum class FieldKind { header, cookie, query, path, method, host, client_ip, claim };

struct FieldPath {
    FieldKind kind = FieldKind::path;
    std::string name{};                  // header (lower case), cookie or query parameter name
    std::optional<std::size_t> index{};  // headers[...][n], query[...][n]
    std::vector<std::string> claim{};    // payload.a.b: {"a", "b"}
    std::string text{};                  // as written, for messages
};

// Nothing, and *error says what is wrong (and where in the text), for anything outside the subset.
std::optional<FieldPath> parse_field_path(std::string_view text, std::string *error);

}  // namespace gate::request_fields
