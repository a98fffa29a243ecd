// base64url without padding (RFC 7515 section 2), as JWTs encode their parts.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gate::jwt {

// Nothing for text outside the base64url alphabet, padding ('='), or an impossible length.
std::optional<std::string> base64url_decode(std::string_view text);
std::string base64url_encode(std::string_view bytes);

}  // namespace gate::jwt
