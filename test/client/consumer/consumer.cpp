// An application of the installed client library (see CMakeLists.txt here and test/client_install.sh).
// It needs no server: it renders a denial's HTTP fields (code in the library) and opens a Limiter on a
// socket that does not exist, which must fail inside libpqxx with pqxx::broken_connection (so the
// library, libpqxx and libpq are all linked in and called).
#include <chrono>
#include <iostream>
#include <pg_ratelimit/client.hpp>
#include <pqxx/except>

int main() {
    pg_ratelimit::Decision denial;
    denial.limit = "api";
    denial.retry_after = std::chrono::seconds{3};
    denial.reset_after = std::chrono::seconds{10};
    denial.policy = pg_ratelimit::Policy{5, std::chrono::seconds{10}, 5};
    for (const pg_ratelimit::HttpField &field : denial.headers())
        std::cout << field.name << ": " << field.value << "\n";

    // C++17: options are set member by member (designated initializers are C++20).
    pg_ratelimit::Options options;
    options.pool_size = 2;
    try {
        const pg_ratelimit::Limiter limiter{"host=/nonexistent/pg_ratelimit port=1 connect_timeout=2", options};
        std::cout << "connected to a server that does not exist\n";
        return 1;
    } catch (const pqxx::broken_connection &) {
        std::cout << "no server: pqxx::broken_connection\n";
    }
    return 0;
}
