// The limit a call on a key of a rate limit is decided under, in one call of the catalog: the named limit
// (42704 if there is none, 42809 for a concurrency limit: limit_kind.hpp), with the key's override
// applied if it has one (override_cache.hpp).
//
// A call that may write the key's state (KeyUse::write: every rate function but check and policy) first
// takes, for a table limit, the limit's lock in RowShareLock until its transaction ends (limit_lock.hpp,
// a bounded wait: lock_waits.hpp): the definition returned is then the one current under that lock, which
// no redefinition or override can change before the transaction ends. Memory limits (and a standby, where
// nothing is written) take no lock: a memory call decides under the definition it read when it began.
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
// The same for a key of a limit already read with named_rate_limit.
core::Limit limit_for_key(const CallContext &context, const core::Limit &named, const text *name, const text *key);

}  // namespace pg_ratelimit
