// CALL rate_limit_cleanup_batches(limit_name DEFAULT NULL, batch_rows DEFAULT 10000, OUT deleted): one
// complete cleanup pass (of one limit, or of all limits and the rows of limits that no longer exist) as a
// series of short transactions: it calls rate_limit_cleanup(limit_name, batch_rows) and commits, again and
// again, each call continuing after the last key the previous one examined (cleanup_position.hpp), until
// the pass has reached the end. Returns the rows and entries deleted in all.
//
// Why a procedure: one rate_limit_cleanup call is one transaction, and the rows it deletes stay locked
// until that transaction ends (a request on such a key waits for it), and its snapshot holds back VACUUM.
// Bounded calls keep both short, but a caller must commit between them, and a function cannot; a
// SECURITY DEFINER procedure cannot either (PostgreSQL refuses transaction control there). So this
// procedure runs with its caller's rights and calls the SECURITY DEFINER function for each batch: the
// caller needs EXECUTE on rate_limit_cleanup, nothing more. It must be called at the top level (CALL
// outside a transaction block, as pg_cron does); inside one it cannot commit, and says so (2D000).
#include "cpp_boundary.hpp"
#include "postgres_headers.hpp"
#include "state/cleanup_position.hpp"

namespace pg_ratelimit {
namespace {

Datum cleanup_batches_body(FunctionCallInfo fcinfo) {
    const bool atomic = fcinfo->context == nullptr || !IsA(fcinfo->context, CallContext) ||
                        castNode(CallContext, fcinfo->context)->atomic;
    if (PG_ARGISNULL(1))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("batch_rows must not be NULL")));
    const int64 batch_rows = PG_GETARG_INT64(1);
    if (batch_rows <= 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("batch_rows must be positive")));
    if (atomic)
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_TRANSACTION_TERMINATION),
                 errmsg("rate_limit_cleanup_batches commits after each batch and cannot run inside a transaction"
                        " block or a function"),
                 errhint("CALL it on its own, or use SELECT rate_limit_cleanup(limit_name, max_rows) instead.")));

    if (SPI_connect_ext(SPI_OPT_NONATOMIC) != SPI_OK_CONNECT) elog(ERROR, "pg_ratelimit: SPI_connect failed");
    // In the SPI procedure context, which a nonatomic connection keeps across the commits below.
    const char *schema = get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid));
    if (schema == nullptr) elog(ERROR, "pg_ratelimit: the schema of rate_limit_cleanup_batches is gone");
    const char *query = psprintf("SELECT %s.rate_limit_cleanup($1, $2)", quote_identifier(schema));
    Oid types[] = {TEXTOID, INT8OID};
    Datum values[] = {PG_ARGISNULL(0) ? Datum(0) : PointerGetDatum(PG_DETOAST_DATUM_COPY(PG_GETARG_DATUM(0))),
                      Int64GetDatum(batch_rows)};
    const char nulls[] = {PG_ARGISNULL(0) ? 'n' : ' ', ' ', '\0'};

    cleanup_position_reset();  // a pass of its own, from the start
    int64 deleted = 0;
    for (;;) {
        if (SPI_execute_with_args(query, 2, types, values, nulls, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
            elog(ERROR, "pg_ratelimit: rate_limit_cleanup did not return its count");
        bool isnull = false;
        deleted += DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
        SPI_freetuptable(SPI_tuptable);
        const bool complete = cleanup_pass_complete();
        SPI_commit();  // the deleted rows' locks go, and the next batch starts with a fresh snapshot
        if (complete) break;
        CHECK_FOR_INTERRUPTS();
    }
    SPI_finish();

    TupleDesc result_type = nullptr;
    if (get_call_result_type(fcinfo, nullptr, &result_type) != TYPEFUNC_COMPOSITE)
        elog(ERROR, "pg_ratelimit: rate_limit_cleanup_batches must return a record");
    result_type = BlessTupleDesc(result_type);
    Datum result[] = {Int64GetDatum(deleted)};
    bool result_nulls[] = {false};
    return HeapTupleGetDatum(heap_form_tuple(result_type, result, result_nulls));
}

}  // namespace
}  // namespace pg_ratelimit

PG_RATELIMIT_SQL_FUNCTION(rate_limit_cleanup_batches, pg_ratelimit::cleanup_batches_body)
