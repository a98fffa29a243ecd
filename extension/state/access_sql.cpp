// The SQL access path (state_access.hpp): the key's row read, locked, updated and inserted with prepared,
// kept SQL statements through SPI, and nothing else (no heap, index or buffer calls), so it runs on any
// table access method and on YugabyteDB. The statements (extension_sql.cpp):
//
//   fetch        SELECT value, ts, ctid FROM rate_limit_state WHERE limit_name = $1 AND key = $2 AND shard = $3
//                 (and limit_name || key = $1 || $2, for the hash index)
//   lock_latest  the same ... FOR NO KEY UPDATE
//   update       UPDATE rate_limit_state SET value = $4, ts = $5
//                 WHERE ctid = $8 AND limit_name = $1 AND key = $2 AND shard = $3 AND value = $6 AND ts = $7
//                 (YugabyteDB, without ctid: the row found by its key instead)
//   insert       INSERT INTO rate_limit_state (limit_name, key, shard, value, ts) VALUES ($1, ..., $5)
//                 ON CONFLICT (limit_name, key, shard) DO NOTHING
//   peek         SELECT shard, value, ts, xmax FROM rate_limit_state WHERE limit_name = $1 AND key = $2
//
// The update is a compare-and-set on the numbers the decision was made from: under READ COMMITTED, a row
// that a concurrent transaction changed first no longer matches when PostgreSQL re-checks the WHERE
// clause on its newest version, so the update reports 0 rows, a lost race, and settle() locks the newest
// version with lock_latest and decides again; under REPEATABLE READ and SERIALIZABLE the UPDATE itself
// raises 40001. Numbers are compared bit for bit: they are the ones just read.
#include "extension_sql.hpp"
#include "state/state_access.hpp"
#include "subtransaction.hpp"

