// The SQL the extension runs on its own tables, with every name resolved in the extension's schema by
// OID.
//
// The functions run as the extension's owner (SECURITY DEFINER), so no name in their SQL may ever lead to
// somebody else's object. Schema-qualified names are not enough: a kept plan is re-analysed from its text
// when it is invalidated, and after ALTER SCHEMA ... RENAME the old name may then belong to a schema that
// anyone with CREATE on the database made, whose table's triggers would run as the owner. So the SQL names
// the extension's tables unqualified, qualifies every operator and function with pg_catalog, and always
// runs with the search path overridden to exactly pg_catalog and the extension's schema, given as OIDs
// (PushOverrideSearchPath; from PostgreSQL 17, which removed it, a search_path setting at a GUC nest level of
// its own, naming the schema as it is called at that instant: pg_compat.hpp). Parse analysis, and every re-analysis of
// a kept plan (plancache replans when the path differs from the one the plan was made with), then resolve the tables in
// the extension's schema whatever it is called now and whatever the caller's search_path, and the caller's temporary
// schema is not searched at all. One requirement remains for the DBA, as for any extension: roles that
// are not trusted must not have CREATE on the extension's schema.
//
// User input only ever travels as parameters.
#pragma once

#include "postgres_headers.hpp"

namespace pg_ratelimit {

// What the statements between extension_sql_begin and _end scan.
enum class Scan {
    any,
    // One key's row. Under SERIALIZABLE, plans must use an index, never a sequential or bitmap scan: a
    // sequential scan, which the planner prefers on a small table, takes a serializable predicate lock on
    // the whole relation, and with it every concurrent SERIALIZABLE transaction that writes any key would
    // conflict with this one (40001 between unrelated keys). In a SERIALIZABLE transaction,
    // enable_seqscan and enable_bitmapscan are off meanwhile, so that any (re)planning of a kept plan
    // chooses an index scan, and extension_statement hands out plans kept for SERIALIZABLE transactions
    // only. Other levels take no predicate locks: they skip the settings (measured: 13,000 instructions
    // a call) and use plans of their own, which may scan a tiny table sequentially.
    one_key,
};

// Connects SPI and puts the search path in place; every SPI call until extension_sql_end() runs there.
// Nests (an inner pair inside an outer one). An ERROR in between needs no cleanup: SPI, the override and
// the settings are all undone by the (sub)transaction abort. Returns what extension_sql_end needs.
int extension_sql_begin(Oid schema, Scan scan = Scan::any);
void extension_sql_end(int token);

// The two state tables, of the same shape: rate_limit_state for durable limits, rate_limit_state_unlogged
// for unlogged ones (memory limits have none).
enum class StateTable { logged, unlogged };
inline constexpr StateTable STATE_TABLES[] = {StateTable::logged, StateTable::unlogged};
const char *state_table_name(StateTable table);

// The statements the extension keeps prepared for the life of the backend (prepared on first use,
// between extension_sql_begin and _end), those on key state once per state table. They hold no schema: a
// plan made for one schema is replanned automatically if the extension is re-created in another one.
// The columns of rate_limit_config that make a limit, in the order limit_from_row reads them.
#define LIMIT_COLUMNS \
    "algorithm, rate, period, capacity, max_reserved, start, shards, storage, epoch, jitter, time_zone, shadow"

enum class Statement {
    select_limit,        // $1 name -> LIMIT_COLUMNS
    insert_state,        // $1 limit_name, $2 key, $3 shard, $4 value, $5 ts; does nothing if the row exists
    delete_state,        // $1 limit_name, $2 key: every shard
    delete_limit_state,  // $1 limit_name: every key
    select_state,        // $1 limit_name, $2 key, $3 shard -> value, ts, ctid (NULL on YugabyteDB)
    lock_state,          // the same, FOR NO KEY UPDATE
    update_state_if,     // $1 limit_name, $2 key, $3 shard, $4 value, $5 ts; only if it holds $6 value, $7 ts;
                         // $8 the ctid read (unused on YugabyteDB)
    select_shards,       // $1 limit_name, $2 key -> shard, value, ts, xmax of every shard
};
SPIPlanPtr extension_statement(Statement statement, StateTable table = StateTable::logged);

// Runs a one-off statement (cold paths); raises if SPI does not return expected_rc.
void extension_sql_run(const char *query, int nargs, Oid *types, Datum *values, const char *nulls, bool read_only,
                       int expected_rc);

// A statement of a change of definitions (rate_limit_define, _drop, _override) on the state tables, run
// with a snapshot taken now instead of the transaction's: the change first waits for the transactions that
// hold the limit's rows, and must then see and write every row they wrote, at REPEATABLE READ and
// SERIALIZABLE too, whose transaction snapshot is older than the wait. Raises if SPI does not return
// expected_rc; returns SPI_processed.
uint64 extension_sql_run_seeing_all(const char *query, int nargs, Oid *types, Datum *values, const char *nulls,
                                    int expected_rc);
uint64 extension_plan_run_seeing_all(SPIPlanPtr plan, Datum *values, const char *nulls, int expected_rc);

// Whether this server is YugabyteDB: its statements differ here, and the caches of the catalog wing read
// every time there (told when the access path is set up: state/state_access.cpp).
bool server_is_yugabytedb();

}  // namespace pg_ratelimit
