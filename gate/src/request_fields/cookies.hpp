// The Cookie request field (RFC 6265 section 5.4: "name=value; name2=value2").
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gate::request_fields {

// The value of the first cookie called `name` in one Cookie field's value, without the double quotes a
// value may be wrapped in; nothing if absent.
std::optional<std::string> find_cookie(std::string_view cookie_header, std::string_view name);

}  // namespace gate::request_fields
