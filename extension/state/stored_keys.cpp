#include "state/stored_keys.hpp"

#include "catalog/written_limits.hpp"
#include "clock.hpp"
#include "core/algorithms.hpp"
#include "core/shards.hpp"
#include "extension_sql.hpp"
#include "lock_waits.hpp"
#include "message_text.hpp"
#include "state/state_relations.hpp"
#include "subtransaction.hpp"

namespace pg_ratelimit {
namespace {

constexpr int BATCH_ROWS = 1000;
// lock_keys_and_limit: how many times a change tries to lock its keys and the limit's lock; how long it
// waits for a key's holder with other keys locked (a longer hold is waited for with nothing locked); and
// how many held rows it waits for between two tries.
constexpr int MAX_LOCK_ATTEMPTS = 5;
constexpr int FUSE_MS = 100;
constexpr int MAX_HELD_ROWS = 64;

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

// The rows of the limit's keys (of `key` only) in `table`: "FROM ... WHERE ...", $1 the name, $2 the key.
const char *rows_of(StateTable table, const text *key) {
    return psprintf("FROM ONLY %s WHERE limit_name OPERATOR(pg_catalog.=) $1%s", state_table_name(table),
                    key == nullptr ? "" : " AND key OPERATOR(pg_catalog.=) $2");
}

// Runs `query` (a SELECT over rows_of) with the name and, if given, the key as parameters.
uint64 run_over_rows(const char *query, const text *name, const text *key) {
    Oid types[] = {TEXTOID, TEXTOID};
    Datum values[] = {PointerGetDatum(name), PointerGetDatum(key)};
    return extension_sql_run_seeing_all(query, key == nullptr ? 1 : 2, types, values, nullptr, SPI_OK_SELECT);
}

// The versions of the keys' rows in `table` the latest snapshot sees (palloc'd, *count of them). The table is
// opened first in RowExclusiveLock, which the locking then needs: taking a lighter lock first and that one
// after would deadlock with a DBA's DROP INDEX or REINDEX queued in between.
ItemPointerData *key_rows(const CallContext &context, const text *name, const text *key, StateTable table,
                          uint64 *count) {
    require_usable_state_table(context.extension, context.schema, table);
    *count = run_over_rows(psprintf("SELECT ctid %s", rows_of(table, key)), name, key);
    auto *rows = static_cast<ItemPointerData *>(palloc(sizeof(ItemPointerData) * Max(*count, 1)));
    for (uint64 i = 0; i < *count; ++i) {
        bool isnull = false;
        rows[i] = *reinterpret_cast<ItemPointer>(
            DatumGetPointer(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull)));
    }
    return rows;
}

// Locks the latest version of each of rows[0..count) of `table` as READ COMMITTED's SELECT ... FOR NO KEY
// UPDATE does, at every isolation level: a row its holder updated while this waited is locked as updated
// (SQL's row locks fail with 40001 then at REPEATABLE READ and SERIALIZABLE, whatever their snapshot).
// `skip`: a row another transaction holds is not waited for; it goes into held[] (up to held_capacity) and
// is counted in the result. Otherwise each holder is waited for, at most cap_ms (0: pg_ratelimit.lock_wait
// only): ERROR 55P03 when a wait runs out.
uint64 lock_latest_versions(const CallContext &context, const text *name, StateTable table, const ItemPointerData *rows,
                            uint64 count, bool skip, int cap_ms, ItemPointerData *held, int held_capacity) {
    StateRelations relations;
    state_relations_open(context.extension, context.schema, table, false, false, &relations);
    TupleTableSlot *slot = table_slot_create(relations.heap, nullptr);
    const Snapshot snapshot = RegisterSnapshot(GetLatestSnapshot());
    uint64 held_count = 0;
    for (uint64 i = 0; i < count; ++i) {
        CHECK_FOR_INTERRUPTS();
        ItemPointerData tid = rows[i];
        TM_FailureData failure;
        TM_Result result = TM_Ok;
        const auto lock = [&] {
            result = table_tuple_lock(relations.heap, &tid, snapshot, slot, GetCurrentCommandId(true),
                                      LockTupleNoKeyExclusive, skip ? LockWaitSkip : LockWaitBlock,
                                      TUPLE_LOCK_FLAG_FIND_LAST_VERSION, &failure);
        };
        if (skip)
            lock();
        else
            with_bounded_lock_waits(WaitFor{name, nullptr, true}, lock, cap_ms);
        if (result == TM_WouldBlock) {
            if (held_count < static_cast<uint64>(held_capacity)) held[held_count] = rows[i];
            ++held_count;
        } else if (result != TM_Ok && result != TM_Deleted) {
            // FIND_LAST_VERSION follows updates, and this transaction's own writes are behind a
            // CommandCounterIncrement; a row deleted meanwhile (a reset) needs nothing.
            elog(ERROR, "pg_ratelimit: unexpected result %d locking a row of rate limit \"%s\"",
                 static_cast<int>(result), text_to_cstring(name));
        }
    }
    UnregisterSnapshot(snapshot);
    ExecDropSingleTupleTableSlot(slot);
    state_relations_close(&relations);
    return held_count;
}

// Locks every row of the keys, waiting for their holders at most FUSE_MS each: rows of other keys locked
// meanwhile hold up their writers no longer than that. ERROR 55P03 when a wait runs out.
void lock_rows_briefly(const CallContext &context, const text *name, const text *key) {
    for (const StateTable table : STATE_TABLES) {
        uint64 count = 0;
        const ItemPointerData *rows = key_rows(context, name, key, table, &count);
        (void)lock_latest_versions(context, name, table, rows, count, false, FUSE_MS, nullptr, 0);
    }
}

// Whether this transaction holds every row of the keys its latest snapshot sees, in both state tables:
// those it does not hold yet it locks, unless another transaction holds them.
bool holds_stored_keys(const CallContext &context, const text *name, const text *key) {
    for (const StateTable table : STATE_TABLES) {
        uint64 count = 0;
        const ItemPointerData *rows = key_rows(context, name, key, table, &count);
        if (lock_latest_versions(context, name, table, rows, count, true, 0, nullptr, 0) > 0) return false;
    }
    return true;
}

// Waits for the transactions holding rows of the keys, holding nothing meanwhile: the rows held are found
// (at most MAX_HELD_ROWS per table; locking the others on the way, in a subtransaction undone after), then
// each is waited for alone (a bounded wait: ERROR 55P03 when it runs out), in a subtransaction undone after
// too.
void wait_for_holders(const CallContext &context, const text *name, const text *key) {
    for (const StateTable table : STATE_TABLES) {
        auto *held = static_cast<ItemPointerData *>(palloc(sizeof(ItemPointerData) * MAX_HELD_ROWS));
        uint64 held_count = 0;
        (void)in_subtransaction([&] {
            uint64 count = 0;
            const ItemPointerData *rows = key_rows(context, name, key, table, &count);
            held_count = Min(lock_latest_versions(context, name, table, rows, count, true, 0, held, MAX_HELD_ROWS),
                             static_cast<uint64>(MAX_HELD_ROWS));
            return SubtransactionEnd::roll_back;
        });
        for (uint64 i = 0; i < held_count; ++i)
            (void)in_subtransaction([&] {
                (void)lock_latest_versions(context, name, table, &held[i], 1, false, 0, nullptr, 0);
                return SubtransactionEnd::roll_back;
            });
    }
}

}  // namespace

