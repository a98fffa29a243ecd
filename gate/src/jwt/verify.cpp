#include "jwt/verify.hpp"

#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cctype>
#include <cmath>
#include <memory>

#include "jwt/base64url.hpp"

namespace gate::jwt {
namespace {

bool verify_hs256(const std::string &secret, std::string_view signed_part, const std::string &signature) {
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
             reinterpret_cast<const unsigned char *>(signed_part.data()), signed_part.size(), mac,
             &length) == nullptr) {
        return false;
    }
    // Constant time: a byte-by-byte early exit would let a forger find the MAC one byte at a time.
    return signature.size() == length && CRYPTO_memcmp(mac, signature.data(), length) == 0;
}

bool verify_digest(EVP_PKEY *key, std::string_view signed_part, const unsigned char *signature, std::size_t length) {
    const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
    if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key) != 1) return false;
    return EVP_DigestVerify(ctx.get(), signature, length, reinterpret_cast<const unsigned char *>(signed_part.data()),
                            signed_part.size()) == 1;
}

// JWS writes an ES256 signature as R || S (32 bytes each); OpenSSL verifies DER's ECDSA-Sig-Value.
std::optional<std::string> es256_to_der(const std::string &raw) {
    if (raw.size() != 64) return std::nullopt;
    const auto *bytes = reinterpret_cast<const unsigned char *>(raw.data());
    ECDSA_SIG *sig = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(bytes, 32, nullptr);
    BIGNUM *s = BN_bin2bn(bytes + 32, 32, nullptr);
    if (sig == nullptr || r == nullptr || s == nullptr || ECDSA_SIG_set0(sig, r, s) != 1) {
        BN_free(r);
        BN_free(s);
        ECDSA_SIG_free(sig);
        return std::nullopt;
    }
    unsigned char *der = nullptr;
    const int length = i2d_ECDSA_SIG(sig, &der);
    ECDSA_SIG_free(sig);
    if (length <= 0) return std::nullopt;
    std::string out(reinterpret_cast<char *>(der), static_cast<std::size_t>(length));
    OPENSSL_free(der);
    return out;
}

std::optional<nlohmann::json> decode_json_part(std::string_view part) {
    const auto bytes = base64url_decode(part);
    if (!bytes) return std::nullopt;
    auto value = nlohmann::json::parse(*bytes, nullptr, false);
    if (value.is_discarded() || !value.is_object()) return std::nullopt;
    return value;
}

}  // namespace

std::optional<std::string_view> JwtVerifier::bearer_token(std::string_view authorization) {
    constexpr std::string_view scheme = "bearer ";
    if (authorization.size() <= scheme.size()) return std::nullopt;
    for (std::size_t i = 0; i < scheme.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(authorization[i])) != scheme[i]) return std::nullopt;
    }
    std::string_view token = authorization.substr(scheme.size());
    while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
    while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
    if (token.empty()) return std::nullopt;
    return token;
}

bool JwtVerifier::signature_valid(const std::string &alg, std::string_view signed_part, const std::string &signature,
                                  std::string *why) const {
    if (alg == "HS256") {
        if (settings_.hs256_secret.empty()) {
            *why = "HS256 token, but no hs256_secret is configured";
            return false;
        }
        if (!verify_hs256(settings_.hs256_secret, signed_part, signature)) {
            *why = "bad HS256 signature";
            return false;
        }
        return true;
    }
    if (alg == "RS256" || alg == "ES256") {
        const KeyType wanted = alg == "RS256" ? KeyType::rsa : KeyType::ec_p256;
        std::string der;
        if (wanted == KeyType::ec_p256) {
            auto converted = es256_to_der(signature);
            if (!converted) {
                *why = "an ES256 signature must be 64 bytes";
                return false;
            }
            der = std::move(*converted);
        }
        const std::string &sig = wanted == KeyType::ec_p256 ? der : signature;
        bool any_key = false;
        for (const auto &key : settings_.public_keys) {
            if (key.type != wanted) continue;
            any_key = true;
            if (verify_digest(key.key.get(), signed_part, reinterpret_cast<const unsigned char *>(sig.data()),
                              sig.size())) {
                return true;
            }
        }
        *why = any_key ? "bad " + alg + " signature" : alg + " token, but no such public key is configured";
        return false;
    }
    *why = alg == "none" ? "unsigned token (alg none) refused" : "algorithm \"" + alg + "\" refused";
    return false;
}

std::optional<nlohmann::json> JwtVerifier::verify(std::string_view token, std::int64_t now, std::string *why) const {
    const auto first = token.find('.');
    const auto second = first == std::string_view::npos ? first : token.find('.', first + 1);
    if (second == std::string_view::npos || token.find('.', second + 1) != std::string_view::npos) {
        *why = "not a compact JWS (three parts)";
        return std::nullopt;
    }
    const auto header = decode_json_part(token.substr(0, first));
    if (!header) {
        *why = "unreadable token header";
        return std::nullopt;
    }
    const auto alg = header->find("alg");
    if (alg == header->end() || !alg->is_string()) {
        *why = "token header without alg";
        return std::nullopt;
    }
    // RFC 7515 4.1.11: extensions the recipient does not understand make the token invalid.
    if (header->contains("crit")) {
        *why = "token header with crit extensions refused";
        return std::nullopt;
    }
    const auto signature = base64url_decode(token.substr(second + 1));
    if (!signature) {
        *why = "unreadable signature";
        return std::nullopt;
    }
    if (!signature_valid(alg->get<std::string>(), token.substr(0, second), *signature, why)) return std::nullopt;

    auto payload = decode_json_part(token.substr(first + 1, second - first - 1));
    if (!payload) {
        *why = "unreadable token payload";
        return std::nullopt;
    }
    const std::int64_t leeway = settings_.leeway.count();
    for (const char *claim : {"exp", "nbf"}) {
        const auto found = payload->find(claim);
        if (found == payload->end()) continue;
        if (!found->is_number()) {
            *why = std::string(claim) + " is not a number";
            return std::nullopt;
        }
        const double at = found->get<double>();
        const bool exp = claim[0] == 'e';
        // exp: valid strictly before it (RFC 7519 4.1.4); nbf: valid from it on (4.1.5).
        if (exp ? static_cast<double>(now - leeway) >= at : static_cast<double>(now + leeway) < at) {
            *why = exp ? "expired token" : "token not valid yet (nbf)";
            return std::nullopt;
        }
    }
    return payload;
}

}  // namespace gate::jwt
