// The limit each key is decided under: its limit, or its override of it (override_store.hpp), cached per
// backend so that the hot path reads no table in steady state.
//
// Discipline of limit_cache.hpp: what is cached was read with the latest snapshot (a transaction that
// started before an override changed never caches the old one), and is dropped when rate_limit_override
// changes: its statement trigger (override_triggers.cpp) queues a relcache invalidation of the table,
// delivered to this backend at its next command and to every other backend when the change commits;
// call_context() accepts pending invalidations at the start of every call. DDL on the table (ALTER TABLE,
// REINDEX, DROP) invalidates it too. An invalidation arriving during a read leaves that read uncached.
//
// What is cached:
// - whether the table has any row at all (one read per invalidation): while it has none, every call
//   costs one comparison here;
// - per limit, up to WHOLE_LIMIT_MAX of its overrides, read whole on the limit's first call (one read);
//   a limit with more is looked up key by key (one index lookup a key), and the answers, overrides and
//   their absence alike, are kept, up to KEYS_MAX a limit (then forgotten, and read again).
// On YugabyteDB, which delivers no invalidation of a row change to other nodes, nothing is cached: every
// call on a limit reads the key's override (one primary-key lookup).
#pragma once

#include "call_context.hpp"
#include "core/limit.hpp"
#include "postgres_headers.hpp"

namespace pg_ratelimit {

void override_cache_init();
// Empties this backend's cache: the next lookups read the table again.
void override_cache_reset();

// The limit `limit` (named limit_name) for `key`: the limit itself, or the key's override applied to it
// (validated: ERROR 22023 naming the key if a row written by hand makes an invalid limit). *overridden,
// if given, tells which.
core::Limit effective_limit(const CallContext &context, const core::Limit &limit, const text *limit_name,
                            const text *key, bool *overridden = nullptr);

// How many times rate_limit_override's changes have reached this backend (invalidations of its cache).
uint64 override_invalidations();

// Whether the limit has any override (rate_limit_policy, for the client's policy cache).
bool limit_has_overrides(const CallContext &context, const text *limit_name);

}  // namespace pg_ratelimit