void lock_keys_and_limit(const CallContext &context, const text *name, const text *key) {
    for (int attempt = 1; attempt <= MAX_LOCK_ATTEMPTS; ++attempt) {
        // The rows, then the limit's lock, in a subtransaction whose abort lets both go again. Rows first
        // stored while the rows were locked, and held by then, are waited for with the limit's lock let go
        // (their holders need it to commit) and the other rows kept, a few rounds.
        bool done = false;
        (void)in_subtransaction([&] {
            for (int round = 1; round <= MAX_LOCK_ATTEMPTS; ++round) {
                if (!in_subtransaction(
                        [&] {
                            lock_rows_briefly(context, name, key);
                            return SubtransactionEnd::keep;
                        },
                        ERRCODE_LOCK_NOT_AVAILABLE))
                    return SubtransactionEnd::roll_back;  // a longer hold: waited for with nothing locked
                (void)in_subtransaction([&] {
                    lock_limit_for_change(name);
                    done = holds_stored_keys(context, name, key);
                    return done ? SubtransactionEnd::keep : SubtransactionEnd::roll_back;
                });
                if (done) return SubtransactionEnd::keep;
            }
            return SubtransactionEnd::roll_back;
        });
        if (done) return;
        wait_for_holders(context, name, key);
    }
    ereport(ERROR, (errcode(ERRCODE_LOCK_NOT_AVAILABLE),
                    errmsg("the keys of rate limit \"%s\" kept being taken by other transactions",
                           clipped_text(text_to_cstring(name))),
                    errdetail("The change waited for the transactions holding its keys %d times, and each time "
                              "found other keys held when it would have taken the limit's lock.",
                              MAX_LOCK_ATTEMPTS),
                    errhint("Retry the change.")));
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
