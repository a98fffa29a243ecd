#include "rate_limit_exceeded.hpp"

#include "message_text.hpp"

namespace pg_ratelimit {
namespace {

// A text argument as a JSON string literal, quotes included (palloc'd).
const char *json_string(const char *value) {
    StringInfoData buffer;
    initStringInfo(&buffer);
    escape_json(&buffer, value);
    return buffer.data;
}

// Seconds with exactly six decimals: exact, and the same whatever the server's locale.
const char *seconds_text(core::Micros micros) {
    return psprintf(INT64_FORMAT ".%06d", micros / USECS_PER_SEC, static_cast<int>(micros % USECS_PER_SEC));
}

// The error (ERROR) or the shadow-mode notice (NOTICE): the same SQLSTATE, DETAIL and HINT.
void report(int elevel, const text *limit_name, const text *key, core::Micros retry_after) {
    const char *limit = text_to_cstring(limit_name);
    const char *key_text = text_to_cstring(key);
    const char *seconds = seconds_text(retry_after);
    ereport(elevel, (errcode(ERRCODE_RATE_LIMIT_EXCEEDED),
                     errmsg(elevel >= ERROR ? "rate limit %s exceeded for key %s"
                                            : "rate limit %s (in shadow mode) would have been exceeded for key %s",
                            json_string(clipped_text(limit)), json_string(clipped_text(key_text))),
                     errdetail_internal("{\"limit\":%s,\"key\":%s,\"retry_after\":%s}", json_string(limit),
                                        json_string(key_text), seconds),
                     errhint("Try again in %s seconds. SQLSTATE RL001: the DETAIL is a JSON object with the limit, "
                             "the key and retry_after in seconds.",
                             seconds)));
}

}  // namespace

void raise_rate_limit_exceeded(const text *limit_name, const text *key, core::Micros retry_after) {
    report(ERROR, limit_name, key, retry_after);
    pg_unreachable();
}

void notice_shadow_denial(const text *limit_name, const text *key, core::Micros retry_after) {
    report(NOTICE, limit_name, key, retry_after);
}

}  // namespace pg_ratelimit
