#include "catalog/table_checks.hpp"

namespace pg_ratelimit {

void refuse_table(Relation relation, const char *problem, const char *hint) {
    ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                    errmsg("pg_ratelimit cannot use table \"%s\": %s", RelationGetRelationName(relation), problem),
                    errhint("%s", hint)));
    pg_unreachable();
}

void check_extension_table(Relation relation, Oid extension) {
    if (relation->rd_rel->relkind != RELKIND_RELATION)
        refuse_table(relation, "it is not an ordinary table", RESTORE_HINT);
    if (getExtensionOfObject(RelationRelationId, RelationGetRelid(relation)) != extension)
        refuse_table(relation, "it is not a member of the extension",
                     "The extension's own table was dropped or renamed.");
    if (relation->rd_rules != nullptr) refuse_table(relation, "it has rules", "Drop the rules.");
    if (relation->rd_rel->relforcerowsecurity)
        refuse_table(relation, "it forces row-level security", "ALTER TABLE ... NO FORCE ROW LEVEL SECURITY.");
}

Relation open_extension_table(Oid schema, const char *name, LOCKMODE lockmode, Oid *cached) {
    if (OidIsValid(*cached)) {
        Relation relation = try_table_open(*cached, lockmode);
        if (relation != nullptr && RelationGetNamespace(relation) == schema &&
            strcmp(RelationGetRelationName(relation), name) == 0)
            return relation;
        if (relation != nullptr) table_close(relation, lockmode);
    }
    const Oid relid = get_relname_relid(name, schema);
    Relation relation = OidIsValid(relid) ? try_table_open(relid, lockmode) : nullptr;
    if (relation == nullptr)
        ereport(ERROR,
                (errcode(ERRCODE_UNDEFINED_TABLE), errmsg("pg_ratelimit's table %s does not exist in its schema", name),
                 errhint("Re-create the extension.")));
    *cached = relid;
    return relation;
}

void CheckedTable::register_invalidations() { CacheRegisterRelcacheCallback(on_invalidation, PointerGetDatum(this)); }

void CheckedTable::on_invalidation(Datum self, Oid relid) {
    auto *table = reinterpret_cast<CheckedTable *>(DatumGetPointer(self));
    if (relid != InvalidOid && relid != table->relid_) return;  // InvalidOid: every relation
    table->checked_ = false;
    ++table->invalidations_;
}

Oid CheckedTable::require_usable(Oid extension, Oid schema, LOCKMODE lockmode) {
    if (schema_ != schema) {
        schema_ = schema;
        relid_ = InvalidOid;
        checked_ = false;
    }
    const Oid before = relid_;
    Relation table = open_extension_table(schema, name_, lockmode, &relid_);
    if (relid_ != before) checked_ = false;
    while (!checked_) {
        const uint64 seen = invalidations_;
        check_(table, extension);  // its catalog reads may accept invalidations
        checked_ = seen == invalidations_;
    }
    const Oid relid = RelationGetRelid(table);
    table_close(table, NoLock);  // the lock is kept until the transaction ends
    return relid;
}

void refuse_foreign_triggers(Relation relation, Oid extension, const char *writer) {
    // The triggers are copied first: looking their functions up reads the catalogs, which can accept
    // invalidations and rebuild the relcache entry, freeing its trigger descriptor.
    const TriggerDesc *trigdesc = relation->trigdesc;
    const int count = trigdesc == nullptr ? 0 : trigdesc->numtriggers;
    Oid *functions = static_cast<Oid *>(palloc(sizeof(Oid) * (count + 1)));
    char **names = static_cast<char **>(palloc(sizeof(char *) * (count + 1)));
    for (int i = 0; i < count; ++i) {
        functions[i] = trigdesc->triggers[i].tgfoid;
        names[i] = pstrdup(trigdesc->triggers[i].tgname);
    }
    for (int i = 0; i < count; ++i)
        if (getExtensionOfObject(ProcedureRelationId, functions[i]) != extension)
            refuse_table(relation, psprintf("it has a trigger of its own, \"%s\"", names[i]),
                         psprintf("Triggers on it would run as the extension's owner whenever %s writes it: "
                                  "drop the trigger.",
                                  writer));
}

}  // namespace pg_ratelimit
