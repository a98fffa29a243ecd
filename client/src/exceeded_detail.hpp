// Reading rate_limit_enforce's error (SQLSTATE RL001) back: the server's DETAIL is one JSON object,
// {"limit":"...","key":"...","retry_after":S.SSSSSS}, on the line after the primary message (the message
// quotes the limit and key as JSON strings, so it is always one line; the DETAIL's label before the
// object may be translated, so the object is found by its opening brace).
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace pg_ratelimit::detail {

struct ExceededDetail {
    std::string limit;
    std::string key;
    std::chrono::microseconds retry_after{0};
};

// The DETAIL of the server's full error text ("ERROR:  ...\nDETAIL:  {...}\nHINT:  ...\n"); nullopt when
// the second line holds no such object (a server that sent no DETAIL, or another error).
std::optional<ExceededDetail> parse_exceeded_detail(const std::string &server_text);

}  // namespace pg_ratelimit::detail
