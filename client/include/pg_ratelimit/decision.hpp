// What a rate-limit call returns, and its HTTP rendering.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pg_ratelimit {

// A named limit's definition as it applies to the key (the key's override of its rate and capacity, if it
// has one: rate_limit_override), as read by the Limiter at most Options::policy_ttl (30 s by default)
// before the decision: cached per Limiter, database and limit name, and per key for limits with overrides.
// The database is the one the call ran in (the pool's, or the caller's transaction's: one Limiter may serve
// a database per tenant, where one limit name has other numbers), told apart by the server address and
// database name libpq reports for the connection.
struct Policy {
    double rate = 0;                      // units added per period
    std::chrono::microseconds period{0};  // refill period (token bucket, GCRA) or window length (windows)
    double capacity = 0;                  // most units a key can hold: the burst (the rate, sliding window)
    // "token_bucket", "gcra", "fixed_window" or "sliding_window".
    std::string algorithm{};
    // A calendar quota's time zone (a fixed window of calendar days, weeks or months; "UTC" for months
    // without one): period is then the length of the window in progress when the policy was read. Empty
    // for every other limit.
    std::string time_zone{};
};

// One HTTP header field, ready to add to a response.
struct HttpField {
    std::string name{};
    std::string value{};
    bool operator==(const HttpField &other) const { return name == other.name && value == other.value; }
};

// The server's rate_limit_decision for one call. A plain value: copy it, keep it, share it.
struct Decision {
    // The units were granted (request/reserve), or would be (check); for a limit in shadow mode, the call
    // may go ahead (shadow_denied: a real limit would have refused it, and nothing was taken).
    bool allowed = false;
    std::int64_t remaining = 0;  // whole units left after the call; 0 while the key is in debt
    // Denied: how long until the same call can succeed. Allowed: 0, except for a scheduled reservation,
    // where it is how long until the reserved work may run.
    std::chrono::microseconds retry_after{0};
    std::chrono::microseconds reset_after{0};  // until the key is back at full capacity
    // The limit is in shadow mode (rate_limit_define(..., shadow => true)) and would have denied this
    // call: allowed is true and nothing was consumed. Log it; do not act on it.
    bool shadow_denied = false;
    std::string limit{};  // the limit's name, as passed by the caller
    // The limit's definition, for the RateLimit-Policy field (see Policy: it may be up to
    // Options::policy_ttl old). Empty if the limit's row was not visible when it was last read (dropped
    // meanwhile, or invisible to the caller's snapshot); the decision itself is valid all the same.
    std::optional<Policy> policy{};

    // The response fields for this decision (draft-ietf-httpapi-ratelimit-headers, delay-seconds
    // Retry-After):
    //   RateLimit-Policy: "<limit>";q=<capacity>;w=<period>   (when the policy is known)
    //   RateLimit:        "<limit>";r=<remaining>;t=<reset_after>
    //   Retry-After:      <retry_after>                       (denied decisions only)
    // q is the capacity (floored to whole units): the most a client can ever spend at once, so r <= q
    // always holds; with the default capacity (= rate) it is also the units per window. w is the period
    // in seconds. t is the time until the key is full again, and Retry-After the time until this very
    // request can succeed; both are rounded up to whole seconds, so a client that honours them is never
    // early. A limit name is sent as a structured-field string: '"' and '\' are escaped and bytes
    // outside printable ASCII become '?'.
    [[nodiscard]] std::vector<HttpField> headers() const;

    // As headers(), with a uniformly random 0..max_jitter seconds added to Retry-After, so that many
    // clients denied together do not all come back at the same instant (a thundering herd).
    [[nodiscard]] std::vector<HttpField> headers(std::chrono::seconds max_jitter) const;
};

// The individual field values, for callers that assemble headers themselves.
[[nodiscard]] std::string ratelimit_policy_field(const Decision &decision);  // "" when the policy is unknown
[[nodiscard]] std::string ratelimit_field(const Decision &decision);
[[nodiscard]] std::string retry_after_field(const Decision &decision);  // delay-seconds, rounded up

}  // namespace pg_ratelimit
