// rate_limit_cleanup(limit_name DEFAULT NULL, max_rows DEFAULT NULL): deletes the rows (or memory
// entries) of keys that have refilled to full capacity (a key without a row is full, so nothing changes
// for anyone), and, for all limits, rows left behind by limits deleted from rate_limit_config directly,
// or left in the table of a storage the limit no longer has. Returns how many rows and entries it deleted.
//
// Meant for a periodic job (pg_cron, say), at READ COMMITTED. It reads each limit's keys in key order
// through a cursor, without locking them (requests never wait for a read), judges each row, and deletes
// the full ones a batch (one fetch, at most CURSOR_BATCH rows) at a time, in one statement that locks them
// with FOR UPDATE SKIP LOCKED and deletes only the rows that still hold the two numbers judged full
// (compare-and-set, as requests write): so it never undoes a concurrent request, and it never waits for
// one either: a row that a request has updated or locked in a transaction still open is in use, hence
// not idle, and is skipped (the next pass looks at it again). A request on a key whose row the cleanup
// has just deleted waits for the cleanup's transaction, as for any row lock; max_rows bounds that: a
// bounded call examines at most max_rows rows (rounded up to the end of the last key's shards), so it is
// a short transaction that holds at most that many row locks (and at most that many limits' locks: a limit
// without rows counts as one row), and it continues where the previous
// bounded call of the session stopped (cleanup_position.hpp). rate_limit_cleanup_batches
// (cleanup_batches.cpp) runs such calls with a COMMIT after each, one complete pass per CALL. A row goes
// only if the key was full already five minutes ago (core::CLEANUP_MARGIN), so that a server clock
// stepped back by up to that much mints nothing.
//
// Concurrent definitions: before it reads a limit's definition, cleanup takes the limit's lock in share
// mode (limit_lock.hpp) and keeps it, so a redefinition or drop of that limit waits until the cleanup
// commits, and one that committed before is seen: cleanup reads the definition with the latest snapshot.
// A limit dropped meanwhile is skipped, and so is one whose redefinition or drop is in progress (cleanup
// does not wait for the lock). Under REPEATABLE READ or SERIALIZABLE a limit whose definition
// changed since the transaction's snapshot is skipped too (its rows, as that snapshot shows them, may be
// gone); locking a row that a concurrent request updated after the snapshot raises 40001 there, as any
// DELETE or FOR UPDATE would.
//
// Memory limits have no rows: their entries are swept once per pass (when the pass reaches the limit),
// partition by partition under the partitions' own locks, and count as deleted, not as examined.
#include <algorithm>

#include "call_context.hpp"
#include "catalog/config_relation.hpp"
#include "catalog/limit_cache.hpp"
#include "catalog/override_hooks.hpp"
#include "clock.hpp"
#include "core/algorithms.hpp"
#include "core/shards.hpp"
#include "cpp_boundary.hpp"
#include "extension_sql.hpp"
#include "limit_lock.hpp"
#include "state/cleanup_position.hpp"
#include "state/memory_state.hpp"
#include "state/state_relations.hpp"

