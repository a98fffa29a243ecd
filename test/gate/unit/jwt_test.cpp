// JWT verification: good tokens of each algorithm pass; forged, expired, not-yet-valid, unsigned (alg none)
// and otherwise wrong ones yield no claims.
#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

#include <memory>

#include "jwt/base64url.hpp"
#include "jwt/keys.hpp"
#include "jwt/verify.hpp"

using namespace gate::jwt;

namespace {

const char *const SECRET = "0123456789abcdef0123456789abcdef";
constexpr std::int64_t NOW = 1'800'000'000;

std::shared_ptr<EVP_PKEY> generate(const char *type) {
    EVP_PKEY *key = std::string(type) == "RSA" ? EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(2048))
                                               : EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
    return {key, &EVP_PKEY_free};
}

std::string public_pem(EVP_PKEY *key) {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), &BIO_free);
    PEM_write_bio_PUBKEY(bio.get(), key);
    char *data = nullptr;
    const long length = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<std::size_t>(length));
}

std::string sign_with(EVP_PKEY *key, const std::string &input, bool ecdsa_raw) {
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
    EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key);
    std::size_t length = 0;
    const auto *bytes = reinterpret_cast<const unsigned char *>(input.data());
    EVP_DigestSign(ctx.get(), nullptr, &length, bytes, input.size());
    std::string signature(length, '\0');
    EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char *>(signature.data()), &length, bytes, input.size());
    signature.resize(length);
    if (!ecdsa_raw) return signature;
    // DER -> R || S, as JWS writes ES256 signatures.
    const auto *der = reinterpret_cast<const unsigned char *>(signature.data());
    ECDSA_SIG *sig = d2i_ECDSA_SIG(nullptr, &der, static_cast<long>(signature.size()));
    unsigned char raw[64];
    BN_bn2binpad(ECDSA_SIG_get0_r(sig), raw, 32);
    BN_bn2binpad(ECDSA_SIG_get0_s(sig), raw + 32, 32);
    ECDSA_SIG_free(sig);
    return std::string(reinterpret_cast<char *>(raw), 64);
}

std::string hs256(const std::string &secret, const std::string &input) {
    unsigned char mac[32];
    unsigned int length = 0;
    HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
         reinterpret_cast<const unsigned char *>(input.data()), input.size(), mac, &length);
    return std::string(reinterpret_cast<char *>(mac), length);
}

std::string token(const std::string &header, const std::string &payload, const std::string &signature_of_input) {
    return base64url_encode(header) + "." + base64url_encode(payload) + "." + base64url_encode(signature_of_input);
}

std::string signing_input(const std::string &header, const std::string &payload) {
    return base64url_encode(header) + "." + base64url_encode(payload);
}

std::string hs_token(const std::string &payload, const std::string &secret = SECRET) {
    const std::string header = R"({"alg":"HS256","typ":"JWT"})";
    return token(header, payload, hs256(secret, signing_input(header, payload)));
}

JwtVerifier hs_verifier() {
    JwtSettings settings;
    settings.hs256_secret = SECRET;
    return JwtVerifier(settings);
}

}  // namespace

TEST(Base64Url, RoundTripAndStrictness) {
    for (const std::string &text :
         std::vector<std::string>{"", "f", "fo", "foo", "foob", "fooba", "foobar", std::string("\0\xff\x10", 3)}) {
        EXPECT_EQ(base64url_decode(base64url_encode(text)), text);
    }
    EXPECT_EQ(base64url_encode("\xfb\xff"), "-_8");
    EXPECT_FALSE(base64url_decode("Zm9v="));  // padding
    EXPECT_FALSE(base64url_decode("Zm9v+"));  // base64's alphabet, not base64url's
    EXPECT_FALSE(base64url_decode("Zg9"));    // leftover bits not zero: another spelling of the same bytes
    EXPECT_FALSE(base64url_decode("Z"));
}

