// What each storage mode holds per key, from the extension's rate_limit_storage view.
#pragma once

#include <pqxx/pqxx>
#include <string>

#include "report.hpp"

namespace bench {

// One entry per storage mode that holds any key: "footprint <when>: <mode>" and its bytes, entries and
// bytes per entry (memory: also bytes per slot of capacity, since its shared memory is sized by
// pg_ratelimit.memory_keys at server start, not by the keys it holds).
Meta storage_footprint(pqxx::transaction_base &tx, const std::string &when);

}  // namespace bench
