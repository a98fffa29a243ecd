#include "state/state_relations.hpp"

#include "catalog/table_checks.hpp"

namespace pg_ratelimit {
namespace {

// What was derived from the table's relcache entry, valid until an invalidation of the table or of one
// of its indexes arrives.
struct Derived {
    Oid schema;
    Oid heap;
    bool valid;
    Oid lookup;  // the index requests read
    bool lookup_is_hash;
    Oid unique;  // the unique index on (limit_name, key)
    bool unique_is_btree;
    bool unique_index_in_flux;
    StateColumns columns;
    // Every index of the table: a change of any of them (CREATE INDEX CONCURRENTLY marking one ready or
    // valid sends an invalidation of the index alone) can change what is derived. If there are more than
    // fit (index_count -1), any invalidation of any relation counts.
    Oid indexes[8];
    int index_count;
};
Derived cached_tables[2]{};  // by StateTable
uint64 invalidations = 0;    // relcache invalidations of any relation so far, to notice one during derive()

bool concerns_table(const Derived &cached, Oid relid) {
    if (relid == InvalidOid || relid == cached.heap || cached.index_count < 0) return true;
    for (int i = 0; i < cached.index_count; ++i)
        if (cached.indexes[i] == relid) return true;
    return false;
}

void on_relcache_invalidation(Datum, Oid relid) {
    ++invalidations;
    for (Derived &cached : cached_tables)
        if (concerns_table(cached, relid)) cached.valid = false;
}

AttrNumber column(Relation heap, const char *name, Oid type) {
    const TupleDesc desc = RelationGetDescr(heap);
    for (int i = 0; i < desc->natts; ++i) {
        const Form_pg_attribute attribute = TupleDescAttr(desc, i);
        if (attribute->attisdropped || strcmp(NameStr(attribute->attname), name) != 0) continue;
        if (attribute->atttypid != type)
            refuse_table(heap, psprintf("column \"%s\" must be of type %s", name, format_type_be(type)), RESTORE_HINT);
        if (attribute->attgenerated != '\0')
            refuse_table(heap, psprintf("column \"%s\" must not be generated", name), RESTORE_HINT);
        return attribute->attnum;
    }
    refuse_table(heap, psprintf("it has no column \"%s\"", name), RESTORE_HINT);
}

void check_table(Relation heap, Oid extension) {
    check_extension_table(heap, extension);
    if (heap->trigdesc != nullptr)
        refuse_table(heap, "it has triggers",
                     "Requests update rows without firing triggers, and triggers on it would run as the extension's "
                     "owner: drop them.");
    const TupleConstr *constraints = RelationGetDescr(heap)->constr;
    if (constraints != nullptr && constraints->num_check > 0)
        refuse_table(heap, "it has CHECK constraints",
                     "Requests write rows without checking them: drop the constraints.");
    if (constraints != nullptr && constraints->has_generated_stored)
        refuse_table(heap, "it has stored generated columns",
                     "Requests write rows without computing them: drop the columns.");
}

// Whether `index` (opened) is usable now and what it is: the hash index on (limit_name || key), or a
// unique index on (limit_name, key, shard) (a btree on PostgreSQL, an LSM index on YugabyteDB), both with
// the "C" collation the texts are compared in.
enum class IndexKind { other, hash_lookup, unique_key };

bool is_column(const Node *node, AttrNumber attnum) {
    return node != nullptr && IsA(node, Var) && reinterpret_cast<const Var *>(node)->varattno == attnum;
}

IndexKind index_kind(Relation index, const StateColumns &columns) {
    const Form_pg_index form = index->rd_index;
    if (!form->indisvalid || !form->indisready || !form->indislive || RelationGetIndexPredicate(index) != NIL)
        return IndexKind::other;
    if (form->indisunique && form->indnkeyatts == 3 && form->indkey.values[0] == columns.limit_name &&
        form->indkey.values[1] == columns.key && form->indkey.values[2] == columns.shard &&
        index->rd_indcollation[0] == C_COLLATION_OID && index->rd_indcollation[1] == C_COLLATION_OID)
        return IndexKind::unique_key;
    if (index->rd_rel->relam != HASH_AM_OID || form->indnkeyatts != 1 || form->indkey.values[0] != 0 ||
        index->rd_indcollation[0] != C_COLLATION_OID)
        return IndexKind::other;
    List *expressions = RelationGetIndexExpressions(index);
    if (list_length(expressions) != 1) return IndexKind::other;
    const Node *expression = static_cast<const Node *>(linitial(expressions));
    if (!IsA(expression, OpExpr)) return IndexKind::other;
    const auto *concat = reinterpret_cast<const OpExpr *>(expression);
    if (get_opcode(concat->opno) != F_TEXTCAT || list_length(concat->args) != 2) return IndexKind::other;
    return is_column(static_cast<const Node *>(linitial(concat->args)), columns.limit_name) &&
                   is_column(static_cast<const Node *>(lsecond(concat->args)), columns.key)
               ? IndexKind::hash_lookup
               : IndexKind::other;
}

void derive_once(Relation heap, Oid extension, Oid schema, Derived *cached) {
    check_table(heap, extension);
    Derived next{};
    next.schema = schema;
    next.heap = RelationGetRelid(heap);
    next.columns = {column(heap, "limit_name", TEXTOID), column(heap, "key", TEXTOID), column(heap, "shard", INT2OID),
                    column(heap, "value", FLOAT8OID), column(heap, "ts", TIMESTAMPTZOID)};
    List *indexes = RelationGetIndexList(heap);
    constexpr int MAX_INDEXES = sizeof(next.indexes) / sizeof(next.indexes[0]);
    next.index_count = list_length(indexes) <= MAX_INDEXES ? 0 : -1;
    ListCell *cell;
    foreach (cell, indexes) {
        if (next.index_count >= 0) next.indexes[next.index_count++] = lfirst_oid(cell);
        Relation index = try_relation_open(lfirst_oid(cell), AccessShareLock);
        if (index == nullptr) continue;  // dropped meanwhile
        const IndexKind kind = index_kind(index, next.columns);
        if (index->rd_index->indisunique && index->rd_index->indisready && !index->rd_index->indisvalid)
            next.unique_index_in_flux = true;
        if (kind == IndexKind::hash_lookup && !next.lookup_is_hash) {
            next.lookup = RelationGetRelid(index);
            next.lookup_is_hash = true;
        } else if (kind == IndexKind::unique_key && next.unique == InvalidOid) {
            next.unique = RelationGetRelid(index);
            next.unique_is_btree = index->rd_rel->relam == BTREE_AM_OID;
        }
        relation_close(index, NoLock);
    }
    list_free(indexes);
    if (next.unique == InvalidOid)
        refuse_table(heap, "it has no valid unique index on (limit_name, key, shard)",
                     psprintf("Re-create its primary key: ALTER TABLE %s ADD PRIMARY KEY (limit_name, key, shard).",
                              RelationGetRelationName(heap)));
    // Without the hash index the direct path reads the unique btree (its first two columns); the SQL path
    // needs neither.
    if (!next.lookup_is_hash) next.lookup = next.unique_is_btree ? next.unique : InvalidOid;
    next.valid = true;
    *cached = next;
}

// Derives everything from the open table: checks it, finds its columns and chooses the indexes. Opening
// the indexes may accept invalidations that make what was read before stale: then it starts over.
void derive(Relation heap, Oid extension, Oid schema, Derived *cached) {
    uint64 seen = 0;
    do {
        seen = invalidations;
        derive_once(heap, extension, schema, cached);
    } while (seen != invalidations);
}

Relation open_heap(Oid schema, StateTable table, Derived *cached) {
    if (cached->schema != schema) {
        *cached = Derived{};
        cached->schema = schema;
    }
    const Oid before = cached->heap;
    Relation heap = open_extension_table(schema, state_table_name(table), RowExclusiveLock, &cached->heap);
    if (cached->heap != before) cached->valid = false;
    return heap;
}

}  // namespace

void state_relations_init() { CacheRegisterRelcacheCallback(on_relcache_invalidation, 0); }

void state_relations_open(Oid extension, Oid schema, StateTable table, bool with_lookup, bool heap_only,
                          StateRelations *out) {
    Derived &cached = cached_tables[static_cast<int>(table)];
    out->heap = open_heap(schema, table, &cached);  // takes the lock: the cache now reflects every committed change
    out->lookup = nullptr;
    if (heap_only && out->heap->rd_tableam != GetHeapamTableAmRoutine())
        refuse_table(out->heap, "it does not use the heap access method",
                     "Requests read and write its heap pages directly: ALTER TABLE ... SET ACCESS METHOD heap.");
    // An index could still be dropped concurrently (DROP INDEX CONCURRENTLY does not wait for a
    // transaction that locked the table after it started waiting): derive again if the chosen one is
    // gone or no longer valid once it is locked.
    for (int attempt = 0;; ++attempt) {
        if (!cached.valid) derive(out->heap, extension, schema, &cached);
        out->columns = cached.columns;
        out->lookup_is_hash = cached.lookup_is_hash;
        out->unique_index_in_flux = cached.unique_index_in_flux;
        if (!with_lookup) return;
        if (!OidIsValid(cached.lookup))
            refuse_table(out->heap, "it has no index the direct access path can read",
                         psprintf("Re-create the hash index %s_lookup, or SET pg_ratelimit.access_path = 'sql'.",
                                  state_table_name(table)));
        Relation lookup = try_relation_open(cached.lookup, AccessShareLock);
        if (lookup != nullptr && cached.valid && lookup->rd_index->indisvalid && lookup->rd_index->indislive) {
            out->lookup = lookup;
            return;
        }
        if (lookup != nullptr) relation_close(lookup, AccessShareLock);
        cached.valid = false;
        if (attempt == 3) elog(ERROR, "pg_ratelimit: the indexes of rate_limit_state keep changing");
    }
}

bool require_usable_state_table(Oid extension, Oid schema, StateTable table) {
    StateRelations relations;
    state_relations_open(extension, schema, table, false, false, &relations);
    state_relations_close(&relations);
    return relations.unique_index_in_flux;
}

void state_relations_close(StateRelations *relations) {
    // Locks are held until the transaction ends, as usual.
    if (relations->lookup != nullptr) relation_close(relations->lookup, NoLock);
    table_close(relations->heap, NoLock);
}

}  // namespace pg_ratelimit
