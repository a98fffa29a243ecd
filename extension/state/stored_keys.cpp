#include "state/stored_keys.hpp"

#include "clock.hpp"
#include "core/algorithms.hpp"
#include "core/shards.hpp"
#include "extension_sql.hpp"
#include "lock_waits.hpp"
#include "state/state_relations.hpp"

namespace pg_ratelimit {
namespace {

constexpr int BATCH_ROWS = 1000;

// The state table the limit's keys are stored in.
StateTable table_of(const core::Limit &limit) {
    return limit.storage == core::Storage::unlogged ? StateTable::unlogged : StateTable::logged;
}

// Writes a key's shard back rescaled, if that changes it; the row was locked as read.
void write_rescaled(const text *name, Datum key, Datum shard, Datum value, Datum ts, Datum ctid, bool ctid_null,
                    const core::State &next, StateTable table) {
    Datum args[] = {PointerGetDatum(name),        key,   shard, Float8GetDatum(next.value),
                    TimestampTzGetDatum(next.ts), value, ts,    ctid};
    const char nulls[] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ctid_null ? 'n' : ' '};
    if (extension_plan_run_seeing_all(extension_statement(Statement::update_state_if, table), args, nulls,
                                      SPI_OK_UPDATE) != 1)
        elog(ERROR, "pg_ratelimit: rescaling a key of rate limit \"%s\" failed", text_to_cstring(name));
}

}  // namespace

void lock_stored_keys(const CallContext &context, const text *name, const text *key) {
    for (const StateTable table : STATE_TABLES) {
        require_usable_state_table(context.extension, context.schema, table);
        Oid types[] = {TEXTOID, TEXTOID};
        Datum values[] = {PointerGetDatum(name), PointerGetDatum(key)};
        const char *query =
            psprintf("SELECT FROM ONLY %s WHERE limit_name OPERATOR(pg_catalog.=) $1%s FOR NO KEY UPDATE",
                     state_table_name(table), key == nullptr ? "" : " AND key OPERATOR(pg_catalog.=) $2");
        with_bounded_lock_waits(WaitFor{name, key, key == nullptr}, [&] {
            (void)extension_sql_run_seeing_all(query, key == nullptr ? 1 : 2, types, values, nullptr, SPI_OK_SELECT);
        });
    }
}

