// What a request field is read from: the request's header and peer, and its verified token's claims.
#pragma once

#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string_view>
#include <vector>

namespace gate::request_fields {

struct RequestView {
    std::string_view method{};
    std::string_view target{};     // path and query: the normalised path (http/routes.hpp), the query as received
    std::string_view host{};       // the Host field (its port included; extract() drops it)
    std::string_view client_ip{};  // the TCP peer
    // Appends the values of every header field called `lower_name` (lower case), in order.
    std::function<void(std::string_view lower_name, std::vector<std::string_view> &out)> header_values{};
    // The payload of the request's verified JWT; null when there is none (no token, or one that failed
    // verification: such a token yields no claims at all).
    const nlohmann::json *claims = nullptr;
};

}  // namespace gate::request_fields
