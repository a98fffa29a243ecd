// The map endpoint's answers and their cache.
#include <gtest/gtest.h>

#include "map/map_cache.hpp"
#include "map/map_limits.hpp"

using namespace gate::map;
using std::chrono::microseconds;

namespace {

std::vector<gate::limiter::MapLimit> parse(const std::string &body) {
    gate::config::MapEndpointConfig defaults;
    std::string error;
    auto limits = parse_map_limits(body, defaults, &error);
    EXPECT_TRUE(limits) << body << ": " << error;
    return limits ? *limits : std::vector<gate::limiter::MapLimit>{};
}

std::string error_of(const std::string &body) {
    gate::config::MapEndpointConfig defaults;
    std::string error;
    EXPECT_FALSE(parse_map_limits(body, defaults, &error)) << body;
    return error;
}

}  // namespace

TEST(MapLimits, TheSeedsExample) {
    const auto limits =
        parse(R"({"limits": [{"key": "users/john.smith", "comment": "username", "interval": 0.1, "window": 1,
                               "max_throttle": 5}]})");
    ASSERT_EQ(limits.size(), 1u);
    EXPECT_EQ(limits[0].key, "users/john.smith");
    EXPECT_EQ(limits[0].display, "username");
    EXPECT_DOUBLE_EQ(limits[0].spec.burst, 10);  // window / interval
    EXPECT_EQ(limits[0].spec.window, microseconds(1'000'000));
    EXPECT_EQ(limits[0].spec.max_throttle, microseconds(5'000'000));
    EXPECT_EQ(limits[0].spec.name, "gate_map_gcra_durable_10_per_1s_throttle_5s");
}

TEST(MapLimits, BurstDurationsAndOverrides) {
    const auto limits = parse(R"({"limits": [{"key": "k", "burst": 3, "window": "1m", "storage": "memory",
                                               "algorithm": "fixed_window"}, {"key": "j", "burst": 1, "window": 0.5}]})");
    ASSERT_EQ(limits.size(), 2u);
    EXPECT_EQ(limits[0].display, "k");
    EXPECT_EQ(limits[0].spec.name, "gate_map_fixed_window_memory_3_per_1m_throttle_0s");
    EXPECT_EQ(limits[1].spec.window, microseconds(500'000));
    EXPECT_TRUE(parse(R"({"limits": []})").empty());
}

TEST(MapLimits, RefusesOtherShapes) {
    EXPECT_NE(error_of("not json").find("\"limits\" list"), std::string::npos);
    EXPECT_NE(error_of("[]").find("\"limits\" list"), std::string::npos);
    EXPECT_NE(error_of(R"({"limits": [{"burst": 1, "window": 1}]})").find("string \"key\""), std::string::npos);
    EXPECT_NE(error_of(R"({"limits": [{"key": "k", "burst": 1}]})").find("no window"), std::string::npos);
    EXPECT_NE(error_of(R"({"limits": [{"key": "k", "window": 1}]})").find("burst or interval"), std::string::npos);
    EXPECT_NE(
        error_of(R"({"limits": [{"key": "k", "burst": 1, "interval": 1, "window": 1}]})").find("burst or interval"),
        std::string::npos);
    EXPECT_NE(error_of(R"({"limits": [{"key": "k", "burst": 0, "window": 1}]})").find("burst must be"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"limits": [{"key": "k", "interval": 2, "window": 1}]})").find("interval"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"limits": [{"key": "k", "burst": 1, "window": -1}]})").find("window"), std::string::npos);
    EXPECT_NE(error_of(R"({"limits": [{"key": "k", "burst": 1, "window": "1 s"}]})").find("window"), std::string::npos);
    EXPECT_NE(error_of(R"({"limits": [{"key": "k", "burst": 1, "window": 1, "storage": "redis"}]})").find("storage"),
              std::string::npos);
}

