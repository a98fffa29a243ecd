// Making sure the database has the gate's limits: at start, for every limit of the file (blocking, before the
// I/O threads run), and later, per thread, for the limits the map endpoint returns and for any limit the
// database reports missing (42704: dropped by hand), defined again on the next request that needs it.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "limiter/limit_spec.hpp"
#include "limiter/pool.hpp"

namespace gate::limiter {

class DefineError : public std::runtime_error {
  public:
    DefineError(const std::string &what, bool unreachable) : std::runtime_error(what), unreachable_(unreachable) {}
    // The server could not be reached (the gate starts anyway, and defines its limits when it can); otherwise
    // it refused (no extension, no privilege, bad numbers): the gate cannot work and stops.
    [[nodiscard]] bool unreachable() const { return unreachable_; }

  private:
    bool unreachable_;
};

// One connection, one statement per limit. Throws DefineError.
void define_limits_blocking(const std::string &conninfo, const std::string &schema,
                            const std::vector<LimitSpec> &specs);

class Definitions {
  public:
    Definitions(Pool &pool, const std::string &schema, std::chrono::microseconds timeout);

    // Marks the limits of the file as defined (define_limits_blocking succeeded).
    void assume_defined(const std::vector<LimitSpec> &specs);
    // Runs done("") once every spec is defined (at once when they already are), or done(error).
    void ensure(const std::vector<const LimitSpec *> &specs, std::function<void(const std::string &error)> done);
    // The database said a limit does not exist: define it again when next needed.
    void forget(const std::string &name);

  private:
    struct Entry {
        bool defined = false;
        bool defining = false;
        std::vector<std::function<void(const std::string &)>> waiters;
    };
    void define(const LimitSpec &spec);

    Pool &pool_;
    std::string sql_;
    std::chrono::microseconds timeout_;
    std::unordered_map<std::string, Entry> entries_;
};

}  // namespace gate::limiter
