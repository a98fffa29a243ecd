// The direct access path (state_access.hpp): no SPI and no executor for an existing key. The key's row is
// found through the hash index on limit_name || key (or the primary key while that index is unusable,
// see state_relations.hpp), reading the heap page itself so that the page is pruned only when nearly
// full, and checked for its limit and key; an update is done in place (usually HOT) through the table
// access method. The table must therefore be a heap table. New keys are inserted with SQL (INSERT ... ON
// CONFLICT DO NOTHING, extension_sql.hpp), whose speculative insertion is not worth re-implementing for
// the first request of each key.
//
// What the executor would otherwise do, done here:
// - visibility: reads use the transaction snapshot (a fresh one per statement under READ COMMITTED),
//   with the current command id, so a call sees the writes of earlier calls in its transaction;
// - concurrency: an update of a version that a concurrent transaction changed reports a lost race
//   under READ COMMITTED (settle() retries, locking the latest version) and raises 40001 under
//   REPEATABLE READ and SERIALIZABLE, exactly as UPDATE does;
// - serializable predicate locks: on the row a call uses (by the heap access method), or on the index
//   page where a row it did not find would go; not on index pages it merely read through, nor on rows
//   of other keys or shards it passed by (see begin_lookup);
// - a non-HOT update inserts the new version into every index (the executor's routine).
// The table has no triggers, rules or checks to fire (state_relations_open refuses a table with any);
// the functions are SECURITY DEFINER, so no privilege check is due.
#include <algorithm>

#include "extension_sql.hpp"
#include "pg_compat.hpp"
#include "state/state_access.hpp"

