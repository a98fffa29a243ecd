#include "footprint.hpp"

#include <cstdio>

namespace bench {

Meta storage_footprint(pqxx::transaction_base &tx, const std::string &when) {
    Meta rows;
    // Durable and unlogged: the table with its TOAST table and both indexes (pg_total_relation_size);
    // memory: the whole shared memory segment of the mode.
    const pqxx::result r = tx.exec("SELECT storage, entries, capacity, bytes FROM rate_limit_storage ORDER BY storage");
    for (const auto &row : r) {
        const auto entries = row[1].as<long long>(0);
        if (entries == 0) continue;
        const auto bytes = row[3].as<long long>(0);
        char text[200];
        int used = std::snprintf(text, sizeof(text), "%lld bytes for %lld entries: %.1f bytes per entry", bytes,
                                 entries, static_cast<double>(bytes) / static_cast<double>(entries));
        if (!row[2].is_null() && row[2].as<long long>() > 0) {
            const auto capacity = row[2].as<long long>();
            std::snprintf(text + used, sizeof(text) - static_cast<std::size_t>(used),
                          "; capacity %lld: %.1f bytes per slot of capacity", capacity,
                          static_cast<double>(bytes) / static_cast<double>(capacity));
        }
        rows.emplace_back("footprint " + when + ": " + row[0].as<std::string>(), text);
    }
    return rows;
}

}  // namespace bench
