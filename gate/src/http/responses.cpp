#include "http/responses.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace gate::http {

namespace bhttp = boost::beast::http;

std::string json_string(const std::string &text) {
    // Invalid UTF-8 (a header's raw bytes) is replaced, never an exception on a request path.
    return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Response json_error(bhttp::status status, unsigned version, const std::string &code, const std::string &extra) {
    Response response{status, version};
    response.set(bhttp::field::content_type, "application/json");
    response.body() = "{\"error\": " + json_string(code) + (extra.empty() ? "" : ", " + extra) + "}\n";
    response.prepare_payload();
    return response;
}

Response too_many_requests(unsigned version, std::chrono::microseconds retry_after, const std::string &limit) {
    char seconds[32];
    // Milliseconds are plenty for a client; Retry-After carries the rounded-up whole seconds.
    std::snprintf(seconds, sizeof seconds, "%.3f", static_cast<double>(retry_after.count()) / 1e6);
    std::string text = seconds;
    while (text.size() > 1 && text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
    return json_error(bhttp::status::too_many_requests, version, "rate_limited",
                      "\"retry_after\": " + text + ", \"limit\": " + json_string(limit));
}

}  // namespace gate::http
