// Public keys that verify RS256 and ES256 tokens, loaded from PEM text of the configuration.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

typedef struct evp_pkey_st EVP_PKEY;  // NOLINT: OpenSSL's own forward declaration

namespace gate::jwt {

enum class KeyType { rsa, ec_p256 };

struct PublicKey {
    std::shared_ptr<EVP_PKEY> key{};  // immutable once loaded: shared by every thread
    KeyType type = KeyType::rsa;
};

// A "-----BEGIN PUBLIC KEY-----" (SubjectPublicKeyInfo) or "-----BEGIN CERTIFICATE-----" PEM block holding an
// RSA key (2048 bits or more) or an EC key on P-256. Nothing, and *error, otherwise.
std::optional<PublicKey> load_public_key(std::string_view pem, std::string *error);

}  // namespace gate::jwt
