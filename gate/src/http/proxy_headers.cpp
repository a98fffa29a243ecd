#include "http/proxy_headers.hpp"

#include <boost/beast/http/field.hpp>
#include <string>
#include <vector>

namespace gate::http {

namespace bhttp = boost::beast::http;

namespace {

std::string_view trim(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
    return text;
}

std::string via_value(unsigned version) {
    return std::to_string(version / 10) + "." + std::to_string(version % 10) + " pg_ratelimit_gate";
}

void append(bhttp::fields &fields, std::string_view name, const std::string &value) {
    const auto existing = fields.find(name);
    if (existing == fields.end()) {
        fields.set(name, value);
    } else {
        fields.set(name, std::string(existing->value()) + ", " + value);
    }
}

}  // namespace

void remove_hop_by_hop(bhttp::fields &fields) {
    // The fields the Connection field names are this hop's too (RFC 9110 7.6.1).
    std::vector<std::string> named;
    for (auto it = fields.find(bhttp::field::connection); it != fields.end() && it->name() == bhttp::field::connection;
         ++it) {
        std::string_view value = it->value();
        while (!value.empty()) {
            const auto comma = value.find(',');
            const auto token = trim(value.substr(0, comma));
            if (!token.empty()) named.emplace_back(token);
            value = comma == std::string_view::npos ? std::string_view{} : value.substr(comma + 1);
        }
    }
    for (const auto &name : named) {
        // Never let a client strip the framing of its own message this way.
        const auto field = bhttp::string_to_field(name);
        if (field == bhttp::field::transfer_encoding || field == bhttp::field::content_length) continue;
        fields.erase(name);
    }
    for (const auto field : {bhttp::field::connection, bhttp::field::keep_alive, bhttp::field::proxy_connection,
                             bhttp::field::proxy_authorization, bhttp::field::te, bhttp::field::trailer,
                             bhttp::field::upgrade, bhttp::field::expect}) {
        fields.erase(field);
    }
}

void add_forwarding(bhttp::fields &fields, std::string_view client_ip, unsigned version) {
    append(fields, "X-Forwarded-For", std::string(client_ip));
    fields.set("X-Forwarded-Proto", "http");
    const auto host = fields.find(bhttp::field::host);
    if (host != fields.end()) fields.set("X-Forwarded-Host", host->value());
    append(fields, "Via", via_value(version));
}

void add_via(bhttp::fields &fields, unsigned version) { append(fields, "Via", via_value(version)); }

void remove_gate_verdicts(boost::beast::http::fields &fields) {
    fields.erase("X-RateLimit-Would-Deny");
    fields.erase("RateLimit-Bypassed");
}

}  // namespace gate::http
