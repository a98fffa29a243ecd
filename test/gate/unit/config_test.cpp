// Loading the YAML file: the issue's example loads, and every bad file is refused with an error naming
// the file, the 1-based line and the problem.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <regex>

#include "config/load.hpp"

using namespace gate::config;

namespace {

class ConfigFile {
  public:
    explicit ConfigFile(const std::string &text) {
        char name[] = "/tmp/gate_config_test_XXXXXX";
        const int fd = mkstemp(name);
        path_ = name;
        std::ofstream(path_) << text;
        if (fd >= 0) ::close(fd);
    }
    ~ConfigFile() { std::remove(path_.c_str()); }
    [[nodiscard]] const std::string &path() const { return path_; }

  private:
    std::string path_;
};

// The error of loading `text`, or "" if it loads.
std::string error_of(const std::string &text, std::string *file = nullptr) {
    ConfigFile f(text);
    if (file != nullptr) *file = f.path();
    try {
        load_config(f.path());
        return "";
    } catch (const ConfigError &e) {
        return e.what();
    }
}

// Asserts that `text` fails at `line` with a message containing `needle`.
void expect_error(const std::string &text, int line, const std::string &needle) {
    std::string file;
    const std::string error = error_of(text, &file);
    ASSERT_FALSE(error.empty()) << "loaded, expected an error about " << needle << ":\n" << text;
    EXPECT_EQ(error.rfind(file + ":" + std::to_string(line) + ": ", 0), 0u) << error;
    EXPECT_NE(error.find(needle), std::string::npos) << error;
}

// The issue's example, with a limiter block that gives a conninfo.
const char *const EXAMPLE = R"(gate:
  listen: 127.0.0.1:8080
  admin_listen: 127.0.0.1:8081        # /healthz, /metrics (Prometheus text)
  plugins:
  - id: ratelimit
    type: ratelimit
    enabled: false                     # enabled per URL below
    parameters:
      limiter:
        type: pg_ratelimit
        conninfo: "host=/tmp port=5432 dbname=app"
        pool_size: 4
        schema: public                 # where the extension lives
        failure_mode: open
      limits:
      - key: global
        comment: global rate
        burst: 10000
        window: 1s
        max_throttle: 1s
      - key: username
        burst: 600
        window: 1m
        max_throttle: 3s
        request_field: $.request.http.cookies['username']
        storage: memory
        algorithm: gcra
      map_endpoint: http://127.0.0.1:9000/limits
  urls:
  - pattern: '*/hello'
    target: http://127.0.0.1:8000
    plugins:
      ratelimit:
        enabled: true
        monitoring: false
)";

// EXAMPLE with `from` replaced by `to` (which must be there).
std::string with(const std::string &from, const std::string &to) {
    std::string text = EXAMPLE;
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    return text;
}

}  // namespace

TEST(Config, TheIssuesExampleLoads) {
    ConfigFile f(EXAMPLE);
    const GateConfig config = load_config(f.path());
    EXPECT_EQ(config.listen.text(), "127.0.0.1:8080");
    EXPECT_EQ(config.admin_listen->text(), "127.0.0.1:8081");
    ASSERT_TRUE(config.ratelimit);
    const auto &plugin = *config.ratelimit;
    EXPECT_FALSE(plugin.enabled);
    EXPECT_EQ(plugin.limiter.conninfo, "host=/tmp port=5432 dbname=app");
    EXPECT_EQ(plugin.limiter.pool_size, 4);
    EXPECT_EQ(plugin.limiter.failure_mode, FailureMode::open);
    ASSERT_EQ(plugin.limits.size(), 2u);
    EXPECT_EQ(plugin.limits[0].key, "global");
    EXPECT_EQ(plugin.limits[0].db_name(), "gate_global");
    EXPECT_EQ(plugin.limits[0].burst, 10000);
    EXPECT_EQ(plugin.limits[0].window, std::chrono::seconds(1));
    EXPECT_EQ(plugin.limits[0].max_throttle, std::chrono::seconds(1));
    EXPECT_FALSE(plugin.limits[0].request_field);
    EXPECT_EQ(plugin.limits[0].storage, Storage::durable);
    EXPECT_EQ(plugin.limits[1].storage, Storage::memory);
    EXPECT_EQ(plugin.limits[1].algorithm, Algorithm::gcra);
    EXPECT_EQ(plugin.limits[1].request_field->name, "username");
    EXPECT_EQ(plugin.limits[1].line, 21);
    ASSERT_TRUE(plugin.map_endpoint);
    EXPECT_EQ(plugin.map_endpoint->url.address.text(), "127.0.0.1:9000");
    EXPECT_EQ(plugin.map_endpoint->url.path, "/limits");
    ASSERT_EQ(config.routes.size(), 1u);
    EXPECT_TRUE(config.routes[0].ratelimit);
    EXPECT_FALSE(config.routes[0].monitoring);
    EXPECT_EQ(config.routes[0].limits, (std::vector<std::size_t>{0, 1}));
    EXPECT_EQ(config.routes[0].target.text(), "127.0.0.1:8000");
}

