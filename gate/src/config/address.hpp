// Addresses of the configuration: "host:port" to listen on, "http://host:port[/path]" to forward to.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gate::config {

struct HostPort {
    std::string host{};  // a name or an address; IPv6 without its brackets
    std::uint16_t port = 0;

    // "host:port", IPv6 in brackets: the Host field and log text.
    [[nodiscard]] std::string text() const;
    bool operator==(const HostPort &other) const { return host == other.host && port == other.port; }
};

// "127.0.0.1:8080", "[::1]:8080", "localhost:8080". Nothing (and *error) otherwise.
std::optional<HostPort> parse_host_port(std::string_view text, std::string *error);

struct HttpUrl {
    HostPort address{};
    std::string path = "/";  // with its query, if any
};

// "http://host:port" or "http://host:port/path?query"; the port defaults to 80. https is refused (the gate
// speaks plain HTTP to backends on the same network; put TLS in front or behind).
std::optional<HttpUrl> parse_http_url(std::string_view text, std::string *error);

}  // namespace gate::config
