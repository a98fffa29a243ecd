// The HTTP layer's pure parts: URL patterns, proxy header fields, the gate's own answers, the access log,
// /metrics and /healthz.
#include <gtest/gtest.h>

#include <boost/beast/http/fields.hpp>

#include "admin/health.hpp"
#include "admin/metrics.hpp"
#include "http/access_log.hpp"
#include "http/proxy_headers.hpp"
#include "http/responses.hpp"
#include "http/routes.hpp"

namespace bhttp = boost::beast::http;
using namespace gate;

TEST(Routes, GlobsOnThePathFirstMatchWins) {
    EXPECT_TRUE(http::glob_match("*/hello", "/hello"));
    EXPECT_TRUE(http::glob_match("*/hello", "/api/v1/hello"));
    EXPECT_FALSE(http::glob_match("*/hello", "/hello/there"));
    EXPECT_TRUE(http::glob_match("/api/*", "/api/a/b"));
    EXPECT_TRUE(http::glob_match("/v?/x", "/v1/x"));
    std::vector<config::RouteConfig> routes(3);
    routes[0].pattern = "/admin/*";
    routes[0].host_pattern = "*.internal";
    routes[1].pattern = "*/hello";
    routes[2].pattern = "*";
    EXPECT_EQ(http::match_route(routes, "/admin/x", "svc.internal:8080"), 0);
    EXPECT_EQ(http::match_route(routes, "/admin/x", "example.com"), 2);
    EXPECT_EQ(http::match_route(routes, "/a/hello", "example.com"), 1);
    EXPECT_EQ(http::match_route(routes, "/a/hello", "[::1]:8080"), 1);
    // Host names are case-insensitive and may end in a dot.
    EXPECT_EQ(http::match_route(routes, "/admin/x", "SVC.Internal:8080"), 0);
    EXPECT_EQ(http::match_route(routes, "/admin/x", "svc.internal."), 0);
    EXPECT_EQ(http::match_route(routes, "/admin/x", "svc.internal.:80"), 0);
    routes[0].host_pattern = "API.example";
    EXPECT_EQ(http::match_route(routes, "/admin/x", "api.EXAMPLE"), 0);
    routes.pop_back();
    EXPECT_EQ(http::match_route(routes, "/other", "example.com"), -1);
}

TEST(Routes, TargetsAreNormalisedBeforeMatching) {
    const auto norm = [](std::string_view target) {
        std::string why;
        const auto n = http::normalize_target(target, &why);
        return n ? n->target : "400: " + why;
    };
    EXPECT_EQ(norm("/api/x"), "/api/x");
    EXPECT_EQ(norm("/api/x?a=/b/../c&d=%2F"), "/api/x?a=/b/../c&d=%2F");  // the query as received
    EXPECT_EQ(norm("//api/x"), "/api/x");
    EXPECT_EQ(norm("/api//x//"), "/api/x/");
    EXPECT_EQ(norm("/%61pi/x"), "/api/x");
    EXPECT_EQ(norm("/%41PI/%7e%2D"), "/API/~-");
    EXPECT_EQ(norm("/./api/x"), "/api/x");
    EXPECT_EQ(norm("/z/../api/x"), "/api/x");
    EXPECT_EQ(norm("/z/%2e%2E/api/x"), "/api/x");
    EXPECT_EQ(norm("/api/x/."), "/api/x/");
    EXPECT_EQ(norm("/api/x/.."), "/api/");
    EXPECT_EQ(norm("/a/b/../../c"), "/c");
    EXPECT_EQ(norm("/"), "/");
    EXPECT_EQ(norm("/.."), "400: '..' above the root of the path");
    EXPECT_EQ(norm("/a/../../b"), "400: '..' above the root of the path");
    EXPECT_EQ(norm("/a%20b/%c3%a9/%25"), "/a%20b/%C3%A9/%25");  // reserved and other bytes stay escaped
    EXPECT_EQ(norm("/a%2Fb").rfind("400", 0), 0u);
    EXPECT_EQ(norm("/a%2fb").rfind("400", 0), 0u);
    EXPECT_EQ(norm("/a%5cb").rfind("400", 0), 0u);
    EXPECT_EQ(norm("/a\\b").rfind("400", 0), 0u);
    EXPECT_EQ(norm("/a%zzb").rfind("400", 0), 0u);
    EXPECT_EQ(norm("/a%4").rfind("400", 0), 0u);
    EXPECT_EQ(norm("/a#f").rfind("400", 0), 0u);
    EXPECT_EQ(norm("api/x").rfind("400", 0), 0u);
    EXPECT_EQ(norm("*"), "*");
    std::string why;
    const auto absolute = http::normalize_target("http://API.example:8080//api/./x?q=1", &why);
    ASSERT_TRUE(absolute);
    EXPECT_EQ(absolute->authority, "API.example:8080");
    EXPECT_EQ(absolute->target, "/api/x?q=1");
    EXPECT_EQ(absolute->path, "/api/x");
    EXPECT_EQ(http::normalize_target("HTTPS://h?q", &why)->target, "/?q");
    EXPECT_EQ(http::normalize_target("http://h", &why)->target, "/");
    EXPECT_FALSE(http::normalize_target("http://user@h/x", &why));
    EXPECT_FALSE(http::normalize_target("http:///x", &why));
}