TEST(Jwt, Hs256) {
    const auto verifier = hs_verifier();
    std::string why;
    const auto claims = verifier.verify(hs_token(R"({"sub":"alice","exp":1800000100})"), NOW, &why);
    ASSERT_TRUE(claims) << why;
    EXPECT_EQ((*claims)["sub"], "alice");
}

TEST(Jwt, ForgedTokensYieldNothing) {
    const auto verifier = hs_verifier();
    std::string why;
    // Signed with another secret.
    EXPECT_FALSE(verifier.verify(hs_token(R"({"sub":"victim"})", "another secret, 32 bytes or more!"), NOW, &why));
    EXPECT_EQ(why, "bad HS256 signature");
    // A real token whose payload was swapped for another sub.
    const std::string good = hs_token(R"({"sub":"alice"})");
    const std::string forged_payload = base64url_encode(R"({"sub":"victim"})");
    const auto first = good.find('.');
    const auto second = good.find('.', first + 1);
    const std::string swapped = good.substr(0, first + 1) + forged_payload + good.substr(second);
    EXPECT_FALSE(verifier.verify(swapped, NOW, &why));
    // Its signature truncated, empty, or garbage.
    EXPECT_FALSE(verifier.verify(good.substr(0, good.size() - 2), NOW, &why));
    EXPECT_FALSE(verifier.verify(good.substr(0, second + 1), NOW, &why));
    EXPECT_FALSE(verifier.verify(good.substr(0, second + 1) + "!!!", NOW, &why));
    // Not three parts.
    EXPECT_FALSE(verifier.verify("abc", NOW, &why));
    EXPECT_FALSE(verifier.verify(good + ".x", NOW, &why));
}

TEST(Jwt, AlgNoneIsRefused) {
    const auto verifier = hs_verifier();
    std::string why;
    for (const std::string &alg : std::vector<std::string>{"none", "None", "NONE"}) {
        const std::string header = R"({"alg":")" + alg + R"("})";
        EXPECT_FALSE(
            verifier.verify(base64url_encode(header) + "." + base64url_encode(R"({"sub":"victim"})") + ".", NOW, &why))
            << alg;
    }
    EXPECT_FALSE(verifier.verify(token(R"({"alg":"none"})", R"({"sub":"x"})", "sig"), NOW, &why));
    EXPECT_EQ(why, "unsigned token (alg none) refused");
    // Other algorithms, and a header without one, are refused too.
    EXPECT_FALSE(verifier.verify(token(R"({"alg":"HS512"})", R"({"sub":"x"})", "sig"), NOW, &why));
    EXPECT_FALSE(verifier.verify(token(R"({"typ":"JWT"})", R"({"sub":"x"})", "sig"), NOW, &why));
    // Critical extensions the gate does not know.
    const std::string header = R"({"alg":"HS256","crit":["exp"],"exp":1})";
    EXPECT_FALSE(verifier.verify(token(header, "{}", hs256(SECRET, signing_input(header, "{}"))), NOW, &why));
}

TEST(Jwt, ExpAndNbf) {
    const auto verifier = hs_verifier();
    std::string why;
    EXPECT_FALSE(verifier.verify(hs_token(R"({"sub":"a","exp":1800000000})"), NOW, &why));
    EXPECT_EQ(why, "expired token");
    EXPECT_FALSE(verifier.verify(hs_token(R"({"sub":"a","exp":1799999999})"), NOW, &why));
    EXPECT_TRUE(verifier.verify(hs_token(R"({"sub":"a","exp":1800000001})"), NOW, &why));
    EXPECT_FALSE(verifier.verify(hs_token(R"({"sub":"a","nbf":1800000001})"), NOW, &why));
    EXPECT_EQ(why, "token not valid yet (nbf)");
    EXPECT_TRUE(verifier.verify(hs_token(R"({"sub":"a","nbf":1800000000})"), NOW, &why));
    EXPECT_FALSE(verifier.verify(hs_token(R"({"sub":"a","exp":"tomorrow"})"), NOW, &why));
    JwtSettings lenient;
    lenient.hs256_secret = SECRET;
    lenient.leeway = std::chrono::seconds(30);
    EXPECT_TRUE(JwtVerifier(lenient).verify(hs_token(R"({"sub":"a","exp":1799999990})"), NOW, &why));
}

