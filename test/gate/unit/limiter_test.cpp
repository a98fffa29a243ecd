// The limiter layer without a server: the RateLimit fields (exactly the client library's), the binary wire
// formats, the numbers given to rate_limit_define, and which (key, limit) pairs a request is decided on.
#include <gtest/gtest.h>

#include <pg_ratelimit/decision.hpp>

#include "limiter/binary.hpp"
#include "limiter/limit_spec.hpp"
#include "limiter/plan.hpp"
#include "limiter/rate_headers.hpp"
#include "limiter/statements.hpp"

using namespace gate::limiter;
using std::chrono::microseconds;

namespace {

LimitSpec spec(const std::string &name, double burst, microseconds window) {
    LimitSpec s;
    s.name = name;
    s.burst = burst;
    s.window = window;
    return s;
}

}  // namespace

TEST(RateFields, OneItemPerLimitAsTheClientFormatsThem) {
    const LimitSpec global = spec("gate_global", 10000, microseconds(1'000'000));
    const LimitSpec user = spec("gate_username", 600, microseconds(60'000'000));
    const std::vector<PlannedLimit> limits = {{&global, "global", "global"}, {&user, "alice", "username"}};
    const std::vector<TripleDecision> each = {{true, 9999, microseconds(0), microseconds(100), false},
                                              {false, 0, microseconds(1'500'000), microseconds(59'900'001), false}};
    const TripleDecision overall{false, 0, microseconds(1'500'000), microseconds(59'900'001), false};
    const RateFields fields = rate_fields(limits, each, overall);
    EXPECT_EQ(fields.policy, "\"global\";q=10000;w=1, \"username\";q=600;w=60");
    EXPECT_EQ(fields.ratelimit, "\"global\";r=9999;t=1, \"username\";r=0;t=60");
    EXPECT_EQ(fields.retry_after, "2");
    EXPECT_EQ(longest_denial(limits, each), "username");

    // Each item is the client library's own text for that decision.
    pg_ratelimit::Decision d;
    d.limit = "username";
    d.remaining = 0;
    d.reset_after = microseconds(59'900'001);
    d.policy = pg_ratelimit::Policy{600, microseconds(60'000'000), 600, "gcra", ""};
    EXPECT_NE(fields.policy.find(pg_ratelimit::ratelimit_policy_field(d)), std::string::npos);
    EXPECT_NE(fields.ratelimit.find(pg_ratelimit::ratelimit_field(d)), std::string::npos);

    // Allowed: no Retry-After.
    EXPECT_EQ(rate_fields(limits, each, TripleDecision{true, 0, {}, {}, false}).retry_after, "");
}

