#include "override_relation.hpp"

#include "table_checks.hpp"

namespace pg_ratelimit {
namespace {

struct Column {
    const char *name;
    Oid type;
};
constexpr Column COLUMNS[] = {{"limit_name", TEXTOID},
                              {"key", TEXTOID},
                              {"rate", FLOAT8OID},
                              {"capacity", FLOAT8OID},
                              {"max_reserved", FLOAT8OID}};

Oid cached_schema = InvalidOid;
Oid cached_relid = InvalidOid;
bool checked = false;      // the table passed since its last invalidation
uint64 invalidations = 0;  // of the table, to notice one arriving while it is being checked

void on_relcache_invalidation(Datum, Oid relid) {
    if (relid != InvalidOid && relid != cached_relid) return;
    checked = false;
    ++invalidations;
}

void check_column(Relation table, const Column &wanted) {
    const TupleDesc desc = RelationGetDescr(table);
    for (int i = 0; i < desc->natts; ++i) {
        const Form_pg_attribute attribute = TupleDescAttr(desc, i);
        if (attribute->attisdropped || strcmp(NameStr(attribute->attname), wanted.name) != 0) continue;
        if (attribute->atttypid != wanted.type || attribute->attgenerated != '\0') break;
        return;
    }
    refuse_table(
        table, psprintf("it has no column \"%s\" of type %s (not generated)", wanted.name, format_type_be(wanted.type)),
        RESTORE_HINT);
}

void check(Relation table, Oid extension) {
    check_extension_table(table, extension);
    for (const Column &column : COLUMNS) check_column(table, column);
    refuse_foreign_triggers(table, extension, "rate_limit_override");
}

}  // namespace

void override_relation_init() { CacheRegisterRelcacheCallback(on_relcache_invalidation, 0); }

Oid require_usable_override_table(Oid extension, Oid schema, LOCKMODE lockmode) {
    if (cached_schema != schema) {
        cached_schema = schema;
        cached_relid = InvalidOid;
        checked = false;
    }
    const Oid before = cached_relid;
    Relation table = open_extension_table(schema, "rate_limit_override", lockmode, &cached_relid);
    if (cached_relid != before) checked = false;
    while (!checked) {
        const uint64 seen = invalidations;
        check(table, extension);  // its catalog reads may accept invalidations
        checked = seen == invalidations;
    }
    const Oid relid = RelationGetRelid(table);
    table_close(table, NoLock);  // the lock is kept until the transaction ends
    return relid;
}

}  // namespace pg_ratelimit
