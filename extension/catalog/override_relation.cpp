#include "catalog/override_relation.hpp"

#include "catalog/table_checks.hpp"

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

CheckedTable table{"rate_limit_override", check};

}  // namespace

void override_relation_init() { table.register_invalidations(); }

Oid require_usable_override_table(Oid extension, Oid schema, LOCKMODE lockmode) {
    return table.require_usable(extension, schema, lockmode);
}

}  // namespace pg_ratelimit
