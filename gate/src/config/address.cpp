#include "config/address.hpp"

#include <charconv>

namespace gate::config {
namespace {

std::optional<std::uint16_t> parse_port(std::string_view text) {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size() || value == 0 || value > 65535) return std::nullopt;
    return static_cast<std::uint16_t>(value);
}

// host[:port] with an optional default port (0: the port is required).
std::optional<HostPort> split(std::string_view text, std::uint16_t default_port, std::string *error) {
    HostPort out;
    std::string_view rest;
    if (!text.empty() && text.front() == '[') {
        const auto close = text.find(']');
        if (close == std::string_view::npos) {
            *error = "\"" + std::string(text) + "\": an IPv6 address needs its closing ']'";
            return std::nullopt;
        }
        out.host = std::string(text.substr(1, close - 1));
        rest = text.substr(close + 1);
    } else {
        const auto colon = text.rfind(':');
        out.host = std::string(text.substr(0, colon));
        rest = colon == std::string_view::npos ? std::string_view{} : text.substr(colon);
    }
    if (out.host.empty()) {
        *error = "\"" + std::string(text) + "\" names no host";
        return std::nullopt;
    }
    if (rest.empty()) {
        if (default_port == 0) {
            *error = "\"" + std::string(text) + "\" has no port (write host:port)";
            return std::nullopt;
        }
        out.port = default_port;
        return out;
    }
    const auto port = rest.front() == ':' ? parse_port(rest.substr(1)) : std::nullopt;
    if (!port) {
        *error = "\"" + std::string(text) + "\" has no valid port (1 to 65535)";
        return std::nullopt;
    }
    out.port = *port;
    return out;
}

}  // namespace

std::string HostPort::text() const {
    const bool v6 = host.find(':') != std::string::npos;
    return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::optional<HostPort> parse_host_port(std::string_view text, std::string *error) { return split(text, 0, error); }

std::optional<HttpUrl> parse_http_url(std::string_view text, std::string *error) {
    constexpr std::string_view scheme = "http://";
    if (text.substr(0, scheme.size()) != scheme) {
        *error = "\"" + std::string(text) + "\" is not an http:// URL" +
                 (text.substr(0, 8) == "https://" ? " (https backends are not supported)" : "");
        return std::nullopt;
    }
    const std::string_view rest = text.substr(scheme.size());
    const auto slash = rest.find('/');
    HttpUrl url;
    auto address = split(rest.substr(0, slash), 80, error);
    if (!address) return std::nullopt;
    url.address = *address;
    if (slash != std::string_view::npos) url.path = std::string(rest.substr(slash));
    return url;
}

}  // namespace gate::config
