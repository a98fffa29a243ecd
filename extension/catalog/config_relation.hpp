// rate_limit_config, checked before the extension reads it (a definition missing from the cache) or writes
// it (rate_limit_define, rate_limit_drop) with SQL, as its owner.
//
// Refused with SQLSTATE 55000: a table that is not the extension's own (after a rename, a look-alike
// table or view under the name), columns other than the install script's thirteen (the row trigger reads
// them by position, requests by type), triggers other than the extension's two (they would run as the
// owner whenever rate_limit_define writes), rules, forced row-level security. The result is cached until
// the table changes (CheckedTable, table_checks.hpp); the lock taken (AccessShareLock to read,
// RowExclusiveLock to write) keeps it true until the transaction ends.
#pragma once

#include "postgres_headers.hpp"

namespace pg_ratelimit {

void config_relation_init();
void require_usable_config_table(Oid extension, Oid schema, LOCKMODE lockmode);

}  // namespace pg_ratelimit
