// The answers the gate makes itself: 429 and the errors, each a small JSON body.
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <string>

namespace gate::http {

using Response = boost::beast::http::response<boost::beast::http::string_body>;

// {"error": "<code>", ...extra}: extra is JSON members without braces ("\"limit\": \"username\"").
Response json_error(boost::beast::http::status status, unsigned version, const std::string &code,
                    const std::string &extra = "");

// 429: {"error": "rate_limited", "retry_after": 1.5, "limit": "username"}.
Response too_many_requests(unsigned version, std::chrono::microseconds retry_after, const std::string &limit);

// A JSON string literal.
std::string json_string(const std::string &text);

}  // namespace gate::http
