#include "jwt/keys.hpp"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstring>

namespace gate::jwt {

std::optional<PublicKey> load_public_key(std::string_view pem, std::string *error) {
    const std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())),
                                                        &BIO_free);
    EVP_PKEY *raw = nullptr;
    if (pem.find("BEGIN CERTIFICATE") != std::string_view::npos) {
        X509 *certificate = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr);
        if (certificate != nullptr) {
            raw = X509_get_pubkey(certificate);
            X509_free(certificate);
        }
    } else {
        raw = PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr);
    }
    if (raw == nullptr) {
        *error = "not a PEM public key (\"-----BEGIN PUBLIC KEY-----\") or certificate";
        return std::nullopt;
    }
    PublicKey out;
    out.key.reset(raw, &EVP_PKEY_free);
    if (EVP_PKEY_get_base_id(raw) == EVP_PKEY_RSA) {
        if (EVP_PKEY_get_bits(raw) < 2048) {
            *error = "an RSA key of " + std::to_string(EVP_PKEY_get_bits(raw)) + " bits (RS256 needs 2048 or more)";
            return std::nullopt;
        }
        out.type = KeyType::rsa;
        return out;
    }
    if (EVP_PKEY_get_base_id(raw) == EVP_PKEY_EC) {
        char group[64] = {};
        std::size_t length = 0;
        if (EVP_PKEY_get_group_name(raw, group, sizeof group, &length) != 1 ||
            (std::strcmp(group, "prime256v1") != 0 && std::strcmp(group, "P-256") != 0)) {
            *error = std::string("an EC key on curve ") + (group[0] ? group : "?") + " (ES256 needs P-256)";
            return std::nullopt;
        }
        out.type = KeyType::ec_p256;
        return out;
    }
    *error = "a key that is neither RSA nor EC (RS256 and ES256 are supported)";
    return std::nullopt;
}

}  // namespace gate::jwt
