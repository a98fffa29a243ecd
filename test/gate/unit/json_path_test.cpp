// The JSONPath subset, and what each field reads from a request.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "request_fields/cookies.hpp"
#include "request_fields/extract.hpp"
#include "request_fields/json_path.hpp"
#include "request_fields/query.hpp"

using namespace gate::request_fields;

namespace {

FieldPath parse(const std::string &text) {
    std::string error;
    auto path = parse_field_path(text, &error);
    EXPECT_TRUE(path) << text << ": " << error;
    return path ? *path : FieldPath{};
}

// A test double: its members' allocations may throw, which only ends the test.
struct FakeRequest {                                  // NOLINT(bugprone-exception-escape)
    std::multimap<std::string, std::string> headers;  // lower-case names
    nlohmann::json claims;
    bool has_claims = false;

    RequestView view(std::string_view method, std::string_view target) {
        RequestView out;
        out.method = method;
        out.target = target;
        out.client_ip = "192.0.2.7";
        const auto host = headers.find("host");
        if (host != headers.end()) out.host = host->second;
        out.header_values = [this](std::string_view name, std::vector<std::string_view> &values) {
            const auto range = headers.equal_range(std::string(name));
            for (auto it = range.first; it != range.second; ++it) values.push_back(it->second);
        };
        out.claims = has_claims ? &claims : nullptr;
        return out;
    }
};

}  // namespace

TEST(JsonPath, EveryKind) {
    auto header = parse("$.request.http.headers['X-User-Id'][0]");
    EXPECT_EQ(header.kind, FieldKind::header);
    EXPECT_EQ(header.name, "x-user-id");
    EXPECT_EQ(header.index, 0u);
    auto cookie = parse("$.request.http.cookies['username']");
    EXPECT_EQ(cookie.kind, FieldKind::cookie);
    EXPECT_EQ(cookie.name, "username");
    EXPECT_EQ(parse("$.request.http.query[\"api_key\"]").kind, FieldKind::query);
    EXPECT_EQ(parse("$.request.http.path").kind, FieldKind::path);
    EXPECT_EQ(parse("$.request.http.method").kind, FieldKind::method);
    EXPECT_EQ(parse("$.request.http.host").kind, FieldKind::host);
    EXPECT_EQ(parse("$.request.client.ip").kind, FieldKind::client_ip);
    auto claim = parse("$.request.parsed_token.payload.sub");
    EXPECT_EQ(claim.kind, FieldKind::claim);
    EXPECT_EQ(claim.claim, std::vector<std::string>{"sub"});
    EXPECT_EQ(parse("$.request.parsed_token.payload.org.id").claim, (std::vector<std::string>{"org", "id"}));
    EXPECT_EQ(parse("$.request.parsed_token.payload['https://x/tier']").claim,
              std::vector<std::string>{"https://x/tier"});
}

TEST(JsonPath, TheSeedsTypographicQuotes) {
    // The seed's blog post prints $.request.http.headers[‘X-User-Id’][0].
    auto header = parse("$.request.http.headers[\xE2\x80\x98X-User-Id\xE2\x80\x99][0]");
    EXPECT_EQ(header.name, "x-user-id");
}

TEST(JsonPath, RefusesOutsideTheSubset) {
    for (const char *text :
         {"", "request.http.path", "$", "$.response.status", "$.request.http.body", "$.request.http.headers",
          "$.request.http.headers[0]", "$.request.http.headers['a'][x]", "$.request.http.cookies['a'][0]",
          "$.request.http.path.x", "$.request.client.port", "$.request.parsed_token.payload",
          "$.request.parsed_token.payload[0]", "$.request.http.headers['a", "$.request.http.headers['']", "$..path",
          "$.request.http.*"}) {
        std::string error;
        EXPECT_FALSE(parse_field_path(text, &error)) << text;
        EXPECT_FALSE(error.empty()) << text;
    }
}

