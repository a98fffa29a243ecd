// Every difference between the PostgreSQL versions the extension builds against (15, 16, 17, 18) lives
// here, behind functions named after what they offer; the rest of the glue never tests PG_VERSION_NUM.
// Each function says which versions differ and how.
#pragma once

#include "postgres_headers.hpp"

namespace pg_ratelimit::pg_compat {

// Which indexes a new row version needs entries in after table_tuple_update: none (a HOT update), all, or
// only the summarizing ones such as BRIN (16+: a HOT update still updates those; 15 has no such case).
enum class IndexUpdate { none, all, summarizing };

// table_tuple_update with wait = true and no crosscheck snapshot. (16 replaced its bool *update_indexes
// with a TU_UpdateIndexes *.)
TM_Result update_tuple(Relation relation, ItemPointer otid, TupleTableSlot *slot, CommandId cid, Snapshot snapshot,
                       TM_FailureData *failure, LockTupleMode *lock_mode, IndexUpdate *indexes);

// ExecInsertIndexTuples for an updated row (update = true, no conflict check), into the indexes `indexes`
// names. (16 added the onlySummarizing argument.)
void insert_updated_index_tuples(ResultRelInfo *info, TupleTableSlot *slot, EState *estate, IndexUpdate indexes);

// index_beginscan without instrumentation. (18 added the IndexScanInstrumentation argument.)
IndexScanDesc begin_index_scan(Relation heap, Relation index, Snapshot snapshot, int nkeys, int norderbys);

// Whether this backend holds the lock in exactly this mode. (17 added the orstronger argument.)
bool lock_held_by_me(const LOCKTAG *tag, LOCKMODE mode);

// This backend's current local transaction id. (17 moved PGPROC.lxid into PGPROC.vxid.)
LocalTransactionId local_transaction_id();

// DecodeDateTime without its error details. (16 added the DateTimeErrorExtra argument.)
int decode_date_time(char **field, int *ftype, int nfields, int *dtype, struct pg_tm *tm, fsec_t *fsec, int *tz);

// Memory for a setting's "extra" value, which the GUC machinery frees: malloc on 15, guc_malloc on 16+
// (which frees it with guc_free: memory from malloc there ends the server with PANIC at the next SET).
// nullptr when out of memory.
void *guc_extra_alloc(size_t size);

// Whether an interval is finite. (17 added 'infinity' and '-infinity' intervals.)
bool interval_is_finite(const Interval *interval);

// The search path of the extension's own SQL (extension_sql.hpp): exactly pg_catalog, then `schema`, never
// the caller's temporary schema for functions and operators (last for relations). Given by OID up to 16
// (PushOverrideSearchPath, undone by pop_search_path; returns 0). 17 removed that: there the path is set
// as a setting at a new GUC nest level, naming the schema as it is called at that instant (what SECURITY
// DEFINER functions with SET search_path do), and the level is returned: the caller may set more at it,
// and AtEOXact_GUC(true, level) undoes it all (pop_search_path does nothing there).
int push_search_path(Oid schema);
void pop_search_path();

}  // namespace pg_ratelimit::pg_compat