namespace pg_ratelimit {
namespace {

bool same_text(Datum a, Datum b) {
    const text *x = DatumGetTextPP(a);
    const text *y = DatumGetTextPP(b);
    const std::size_t length = VARSIZE_ANY_EXHDR(x);
    return length == VARSIZE_ANY_EXHDR(y) && memcmp(VARDATA_ANY(x), VARDATA_ANY(y), length) == 0;
}

// Whether a version of a row is one of this limit and key (any shard: the lookup index leads to all
// of them, and to rows whose limit_name || key hashes alike).
bool is_of_key(const DirectState *table, HeapTuple tuple, const StateTarget &target) {
    const StateColumns &columns = table->relations.columns;
    const TupleDesc desc = RelationGetDescr(table->relations.heap);
    bool isnull = false;
    return same_text(heap_getattr(tuple, columns.key, desc, &isnull), target.key) &&
           same_text(heap_getattr(tuple, columns.limit_name, desc, &isnull), target.limit_name);
}

int16 shard_of(const DirectState *table, HeapTuple tuple) {
    bool isnull = false;
    return DatumGetInt16(
        heap_getattr(tuple, table->relations.columns.shard, RelationGetDescr(table->relations.heap), &isnull));
}

void read_slot(const DirectState *table, core::State *state) {
    const StateColumns &columns = table->relations.columns;
    slot_getallattrs(table->slot);
    state->value = DatumGetFloat8(table->slot->tts_values[columns.value - 1]);
    state->ts = DatumGetTimestampTz(table->slot->tts_values[columns.ts - 1]);
}

// More than a row of this limit and key takes on a page, line pointer included: the header, both texts
// with 4-byte headers and up to 3 bytes of alignment each, the shard, the two 8-byte numbers with theirs.
Size row_size_bound(Datum limit_name, Datum key) {
    constexpr Size text_alignment = 3;
    const Size texts = toast_raw_datum_size(limit_name) + toast_raw_datum_size(key) + 2 * text_alignment;
    return MAXALIGN(SizeofHeapTupleHeader) + MAXALIGN(texts + sizeof(int16) + MAXIMUM_ALIGNOF + 2 * sizeof(float8)) +
           sizeof(ItemIdData);
}

// Prunes the key's page (removes dead row versions, defragments) only when it is nearly full.
//
// An index scan through the table access method prunes whenever the page's free space is below its
// fillfactor's reserve and it holds a prunable version, and a fresh page starts right at that reserve:
// every admitted request, having left one dead version, made the next visit prune the whole page (every
// line pointer checked, every tuple moved) to reclaim one version, about a sixth of a call's
// instructions. Waiting until a tenth of the page is left reclaims dozens of versions per prune, while
// the updates in between stay HOT, since an update uses the page's free space whatever its fillfactor.
// The reserve is never less than two rows of this key (long keys; a concurrent update on the page), and
// a page that an update found full (PageIsFull) is pruned at once, as PostgreSQL does.
// heap_page_prune_opt keeps its own conditions (not during recovery, only what no snapshot can see).
void prune_if_nearly_full(Relation heap, Buffer buffer, Size row_bound) {
    const Page page = BufferGetPage(buffer);
    if (PageIsFull(page) || PageGetHeapFreeSpace(page) < std::max<Size>(BLCKSZ / 10, 2 * row_bound))
        heap_page_prune_opt(heap, buffer);
}

// The version of the chain rooted at tid visible to the snapshot, found as heap_hot_search_buffer does but
// without its serializable predicate lock and conflict checks (a call must not depend on rows it only
// passes by: the key's other shards, rows hashing alike); the buffer is locked by the caller. false if
// none is visible, and then *all_dead tells whether every version of the chain is dead to every
// transaction (so that the index scan can mark the entry dead), as heap_hot_search_buffer does.
bool visible_version(Relation heap, Buffer buffer, ItemPointerData tid, Snapshot snapshot, HeapTupleData *tuple,
                     bool *all_dead) {
    const Page page = BufferGetPage(buffer);
    OffsetNumber offset = ItemPointerGetOffsetNumber(&tid);
    TransactionId prior_xmax = InvalidTransactionId;
    GlobalVisState *horizon = nullptr;
    *all_dead = true;
    for (bool at_start = true;; at_start = false) {
        if (offset < FirstOffsetNumber || offset > PageGetMaxOffsetNumber(page)) return false;
        const ItemId item = PageGetItemId(page, offset);
        if (ItemIdIsRedirected(item) && at_start) {
            offset = ItemIdGetRedirect(item);
            continue;
        }
        if (!ItemIdIsNormal(item)) return false;
        tuple->t_data = reinterpret_cast<HeapTupleHeader>(PageGetItem(page, item));
        tuple->t_len = ItemIdGetLength(item);
        tuple->t_tableOid = RelationGetRelid(heap);
        ItemPointerSet(&tuple->t_self, BufferGetBlockNumber(buffer), offset);
        // A chain is followed only while each version was created by the one that updated the previous.
        if (TransactionIdIsValid(prior_xmax) && !TransactionIdEquals(prior_xmax, HeapTupleHeaderGetXmin(tuple->t_data)))
            return false;
        if (HeapTupleSatisfiesVisibility(tuple, snapshot, buffer)) {
            *all_dead = false;
            return true;
        }
        if (*all_dead) {
            if (horizon == nullptr) horizon = GlobalVisTestFor(heap);
            *all_dead = HeapTupleIsSurelyDead(tuple, horizon);
        }
        if (!HeapTupleIsHotUpdated(tuple)) return false;
        prior_xmax = HeapTupleHeaderGetUpdateXid(tuple->t_data);
        offset = ItemPointerGetOffsetNumber(&tuple->t_data->t_ctid);
    }
}

// What heapam's index fetch does, with the pruning above, for the version of the chain rooted at tid
// visible to the snapshot, if it is the shard's row: stored in the slot with its buffer pinned (the slot
// is emptied otherwise). The row is identified first, and only then does heap_hot_search_buffer take the
// serializable predicate lock on it and check it for conflicts. Sets *all_dead as visible_version does.
bool fetch_row(DirectState *table, const StateTarget &target, int16 shard, ItemPointerData tid, Snapshot snapshot,
               bool *all_dead) {
    Relation heap = table->relations.heap;
    const Buffer buffer = ReadBuffer(heap, ItemPointerGetBlockNumber(&tid));
    prune_if_nearly_full(heap, buffer, table->row_bound);
    HeapTupleData tuple;
    tuple.t_data = nullptr;
    LockBuffer(buffer, BUFFER_LOCK_SHARE);
    const bool visible = visible_version(heap, buffer, tid, snapshot, &tuple, all_dead);
    // The chain is the shard's row whether or not the snapshot sees a version of it (tuple is then the
    // last version looked at): heap_hot_search_buffer checks every version it passes for serializable
    // conflicts, so that a row inserted or updated by a transaction concurrent with this one conflicts
    // with it even when this call decides on the row's absence.
    const bool ours = tuple.t_data != nullptr && is_of_key(table, &tuple, target) && shard_of(table, &tuple) == shard;
    bool found = false;
    if (ours) found = heap_hot_search_buffer(&tid, heap, buffer, snapshot, &tuple, nullptr, true) && visible;
    LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
    ExecClearTuple(table->slot);
    if (!found) {
        ReleaseBuffer(buffer);
        return false;
    }
    tuple.t_self = tid;
    // The slot's own tuple header, as heapam's index fetch uses it: it lives as long as the slot.
    HeapTuple stored = &reinterpret_cast<BufferHeapTupleTableSlot *>(table->slot)->base.tupdata;
    *stored = tuple;
    ExecStorePinnedBufferHeapTuple(stored, table->slot, buffer);
    table->slot->tts_tableOid = RelationGetRelid(heap);
    return true;
}

// A non-HOT update: the new version needs an entry in every index of the table, as UPDATE would make
// one: the primary key (checking uniqueness), the lookup index, and any other, such as one that
// REINDEX CONCURRENTLY is building. Rare (a full page), so the executor's own routine does it.
void insert_index_entries(Relation heap, TupleTableSlot *slot, pg_compat::IndexUpdate indexes) {
    EState *estate = CreateExecutorState();
    ResultRelInfo *info = makeNode(ResultRelInfo);
    InitResultRelInfo(info, heap, 0, nullptr, 0);
    ExecOpenIndices(info, false);
    // update = true: the key columns did not change, which lets btree clean up old entries bottom-up.
    pg_compat::insert_updated_index_tuples(info, slot, estate, indexes);
    ExecCloseIndices(info);
    FreeExecutorState(estate);
}

// Makes the snapshot a statement would run with active: the transaction's (new per statement under
// READ COMMITTED), seeing this transaction's writes up to the current command.
void begin_attempt(DirectState *table) {
    if (table->snapshot_pushed) PopActiveSnapshot();
    PushActiveSnapshot(GetTransactionSnapshot());
    UpdateActiveSnapshotCommandId();
    table->snapshot_pushed = true;
}

void end_attempt(DirectState *table) {
    if (table->snapshot_pushed) PopActiveSnapshot();
    table->snapshot_pushed = false;
}

void direct_open(StateHandle *handle) {
    DirectState *table = &handle->direct;
    const Datum limit_name = handle->target.limit_name;
    const Datum key = handle->target.key;
    const bool forced = access_path_is_forced_direct();
    state_relations_open(handle->target.extension, handle->target.schema, state_table_of(handle->target), true, forced,
                         &table->relations);
    if (table->relations.heap->rd_tableam != GetHeapamTableAmRoutine()) {
        // Only under pg_ratelimit.access_path = auto (direct refuses such a table above): hand over.
        state_relations_close(&table->relations);
        handle->access = &sql_access;
        sql_access.open(handle);
        return;
    }
    table->snapshot_pushed = false;
    table->slot = table_slot_create(table->relations.heap, nullptr);
    table->row_bound = row_size_bound(limit_name, key);
    // The index's key and its "C" collation, that of both columns: the hash index's single key is
    // limit_name || key, the btree's two keys are the columns themselves.
    if (table->relations.lookup_is_hash) {
        const Datum both = DirectFunctionCall2Coll(textcat, C_COLLATION_OID, limit_name, key);
        ScanKeyEntryInitialize(&table->lookup_keys[0], 0, 1, HTEqualStrategyNumber, InvalidOid, C_COLLATION_OID,
                               F_TEXTEQ, both);
        table->lookup_key_count = 1;
    } else {
        ScanKeyEntryInitialize(&table->lookup_keys[0], 0, 1, BTEqualStrategyNumber, InvalidOid, C_COLLATION_OID,
                               F_TEXTEQ, limit_name);
        ScanKeyEntryInitialize(&table->lookup_keys[1], 0, 2, BTEqualStrategyNumber, InvalidOid, C_COLLATION_OID,
                               F_TEXTEQ, key);
        table->lookup_key_count = 2;
    }
}

void direct_close(StateHandle *handle) {
    DirectState *table = &handle->direct;
    end_attempt(table);
    ExecDropSingleTupleTableSlot(table->slot);
    state_relations_close(&table->relations);
}

// Scans of the lookup index in the index's own order, under `snapshot`.
IndexScanDesc begin_scan(DirectState *table, Snapshot snapshot) {
    IndexScanDesc scan = pg_compat::begin_index_scan(table->relations.heap, table->relations.lookup, snapshot,
                                                     table->lookup_key_count, 0);
    index_rescan(scan, table->lookup_keys, table->lookup_key_count, nullptr, 0);
    return scan;
}

// The lookup index is scanned with SnapshotAny (every entry; which version is visible is judged on the
// heap, with the call's snapshot), which index access methods do not take serializable predicate locks
// for, since it is not an MVCC snapshot. Such a lock covers a whole index page (a hash bucket, a btree
// leaf), holding entries of many keys: any transaction inserting into that page (a new key, a non-HOT
// update of another key) conflicted with this one, and unrelated keys aborted each other under
// SERIALIZABLE. A call depends on exactly the row it uses: a row found carries the tuple's predicate
// lock (heap_hot_search_buffer); for a row not found, direct_rely_on_absence takes the index page's.
IndexScanDesc begin_lookup(DirectState *table) { return begin_scan(table, SnapshotAny); }

// The predicate lock an index scan under the call's snapshot takes on the page where the row's entry
// would go: a concurrent insert of the row conflicts with it. Only for a check, refund or denial on a
// missing row: a page holds entries of other keys, whose inserts conflict with it too.
void direct_rely_on_absence(StateHandle *handle, int16) {
    if (!IsolationIsSerializable()) return;
    DirectState *table = &handle->direct;
    IndexScanDesc scan = begin_scan(table, GetActiveSnapshot());
    (void)index_getnext_tid(scan, ForwardScanDirection);  // the access method locks the page as it starts
    index_endscan(scan);
}

bool direct_fetch(StateHandle *handle, int16 shard, core::State *state) {
    DirectState *table = &handle->direct;
    begin_attempt(table);
    const Snapshot snapshot = GetActiveSnapshot();
    IndexScanDesc scan = begin_lookup(table);
    bool found = false;
    // The index leads to every row of the key (one per shard), to rows whose limit_name || key hashes
    // alike (rare collisions, and pairs such as 'ab' || 'c' and 'a' || 'bc'), and to dead versions of a row
    // (from non-HOT updates). At most one entry leads to a version of the shard's row visible to the snapshot.
    while (!found) {
        const ItemPointer tid = index_getnext_tid(scan, ForwardScanDirection);
        if (tid == nullptr) break;
        bool all_dead = false;
        found = fetch_row(table, handle->target, shard, *tid, snapshot, &all_dead);
        if (found) pgstat_count_heap_fetch(table->relations.lookup);
        // As index_fetch_heap does: a standby must not mark index entries dead.
        if (!scan->xactStartedInRecovery) scan->kill_prior_tuple = all_dead;
    }
    if (found) read_slot(table, state);
    index_endscan(scan);
    return found;
}

int direct_peek(StateHandle *handle, ShardRow *rows, int capacity) {
    DirectState *table = &handle->direct;
    Relation heap = table->relations.heap;
    const StateColumns &columns = table->relations.columns;
    const TupleDesc desc = RelationGetDescr(heap);
    begin_attempt(table);
    const Snapshot snapshot = GetActiveSnapshot();
    const CommandId command = GetCurrentCommandId(false);
    IndexScanDesc scan = begin_lookup(table);
    int count = 0;
    for (ItemPointer tid; count < capacity && (tid = index_getnext_tid(scan, ForwardScanDirection)) != nullptr;) {
        const Buffer buffer = ReadBuffer(heap, ItemPointerGetBlockNumber(tid));
        prune_if_nearly_full(heap, buffer, table->row_bound);
        LockBuffer(buffer, BUFFER_LOCK_SHARE);
        HeapTupleData tuple;
        bool all_dead = false;
        if (visible_version(heap, buffer, *tid, snapshot, &tuple, &all_dead) &&
            is_of_key(table, &tuple, handle->target)) {
            bool isnull = false;
            ShardRow &row = rows[count++];
            row.shard = shard_of(table, &tuple);
            row.state.value = DatumGetFloat8(heap_getattr(&tuple, columns.value, desc, &isnull));
            row.state.ts = DatumGetTimestampTz(heap_getattr(&tuple, columns.ts, desc, &isnull));
            // Being updated or locked now, or updated since the snapshot was taken.
            row.busy = HeapTupleSatisfiesUpdate(&tuple, command, buffer) != TM_Ok;
        }
        if (!scan->xactStartedInRecovery) scan->kill_prior_tuple = all_dead;
        UnlockReleaseBuffer(buffer);
    }
    index_endscan(scan);
    end_attempt(table);
    return count;
}

bool direct_lock_latest(StateHandle *handle, int16, core::State *state) {
    DirectState *table = &handle->direct;
    ItemPointerData tid = table->slot->tts_tid;
    TM_FailureData failure;
    const TM_Result result =
        table_tuple_lock(table->relations.heap, &tid, GetActiveSnapshot(), table->slot, GetCurrentCommandId(true),
                         LockTupleNoKeyExclusive, LockWaitBlock, TUPLE_LOCK_FLAG_FIND_LAST_VERSION, &failure);
    switch (result) {
        case TM_Ok:
            read_slot(table, state);
            return true;
        case TM_Deleted:
            return false;
        default:
            // FIND_LAST_VERSION follows updates, and the row cannot be updated by this transaction
            // (writes are followed by CommandCounterIncrement); anything else is a bug.
            elog(ERROR, "pg_ratelimit: unexpected result %d locking a rate_limit_state row", static_cast<int>(result));
    }
    pg_unreachable();
}

// The row fetched or locked last is the shard's (settle() works on one shard at a time).
WriteResult direct_update(StateHandle *handle, int16, const core::State &next) {
    DirectState *table = &handle->direct;
    Relation heap = table->relations.heap;
    const StateColumns &columns = table->relations.columns;
    // The old row with value and ts replaced, as UPDATE ... SET value, ts would make it: columns a DBA
    // added keep their values, dropped ones stay null.
    TupleTableSlot *old_slot = table->slot;
    slot_getallattrs(old_slot);
    const int natts = RelationGetDescr(heap)->natts;
    TupleTableSlot *new_slot = MakeSingleTupleTableSlot(RelationGetDescr(heap), &TTSOpsVirtual);
    ExecClearTuple(new_slot);
    memcpy(new_slot->tts_values, old_slot->tts_values, natts * sizeof(Datum));
    memcpy(new_slot->tts_isnull, old_slot->tts_isnull, natts * sizeof(bool));
    new_slot->tts_values[columns.value - 1] = Float8GetDatum(next.value);
    new_slot->tts_isnull[columns.value - 1] = false;
    new_slot->tts_values[columns.ts - 1] = TimestampTzGetDatum(next.ts);
    new_slot->tts_isnull[columns.ts - 1] = false;
    ExecStoreVirtualTuple(new_slot);

    ItemPointerData old_tid = old_slot->tts_tid;
    TM_FailureData failure;
    LockTupleMode lock_mode;
    pg_compat::IndexUpdate indexes = pg_compat::IndexUpdate::none;
    const TM_Result result = pg_compat::update_tuple(heap, &old_tid, new_slot, GetCurrentCommandId(true),
                                                     GetActiveSnapshot(), &failure, &lock_mode, &indexes);
    end_attempt(table);

    switch (result) {
        case TM_Ok:
            break;
        case TM_Updated:
        case TM_Deleted:
            ExecDropSingleTupleTableSlot(new_slot);
            if (IsolationUsesXactSnapshot())
                ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                                errmsg("could not serialize access due to concurrent update")));
            return WriteResult::lost_race;
        default:
            elog(ERROR, "pg_ratelimit: unexpected result %d updating a rate_limit_state row", static_cast<int>(result));
    }

    // A HOT update reuses the index entries (but summarizing ones'); otherwise the new version needs its own.
    if (indexes != pg_compat::IndexUpdate::none) insert_index_entries(heap, new_slot, indexes);
    ExecDropSingleTupleTableSlot(new_slot);
    // Later calls in this transaction (even within the same statement) must see this version.
    CommandCounterIncrement();
    return WriteResult::written;
}

// A new key's first row, with SQL (see the top of the file).
bool direct_insert(StateHandle *handle, int16 shard, const core::State &next) {
    end_attempt(&handle->direct);
    return insert_state_row(handle->target, shard, next, handle->direct.relations.unique_index_in_flux);
}

}  // namespace

const StateAccess direct_access = {
    "direct",           true,          direct_open,   direct_fetch, direct_rely_on_absence, direct_peek,
    direct_lock_latest, direct_update, direct_insert, direct_close};

}  // namespace pg_ratelimit
