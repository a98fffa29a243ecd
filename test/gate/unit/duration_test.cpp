#include <gtest/gtest.h>

#include "config/duration.hpp"

using gate::config::format_duration;
using gate::config::parse_duration;
using std::chrono::microseconds;

TEST(Duration, EachUnit) {
    std::string error;
    EXPECT_EQ(parse_duration("500ms", &error), microseconds(500'000));
    EXPECT_EQ(parse_duration("1s", &error), microseconds(1'000'000));
    EXPECT_EQ(parse_duration("1m", &error), microseconds(60'000'000));
    EXPECT_EQ(parse_duration("1h", &error), microseconds(3'600'000'000));
    EXPECT_EQ(parse_duration("1d", &error), microseconds(86'400'000'000));
    EXPECT_EQ(parse_duration("1.5s", &error), microseconds(1'500'000));
    EXPECT_EQ(parse_duration("0s", &error), microseconds(0));
    EXPECT_EQ(parse_duration("0.25ms", &error), microseconds(250));
}

TEST(Duration, RefusesWhatIsNotADuration) {
    for (const char *text : {"", "1", "10", "s", "1 s", "1sec", "-1s", "1.2.3s", "1S", "1mm", "abc", "1e3s", "101y"}) {
        std::string error;
        EXPECT_FALSE(parse_duration(text, &error)) << text;
        EXPECT_FALSE(error.empty()) << text;
    }
    std::string error;
    EXPECT_FALSE(parse_duration("10", &error));
    EXPECT_NE(error.find("no unit"), std::string::npos) << error;
    EXPECT_FALSE(parse_duration("40000d", &error));
    EXPECT_NE(error.find("100 years"), std::string::npos) << error;
}

TEST(Duration, WebhookSecondsArePlainNumbers) {
    std::string error;
    EXPECT_EQ(gate::config::seconds_to_duration(0.1, &error), microseconds(100'000));
    EXPECT_EQ(gate::config::seconds_to_duration(5, &error), microseconds(5'000'000));
    EXPECT_FALSE(gate::config::seconds_to_duration(-1, &error));
}

TEST(Duration, FormatsShortest) {
    EXPECT_EQ(format_duration(microseconds(1'000'000)), "1s");
    EXPECT_EQ(format_duration(microseconds(60'000'000)), "1m");
    EXPECT_EQ(format_duration(microseconds(500'000)), "500ms");
    EXPECT_EQ(format_duration(microseconds(1'500'000)), "1500ms");
    EXPECT_EQ(format_duration(microseconds(0)), "0s");
    EXPECT_EQ(format_duration(microseconds(1)), "1e-06s");
}
