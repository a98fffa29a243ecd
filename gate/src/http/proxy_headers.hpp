// The header fields a proxy changes on the way through (RFC 9110 section 7.6): hop-by-hop fields removed,
// the client's address and the proxy named for the next hop.
#pragma once

#include <boost/beast/http/fields.hpp>
#include <string_view>

namespace gate::http {

// Removes Connection and every field it names, Keep-Alive, Proxy-Connection, Proxy-Authorization, TE,
// Trailer, Upgrade and Expect (the gate answers 100-continue itself). Transfer-Encoding and Content-Length
// stay: they frame the body, which the gate re-frames the same way for the next hop.
void remove_hop_by_hop(boost::beast::http::fields &fields);

// Removes X-RateLimit-Would-Deny and RateLimit-Bypassed: the gate's verdict fields are the gate's alone (a
// client's own copies would pass for the gate's verdict at the backend).
void remove_gate_verdicts(boost::beast::http::fields &fields);

// X-Forwarded-For (appended to), X-Forwarded-Proto, X-Forwarded-Host and Via, for the backend.
void add_forwarding(boost::beast::http::fields &fields, std::string_view client_ip, unsigned version);

// Via on the answer to the client.
void add_via(boost::beast::http::fields &fields, unsigned version);

}  // namespace gate::http