void rescale_stored_keys(const CallContext &context, const text *name, const core::Limit &from, const core::Limit &to,
                         core::Rescale rule, const OverrideSet *overrides) {
    const StateTable table = table_of(to);
    require_usable_state_table(context.extension, context.schema, table);
    const core::Limit from_shard = core::shard_limit(from);
    const core::Limit to_shard = core::shard_limit(to);
    const core::Micros now = clock_now();
    // In batches of the primary key's order, each from where the last ended: a million keys never sit in
    // memory at once (a cursor would read with the transaction's snapshot).
    Oid types[] = {TEXTOID, TEXTOID, INT2OID};
    SPIPlanPtr first = SPI_prepare(psprintf("SELECT key, shard, value, ts, ctid FROM ONLY %s WHERE limit_name"
                                            " OPERATOR(pg_catalog.=) $1 ORDER BY key, shard LIMIT %d FOR NO KEY UPDATE",
                                            state_table_name(table), BATCH_ROWS),
                                   1, types);
    SPIPlanPtr next_batch = SPI_prepare(
        psprintf(
            "SELECT key, shard, value, ts, ctid FROM ONLY %s WHERE limit_name OPERATOR(pg_catalog.=) $1 AND"
            " (key OPERATOR(pg_catalog.>) $2 OR (key OPERATOR(pg_catalog.=) $2 AND shard OPERATOR(pg_catalog.>) $3))"
            " ORDER BY key, shard LIMIT %d FOR NO KEY UPDATE",
            state_table_name(table), BATCH_ROWS),
        3, types);
    if (first == nullptr || next_batch == nullptr)
        elog(ERROR, "pg_ratelimit: SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
    Datum after[] = {PointerGetDatum(name), 0, 0};
    for (bool more = true, started = false; more;) {
        const uint64 count = with_bounded_lock_waits_returning(WaitFor{name, nullptr, true}, [&] {
            return extension_plan_run_seeing_all(started ? next_batch : first, after, nullptr, SPI_OK_SELECT);
        });
        SPITupleTable *batch = SPI_tuptable;  // the updates below replace SPI_tuptable
        more = count == BATCH_ROWS;
        for (uint64 i = 0; i < count; ++i) {
            bool isnull = false;
            HeapTuple row = batch->vals[i];
            const Datum key = SPI_getbinval(row, batch->tupdesc, 1, &isnull);
            const Datum shard = SPI_getbinval(row, batch->tupdesc, 2, &isnull);
            const Datum value = SPI_getbinval(row, batch->tupdesc, 3, &isnull);
            const Datum ts = SPI_getbinval(row, batch->tupdesc, 4, &isnull);
            bool ctid_null = false;
            const Datum ctid = SPI_getbinval(row, batch->tupdesc, 5, &ctid_null);
            const text *key_text = DatumGetTextPP(key);
            const char *key_bytes = VARDATA_ANY(key_text);
            const int key_length = VARSIZE_ANY_EXHDR(key_text);
            const core::State stored{DatumGetFloat8(value), DatumGetTimestampTz(ts)};
            // A key with an override (override_store.hpp) is carried between its own two limits.
            const Override *own = override_set_find(overrides, key_bytes, key_length);
            const core::State next = own == nullptr
                                         ? core::rescaled_state(from_shard, to_shard, stored, now,
                                                                core::key_origin(from, key_bytes, key_length),
                                                                core::key_origin(to, key_bytes, key_length), rule)
                                         : core::rescaled_state(core::shard_limit(apply_override(from, *own)),
                                                                core::shard_limit(apply_override(to, *own)), stored,
                                                                now, core::key_origin(from, key_bytes, key_length),
                                                                core::key_origin(to, key_bytes, key_length), rule);
            if (i + 1 == count) {  // where the next batch starts (copied: the batch is freed below)
                after[1] = PointerGetDatum(DatumGetTextPCopy(key));
                after[2] = shard;
            }
            if (next.value == stored.value && next.ts == stored.ts) continue;
            write_rescaled(name, key, shard, value, ts, ctid, ctid_null, next, table);
        }
        SPI_freetuptable(batch);
        started = true;
    }
    SPI_freeplan(first);
    SPI_freeplan(next_batch);
}

void rescale_stored_key(const CallContext &context, const text *name, const text *key, const core::Limit &from,
                        const core::Limit &to, core::Rescale rule) {
    const StateTable table = table_of(to);
    require_usable_state_table(context.extension, context.schema, table);
    Datum key_args[] = {PointerGetDatum(name), PointerGetDatum(key)};
    if (rule == core::Rescale::reset) {
        (void)extension_plan_run_seeing_all(extension_statement(Statement::delete_state, table), key_args, nullptr,
                                            SPI_OK_DELETE);
        return;
    }
    Oid types[] = {TEXTOID, TEXTOID};
    const uint64 count = with_bounded_lock_waits_returning(WaitFor{name, key}, [&] {
        return extension_sql_run_seeing_all(
            psprintf("SELECT shard, value, ts, ctid FROM ONLY %s WHERE limit_name OPERATOR(pg_catalog.=) $1"
                     " AND key OPERATOR(pg_catalog.=) $2 FOR NO KEY UPDATE",
                     state_table_name(table)),
            2, types, key_args, nullptr, SPI_OK_SELECT);
    });
    SPITupleTable *rows = SPI_tuptable;  // the updates below replace SPI_tuptable
    const char *key_bytes = VARDATA_ANY(key);
    const int key_length = VARSIZE_ANY_EXHDR(key);
    const core::Limit from_shard = core::shard_limit(from);
    const core::Limit to_shard = core::shard_limit(to);
    const core::Micros from_origin = core::key_origin(from, key_bytes, key_length);
    const core::Micros to_origin = core::key_origin(to, key_bytes, key_length);
    const core::Micros now = clock_now();
    for (uint64 i = 0; i < count; ++i) {
        bool isnull = false;
        const Datum shard = SPI_getbinval(rows->vals[i], rows->tupdesc, 1, &isnull);
        const Datum value = SPI_getbinval(rows->vals[i], rows->tupdesc, 2, &isnull);
        const Datum ts = SPI_getbinval(rows->vals[i], rows->tupdesc, 3, &isnull);
        bool ctid_null = false;
        const Datum ctid = SPI_getbinval(rows->vals[i], rows->tupdesc, 4, &ctid_null);
        const core::State stored{DatumGetFloat8(value), DatumGetTimestampTz(ts)};
        const core::State next = core::rescaled_state(from_shard, to_shard, stored, now, from_origin, to_origin, rule);
        if (next.value == stored.value && next.ts == stored.ts) continue;
        write_rescaled(name, PointerGetDatum(key), shard, value, ts, ctid, ctid_null, next, table);
    }
}

void delete_stored_keys(const CallContext &context, const text *name) {
    for (const StateTable table : STATE_TABLES) {
        require_usable_state_table(context.extension, context.schema, table);
        Datum values[] = {PointerGetDatum(name)};
        (void)with_bounded_lock_waits_returning(WaitFor{name, nullptr, true}, [&] {
            return extension_plan_run_seeing_all(extension_statement(Statement::delete_limit_state, table), values,
                                                 nullptr, SPI_OK_DELETE);
        });
    }
}

}  // namespace pg_ratelimit
