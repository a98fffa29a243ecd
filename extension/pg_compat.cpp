#include "pg_compat.hpp"

#include <cstdlib>

namespace pg_ratelimit::pg_compat {

TM_Result update_tuple(Relation relation, ItemPointer otid, TupleTableSlot *slot, CommandId cid, Snapshot snapshot,
                       TM_FailureData *failure, LockTupleMode *lock_mode, IndexUpdate *indexes) {
#if PG_VERSION_NUM >= 160000
    TU_UpdateIndexes update = TU_None;
    const TM_Result result =
        table_tuple_update(relation, otid, slot, cid, snapshot, InvalidSnapshot, true, failure, lock_mode, &update);
    *indexes = update == TU_All           ? IndexUpdate::all
               : update == TU_Summarizing ? IndexUpdate::summarizing
                                          : IndexUpdate::none;
#else
    bool update = false;
    const TM_Result result =
        table_tuple_update(relation, otid, slot, cid, snapshot, InvalidSnapshot, true, failure, lock_mode, &update);
    *indexes = update ? IndexUpdate::all : IndexUpdate::none;
#endif
    return result;
}

void insert_updated_index_tuples(ResultRelInfo *info, TupleTableSlot *slot, EState *estate, IndexUpdate indexes) {
    if (indexes == IndexUpdate::none) return;
#if PG_VERSION_NUM >= 160000
    (void)ExecInsertIndexTuples(info, slot, estate, true, false, nullptr, NIL, indexes == IndexUpdate::summarizing);
#else
    (void)ExecInsertIndexTuples(info, slot, estate, true, false, nullptr, NIL);
#endif
}

IndexScanDesc begin_index_scan(Relation heap, Relation index, Snapshot snapshot, int nkeys, int norderbys) {
#if PG_VERSION_NUM >= 180000
    return index_beginscan(heap, index, snapshot, nullptr, nkeys, norderbys);
#else
    return index_beginscan(heap, index, snapshot, nkeys, norderbys);
#endif
}

bool lock_held_by_me(const LOCKTAG *tag, LOCKMODE mode) {
#if PG_VERSION_NUM >= 170000
    return LockHeldByMe(tag, mode, false);
#else
    return LockHeldByMe(tag, mode);
#endif
}

LocalTransactionId local_transaction_id() {
#if PG_VERSION_NUM >= 170000
    return MyProc->vxid.lxid;
#else
    return MyProc->lxid;
#endif
}

int decode_date_time(char **field, int *ftype, int nfields, int *dtype, struct pg_tm *tm, fsec_t *fsec, int *tz) {
#if PG_VERSION_NUM >= 160000
    DateTimeErrorExtra extra;
    return DecodeDateTime(field, ftype, nfields, dtype, tm, fsec, tz, &extra);
#else
    return DecodeDateTime(field, ftype, nfields, dtype, tm, fsec, tz);
#endif
}

void *guc_extra_alloc(size_t size) {
#if PG_VERSION_NUM >= 160000
    return guc_malloc(LOG, size);
#else
    return malloc(size);  // NOLINT(cppcoreguidelines-no-malloc): guc.c frees it with free() on 15
#endif
}

bool interval_is_finite(const Interval *interval) {
#if PG_VERSION_NUM >= 170000
    return !INTERVAL_NOT_FINITE(interval);
#else
    (void)interval;
    return true;
#endif
}

int push_search_path(Oid schema) {
#if PG_VERSION_NUM >= 170000
    const char *name = get_namespace_name(schema);
    if (name == nullptr) elog(ERROR, "pg_ratelimit: the extension's schema (OID %u) no longer exists", schema);
    const int nest_level = NewGUCNestLevel();
    // pg_temp last: the caller's temporary tables can shadow nothing, and functions and operators are
    // never looked up there.
    (void)set_config_option("search_path", psprintf("pg_catalog, %s, pg_temp", quote_identifier(name)), PGC_USERSET,
                            PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
    return nest_level;
#else
    OverrideSearchPath path;
    path.schemas = list_make1_oid(schema);
    path.addCatalog = true;  // first, so that built-in names always win
    path.addTemp = false;    // never the caller's temporary objects
    path.generation = 0;
    PushOverrideSearchPath(&path);  // copies the list
    list_free(path.schemas);
    return 0;
#endif
}

void pop_search_path() {
#if PG_VERSION_NUM < 170000
    PopOverrideSearchPath();
#endif
}

}  // namespace pg_ratelimit::pg_compat
