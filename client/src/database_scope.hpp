// Which database a call ran in, as far as the policy cache must tell limits apart: a limit is a row of one
// database's rate_limit_config, and a database per tenant may give the same name other numbers.
//
// The identity is the server address and the database name libpq reports for the connection the call ran
// on (PQhost, PQport, PQdb): read from the connection object, no round trip, so it costs nothing on calls
// inside the caller's transaction, whose connections are none of the Limiter's and come and go. A database
// name reused on another server differs by host or port; a conninfo naming several hosts reports the one it
// reached. What it cannot tell apart: unrelated servers behind one address (a pooler or load balancer
// routing one name to different clusters); a server-side identity (system identifier, database OID) would
// need a query per new connection of the caller, which the Limiter cannot even recognise as new. The same
// database reached through two addresses takes two cache entries: harmless. The schema needs no place in
// it: a database has one pg_ratelimit at most, and the schema the Limiter calls it in (Options::schema or
// the search_path) is the Limiter's, like its cache.
#pragma once

#include <string>

#include "pqxx_compat.hpp"

namespace pg_ratelimit::detail {

// host '\0' port '\0' database name (none of them can hold NUL, so the parts never run into each other).
std::string database_scope(compat::Connection &connection);

}  // namespace pg_ratelimit::detail
