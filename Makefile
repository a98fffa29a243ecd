# PGXS build of the pg_ratelimit server extension (the client, tests and benchmarks build with CMake).
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
	extension/access_direct.o \
	extension/access_memory.o \
	extension/access_sql.o \
	extension/call_context.o \
	extension/cleanup_batches.o \
	extension/cleanup_function.o \
	extension/cleanup_position.o \
	extension/clock.o \
	extension/config_relation.o \
	extension/config_triggers.o \
	extension/decide_key.o \
	extension/define_functions.o \
	extension/extension_event_trigger.o \
	extension/extension_sql.o \
	extension/held_shards.o \
	extension/lease_functions.o \
	extension/lease_slots.o \
	extension/session_leases.o \
	extension/limit_cache.o \
	extension/limit_kind.o \
	extension/limit_lock.o \
	extension/memory_state.o \
	extension/module.o \
	extension/override_cache.o \
	extension/override_functions.o \
	extension/override_hooks.o \
	extension/override_relation.o \
	extension/override_store.o \
	extension/override_triggers.o \
	extension/rate_limit_exceeded.o \
	extension/request_all.o \
	extension/request_functions.o \
	extension/settle.o \
	extension/state_access.o \
	extension/state_relations.o \
	extension/stats.o \
	extension/table_checks.o \
	extension/time_zones.o
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
