// Rate limits and concurrency limits share rate_limit_config but not their functions: the rate functions
// (request, check, refund, enforce, settle, throttle, reset, request_many) refuse a concurrency limit, and
// rate_limit_acquire refuses every other, with ERROR 42809 (wrong_object_type: the limit exists, it is of
// the other kind) and a hint naming the right function.
#pragma once

#include "core/limit.hpp"
#include "postgres_headers.hpp"

namespace pg_ratelimit {

// limit_lookup, for the rate functions: ERROR 42809 for a concurrency limit.
core::Limit rate_limit_lookup(Oid extension, Oid schema, const text *name);

// ERROR 42809 unless `limit` (named `name`) is a concurrency limit.
void require_concurrency_limit(const core::Limit &limit, const text *name);

// ERROR 55000 if `before` is a concurrency limit and `after` (its new definition, same name) is another kind
// or has another period: a session lease's tag carries a time band of the period it was taken under
// (core/leases.hpp), and acquires under another period, or after the limit became another kind and came
// back, would no longer count the leases held. Dropping the limit (or renaming it) and defining it again
// forgets them, and the hint says so.
void require_concurrency_kept(const core::Limit &before, const core::Limit &after, const char *name);

}  // namespace pg_ratelimit
