// PostgreSQL's binary wire formats for the few types the gate exchanges: text[] and interval[] parameters,
// and int4, int8, bool and interval result columns. Binary, because keys then travel as given (no array
// literal quoting to get wrong) and intervals come back as exact microseconds.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gate::limiter {

constexpr unsigned TEXT_OID = 25;
constexpr unsigned TEXT_ARRAY_OID = 1009;
constexpr unsigned INT4_ARRAY_OID = 1007;
constexpr unsigned INTERVAL_ARRAY_OID = 1187;

std::string encode_text_array(const std::vector<std::string> &items);
std::string encode_int4_array(const std::vector<std::int32_t> &items);
std::string encode_interval_array(const std::vector<std::chrono::microseconds> &items);

std::int32_t decode_int4(const char *bytes);
std::int64_t decode_int8(const char *bytes);
// As extract(epoch FROM interval) counts it (a year of months is 365.25 days, another month 30), in
// microseconds: what the client library reads too.
std::chrono::microseconds decode_interval(const char *bytes);

}  // namespace gate::limiter
