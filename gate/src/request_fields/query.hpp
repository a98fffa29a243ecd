// Query parameters of a request target ("/path?a=1&b=x%20y").
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gate::request_fields {

// The path of a target, without its query.
std::string_view target_path(std::string_view target);

// The occurrence `index` (0: the first) of parameter `name` in the target's query, percent-decoded ('+' is a
// space, as forms encode it); nothing if absent. Names are compared after decoding.
std::optional<std::string> find_query_parameter(std::string_view target, std::string_view name, std::size_t index = 0);

// %XX and '+' decoded; an invalid escape is kept as written.
std::string percent_decode(std::string_view text);

// The value of one hexadecimal digit of a %XX escape; -1 if c is none.
int hex_value(char c);

}  // namespace gate::request_fields
