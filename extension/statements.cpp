#include "statements.hpp"

#include <initializer_list>

namespace pg_ratelimit {
namespace {

Statements current{};  // all plans, valid when current.schema is set

// `format` holds one %s: the schema-qualified `table`.
SPIPlanPtr prepare(Oid schema, const char *table, const char *format, int nargs, Oid *argtypes) {
    char *query = psprintf(format, qualified_table(schema, table));
    SPIPlanPtr plan = SPI_prepare(query, nargs, argtypes);
    if (plan == nullptr)
        elog(ERROR, "pg_ratelimit: SPI_prepare failed (%s): %s", SPI_result_code_string(SPI_result), query);
    if (SPI_keepplan(plan) != 0) elog(ERROR, "pg_ratelimit: SPI_keepplan failed");
    pfree(query);
    return plan;
}

void free_all() {
    for (SPIPlanPtr *plan : {&current.insert_state, &current.delete_state, &current.select_limit}) {
        if (*plan != nullptr) SPI_freeplan(*plan);
        *plan = nullptr;
    }
    current.schema = InvalidOid;
}

}  // namespace

char *qualified_table(Oid schema, const char *table) {
    const char *schema_name = get_namespace_name(schema);
    if (schema_name == nullptr) elog(ERROR, "pg_ratelimit: schema %u does not exist", schema);
    return psprintf("%s.%s", quote_identifier(schema_name), table);
}

const Statements &statements_for(Oid schema) {
    if (current.schema == schema) return current;
    free_all();

    Oid key_args[] = {TEXTOID, TEXTOID};
    Oid write_args[] = {TEXTOID, TEXTOID, FLOAT8OID, TIMESTAMPTZOID};
    Oid name_arg[] = {TEXTOID};
    constexpr const char *state = "rate_limit_state";
    constexpr const char *by_key = " WHERE limit_name OPERATOR(pg_catalog.=) $1 AND key OPERATOR(pg_catalog.=) $2";

    // Plans go straight into `current`; schema is set last, so a failure half-way leaves it unset and
    // the next call frees what was prepared.
    current.insert_state = prepare(schema, state,
                                   "INSERT INTO %s (limit_name, key, value, ts) VALUES ($1, $2, $3, $4)"
                                   " ON CONFLICT (limit_name, key) DO NOTHING",
                                   4, write_args);
    current.delete_state = prepare(schema, state, psprintf("DELETE FROM %%s%s", by_key), 2, key_args);
    current.select_limit = prepare(schema, "rate_limit_config",
                                   "SELECT algorithm, rate, period, capacity, max_reserved, start FROM %s"
                                   " WHERE name OPERATOR(pg_catalog.=) $1",
                                   1, name_arg);
    current.schema = schema;
    return current;
}

}  // namespace pg_ratelimit
