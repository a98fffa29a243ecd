// The error rate_limit_enforce raises when a request is denied: SQLSTATE RL001, a class of its own.
//
// SQLSTATE classes starting with 5-9 or I-Z are left to implementations by the SQL standard; PostgreSQL
// uses 53-58, F0, HV, P0 and XX of them, none starting with R. "RL" (rate limit) is unused by PostgreSQL
// and by its common extensions, so applications can branch on it without mistaking another error for it.
//
// The message is for humans (limit and key clipped and JSON-quoted, so that it stays on one line). The
// DETAIL is for programs: one JSON object, {"limit":"...","key":"...","retry_after":S.SSSSSS}, with the
// whole key and limit name (escaped as JSON strings: quotes, backslashes, semicolons and newlines cannot
// break it) and retry_after in seconds with exactly six decimals (microseconds).
#pragma once

#include "core/limit.hpp"
#include "postgres_headers.hpp"

namespace pg_ratelimit {

inline constexpr int ERRCODE_RATE_LIMIT_EXCEEDED = MAKE_SQLSTATE('R', 'L', '0', '0', '1');

// Raises the error for a denied request of `key` under `limit_name`, to be retried after retry_after.
[[noreturn]] void raise_rate_limit_exceeded(const text *limit_name, const text *key, core::Micros retry_after);

// The same report as a NOTICE, for a limit in shadow mode that would have denied the request (the call
// goes on: this is what the limit would have raised, for whoever watches the rollout).
void notice_shadow_denial(const text *limit_name, const text *key, core::Micros retry_after);

}  // namespace pg_ratelimit
