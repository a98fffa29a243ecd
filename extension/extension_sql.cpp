#include "extension_sql.hpp"

#include "pg_compat.hpp"

#include <initializer_list>

namespace pg_ratelimit {
namespace {

struct StatementText {
    const char *sql;  // "@state@" stands for the state table's name
    int nargs;
    Oid argtypes[8];
};

// The key's rows, through the hash index on limit_name || key where there is one (one bucket page instead
// of a btree descent; measured: the SQL path's index lookup was a quarter of its instructions); without
// it (dropped, YugabyteDB) the same condition is a filter on the primary key's scan.
#define BY_KEY                                                                      \
    " WHERE limit_name OPERATOR(pg_catalog.=) $1 AND key OPERATOR(pg_catalog.=) $2" \
    " AND (limit_name OPERATOR(pg_catalog.||) key) OPERATOR(pg_catalog.=) ($1 OPERATOR(pg_catalog.||) $2)"
#define BY_SHARD BY_KEY " AND shard OPERATOR(pg_catalog.=) $3"

// Indexed by Statement.
constexpr StatementText TEXTS[] = {
    {"SELECT " LIMIT_COLUMNS " FROM ONLY rate_limit_config"
     " WHERE name OPERATOR(pg_catalog.=) $1",
     1,
     {TEXTOID}},
    {"INSERT INTO @state@ (limit_name, key, shard, value, ts) VALUES ($1, $2, $3, $4, $5)"
     " ON CONFLICT (limit_name, key, shard) DO NOTHING",
     5,
     {TEXTOID, TEXTOID, INT2OID, FLOAT8OID, TIMESTAMPTZOID}},
    {"DELETE FROM ONLY @state@" BY_KEY, 2, {TEXTOID, TEXTOID}},
    {"DELETE FROM ONLY @state@ WHERE limit_name OPERATOR(pg_catalog.=) $1", 1, {TEXTOID}},
    {"SELECT value, ts, @ctid@ FROM ONLY @state@" BY_SHARD, 3, {TEXTOID, TEXTOID, INT2OID}},
    {"SELECT value, ts, @ctid@ FROM ONLY @state@" BY_SHARD " FOR NO KEY UPDATE", 3, {TEXTOID, TEXTOID, INT2OID}},
    // The row read last is found again by its ctid ($8) where there is one (no second index lookup), and
    // is updated only if it is still the key's shard holding the numbers read: a ctid names a tuple, not
    // a row, and can name another version (or another row) once the one read is gone.
    {"UPDATE ONLY @state@ SET value = $4, ts = $5 WHERE @row@ AND limit_name OPERATOR(pg_catalog.=) $1"
     " AND key OPERATOR(pg_catalog.=) $2 AND shard OPERATOR(pg_catalog.=) $3"
     " AND value OPERATOR(pg_catalog.=) $6 AND ts OPERATOR(pg_catalog.=) $7",
     8,
     {TEXTOID, TEXTOID, INT2OID, FLOAT8OID, TIMESTAMPTZOID, FLOAT8OID, TIMESTAMPTZOID, TIDOID}},
    {"SELECT shard, value, ts, @xmax@ FROM ONLY @state@" BY_KEY, 2, {TEXTOID, TEXTOID}},
};

#undef BY_SHARD
#undef BY_KEY

constexpr int STATEMENT_COUNT = static_cast<int>(Statement::select_shards) + 1;
static_assert(sizeof(TEXTS) / sizeof(TEXTS[0]) == STATEMENT_COUNT, "one text per Statement");
// By the isolation level's kind (serializable or not: see extension_sql_begin), state table, statement.
SPIPlanPtr plans[2][2][STATEMENT_COUNT];

// `sql` with the first `placeholder` replaced by `value` (fixed texts only, never input).
char *replaced(const char *sql, const char *placeholder, const char *value) {
    const char *at = strstr(sql, placeholder);
    if (at == nullptr) return pstrdup(sql);
    return psprintf("%.*s%s%s", static_cast<int>(at - sql), sql, value, at + strlen(placeholder));
}

// The statement's text for the table: the table's fixed name, and the row's xmax (who is updating or
// locking it: sql_peek's busy) and ctid where the server has those system columns (not YugabyteDB's
// DocDB tables).
char *statement_text(const char *sql, StateTable table) {
    char *named = replaced(sql, "@state@", state_table_name(table));
    const bool yugabytedb = server_is_yugabytedb();
    char *with_xmax = replaced(named, "@xmax@", yugabytedb ? "'0'::pg_catalog.xid" : "xmax");
    char *with_ctid = replaced(with_xmax, "@ctid@", yugabytedb ? "NULL::pg_catalog.tid" : "ctid");
    // YugabyteDB has no ctid: the row is found by its key there.
    char *text = replaced(with_ctid, "@row@",
                          yugabytedb ? "(limit_name OPERATOR(pg_catalog.||) key) OPERATOR(pg_catalog.=)"
                                       " ($1 OPERATOR(pg_catalog.||) $2)"
                                     : "ctid OPERATOR(pg_catalog.=) $8");
    pfree(named);
    pfree(with_xmax);
    pfree(with_ctid);
    return text;
}

}  // namespace

int extension_sql_begin(Oid schema, Scan scan) {
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "pg_ratelimit: SPI_connect failed");
    // The GUC nest level to unwind at the end (0: none): the search path's, where it is a setting.
    int nest_level = pg_compat::push_search_path(schema);
    if (scan == Scan::any || !IsolationIsSerializable()) return nest_level;
    if (nest_level == 0) nest_level = NewGUCNestLevel();
    for (const char *setting : {"enable_seqscan", "enable_bitmapscan"})
        (void)set_config_option(setting, "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
    return nest_level;
}

void extension_sql_end(int token) {
    if (token != 0) AtEOXact_GUC(true, token);
    pg_compat::pop_search_path();
    SPI_finish();
}

const char *state_table_name(StateTable table) {
    return table == StateTable::unlogged ? "rate_limit_state_unlogged" : "rate_limit_state";
}

SPIPlanPtr extension_statement(Statement statement, StateTable table) {
    // SERIALIZABLE transactions use plans of their own, planned (and replanned) only under the settings
    // of Scan::one_key: a plan made for another transaction could hold a sequential scan.
    SPIPlanPtr &plan = plans[IsolationIsSerializable() ? 1 : 0][static_cast<int>(table)][static_cast<int>(statement)];
    if (plan != nullptr) return plan;
    const StatementText &text = TEXTS[static_cast<int>(statement)];
    char *sql = statement_text(text.sql, table);
    SPIPlanPtr prepared = SPI_prepare(sql, text.nargs, const_cast<Oid *>(text.argtypes));
    if (prepared == nullptr)
        elog(ERROR, "pg_ratelimit: SPI_prepare failed (%s): %s", SPI_result_code_string(SPI_result), sql);
    pfree(sql);
    if (SPI_keepplan(prepared) != 0) elog(ERROR, "pg_ratelimit: SPI_keepplan failed");
    plan = prepared;
    return plan;
}

void extension_sql_run(const char *query, int nargs, Oid *types, Datum *values, const char *nulls, bool read_only,
                       int expected_rc) {
    const int rc = SPI_execute_with_args(query, nargs, types, values, nulls, read_only, 0);
    if (rc != expected_rc) elog(ERROR, "pg_ratelimit: \"%s\" failed: %s", query, SPI_result_code_string(rc));
}

uint64 extension_plan_run_seeing_all(SPIPlanPtr plan, Datum *values, const char *nulls, int expected_rc) {
    const int rc = SPI_execute_snapshot(plan, values, nulls, GetLatestSnapshot(), InvalidSnapshot, false, false, 0);
    if (rc != expected_rc)
        elog(ERROR, "pg_ratelimit: a statement on rate limit keys failed: %s", SPI_result_code_string(rc));
    return SPI_processed;
}

uint64 extension_sql_run_seeing_all(const char *query, int nargs, Oid *types, Datum *values, const char *nulls,
                                    int expected_rc) {
    SPIPlanPtr plan = SPI_prepare(query, nargs, types);
    if (plan == nullptr)
        elog(ERROR, "pg_ratelimit: SPI_prepare failed (%s): %s", SPI_result_code_string(SPI_result), query);
    const uint64 processed = extension_plan_run_seeing_all(plan, values, nulls, expected_rc);
    SPI_freeplan(plan);
    return processed;
}

}  // namespace pg_ratelimit