TEST(RequestFields, ReadsEachPart) {
    FakeRequest r;
    r.headers = {{"host", "api.example:8080"},
                 {"x-user-id", "alice"},
                 {"x-user-id", "mallory"},
                 {"cookie", "a=1; username=\"bob\"; z=2"},
                 {"cookie", "other=3"}};
    const auto view = r.view("POST", "/v1/hello?api_key=k%201&x=1&api_key=second&flag");
    EXPECT_EQ(extract(parse("$.request.http.headers['X-USER-ID'][0]"), view), "alice");
    EXPECT_EQ(extract(parse("$.request.http.headers['x-user-id'][1]"), view), "mallory");
    EXPECT_EQ(extract(parse("$.request.http.headers['x-user-id']"), view), "alice, mallory");
    EXPECT_EQ(extract(parse("$.request.http.headers['x-user-id'][2]"), view), std::nullopt);
    EXPECT_EQ(extract(parse("$.request.http.cookies['username']"), view), "bob");
    EXPECT_EQ(extract(parse("$.request.http.cookies['other']"), view), "3");
    EXPECT_EQ(extract(parse("$.request.http.cookies['missing']"), view), std::nullopt);
    EXPECT_EQ(extract(parse("$.request.http.query['api_key']"), view), "k 1");
    EXPECT_EQ(extract(parse("$.request.http.query['api_key'][1]"), view), "second");
    EXPECT_EQ(extract(parse("$.request.http.query['flag']"), view), "");
    EXPECT_EQ(extract(parse("$.request.http.query['nope']"), view), std::nullopt);
    EXPECT_EQ(extract(parse("$.request.http.path"), view), "/v1/hello");
    EXPECT_EQ(extract(parse("$.request.http.method"), view), "POST");
    EXPECT_EQ(extract(parse("$.request.http.host"), view), "api.example");
    EXPECT_EQ(extract(parse("$.request.client.ip"), view), "192.0.2.7");
    // No verified token: no claim.
    EXPECT_EQ(extract(parse("$.request.parsed_token.payload.sub"), view), std::nullopt);
}

TEST(RequestFields, Claims) {
    FakeRequest r;
    r.has_claims = true;
    r.claims = nlohmann::json::parse(R"({"sub": "alice", "n": 42, "admin": true, "org": {"id": "o1"},
                                          "list": [1], "none": null})");
    const auto view = r.view("GET", "/");
    EXPECT_EQ(extract(parse("$.request.parsed_token.payload.sub"), view), "alice");
    EXPECT_EQ(extract(parse("$.request.parsed_token.payload.n"), view), "42");
    EXPECT_EQ(extract(parse("$.request.parsed_token.payload.admin"), view), "true");
    EXPECT_EQ(extract(parse("$.request.parsed_token.payload.org.id"), view), "o1");
    EXPECT_EQ(extract(parse("$.request.parsed_token.payload.org"), view), std::nullopt);
    EXPECT_EQ(extract(parse("$.request.parsed_token.payload.list"), view), std::nullopt);
    EXPECT_EQ(extract(parse("$.request.parsed_token.payload.none"), view), std::nullopt);
    EXPECT_EQ(extract(parse("$.request.parsed_token.payload.missing"), view), std::nullopt);
}

TEST(RequestFields, CookieAndQueryParsing) {
    EXPECT_EQ(find_cookie("a=1;b=2", "b"), "2");
    EXPECT_EQ(find_cookie(" a = 1 ", "a"), "1");
    EXPECT_EQ(find_cookie("ab=1", "a"), std::nullopt);
    EXPECT_EQ(find_cookie("a", "a"), std::nullopt);
    EXPECT_EQ(find_cookie("a=1; a=2", "a"), "1");
    EXPECT_EQ(percent_decode("a%2Fb+c%zz%4"), "a/b c%zz%4");
    EXPECT_EQ(find_query_parameter("/p?a%20b=c#frag", "a b"), "c");
    EXPECT_EQ(find_query_parameter("/p", "a"), std::nullopt);
    EXPECT_EQ(target_path("/a/b?c=d"), "/a/b");
}