TEST(MapCache, ExpiresAndEvicts) {
    MapCache cache(microseconds(1'000'000), 2);
    const auto t0 = std::chrono::steady_clock::now();
    auto answer = std::make_shared<const std::vector<gate::limiter::MapLimit>>();
    cache.store("a", answer, t0);
    EXPECT_EQ(cache.find("a", t0 + std::chrono::milliseconds(999)), answer);
    EXPECT_EQ(cache.find("a", t0 + std::chrono::milliseconds(1000)), nullptr);
    cache.store("a", answer, t0);
    cache.store("b", answer, t0);
    cache.store("c", answer, t0);  // full: the oldest goes
    EXPECT_EQ(cache.size(), 2u);
    EXPECT_EQ(cache.find("a", t0), nullptr);
    EXPECT_EQ(cache.find("c", t0), answer);
    MapCache off(microseconds(0), 10);
    off.store("a", answer, t0);
    EXPECT_EQ(off.find("a", t0), nullptr);
}

TEST(MapLimits, RefusesKeysTheDatabaseCannotTakeAndTooManyLimits) {
    // The endpoint's fault: a map failure (failure_mode), not the client's 400.
    EXPECT_NE(error_of(R"({"limits": [{"key": "k\u0000x", "burst": 5, "window": 1}]})").find("NUL"), std::string::npos);
    const std::string long_key(1025, 'k');
    EXPECT_NE(error_of(R"({"limits": [{"key": ")" + long_key + R"(", "burst": 5, "window": 1}]})").find("1024"),
              std::string::npos);
    EXPECT_EQ(parse(R"({"limits": [{"key": ")" + long_key.substr(1) + R"(", "burst": 5, "window": 1}]})").size(), 1u);
    std::string many = R"({"limits": [)";
    for (std::size_t i = 0; i <= MAX_MAP_LIMITS; ++i)
        many += std::string(i ? "," : "") + R"({"key": "k", "burst": 5, "window": 1})";
    EXPECT_NE(error_of(many + "]}").find("more than 32 limits"), std::string::npos);
    many = R"({"limits": [)";
    for (std::size_t i = 0; i < MAX_MAP_LIMITS; ++i)
        many += std::string(i ? "," : "") + R"({"key": "k", "burst": 5, "window": 1})";
    EXPECT_EQ(parse(many + "]}").size(), MAX_MAP_LIMITS);
    // A map limit's monitoring twin: the same numbers under gmon_.
    const auto limits = parse(R"({"limits": [{"key": "k", "burst": 3, "window": 1}]})");
    EXPECT_EQ(limits[0].monitor_spec.name, "gmon_map_gcra_durable_3_per_1s_throttle_0s");
    EXPECT_EQ(limits[0].monitor_spec.burst, 3);
}

TEST(MapCache, VaryAndDefinitionsAreBounded) {
    MapCache cache(microseconds(1'000'000), 10);
    EXPECT_TRUE(cache.vary().empty());
    EXPECT_TRUE(cache.learn_vary({"x-api-key"}));
    EXPECT_TRUE(cache.learn_vary({"x-api-key", "accept"}));
    EXPECT_EQ(cache.vary(), (std::vector<std::string>{"accept", "x-api-key"}));
    std::vector<std::string> lots;
    for (std::size_t i = 0; i < MAX_VARY_HEADERS; ++i) lots.push_back("h" + std::to_string(i));
    EXPECT_FALSE(cache.learn_vary(lots));  // would pass the cap: nothing learned
    EXPECT_EQ(cache.vary().size(), 2u);

    std::vector<std::string> names;
    for (std::size_t i = 0; i < MAX_MAP_DEFINITIONS; ++i) names.push_back("gate_map_" + std::to_string(i));
    EXPECT_TRUE(cache.admit_definitions({names.begin(), names.begin() + 50}));
    EXPECT_TRUE(cache.admit_definitions({names.begin() + 40, names.end()}));
    EXPECT_TRUE(cache.admit_definitions({"gate_map_1", "gate_map_99"}));  // known ones always
    EXPECT_FALSE(cache.admit_definitions({"gate_map_1", "gate_map_new"}));
    EXPECT_FALSE(cache.admit_definitions({"gate_map_new"}));
}
