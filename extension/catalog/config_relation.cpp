#include "catalog/config_relation.hpp"

#include "catalog/table_checks.hpp"

namespace pg_ratelimit {
namespace {

struct Column {
    const char *name;
    Oid type;
};
constexpr Column COLUMNS[] = {{"name", TEXTOID},         {"algorithm", TEXTOID},  {"rate", FLOAT8OID},
                              {"period", INTERVALOID},   {"capacity", FLOAT8OID}, {"max_reserved", FLOAT8OID},
                              {"start", TIMESTAMPTZOID}, {"shards", INT4OID},     {"storage", TEXTOID},
                              {"epoch", INT8OID},        {"jitter", INTERVALOID}, {"time_zone", TEXTOID},
                              {"shadow", BOOLOID}};
constexpr int COLUMN_COUNT = sizeof(COLUMNS) / sizeof(COLUMNS[0]);

void check(Relation config, Oid extension) {
    check_extension_table(config, extension);
    const TupleDesc desc = RelationGetDescr(config);
    bool shape = desc->natts == COLUMN_COUNT;
    for (int i = 0; shape && i < COLUMN_COUNT; ++i) {
        const Form_pg_attribute attribute = TupleDescAttr(desc, i);
        shape = !attribute->attisdropped && attribute->atttypid == COLUMNS[i].type &&
                strcmp(NameStr(attribute->attname), COLUMNS[i].name) == 0 && attribute->attgenerated == '\0';
    }
    if (!shape)
        refuse_table(config,
                     "its columns are not (name, algorithm, rate, period, capacity, max_reserved, start, shards, "
                     "storage, epoch, jitter, time_zone, shadow)",
                     RESTORE_HINT);
    refuse_foreign_triggers(config, extension, "rate_limit_define");
}

CheckedTable table{"rate_limit_config", check};

}  // namespace

void config_relation_init() { table.register_invalidations(); }

void require_usable_config_table(Oid extension, Oid schema, LOCKMODE lockmode) {
    table.require_usable(extension, schema, lockmode);
}

}  // namespace pg_ratelimit
