// rate_limit_acquire and rate_limit_release: the SQL face of concurrency limits (lease_slots.hpp).
#include "call_context.hpp"
#include "catalog/limit_cache.hpp"
#include "catalog/limit_kind.hpp"
#include "catalog/override_cache.hpp"
#include "clock.hpp"
#include "core/algorithms.hpp"
#include "core/leases.hpp"
#include "cpp_boundary.hpp"
#include "leases/lease_slots.hpp"
#include "leases/session_leases.hpp"
#include "message_text.hpp"
#include "stats/stats.hpp"

namespace pg_ratelimit {
namespace {

LeaseScope scope_arg(FunctionCallInfo fcinfo, int argno) {
    const char *scope = text_to_cstring(required_text_arg(fcinfo, argno, "scope"));
    if (strcmp(scope, "transaction") == 0) return LeaseScope::transaction;
    if (strcmp(scope, "session") == 0) return LeaseScope::session;
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("unknown lease scope \"%s\"", clipped_text(scope)),
                    errhint("Use 'transaction' or 'session'.")));
    pg_unreachable();
}

uint64 identity_of(const text *limit_name, const text *key) {
    return core::lease_identity(VARDATA_ANY(limit_name), VARSIZE_ANY_EXHDR(limit_name), VARDATA_ANY(key),
                                VARSIZE_ANY_EXHDR(key));
}

// rate_limit_acquire(key, limit_name, scope) -> rate_limit_decision.
Datum acquire_body(FunctionCallInfo fcinfo) {
    const CallContext context = call_context(fcinfo, true);
    text *key = key_arg(fcinfo, 0);
    text *limit_name = required_text_arg(fcinfo, 1, "limit_name");
    const LeaseScope scope = scope_arg(fcinfo, 2);
    // Outside BEGIN ... COMMIT the statement is its own transaction, and the lease ends with it: the caller
    // is told so at once, as PostgreSQL tells of SET LOCAL there.
    if (scope == LeaseScope::transaction && !IsTransactionBlock())
        ereport(WARNING, (errcode(ERRCODE_NO_ACTIVE_SQL_TRANSACTION),
                          errmsg("a transaction lease taken outside a transaction block ends with its statement"),
                          errhint("Acquire it between BEGIN and COMMIT, or with scope 'session'.")));
    // Leases are locks in this server's own lock manager: a standby would count its holders apart from the
    // primary's, and a SELECT routed to a replica would silently admit N more.
    if (RecoveryInProgress())
        ereport(ERROR, (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION), errmsg("leases cannot be acquired on a standby"),
                        errdetail("A lease is a lock in one server's lock manager: a standby cannot see the "
                                  "primary's leases."),
                        errhint("Acquire leases on the primary.")));
    const core::Limit named = limit_lookup(context.extension, context.schema, limit_name);
    require_concurrency_limit(named, limit_name);
    // The key's own number of slots (its override, if it has one: per-key tiers).
    const core::Limit limit = effective_limit(context, named, limit_name, key);
    const uint64 identity = identity_of(limit_name, key);
    core::Outcome outcome = lease_acquire(identity, static_cast<int>(limit.rate), limit.period, scope);
    if (!outcome.allowed && limit.jitter > 0)
        outcome.retry_after = core::jittered(limit, outcome.retry_after, pg_prng_uint64(&pg_global_prng_state));
    // Shadow mode (settle.cpp): a free slot is still taken, so that the count is what it would be; when
    // none is free the caller is let through without a lease, told so by shadow_denied. A session caller
    // will release: a marker stands for the lease it has not, so that its release frees no other (f69).
    if (limit.shadow && !outcome.allowed) {
        outcome.allowed = true;
        outcome.shadow_denied = true;
        if (scope == LeaseScope::session) session_lease_shadow_pass(identity, limit.period, clock_now());
    }
    // An acquire counts as a request of one unit (a slot): allowed, denied or shadow_denied (stats.hpp).
    stats_count(limit_name, SettleMode::request, false, 1, outcome, 0);
    return decision_datum(context, limit, outcome);
}

// rate_limit_release(key, limit_name) -> boolean. Needs no definition: a lease of a limit dropped since
// can still be released. Where the limit is defined, a lease of its period goes first.
Datum release_body(FunctionCallInfo fcinfo) {
    const CallContext context = call_context(fcinfo, false);
    text *key = key_arg(fcinfo, 0);
    text *limit_name = required_text_arg(fcinfo, 1, "limit_name");
    core::Limit limit;
    const bool defined = limit_find(context.extension, context.schema, limit_name, &limit) &&
                         limit.algorithm == core::Algorithm::concurrency;
    PG_RETURN_BOOL(lease_release(identity_of(limit_name, key), defined ? limit.period : 0));
}

}  // namespace
}  // namespace pg_ratelimit

PG_RATELIMIT_SQL_FUNCTION(rate_limit_acquire, pg_ratelimit::acquire_body)
PG_RATELIMIT_SQL_FUNCTION(rate_limit_release, pg_ratelimit::release_body)
