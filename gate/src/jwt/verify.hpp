// JWT verification (RFC 7519 / 7515, compact serialization): HS256, RS256 and ES256. A token is trusted only
// when its signature verifies with a configured key and its exp / nbf admit the present moment; "alg": "none"
// and every other algorithm are refused, so that a token's claims are never read from a forgery.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jwt/keys.hpp"

namespace gate::jwt {

struct JwtSettings {
    std::string hs256_secret{};            // empty: HS256 refused
    std::vector<PublicKey> public_keys{};  // RS256 with the RSA ones, ES256 with the P-256 ones
    std::chrono::seconds leeway{0};        // clock skew allowed on exp and nbf
};

class JwtVerifier {
  public:
    explicit JwtVerifier(JwtSettings settings) : settings_(std::move(settings)) {}

    // The payload of a valid token at `now` (seconds since the epoch); nothing, and *why, for any other.
    // Thread-safe (the keys are only read).
    std::optional<nlohmann::json> verify(std::string_view token, std::int64_t now, std::string *why) const;

    // The token of an "Authorization: Bearer <token>" value; nothing for another scheme.
    static std::optional<std::string_view> bearer_token(std::string_view authorization);

    [[nodiscard]] bool configured() const { return !settings_.hs256_secret.empty() || !settings_.public_keys.empty(); }

  private:
    bool signature_valid(const std::string &alg, std::string_view signed_part, const std::string &signature,
                         std::string *why) const;

    JwtSettings settings_;
};

}  // namespace gate::jwt