TEST(Config, TheSeedsOwnExampleNeedsOnlyItsLimiterBlockChanged) {
    // The seed's example as published: its Redis limiter is refused, naming the line of its type.
    const std::string seed = R"(gate:
  plugins:
  - id: ratelimit
    type: ratelimit
    enabled: false
    parameters:
      limiter:
        type: redis_lua
        address: redis:6379
      limits:
      - key: global
        comment: global rate
        burst: 10000
        window: 1s
      - key: username
        comment: Username
        burst: 600
        window: 1m
        max_throttle: 3s
        request_field: $.request.http.cookies['username']
  urls:
  - pattern: '*/hello'
    target: http://backend:8000
    plugins:
      ratelimit:
        enabled: true
)";
    expect_error(seed, 9, "unknown key \"address\" in limiter");
    std::string fixed = seed;
    fixed.replace(fixed.find("type: redis_lua\n        address: redis:6379"),
                  std::string("type: redis_lua\n        address: redis:6379").size(),
                  "type: pg_ratelimit\n        conninfo: dbname=app");
    EXPECT_EQ(error_of(fixed), "");
    std::string redis_type = seed;
    redis_type.replace(redis_type.find("        address: redis:6379\n"),
                       std::string("        address: redis:6379\n").size(), "");
    expect_error(redis_type, 8, "limiter type \"redis_lua\" is not supported");
}

