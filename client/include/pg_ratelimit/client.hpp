// pg_ratelimit's C++ client on libpqxx (6.4, 7 or 8): include this one header. C++17, or C++20 with
// libpqxx 8, whose headers need it. Where libpqxx's own types show through, they are those of the libpqxx
// the client was built on: run_transaction's connection (retry.hpp), the exceptions' bases (errors.hpp).
//
//   pg_ratelimit::Options options;
//   options.pool_size = 8;
//   pg_ratelimit::Limiter limiter{"dbname=app", options};
//   auto d = limiter.request("user1", "send_message");
//   if (!d.allowed) return too_many_requests(d.headers());
//
// - limiter.hpp      Limiter: request / request_many / check / refund / reset / reserve / reserve_within /
//                    wait, pooled or in a transaction
// - reservation.hpp  Reservation: consume now, cancel() to refund
// - retry.hpp        run_transaction: retries a whole transaction on 40001 / 40P01
// - decision.hpp     Decision and its HTTP fields (Retry-After, RateLimit, RateLimit-Policy)
// - errors.hpp       InvalidArgument, UnknownLimit, ExtensionMissing, RateLimitExceeded, InDoubt, PoolTimeout
#pragma once

#include "pg_ratelimit/all_decision.hpp"
#include "pg_ratelimit/decision.hpp"
#include "pg_ratelimit/errors.hpp"
#include "pg_ratelimit/limiter.hpp"
#include "pg_ratelimit/reservation.hpp"
#include "pg_ratelimit/retry.hpp"
