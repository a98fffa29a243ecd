// The table limits this transaction decided keys under, checked again when it commits.
//
// A change of a limit (rate_limit_define, _drop, _override, DML on rate_limit_config) rewrites every key
// it can see, waiting for the rows other transactions hold; but a key's first row, inserted by a
// transaction still open, is invisible to it, and a transaction that read the old definition may go on
// deciding under it until the change commits. Waiting for all such transactions would let one idle session
// hold every change of a limit, and every writer queued behind the change. Instead, each transaction that
// decided keys of a table limit checks at its commit (and at PREPARE) that what it decided under is still
// in force: it takes each such limit's lock in RowShareLock for its commit (limit_lock.hpp: a change holds
// it in ExclusiveLock from its row's change to its commit; the wait is bounded, lock_waits.hpp), accepts
// the invalidations of the changes committed meanwhile, and compares the limit's definition, and the
// override of each key it decided (for a limit with overrides). A difference fails the commit with 40001
// (serialization_failure): the transaction is retried (the client library does) and decides under the new
// definition. So no key is ever written under one definition and read under another.
//
// Memory limits are not transactional: they are not checked here (memory_state.hpp). A transaction that
// changes a limit itself forgets what it noted of it: the change rewrote its own rows too.
#pragma once

#include "call_context.hpp"
#include "core/limit.hpp"
#include "postgres_headers.hpp"

namespace pg_ratelimit {

void written_limits_init();

// A call that may write keys of the table limit `name`, decided under `named` (its definition).
void note_written_limit(const CallContext &context, const text *name, const core::Limit &named);
// One key of a limit with overrides, decided under `effective` (its override applied, or the limit's).
void note_written_key(const text *name, const text *key, const core::Limit &effective);

// This transaction changed the limit (all its keys, or one key's override): nothing to check of it.
void forget_written_limit(const text *name);
void forget_written_key(const text *name, const text *key);

// Whether two definitions decide and store a key alike (jitter and shadow aside).
bool same_decisions(const core::Limit &a, const core::Limit &b);

}  // namespace pg_ratelimit