TEST(Config, BadFilesNameTheirLine) {
    expect_error("", 1, "the file is empty");
    expect_error("gate:\n  listen: [1, 2\n", 3, "YAML syntax error");
    expect_error("other: 1\n", 1, "unknown key \"other\" in the file");
    expect_error(with("  listen: 127.0.0.1:8080\n", "  listen: 127.0.0.1:8080\n  lisen: 1\n"), 3,
                 "unknown key \"lisen\" in gate");
    expect_error(with("  listen: 127.0.0.1:8080\n", "  listen: 127.0.0.1:8080\n  listen: 127.0.0.1:9\n"), 3,
                 "\"listen\" appears twice");
    expect_error(with("listen: 127.0.0.1:8080", "listen: 127.0.0.1"), 2, "has no port");
    expect_error(with("listen: 127.0.0.1:8080", "listen: 127.0.0.1:70000"), 2, "no valid port");
    expect_error(with("        conninfo: \"host=/tmp port=5432 dbname=app\"\n", ""), 10, "needs a conninfo");
    expect_error(with("pool_size: 4", "pool_size: 0"), 12, "pool_size must be a whole number from 1 to 256");
    expect_error(with("failure_mode: open", "failure_mode: maybe"), 14, "failure_mode must be open or closed");
    expect_error(with("        window: 1s\n        max_throttle: 1s", "        window: 10\n        max_throttle: 1s"),
                 19, "window: \"10\" is not a duration: it has no unit");
    expect_error(with("window: 1m", "window: 1 minute"), 23, "unknown unit");
    expect_error(with("max_throttle: 3s", "max_throttle: -3s"), 24, "is not a duration");
    expect_error(with("        burst: 600\n", "        burst: 600\n        interval: 100ms\n"), 23,
                 "give burst or interval, not both");
    expect_error(with("        burst: 600\n", ""), 21, "needs burst (requests per window) or interval");
    expect_error(with("burst: 600", "burst: lots"), 22, "burst must be a number");
    expect_error(with("burst: 600", "burst: 0"), 22, "burst must be from 1");
    expect_error(with("request_field: $.request.http.cookies['username']", "request_field: $.request.http.body"), 25,
                 "unsupported request field \"$.request.http.body\"");
    expect_error(with("request_field: $.request.http.cookies['username']", "request_field: $.request.http.cookies['u"),
                 25, "unterminated");
    expect_error(
        with("request_field: $.request.http.cookies['username']", "request_field: $.request.parsed_token.payload.sub"),
        25, "reads a JWT claim, but parameters.jwt configures no key");
    expect_error(with("storage: memory", "storage: redis"), 26, "storage must be durable, unlogged or memory");
    expect_error(with("algorithm: gcra", "algorithm: leaky_bucket"), 27, "algorithm must be gcra");
    expect_error(with("algorithm: gcra", "algorithm: sliding_window"), 24, "a sliding window takes no reservations");
    expect_error(with("- key: username", "- key: global"), 21, "a second limit with key \"global\"");
    expect_error(with("- key: username", "- key: user name"), 21, "limit key \"user name\"");
    expect_error(with("        algorithm: gcra\n", "        algorithm: gcra\n        on_missing: ignore\n"), 28,
                 "on_missing must be skip, reject or key:<constant>");
    expect_error(with("        comment: global rate\n", "        comment: global rate\n        on_missing: skip\n"), 18,
                 "on_missing applies only to a limit with a request_field");
    expect_error(with("map_endpoint: http://127.0.0.1:9000/limits", "map_endpoint: ftp://x"), 28,
                 "map_endpoint: \"ftp://x\" is not an http:// URL");
    expect_error(with("target: http://127.0.0.1:8000", "target: https://127.0.0.1:8000"), 31,
                 "https backends are not supported");
    expect_error(with("target: http://127.0.0.1:8000", "target: http://127.0.0.1:8000/api"), 31,
                 "a target is http://host:port");
    expect_error(with("        monitoring: false\n", "        monitoring: false\n        limits: [global, nobody]\n"),
                 36, "no limit has key \"nobody\"");
    expect_error(with("      ratelimit:\n        enabled: true", "      ratelimt:\n        enabled: true"), 33,
                 "plugin \"ratelimt\" is not defined");
    expect_error(with("monitoring: false", "monitoring: perhaps"), 35, "monitoring must be true or false");
    expect_error(with("  - pattern: '*/hello'\n", "  - pattern: ''\n"), 30, "an empty pattern");
    expect_error(with("    type: ratelimit\n", "    type: auth\n"), 6, "unknown plugin type \"auth\"");
    expect_error(with("  urls:\n  - pattern: '*/hello'\n    target: http://127.0.0.1:8000\n",
                      "  urls:\n  - pattern: '*/hello'\n"),
                 30, "needs a target");
}

TEST(Config, Jwt) {
    const std::string claims =
        with("request_field: $.request.http.cookies['username']", "request_field: $.request.parsed_token.payload.sub");
    const std::string jwt_at = "      map_endpoint: http://127.0.0.1:9000/limits\n";
    auto jwt = [&](const std::string &block) {
        std::string text = claims;
        text.replace(text.find(jwt_at), jwt_at.size(), jwt_at + block);
        return text;
    };
    EXPECT_EQ(error_of(jwt("      jwt:\n        hs256_secret: 0123456789abcdef0123456789abcdef\n")), "");
    expect_error(jwt("      jwt:\n        hs256_secret: short\n"), 30, "hs256_secret must be at least 32 bytes");
    expect_error(jwt("      jwt:\n        public_keys:\n        - not a key\n"), 31,
                 "public key: not a PEM public key");
    expect_error(jwt("      jwt:\n        leeway: 5s\n"), 30, "jwt configures no key");
}

TEST(Config, Defaults) {
    ConfigFile f("gate:\n  urls:\n  - pattern: '*'\n    target: http://127.0.0.1:9\n");
    const GateConfig config = load_config(f.path());
    EXPECT_EQ(config.listen.text(), "127.0.0.1:8080");
    EXPECT_EQ(config.admin_listen->text(), "127.0.0.1:8081");
    EXPECT_FALSE(config.ratelimit);
    EXPECT_FALSE(config.routes[0].ratelimit);
    EXPECT_TRUE(config.access_log);
}

TEST(Config, UnreadableFile) {
    try {
        load_config("/nonexistent/gate.yaml");
        FAIL() << "loaded";
    } catch (const ConfigError &e) {
        EXPECT_EQ(std::string(e.what()), "/nonexistent/gate.yaml: cannot read the file");
    }
}
