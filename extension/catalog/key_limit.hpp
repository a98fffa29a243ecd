// The limit a call on a key of a rate limit is decided under, in one call of the catalog: the named limit
// (42704 if there is none, 42809 for a concurrency limit: limit_kind.hpp), with the key's override
// applied if it has one (override_cache.hpp).
//
// A call that may write the key's state (KeyUse::write: every rate function but check and policy) notes, for
// a table limit, what it decides under, which the transaction checks again when it commits
// (written_limits.hpp: a change of the limit committed meanwhile fails the commit with 40001). Memory
// limits are not transactional: a memory call decides under the definition it read when it began.
#pragma once

#include "call_context.hpp"
#include "core/limit.hpp"
#include "postgres_headers.hpp"

namespace pg_ratelimit {

enum class KeyUse { read, write };

// The named rate limit, for the calls on its keys (a batch applies each key's override with
// limit_for_key below).
core::Limit named_rate_limit(const CallContext &context, const text *name, KeyUse use);

// The limit `key` is decided under.
core::Limit limit_for_key(const CallContext &context, const text *name, const text *key, KeyUse use);
// The same for a key of a limit already read with named_rate_limit (with the same use).
core::Limit limit_for_key(const CallContext &context, const core::Limit &named, const text *name, const text *key,
                          KeyUse use);

// limit_for_key with both caches emptied first: the definition and the key's override as the latest
// snapshot sees them, for a call that met state made under a definition it has not seen yet.
core::Limit fresh_limit_for_key(const CallContext &context, const text *name, const text *key, KeyUse use);

}  // namespace pg_ratelimit
