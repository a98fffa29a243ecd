# PGXS build of the pg_ratelimit server extension (the client, tests and benchmarks build with CMake).
# Objects by wing (extension/README.md): the core, what every wing shares, the catalog, the state, leases,
# statistics, and the SQL entry points.
EXTENSION = pg_ratelimit
EXTVERSION = 0.2.0
MODULE_big = pg_ratelimit
OBJS = \
	extension/core/calendar.o \
	extension/core/decision.o \
	extension/core/fixed_window.o \
	extension/core/gcra.o \
	extension/core/leases.o \
	extension/core/memory_identity.o \
	extension/core/memory_table.o \
	extension/core/rescale.o \
	extension/core/shards.o \
	extension/core/sliding_window.o \
	extension/core/time_math.o \
	extension/core/token_bucket.o \
	extension/core/validate.o \
	extension/call_context.o \
	extension/clock.o \
	extension/extension_sql.o \
	extension/limit_lock.o \
	extension/lock_waits.o \
	extension/pg_compat.o \
	extension/rate_limit_exceeded.o \
	extension/catalog/config_relation.o \
	extension/catalog/config_triggers.o \
	extension/catalog/extension_event_trigger.o \
	extension/catalog/key_limit.o \
	extension/catalog/limit_cache.o \
	extension/catalog/limit_kind.o \
	extension/catalog/override_cache.o \
	extension/catalog/override_hooks.o \
	extension/catalog/override_relation.o \
	extension/catalog/override_store.o \
	extension/catalog/override_triggers.o \
	extension/catalog/table_checks.o \
	extension/catalog/time_zones.o \
	extension/catalog/written_limits.o \
	extension/state/access_direct.o \
	extension/state/access_memory.o \
	extension/state/access_sql.o \
	extension/state/cleanup_position.o \
	extension/state/decide_key.o \
	extension/state/held_shards.o \
	extension/state/memory_state.o \
	extension/state/settle.o \
	extension/state/state_access.o \
	extension/state/state_relations.o \
	extension/state/stored_keys.o \
	extension/leases/lease_slots.o \
	extension/leases/session_leases.o \
	extension/stats/stats.o \
	extension/sql_api/cleanup_batches.o \
	extension/sql_api/cleanup_function.o \
	extension/sql_api/define_functions.o \
	extension/sql_api/lease_functions.o \
	extension/sql_api/module.o \
	extension/sql_api/override_functions.o \
	extension/sql_api/request_all.o \
	extension/sql_api/request_functions.o
# The full install script of each release that has one, and the update scripts between releases.
DATA = $(wildcard extension/$(EXTENSION)--*.sql)
PGFILEDESC = "pg_ratelimit - transactional rate limiting"

# Every sql/*.sql is a pg_regress test and every specs/*.spec an isolation test.
REGRESS = $(patsubst sql/%.sql,%,$(sort $(wildcard sql/*.sql)))
REGRESS_OPTS = --load-extension=$(EXTENSION)
ISOLATION = $(patsubst specs/%.spec,%,$(sort $(wildcard specs/*.spec)))
ISOLATION_OPTS = --load-extension=$(EXTENSION)

PG_CONFIG ?= pg_config

# C++17; server headers as system headers so -Werror applies to our code only; libstdc++ because PGXS
# links with gcc. No JIT bitcode: the extension's functions gain nothing from inlining into JIT code.
override with_llvm = no
# Rebuild objects when a header they include changes (dependency files in .deps/).
override autodepend = yes
PG_CXXFLAGS += -std=c++17 -Wall -Wextra -Werror -isystem $(shell $(PG_CONFIG) --includedir-server)
PG_CPPFLAGS += -I$(srcdir)/extension
SHLIB_LINK += -lstdc++

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)
