#include "limiter/definitions.hpp"

#include <libpq-fe.h>

#include <unistd.h>

#include <cstdio>
#include <memory>

#include "config/duration.hpp"
#include "limiter/statements.hpp"
#include "limiter/utf8_connect.hpp"

namespace gate::limiter {

double LimitSpec::max_reserved() const {
    if (algorithm == config::Algorithm::sliding_window) return 0;
    return burst * static_cast<double>(max_throttle.count()) / static_cast<double>(window.count());
}

std::vector<std::string> LimitSpec::define_params() const {
    // %.17g: the double exactly, so that the file's numbers compare equal to the stored ones next time.
    const auto number = [](double value) {
        char text[64];
        std::snprintf(text, sizeof text, "%.17g", value);
        return std::string(text);
    };
    return {name,
            number(burst),
            std::to_string(window.count()) + " microseconds",
            config::to_string(algorithm),
            number(burst),
            number(max_reserved()),
            config::to_string(storage)};
}

std::string LimitSpec::describe() const {
    char text[64];
    std::snprintf(text, sizeof text, "%.17g", burst);
    return std::string("burst ") + text + " per " + config::format_duration(window) + ", " +
           config::to_string(algorithm) + ", " + config::to_string(storage) + ", max_throttle " +
           config::format_duration(max_throttle);
}

LimitSpec spec_of(const config::LimitConfig &limit) {
    LimitSpec spec;
    spec.name = limit.db_name();
    spec.burst = limit.burst;
    spec.window = limit.window;
    spec.max_throttle = limit.max_throttle;
    spec.algorithm = limit.algorithm;
    spec.storage = limit.storage;
    return spec;
}

LimitSpec monitoring_twin(const LimitSpec &spec) {
    LimitSpec twin = spec;
    const std::string prefix = "gate_";  // as long as "gmon_": a name the extension takes keeps fitting
    const bool gate_name = spec.name.compare(0, prefix.size(), prefix) == 0;
    twin.name = "gmon_" + (gate_name ? spec.name.substr(prefix.size()) : spec.name);
    return twin;
}

void define_limits_blocking(const std::string &conninfo, const std::string &schema,
                            const std::vector<LimitSpec> &specs) {
    const std::unique_ptr<PGconn, decltype(&PQfinish)> conn(connect_utf8(conninfo, Connect::blocking), &PQfinish);
    if (PQstatus(conn.get()) != CONNECTION_OK) {
        throw DefineError(std::string("cannot connect: ") + PQerrorMessage(conn.get()), true);
    }
    if (const auto why = unsuitable_encoding(conn.get())) throw DefineError(*why, false);
    const std::string sql = define_sql(schema);
    const std::string stored_sql = stored_differs_sql(schema);
    for (const auto &spec : specs) {
        const auto params = spec.define_params();
        std::vector<const char *> values;
        values.reserve(params.size());
        for (const auto &p : params) values.push_back(p.c_str());
        // Another gate (or an operator) may enforce this limit with other numbers: this gate's file wins
        // (rate_limit_define below), for every gate on this database. Said loudly, naming both.
        const std::unique_ptr<PGresult, decltype(&PQclear)> stored(
            PQexecParams(conn.get(), stored_sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(),
                         nullptr, nullptr, 0),
            &PQclear);
        if (PQresultStatus(stored.get()) == PGRES_TUPLES_OK && PQntuples(stored.get()) == 1) {
            std::string text = "pg_ratelimit_gate: WARNING: limit " + spec.name +
                               " is defined in the database with other numbers (" + PQgetvalue(stored.get(), 0, 0) +
                               ") than this file's (" + spec.describe() +
                               "): redefining it now, for every gate that shares this database (a gate started "
                               "with another file is enforcing the other numbers until now)\n";
            const ssize_t n = ::write(STDERR_FILENO, text.data(), text.size());
            (void)n;
        }
        const std::unique_ptr<PGresult, decltype(&PQclear)> result(
            PQexecParams(conn.get(), sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                         nullptr, 0),
            &PQclear);
        if (PQresultStatus(result.get()) != PGRES_TUPLES_OK) {
            const bool lost = PQstatus(conn.get()) != CONNECTION_OK;
            throw DefineError("cannot define limit " + spec.name + ": " + PQresultErrorMessage(result.get()), lost);
        }
    }
}

Definitions::Definitions(Pool &pool, const std::string &schema, std::chrono::microseconds timeout)
    : pool_(pool), sql_(define_sql(schema)), timeout_(timeout) {}

void Definitions::assume_defined(const std::vector<LimitSpec> &specs) {
    for (const auto &spec : specs) entries_[spec.name].defined = true;
}

void Definitions::forget(const std::string &name) {
    auto found = entries_.find(name);
    if (found != entries_.end() && !found->second.defining) found->second.defined = false;
}

void Definitions::ensure(const std::vector<const LimitSpec *> &specs, std::function<void(const std::string &)> done) {
    std::vector<const LimitSpec *> missing;
    for (const LimitSpec *spec : specs) {
        if (!entries_[spec->name].defined) missing.push_back(spec);
    }
    if (missing.empty()) {
        done("");
        return;
    }
    // Wait for each missing one; the first error wins.
    struct Join {
        std::size_t left;
        std::string error;
        std::function<void(const std::string &)> done;
    };
    auto join = std::make_shared<Join>(Join{missing.size(), "", std::move(done)});
    for (const LimitSpec *spec : missing) {
        Entry &entry = entries_[spec->name];
        entry.waiters.emplace_back([join](const std::string &error) {
            if (join->error.empty()) join->error = error;
            if (--join->left == 0) join->done(join->error);
        });
        if (!entry.defining) define(*spec);
    }
}

void Definitions::define(const LimitSpec &spec) {
    entries_[spec.name].defining = true;
    auto call = std::make_unique<DbCall>();
    call->kind = DbCall::Kind::sql;
    call->statement = sql_;
    call->params = spec.define_params();
    call->binary_params = false;
    call->binary_result = false;
    call->deadline = std::chrono::steady_clock::now() + timeout_;
    call->done = [this, name = spec.name](DbOutcome outcome) {
        Entry &entry = entries_[name];
        entry.defining = false;
        std::string error;
        if (outcome.failure == DbFailure::none) {
            entry.defined = true;
        } else {
            error = "cannot define limit " + name + ": " + (outcome.sqlstate.empty() ? "" : outcome.sqlstate + " ") +
                    outcome.message;
        }
        auto waiters = std::move(entry.waiters);
        entry.waiters.clear();
        for (auto &waiter : waiters) waiter(error);
    };
    pool_.submit(std::move(call));
}

}  // namespace gate::limiter