TEST(RateFields, NamesAreStructuredFieldStrings) {
    const LimitSpec s = spec("gate_x", 2.9, microseconds(500'000));
    const std::vector<PlannedLimit> limits = {{&s, "k", "we\"ird\\name\xc3\xa9"}};
    const RateFields fields = rate_fields(limits, {{true, 1, {}, {}, false}}, {true, 1, {}, {}, false});
    EXPECT_EQ(fields.policy, "\"we\\\"ird\\\\name??\";q=2;w=1");
}

TEST(Binary, Arrays) {
    const std::string encoded = encode_text_array({"a", "", "b\"c{},"});
    // ndim 1, no nulls, text, 3 elements from 1, then each length and its bytes.
    const std::string expected = std::string("\0\0\0\1\0\0\0\0\0\0\0\x19\0\0\0\3\0\0\0\1", 20) +
                                 std::string("\0\0\0\1a", 5) + std::string("\0\0\0\0", 4) +
                                 std::string("\0\0\0\6b\"c{},", 10);
    EXPECT_EQ(encoded, expected);
    const std::string intervals = encode_interval_array({microseconds(1'500'000)});
    EXPECT_EQ(intervals.size(), 20u + 4 + 16);
    EXPECT_EQ(decode_interval(intervals.data() + 24), microseconds(1'500'000));
}

TEST(Binary, Decoding) {
    const char int4[] = {'\x00', '\x00', '\x01', '\x02'};
    EXPECT_EQ(decode_int4(int4), 258);
    const char int8[] = {'\xff', '\xff', '\xff', '\xff', '\xff', '\xff', '\xff', '\xfe'};
    EXPECT_EQ(decode_int8(int8), -2);
    // 1 day 2 us, and 13 months: a year (365.25 days) and a month of 30 days, as extract(epoch ...).
    const char day[] = {0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0};
    EXPECT_EQ(decode_interval(day), microseconds(86'400'000'002));
    const char months[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 13};
    EXPECT_EQ(decode_interval(months), microseconds((365 * 86'400LL + 21'600 + 30 * 86'400LL) * 1'000'000));
}

TEST(Statements, SchemaIsQuotedEverywhere) {
    EXPECT_EQ(quote_identifier("public"), "\"public\"");
    EXPECT_EQ(quote_identifier("we\"ird"), "\"we\"\"ird\"");
    for (const auto &statement : prepared_statements("lim its")) {
        EXPECT_NE(statement.sql.find("\"lim its\".rate_limit_"), std::string::npos) << statement.sql;
    }
    const std::string define = define_sql("x");
    EXPECT_NE(define.find("\"x\".rate_limit_define("), std::string::npos);
    EXPECT_NE(define.find("\"x\".rate_limit_config"), std::string::npos);
}

TEST(LimitSpec, DefineParameters) {
    gate::config::LimitConfig limit;
    limit.key = "username";
    limit.burst = 600;
    limit.window = microseconds(60'000'000);
    limit.max_throttle = microseconds(3'000'000);
    limit.storage = gate::config::Storage::memory;
    const LimitSpec s = spec_of(limit);
    EXPECT_EQ(s.name, "gate_username");
    // 3 s of a 600-per-minute refill: 30 units of debt.
    EXPECT_DOUBLE_EQ(s.max_reserved(), 30);
    EXPECT_EQ(s.define_params(), (std::vector<std::string>{"gate_username", "600", "60000000 microseconds", "gcra",
                                                           "600", "30", "memory"}));
    LimitSpec sliding = s;
    sliding.algorithm = gate::config::Algorithm::sliding_window;
    EXPECT_EQ(sliding.max_reserved(), 0);
}

TEST(Plan, KeysAndMissingFields) {
    gate::config::LimitConfig global;
    global.key = "global";
    gate::config::LimitConfig user;
    user.key = "username";
    std::string error;
    user.request_field = gate::request_fields::parse_field_path("$.request.http.headers['X-User'][0]", &error);
    const ConfiguredLimit g{&global, spec_of(global), {}};
    ConfiguredLimit u{&user, spec_of(user), {}};
    std::vector<std::string_view> header;
    gate::request_fields::RequestView view;
    view.header_values = [&header](std::string_view, std::vector<std::string_view> &out) {
        out.insert(out.end(), header.begin(), header.end());
    };

    header = {"alice"};
    Plan plan = make_plan({&g, &u}, view, {});
    ASSERT_EQ(plan.limits.size(), 2u);
    EXPECT_EQ(plan.limits[0].key, "global");  // no field: the limit's own key
    EXPECT_EQ(plan.limits[0].triple().limit, "gate_global");
    EXPECT_EQ(plan.limits[1].key, "alice");  // the field's raw value
    EXPECT_EQ(plan.limits[1].display, "username");

    header = {};
    plan = make_plan({&g, &u}, view, {});  // skip (the default)
    ASSERT_EQ(plan.limits.size(), 1u);
    EXPECT_EQ(plan.limits[0].key, "global");

    user.on_missing = gate::config::OnMissing::constant;
    user.missing_key = "anonymous";
    plan = make_plan({&g, &u}, view, {});
    ASSERT_EQ(plan.limits.size(), 2u);
    EXPECT_EQ(plan.limits[1].key, "anonymous");

    user.on_missing = gate::config::OnMissing::reject;
    plan = make_plan({&g, &u}, view, {});
    EXPECT_EQ(plan.rejected, "username");

    const std::string long_value(1025, 'x');
    header = {long_value};
    plan = make_plan({&g, &u}, view, {});
    EXPECT_EQ(plan.bad_key, "username");
    const std::string longest(1024, 'x');
    header = {longest};
    EXPECT_TRUE(make_plan({&g, &u}, view, {}).bad_key.empty());

    // Not UTF-8: refused here (400), never sent (the database's 22021 was a limiter failure: a bypass).
    header = {"\xff\xfe"};
    EXPECT_EQ(make_plan({&g, &u}, view, {}).bad_key, "username");
    header = {"\xc3\x28"};
    EXPECT_EQ(make_plan({&g, &u}, view, {}).bad_key, "username");
    header = {"caf\xc3\xa9 \xf0\x9f\x98\x80"};
    EXPECT_TRUE(make_plan({&g, &u}, view, {}).bad_key.empty());

    u.spec.storage = gate::config::Storage::memory;
    header = {"bob"};
    MapLimit map;
    map.spec = spec("gate_map_x", 2, microseconds(1'000'000));
    map.key = "users/bob";
    map.display = "user";
    const std::vector<MapLimit> answer = {map};  // the plan points into it
    plan = make_plan({&g, &u}, view, answer);
    ASSERT_EQ(plan.limits.size(), 3u);
    EXPECT_TRUE(plan.limits[1].triple().memory);
    EXPECT_EQ(plan.limits[2].triple().key, "users/bob");
    EXPECT_EQ(plan.limits[2].triple().limit, "gate_map_x");
}

TEST(Plan, Utf8) {
    EXPECT_TRUE(valid_utf8(""));
    EXPECT_TRUE(valid_utf8("plain ascii"));
    EXPECT_TRUE(valid_utf8("\xc3\xa9"));          // U+00E9
    EXPECT_TRUE(valid_utf8("\xe2\x82\xac"));      // U+20AC
    EXPECT_TRUE(valid_utf8("\xf0\x9f\x98\x80"));  // U+1F600
    EXPECT_TRUE(valid_utf8("\xf4\x8f\xbf\xbf"));  // U+10FFFF
    EXPECT_FALSE(valid_utf8("\xff"));
    EXPECT_FALSE(valid_utf8("\xff\xfe"));
    EXPECT_FALSE(valid_utf8("\x80"));              // a continuation byte first
    EXPECT_FALSE(valid_utf8("\xc3\x28"));          // a bad continuation
    EXPECT_FALSE(valid_utf8("\xc3"));              // cut short
    EXPECT_FALSE(valid_utf8("\xe2\x82"));          // cut short
    EXPECT_FALSE(valid_utf8("\xc0\xaf"));          // overlong '/'
    EXPECT_FALSE(valid_utf8("\xe0\x80\xaf"));      // overlong
    EXPECT_FALSE(valid_utf8("\xf0\x80\x80\xaf"));  // overlong
    EXPECT_FALSE(valid_utf8("\xed\xa0\x80"));      // a surrogate (U+D800)
    EXPECT_FALSE(valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
    EXPECT_FALSE(valid_utf8("\xf5\x80\x80\x80"));
}

TEST(Plan, MonitoringDecidesOnTheTwins) {
    gate::config::LimitConfig global;
    global.key = "global";
    const auto s = spec_of(global);
    const ConfiguredLimit g{&global, s, monitoring_twin(s)};
    EXPECT_EQ(g.monitor_spec.name, "gmon_global");
    EXPECT_EQ(g.monitor_spec.define_params()[1], s.define_params()[1]);  // the same numbers
    MapLimit map;
    map.spec = spec("gate_map_x", 2, microseconds(1'000'000));
    map.monitor_spec = monitoring_twin(map.spec);
    map.key = "users/bob";
    const std::vector<MapLimit> answer = {map};
    gate::request_fields::RequestView view;
    const Plan enforced = make_plan({&g}, view, answer);
    ASSERT_EQ(enforced.limits.size(), 2u);
    EXPECT_EQ(enforced.limits[0].triple().limit, "gate_global");
    EXPECT_EQ(enforced.limits[1].triple().limit, "gate_map_x");
    const Plan monitored = make_plan({&g}, view, answer, true);
    ASSERT_EQ(monitored.limits.size(), 2u);
    EXPECT_EQ(monitored.limits[0].triple().limit, "gmon_global");
    EXPECT_EQ(monitored.limits[0].triple().key, "global");
    EXPECT_EQ(monitored.limits[1].triple().limit, "gmon_map_x");
}
