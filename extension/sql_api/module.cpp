// Library entry: registers the settings, the caches' invalidation callbacks and the transaction callbacks.
#include "call_context.hpp"
#include "catalog/config_relation.hpp"
#include "catalog/limit_cache.hpp"
#include "catalog/override_cache.hpp"
#include "catalog/override_relation.hpp"
#include "catalog/written_limits.hpp"
#include "clock.hpp"
#include "leases/session_leases.hpp"
#include "lock_waits.hpp"
#include "postgres_headers.hpp"
#include "state/memory_state.hpp"
#include "state/state_access.hpp"
#include "state/state_relations.hpp"
#include "stats/stats.hpp"

extern "C" {
PG_MODULE_MAGIC;

void _PG_init(void);   // NOLINT(bugprone-reserved-identifier)
void _PG_init(void) {  // NOLINT(bugprone-reserved-identifier): the name PostgreSQL calls
    pg_ratelimit::clock_init();
    pg_ratelimit::call_context_init();
    pg_ratelimit::limit_cache_init();
    pg_ratelimit::state_relations_init();
    pg_ratelimit::config_relation_init();
    pg_ratelimit::state_access_init();
    pg_ratelimit::memory_state_init();
    pg_ratelimit::override_cache_init();
    pg_ratelimit::override_relation_init();
    pg_ratelimit::stats_init();
    pg_ratelimit::session_leases_init();
    pg_ratelimit::lock_waits_init();
    pg_ratelimit::written_limits_init();
    // Last, once every setting is defined: a pg_ratelimit.* placeholder set before the library was loaded
    // (in postgresql.conf, PGOPTIONS, SET) is then either taken by its setting or removed with a warning.
    MarkGUCPrefixReserved("pg_ratelimit");
}
}
