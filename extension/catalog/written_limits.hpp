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
// A change of a limit checks the same at once, when it takes the limit's lock (lock_limit_for_change): it
// then holds that lock until the transaction ends, so nothing else can change the limit meanwhile, and its
// commit has nothing left to check of it; and its own rewrite of the limit's keys, this transaction's rows
// among them, reads them under the definition they were written under (else the transaction fails with
// 40001 before it rewrites anything). The check reads as the role the extension's functions run as: the
// committing role may not read rate_limit_override.
//
// Memory limits are not transactional: they are not checked here (memory_state.hpp).
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
// A key of a limit without overrides, decided under the limit's definition and not noted one by one: if
// an override is set meanwhile, the commit cannot tell whether it is this key's.
void note_unnoted_key(const text *name);

// The limit's lock for a change (limit_lock.hpp's ExclusiveLock, a bounded wait: lock_waits.hpp), then
// what this transaction decided of the limit so far checked as its commit would check it: ERROR 40001 if
// a change committed meanwhile.
void lock_limit_for_change(const text *name);

// Whether two definitions decide and store a key alike (jitter and shadow aside).
bool same_decisions(const core::Limit &a, const core::Limit &b);

}  // namespace pg_ratelimit