namespace pg_ratelimit {

namespace {

bool insert_row(const StateTarget &target, int16 shard, const core::State &next) {
    const int sql_token = extension_sql_begin(target.schema);
    Datum args[] = {target.limit_name, target.key, Int16GetDatum(shard), Float8GetDatum(next.value),
                    TimestampTzGetDatum(next.ts)};
    const int rc =
        SPI_execute_plan(extension_statement(Statement::insert_state, state_table_of(target)), args, nullptr, false, 0);
    if (rc != SPI_OK_INSERT)
        elog(ERROR, "pg_ratelimit: inserting into %s failed: %s", state_table_name(state_table_of(target)),
             SPI_result_code_string(rc));
    const bool inserted = SPI_processed == 1;
    extension_sql_end(sql_token);
    return inserted;
}

// The insert in a subtransaction of its own, a unique violation reported as a lost race: for while a unique
// index is being built or retired concurrently (StateRelations::unique_index_in_flux).
bool insert_row_guarded(const StateTarget &target, int16 shard, const core::State &next) {
    bool inserted = false;
    const bool returned = in_subtransaction(
        [&] {
            inserted = insert_row(target, shard, next);
            return SubtransactionEnd::keep;
        },
        ERRCODE_UNIQUE_VIOLATION);
    return returned && inserted;
}

}  // namespace

bool insert_state_row(const StateTarget &target, int16 shard, const core::State &next, bool guarded) {
    return guarded ? insert_row_guarded(target, shard, next) : insert_row(target, shard, next);
}

namespace {

void sql_open(StateHandle *handle) {
    // Checked as on the direct path: no triggers to fire as the owner, nothing requests cannot honour.
    handle->sql.guard_insert =
        require_usable_state_table(handle->target.extension, handle->target.schema, state_table_of(handle->target));
    handle->sql.read_value = 0;
    handle->sql.read_ts = 0;
    ItemPointerSetInvalid(&handle->sql.read_ctid);
    // One SPI connection for the call's statements (connecting costs as much as a statement's executor
    // start): from here to sql_close.
    handle->sql.sql_token = extension_sql_begin(handle->target.schema, Scan::one_key);
}

// Runs the fetch or lock statement; the row's numbers into *state.
bool read_row(StateHandle *handle, Statement statement, int16 shard, core::State *state) {
    Datum args[] = {handle->target.limit_name, handle->target.key, Int16GetDatum(shard)};
    const int rc =
        SPI_execute_plan(extension_statement(statement, state_table_of(handle->target)), args, nullptr, false, 1);
    if (rc != SPI_OK_SELECT)
        elog(ERROR, "pg_ratelimit: reading rate_limit_state failed: %s", SPI_result_code_string(rc));
    const bool found = SPI_processed == 1;
    if (found) {
        bool isnull = false;
        state->value = DatumGetFloat8(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
        state->ts = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
        handle->sql.read_value = state->value;
        handle->sql.read_ts = state->ts;
        const Datum ctid = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull);
        if (isnull)
            ItemPointerSetInvalid(&handle->sql.read_ctid);
        else
            ItemPointerCopy(reinterpret_cast<ItemPointer>(DatumGetPointer(ctid)), &handle->sql.read_ctid);
    }
    SPI_freetuptable(SPI_tuptable);
    return found;
}

bool sql_fetch(StateHandle *handle, int16 shard, core::State *state) {
    return read_row(handle, Statement::select_state, shard, state);
}

bool sql_lock_latest(StateHandle *handle, int16 shard, core::State *state) {
    return read_row(handle, Statement::lock_state, shard, state);
}

int sql_peek(StateHandle *handle, ShardRow *rows, int capacity) {
    Datum args[] = {handle->target.limit_name, handle->target.key};
    const int rc = SPI_execute_plan(extension_statement(Statement::select_shards, state_table_of(handle->target)), args,
                                    nullptr, false, capacity);
    if (rc != SPI_OK_SELECT)
        elog(ERROR, "pg_ratelimit: reading rate_limit_state failed: %s", SPI_result_code_string(rc));
    const int count = static_cast<int>(SPI_processed);
    for (int i = 0; i < count; ++i) {
        bool isnull = false;
        const HeapTuple row = SPI_tuptable->vals[i];
        const TupleDesc desc = SPI_tuptable->tupdesc;
        rows[i].shard = DatumGetInt16(SPI_getbinval(row, desc, 1, &isnull));
        rows[i].state.value = DatumGetFloat8(SPI_getbinval(row, desc, 2, &isnull));
        rows[i].state.ts = DatumGetTimestampTz(SPI_getbinval(row, desc, 3, &isnull));
        // Busy: another transaction, still running, is updating or locking the row (its xmax), as the
        // direct path sees on the tuple itself. (On YugabyteDB the statement reads no xmax: never busy.)
        const TransactionId updater = DatumGetTransactionId(SPI_getbinval(row, desc, 4, &isnull));
        rows[i].busy = !isnull && TransactionIdIsNormal(updater) && !TransactionIdIsCurrentTransactionId(updater) &&
                       TransactionIdIsInProgress(updater);
    }
    SPI_freetuptable(SPI_tuptable);
    return count;
}

WriteResult sql_update(StateHandle *handle, int16 shard, const core::State &next) {
    Datum args[] = {handle->target.limit_name,
                    handle->target.key,
                    Int16GetDatum(shard),
                    Float8GetDatum(next.value),
                    TimestampTzGetDatum(next.ts),
                    Float8GetDatum(handle->sql.read_value),
                    TimestampTzGetDatum(handle->sql.read_ts),
                    PointerGetDatum(&handle->sql.read_ctid)};
    const char nulls[] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ItemPointerIsValid(&handle->sql.read_ctid) ? ' ' : 'n'};
    const int rc = SPI_execute_plan(extension_statement(Statement::update_state_if, state_table_of(handle->target)),
                                    args, nulls, false, 0);
    if (rc != SPI_OK_UPDATE)
        elog(ERROR, "pg_ratelimit: updating rate_limit_state failed: %s", SPI_result_code_string(rc));
    const bool written = SPI_processed == 1;
    return written ? WriteResult::written : WriteResult::lost_race;
}

bool sql_insert(StateHandle *handle, int16 shard, const core::State &next) {
    return insert_state_row(handle->target, shard, next, handle->sql.guard_insert);
}

void sql_close(StateHandle *handle) { extension_sql_end(handle->sql.sql_token); }

}  // namespace

// The SELECT of a fetch took whatever predicate locks its plan needed, a miss included.
void sql_rely_on_absence(StateHandle *, int16) {}

const StateAccess sql_access = {"sql",           true,       sql_open,   sql_fetch, sql_rely_on_absence, sql_peek,
                                sql_lock_latest, sql_update, sql_insert, sql_close};

}  // namespace pg_ratelimit