TEST(Jwt, Rs256AndEs256) {
    const auto rsa = generate("RSA");
    const auto ec = generate("EC");
    const auto other_ec = generate("EC");
    std::string error;
    JwtSettings settings;
    settings.public_keys.push_back(*load_public_key(public_pem(other_ec.get()), &error));
    settings.public_keys.push_back(*load_public_key(public_pem(rsa.get()), &error));
    settings.public_keys.push_back(*load_public_key(public_pem(ec.get()), &error));
    const JwtVerifier verifier(settings);
    const std::string payload = R"({"sub":"carol","exp":1800000100})";
    std::string why;

    const std::string rs_header = R"({"alg":"RS256"})";
    const std::string rs = token(rs_header, payload, sign_with(rsa.get(), signing_input(rs_header, payload), false));
    ASSERT_TRUE(verifier.verify(rs, NOW, &why)) << why;
    EXPECT_EQ((*verifier.verify(rs, NOW, &why))["sub"], "carol");

    const std::string es_header = R"({"alg":"ES256"})";
    const std::string es = token(es_header, payload, sign_with(ec.get(), signing_input(es_header, payload), true));
    ASSERT_TRUE(verifier.verify(es, NOW, &why)) << why;

    // An RS256 signature presented as ES256 and the reverse; a key nobody configured.
    EXPECT_FALSE(verifier.verify(
        token(es_header, payload, sign_with(rsa.get(), signing_input(es_header, payload), false)), NOW, &why));
    const auto stranger = generate("EC");
    EXPECT_FALSE(verifier.verify(
        token(es_header, payload, sign_with(stranger.get(), signing_input(es_header, payload), true)), NOW, &why));
    EXPECT_EQ(why, "bad ES256 signature");
    // HS256 with the RSA public key's PEM as the secret (the classic key-confusion attack): no secret configured.
    const std::string hs_header = R"({"alg":"HS256"})";
    EXPECT_FALSE(verifier.verify(
        token(hs_header, payload, hs256(public_pem(rsa.get()), signing_input(hs_header, payload))), NOW, &why));
    EXPECT_EQ(why, "HS256 token, but no hs256_secret is configured");
    // Expired, well signed.
    EXPECT_FALSE(verifier.verify(rs, 1'800'000'100, &why));
}

TEST(Jwt, Keys) {
    std::string error;
    EXPECT_FALSE(load_public_key("garbage", &error));
    const auto small = std::shared_ptr<EVP_PKEY>(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(1024)),
                                                 &EVP_PKEY_free);
    EXPECT_FALSE(load_public_key(public_pem(small.get()), &error));
    EXPECT_NE(error.find("1024 bits"), std::string::npos) << error;
    const auto p384 = std::shared_ptr<EVP_PKEY>(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-384"), &EVP_PKEY_free);
    EXPECT_FALSE(load_public_key(public_pem(p384.get()), &error));
    EXPECT_NE(error.find("ES256 needs P-256"), std::string::npos) << error;
}

TEST(Jwt, BearerToken) {
    EXPECT_EQ(JwtVerifier::bearer_token("Bearer abc.def.ghi"), "abc.def.ghi");
    EXPECT_EQ(JwtVerifier::bearer_token("bearer   abc "), "abc");
    EXPECT_FALSE(JwtVerifier::bearer_token("Basic dXNlcjpwYXNz"));
    EXPECT_FALSE(JwtVerifier::bearer_token("Bearer "));
    EXPECT_FALSE(JwtVerifier::bearer_token(""));
}