TEST(ProxyHeaders, ForgedVerdictsGo) {
    bhttp::fields f;
    f.insert("X-RateLimit-Would-Deny", "false");
    f.insert("x-ratelimit-would-deny", "true");
    f.insert("RateLimit-Bypassed", "database-unavailable");
    f.insert("X-Other", "1");
    http::remove_gate_verdicts(f);
    EXPECT_EQ(f.count("X-RateLimit-Would-Deny"), 0u);
    EXPECT_EQ(f.count("RateLimit-Bypassed"), 0u);
    EXPECT_EQ(f.count("X-Other"), 1u);
}

TEST(ProxyHeaders, HopByHopGoesFramingStays) {
    bhttp::fields f;
    f.set(bhttp::field::connection, "keep-alive, X-Secret, Transfer-Encoding");
    f.set("X-Secret", "1");
    f.set(bhttp::field::keep_alive, "timeout=5");
    f.set(bhttp::field::upgrade, "websocket");
    f.set(bhttp::field::te, "trailers");
    f.set(bhttp::field::proxy_authorization, "Basic x");
    f.set(bhttp::field::expect, "100-continue");
    f.set(bhttp::field::transfer_encoding, "chunked");
    f.set(bhttp::field::content_type, "text/plain");
    http::remove_hop_by_hop(f);
    for (const char *gone :
         {"Connection", "X-Secret", "Keep-Alive", "Upgrade", "TE", "Proxy-Authorization", "Expect"}) {
        EXPECT_EQ(f.count(gone), 0u) << gone;
    }
    EXPECT_EQ(f[bhttp::field::transfer_encoding], "chunked");
    EXPECT_EQ(f[bhttp::field::content_type], "text/plain");
}

TEST(ProxyHeaders, Forwarding) {
    bhttp::fields f;
    f.set(bhttp::field::host, "api.example");
    f.set("X-Forwarded-For", "203.0.113.9");
    f.set(bhttp::field::via, "1.0 edge");
    http::add_forwarding(f, "192.0.2.1", 11);
    EXPECT_EQ(f["X-Forwarded-For"], "203.0.113.9, 192.0.2.1");
    EXPECT_EQ(f["X-Forwarded-Proto"], "http");
    EXPECT_EQ(f["X-Forwarded-Host"], "api.example");
    EXPECT_EQ(f[bhttp::field::via], "1.0 edge, 1.1 pg_ratelimit_gate");
}