namespace pg_ratelimit {
namespace {

constexpr long CURSOR_BATCH = 1000;  // rows fetched, judged and deleted at a time
constexpr long BOUNDARY_FETCH = 16;  // rows fetched to find the end of a key once the budget is spent

bool same_limit(const core::Limit &a, const core::Limit &b) {
    return a.algorithm == b.algorithm && a.rate == b.rate && a.period == b.period && a.capacity == b.capacity &&
           a.max_reserved == b.max_reserved && a.has_start == b.has_start && a.start == b.start &&
           a.shards == b.shards && a.storage == b.storage && a.epoch == b.epoch && a.calendar.unit == b.calendar.unit &&
           a.calendar.count == b.calendar.count && a.calendar.zone == b.calendar.zone;
}

bool same_key(const text *a, const text *b) {
    return VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(b) &&
           memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) == 0;
}

text *copy_text(const text *value) {
    const Size size = VARSIZE_ANY(value);
    auto *copy = static_cast<text *>(palloc(size));
    memcpy(copy, value, size);
    return copy;
}

// How many rows a call may still examine; negative: no bound.
struct Budget {
    int64 left;
    bool bounded() const { return left >= 0; }
    bool spent() const { return left == 0; }
    void take(int64 rows) {
        if (bounded()) left = rows >= left ? 0 : left - rows;
    }
};

// The full rows of one fetch, judged and waiting for their compare-and-set delete.
struct Candidates {
    Datum *keys;
    Datum *shards;
    Datum *values;
    Datum *times;
    int count;
};

// Deletes those of `candidates` that still hold the judged numbers and that nobody holds locked: one
// statement, whose inner SELECT locks them with SKIP LOCKED (a row a request holds is in use, not idle;
// a row changed and committed since it was read no longer matches its numbers) and whose DELETE takes
// exactly the rows locked, by their tuple identifiers.
int64 delete_candidates(SPIPlanPtr plan, Datum limit_name, Candidates *candidates) {
    if (candidates->count == 0) return 0;
    Datum args[] = {
        limit_name,
        PointerGetDatum(construct_array(candidates->keys, candidates->count, TEXTOID, -1, false, TYPALIGN_INT)),
        PointerGetDatum(construct_array(candidates->shards, candidates->count, INT2OID, 2, true, TYPALIGN_SHORT)),
        PointerGetDatum(
            construct_array(candidates->values, candidates->count, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE)),
        PointerGetDatum(
            construct_array(candidates->times, candidates->count, TIMESTAMPTZOID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE)),
    };
    if (SPI_execute_plan(plan, args, nullptr, false, 0) != SPI_OK_DELETE)
        elog(ERROR, "pg_ratelimit: cleanup delete failed");
    for (int i = 1; i < 5; ++i) pfree(DatumGetPointer(args[i]));
    candidates->count = 0;
    return static_cast<int64>(SPI_processed);
}

// Judges the rows of one limit after `after_key` (nullptr: all), in key order, within `budget`; deletes
// the full ones. Sets *stopped_after to the last key examined when the budget ran out before the limit's
// last key (palloc'd), to nullptr when the limit is done.
int64 delete_full_keys(const core::Limit &definition, Datum limit_name, const OverrideSet *overrides,
                       const text *after_key, Budget *budget, text **stopped_after) {
    // The table's name is one of two constants; the values travel as parameters.
    const char *table =
        state_table_name(definition.storage == core::Storage::unlogged ? StateTable::unlogged : StateTable::logged);
    Oid delete_types[] = {TEXTOID, TEXTARRAYOID, INT2ARRAYOID, FLOAT8ARRAYOID, TIMESTAMPTZARRAYOID};
    SPIPlanPtr delete_if_unchanged =
        SPI_prepare(psprintf("DELETE FROM ONLY %s WHERE ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
                             "SELECT s.ctid FROM ONLY %s AS s,"
                             " ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3), pg_catalog.unnest($4),"
                             " pg_catalog.unnest($5)) AS c(key, shard, value, ts)"
                             " WHERE s.limit_name OPERATOR(pg_catalog.=) $1 AND s.key OPERATOR(pg_catalog.=) c.key"
                             " AND s.shard OPERATOR(pg_catalog.=) c.shard AND s.value OPERATOR(pg_catalog.=) c.value"
                             " AND s.ts OPERATOR(pg_catalog.=) c.ts FOR UPDATE OF s SKIP LOCKED))",
                             table, table),
                    5, delete_types);
    if (delete_if_unchanged == nullptr) elog(ERROR, "pg_ratelimit: SPI_prepare failed for cleanup");

    // Key order (the primary key's), so that a bounded call can stop after a key and the next continue there.
    Oid scan_types[] = {TEXTOID, TEXTOID};
    Datum scan_values[] = {limit_name, PointerGetDatum(after_key)};
    Portal keys = SPI_cursor_open_with_args(
        nullptr,
        psprintf("SELECT key, shard, value, ts FROM ONLY %s WHERE limit_name OPERATOR(pg_catalog.=) $1%s"
                 " ORDER BY key, shard",
                 table, after_key == nullptr ? "" : " AND key OPERATOR(pg_catalog.>) $2"),
        after_key == nullptr ? 1 : 2, scan_types, scan_values, nullptr, true, 0);

    Candidates candidates{static_cast<Datum *>(palloc(sizeof(Datum) * CURSOR_BATCH)),
                          static_cast<Datum *>(palloc(sizeof(Datum) * CURSOR_BATCH)),
                          static_cast<Datum *>(palloc(sizeof(Datum) * CURSOR_BATCH)),
                          static_cast<Datum *>(palloc(sizeof(Datum) * CURSOR_BATCH)), 0};
    const core::Micros before = clock_now() - core::CLEANUP_MARGIN;
    text *previous_key = nullptr;  // the last key examined (a copy: fetched rows are freed batch by batch)
    bool stopped = false;
    int64 deleted = 0;
    while (!stopped) {
        long want = CURSOR_BATCH;
        if (budget->bounded()) want = budget->spent() ? BOUNDARY_FETCH : std::min<int64>(CURSOR_BATCH, budget->left);
        SPI_cursor_fetch(keys, true, want);
        SPITupleTable *batch = SPI_tuptable;  // the deletes below replace SPI_tuptable
        const uint64 rows = SPI_processed;
        if (rows == 0) break;
        const text *last_in_batch = previous_key;
        for (uint64 i = 0; i < rows; ++i) {
            bool isnull = false;
            const Datum key = SPI_getbinval(batch->vals[i], batch->tupdesc, 1, &isnull);
            const text *key_text = DatumGetTextPP(key);
            // Out of budget: stop at the first row of another key (a key's shards are judged together).
            if (budget->spent() && last_in_batch != nullptr && !same_key(key_text, last_in_batch)) {
                stopped = true;
                break;
            }
            last_in_batch = key_text;
            budget->take(1);
            const Datum shard = SPI_getbinval(batch->vals[i], batch->tupdesc, 2, &isnull);
            const Datum value = SPI_getbinval(batch->vals[i], batch->tupdesc, 3, &isnull);
            const Datum ts = SPI_getbinval(batch->vals[i], batch->tupdesc, 4, &isnull);
            // Each row is one shard's, of the key's own limit (its override, if it has one).
            const core::Limit limit = core::shard_limit(
                override_set_limit(overrides, definition, VARDATA_ANY(key_text), VARSIZE_ANY_EXHDR(key_text)));
            const core::Micros origin = core::key_origin(limit, VARDATA_ANY(key_text), VARSIZE_ANY_EXHDR(key_text));
            const core::State stored{DatumGetFloat8(value), DatumGetTimestampTz(ts)};
            // Full already CLEANUP_MARGIN ago (core/algorithms.hpp): a clock stepped back by less than that
            // can then never reach behind the deleted row's time.
            if (!core::is_full(limit, stored, before, origin)) continue;
            candidates.keys[candidates.count] = key;
            candidates.shards[candidates.count] = shard;
            candidates.values[candidates.count] = value;
            candidates.times[candidates.count] = ts;
            ++candidates.count;
        }
        deleted += delete_candidates(delete_if_unchanged, limit_name, &candidates);
        if (last_in_batch != previous_key) {
            text *copy = copy_text(last_in_batch);
            if (previous_key != nullptr) pfree(previous_key);
            previous_key = copy;
        }
        SPI_freetuptable(batch);
    }
    SPI_cursor_close(keys);
    SPI_freeplan(delete_if_unchanged);
    pfree(candidates.keys);
    pfree(candidates.shards);
    pfree(candidates.values);
    pfree(candidates.times);
    *stopped_after = stopped ? previous_key : nullptr;
    return deleted;
}

// Cleans one limit up (after `after_key`, within `budget`), holding its lock; 0 if it does not exist (any
// more), or if a redefinition or drop of it is in progress (cleanup never waits for one: the next pass
// takes care of that limit, and a transaction redefining several limits can never deadlock with cleanup).
// *stopped_after as for delete_full_keys.
int64 cleanup_limit(const CallContext &context, Datum limit_name, const text *after_key, Budget *budget,
                    text **stopped_after) {
    *stopped_after = nullptr;
    if (!lock_limit(DatumGetTextPP(limit_name), ShareLock, false)) return 0;
    core::Limit latest;
    if (!limit_read(limit_name, GetLatestSnapshot(), &latest)) return 0;
    if (IsolationUsesXactSnapshot()) {
        core::Limit seen;
        if (!limit_read(limit_name, GetTransactionSnapshot(), &seen) || !same_limit(seen, latest)) return 0;
    }
    if (latest.storage == core::Storage::memory) {
        // Once per pass: a limit continued after a key was swept when the pass reached it.
        return after_key == nullptr ? memory_state_sweep(DatumGetTextPP(limit_name), latest) : 0;
    }
    return delete_full_keys(latest, limit_name, overrides_of(context, limit_name), after_key, budget, stopped_after);
}

// Rows of limits that no longer exist, or whose storage is now another (changed in the table directly),
// at most budget->left of them if bounded; those a transaction holds locked are skipped. Returns whether
// it deleted them all (false: the budget ran out first).
bool delete_orphans(Budget *budget, int64 *deleted) {
    for (const StateTable table : STATE_TABLES) {
        if (budget->spent()) return false;
        const char *name = state_table_name(table);
        extension_sql_run(psprintf("DELETE FROM ONLY %s WHERE ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
                                   "SELECT s.ctid FROM ONLY %s AS s WHERE NOT EXISTS (SELECT FROM ONLY"
                                   " rate_limit_config AS c WHERE c.name OPERATOR(pg_catalog.=) s.limit_name"
                                   " AND c.storage OPERATOR(pg_catalog.=) '%s')%s FOR UPDATE OF s SKIP LOCKED))",
                                   name, name, table == StateTable::logged ? "durable" : "unlogged",
                                   budget->bounded() ? psprintf(" LIMIT " INT64_FORMAT, budget->left) : ""),
                          0, nullptr, nullptr, nullptr, false, SPI_OK_DELETE);
        const auto rows = static_cast<int64>(SPI_processed);
        *deleted += rows;
        const bool all = !budget->bounded() || rows < budget->left;
        budget->take(rows);
        if (!all) return false;
    }
    return true;
}

// One pass, or its part within the budget, from `from` (where the last bounded call stopped). Returns the
// rows deleted; sets *stopped to where the next call continues and *complete when the pass ended.
int64 cleanup_pass(const CallContext &context, const text *only_limit, const CleanupPosition &from, Budget *budget,
                   CleanupPosition *stopped, bool *complete) {
    int64 deleted = 0;
    *complete = false;
    if (from.phase == CleanupPhase::limits) {
        // The limits in name order from the one to continue with (or the next, if it is gone).
        Oid types[] = {TEXTOID};
        Datum values[] = {PointerGetDatum(only_limit != nullptr ? only_limit : from.limit)};
        if (only_limit != nullptr)
            extension_sql_run("SELECT $1", 1, types, values, nullptr, true, SPI_OK_SELECT);
        else if (from.limit == nullptr)
            extension_sql_run("SELECT name FROM ONLY rate_limit_config ORDER BY name", 0, nullptr, nullptr, nullptr,
                              true, SPI_OK_SELECT);
        else
            extension_sql_run(
                "SELECT name FROM ONLY rate_limit_config WHERE name OPERATOR(pg_catalog.>=) $1"
                " ORDER BY name",
                1, types, values, nullptr, true, SPI_OK_SELECT);
        SPITupleTable *names = SPI_tuptable;
        const uint64 count = SPI_processed;
        // Each limit visited keeps its lock until commit (cleanup_limit): a bounded call visits at most
        // max_rows limits (one without rows counts as one row) and at most max_locks_per_transaction of
        // them, its share of the shared lock table, so that thousands of limits never fill that table.
        int64 limits_left = budget->bounded() ? std::min<int64>(budget->left, std::max(max_locks_per_xact, 1)) : -1;
        for (uint64 i = 0; i < count; ++i) {
            bool isnull = false;
            const Datum name = SPI_getbinval(names->vals[i], names->tupdesc, 1, &isnull);
            // Continue after the key only within the very limit the last call stopped in.
            const text *after_key =
                from.limit != nullptr && from.after_key != nullptr && same_key(DatumGetTextPP(name), from.limit)
                    ? from.after_key
                    : nullptr;
            if (budget->spent() || limits_left == 0) {
                *stopped = CleanupPosition{CleanupPhase::limits, DatumGetTextPP(name), after_key};
                return deleted;
            }
            text *stopped_after = nullptr;
            const int64 budget_before = budget->left;
            deleted += cleanup_limit(context, name, after_key, budget, &stopped_after);
            if (budget->left == budget_before) budget->take(1);
            if (limits_left > 0) --limits_left;
            if (stopped_after != nullptr) {
                *stopped = CleanupPosition{CleanupPhase::limits, DatumGetTextPP(name), stopped_after};
                return deleted;
            }
        }
        if (only_limit != nullptr) {
            *complete = true;
            return deleted;
        }
    }
    if (!delete_orphans(budget, &deleted)) {
        *stopped = CleanupPosition{CleanupPhase::orphans, nullptr, nullptr};
        return deleted;
    }
    *complete = true;
    return deleted;
}

Datum cleanup_body(FunctionCallInfo fcinfo) {
    const CallContext context = call_context(fcinfo, false);
    Budget budget{-1};
    if (!PG_ARGISNULL(1)) {
        budget.left = PG_GETARG_INT64(1);
        if (budget.left <= 0)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("max_rows must be positive"),
                            errhint("Leave max_rows NULL to clean up without a bound.")));
    }
    // Checked first: the deletes below must not fire triggers as the owner (state_relations.hpp).
    for (const StateTable table : STATE_TABLES) require_usable_state_table(context.extension, context.schema, table);
    require_usable_config_table(context.extension, context.schema, AccessShareLock);
    const int sql_token = extension_sql_begin(context.schema);

    const text *only_limit = nullptr;
    if (!PG_ARGISNULL(0)) {
        only_limit = PG_GETARG_TEXT_PP(0);
        (void)limit_lookup(context.extension, context.schema,
                           only_limit);  // an unknown name is an error; one dropped meanwhile is not
    }
    // An unbounded call is a whole pass from the start, and leaves a bounded pass's position alone.
    const CleanupPosition from =
        budget.bounded() ? cleanup_position_load(only_limit) : CleanupPosition{CleanupPhase::limits, nullptr, nullptr};
    CleanupPosition stopped{CleanupPhase::limits, nullptr, nullptr};
    bool complete = false;
    const int64 deleted = cleanup_pass(context, only_limit, from, &budget, &stopped, &complete);
    if (budget.bounded()) cleanup_position_save(only_limit, stopped, complete);
    extension_sql_end(sql_token);
    PG_RETURN_INT64(deleted);
}

}  // namespace
}  // namespace pg_ratelimit

PG_RATELIMIT_SQL_FUNCTION(rate_limit_cleanup, pg_ratelimit::cleanup_body)
