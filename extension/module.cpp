// Library entry: registers the settings and the caches' invalidation callbacks.
#include "call_context.hpp"
#include "clock.hpp"
#include "limit_cache.hpp"
#include "postgres_headers.hpp"
#include "state_relations.hpp"

extern "C" {
PG_MODULE_MAGIC;

void _PG_init(void);   // NOLINT(bugprone-reserved-identifier)
void _PG_init(void) {  // NOLINT(bugprone-reserved-identifier): the name PostgreSQL calls
    pg_ratelimit::clock_init();
    pg_ratelimit::call_context_init();
    pg_ratelimit::limit_cache_init();
    pg_ratelimit::state_relations_init();
}
}