TEST(Responses, TooManyRequests) {
    const auto r = http::too_many_requests(11, std::chrono::microseconds(1'500'000), "username");
    EXPECT_EQ(r.result_int(), 429u);
    EXPECT_EQ(r[bhttp::field::content_type], "application/json");
    EXPECT_EQ(r.body(), "{\"error\": \"rate_limited\", \"retry_after\": 1.5, \"limit\": \"username\"}\n");
    EXPECT_EQ(r[bhttp::field::content_length], std::to_string(r.body().size()));
    EXPECT_EQ(http::too_many_requests(11, std::chrono::microseconds(2'000'000), "g").body(),
              "{\"error\": \"rate_limited\", \"retry_after\": 2, \"limit\": \"g\"}\n");
    EXPECT_EQ(http::json_string("a\"b\xff"), "\"a\\\"b\xEF\xBF\xBD\"");
}

TEST(AccessLog, OneLineWithTheDecision) {
    http::AccessRecord r;
    r.client_ip = "127.0.0.1";
    r.method = "GET";
    r.target = "/hello\"\n";
    r.status = 429;
    r.bytes_sent = 70;
    r.decision = "denied";
    r.route = "*/hello";
    r.limiter_ms = 0.25;
    r.total_ms = 1.5;
    const std::string line = http::AccessLog::format(r);
    EXPECT_EQ(line.back(), '\n');
    EXPECT_EQ(line.find('\n'), line.size() - 1);
    EXPECT_NE(line.find(" 127.0.0.1 \"GET /hello?? HTTP/1.1\" 429 70 decision=denied limiter_ms=0.250 "),
              std::string::npos)
        << line;
    EXPECT_NE(line.find("route=\"*/hello\""), std::string::npos) << line;
}

TEST(Admin, MetricsAndHealth) {
    config::GateConfig c;
    c.routes.resize(1);
    c.routes[0].pattern = "*/hello";
    c.ratelimit.emplace();
    c.ratelimit->limits.resize(1);
    c.ratelimit->limits[0].key = "username";
    admin::Metrics m(c);
    m.request(0, admin::Outcome::allowed);
    m.request(0, admin::Outcome::denied);
    m.request(-1, admin::Outcome::unlimited);
    m.limit(0, 0, admin::LimitOutcome::denied);
    m.limit(0, -1, admin::LimitOutcome::allowed);
    m.limiter_call(std::chrono::microseconds(300));
    m.limiter_call(std::chrono::microseconds(2'000'000));
    const std::string text = m.render(3);
    for (const char *line :
         {"pg_ratelimit_gate_requests_total{route=\"*/hello\"} 2", "pg_ratelimit_gate_requests_total{route=\"-\"} 1",
          "pg_ratelimit_gate_decisions_total{route=\"*/hello\",decision=\"denied\"} 1",
          "pg_ratelimit_gate_limit_decisions_total{route=\"*/hello\",limit=\"username\",decision=\"denied\"} 1",
          "pg_ratelimit_gate_limit_decisions_total{route=\"*/hello\",limit=\"map\",decision=\"allowed\"} 1",
          "pg_ratelimit_gate_limiter_call_seconds_bucket{le=\"0.00025\"} 0",
          "pg_ratelimit_gate_limiter_call_seconds_bucket{le=\"0.0005\"} 1",
          "pg_ratelimit_gate_limiter_call_seconds_bucket{le=\"+Inf\"} 2",
          "pg_ratelimit_gate_limiter_call_seconds_count 2", "pg_ratelimit_gate_limiter_call_seconds_sum 2.000300",
          "pg_ratelimit_gate_database_connections_ready 3"}) {
        EXPECT_NE(text.find(std::string(line) + "\n"), std::string::npos) << line << "\n" << text;
    }
    EXPECT_EQ(admin::health(c, 1).status, 200u);
    EXPECT_EQ(admin::health(c, 0).status, 200u);  // failure_mode open: serving, degraded
    EXPECT_NE(admin::health(c, 0).body.find("\"database\": \"down\""), std::string::npos);
    c.ratelimit->limiter.failure_mode = config::FailureMode::closed;
    EXPECT_EQ(admin::health(c, 0).status, 503u);
}
