// The one place where libpqxx's versions differ: 6.4 (Debian 12), 7.10 (Debian 13) and 8.0 (C++20 only).
// Everything else (the client, its tests, the test programs, the benchmark harness) is written once against
// these adapters. Header-only, so that the programs that do not link the client (test/crash, bench/) can
// use it too; not installed, not part of the client's API.
//
// What differs, and what the adapters do:
// - Running statements. 7.10 deprecates exec0/exec1/exec_params*/exec_prepared* in favour of
//   exec(sql, pqxx::params), exec(pqxx::prepped, pqxx::params) and result::no_rows()/one_row(), which 6.4
//   lacks: exec0, exec1, exec_params, exec_params1, exec_prepared, exec_prepared1 below.
// - Preparing. 6.4's prepare() only declares a statement (registered with the server by prepare_now() or
//   its first use); 7 and 8 have no prepare_now() and register at prepare(): prepare_now below registers
//   now on every version.
// - The connection class. 6.4: connection_base, the base of its connection classes (pqxx::connection,
//   lazyconnection, ...), which transaction_base::conn() returns; 7: pqxx::connection (connection_base a
//   deprecated alias of it); 8: pqxx::connection alone: Connection below.
// - Binary parameters. 6.4: pqxx::binarystring; 7.10 deprecates it for pqxx::bytes (a
//   std::basic_string<std::byte>), 8 removes it (pqxx::bytes is a std::vector<std::byte> there):
//   BinaryParam and binary_param below.
// - Rows and fields. Indexing or iterating a result gives pqxx::row and pqxx::field in 6.4 and 7; in 8
//   pqxx::row_ref and pqxx::field_ref, which refer into the result (keep it alive) and do not convert to
//   row/field implicitly: RowRef and FieldRef below.
// - An error's SQLSTATE and query: const std::string & in 6.4 and 7, std::string_view in 8: sqlstate()
//   and query() below return a std::string. Its what(): the server's text in 6.4; from 7 on, for a
//   prepared statement (and its preparation), "Failure during '<statement name>': " and the server's text:
//   server_text() below.
// - The server's port: port() is deprecated in 8 (port_number(), an optional<int>): port() below.
// - Silencing notices. 6.4: an errorhandler object registered on the connection (7.10 deprecates
//   errorhandlers); 7.10 and 8: a notice handler function: QuietNotices below.
// - A lost connection. 6.4 reopens a broken connection by itself at its next use (its "reactivation"),
//   unless inhibit_reactivation(true), deprecated there but the only switch; 7 and 8 never do, and have no
//   such switch: a connection that broke stays broken, and another pqxx::connection must be made.
//   disable_reactivation and Reopener below.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <pqxx/connection>
#include <pqxx/except>
#include <pqxx/result>
#include <pqxx/row>
#include <pqxx/transaction_base>
#include <pqxx/version>
#include <string>
#include <utility>

#if PQXX_VERSION_MAJOR < 7
#include <pqxx/binarystring>
#include <pqxx/errorhandler>
#else
#include <pqxx/params>
#include <pqxx/prepared_statement>
#endif

namespace pg_ratelimit::compat {

#if PQXX_VERSION_MAJOR < 7
using Connection = pqxx::connection_base;
using BinaryParam = pqxx::binarystring;
#else
using Connection = pqxx::connection;
using BinaryParam = pqxx::bytes;
#endif

#if PQXX_VERSION_MAJOR < 8
using RowRef = pqxx::row;
using FieldRef = pqxx::field;
#else
using RowRef = pqxx::row_ref;
using FieldRef = pqxx::field_ref;
#endif

// bytes as a binary statement parameter (sent in binary format, exactly as given).
inline BinaryParam binary_param(const std::string &bytes) {
#if PQXX_VERSION_MAJOR < 7
    return pqxx::binarystring(bytes);
#else
    const auto *const first = reinterpret_cast<const std::byte *>(bytes.data());
    return pqxx::bytes(first, first + bytes.size());
#endif
}

// sql, with args as its parameters $1, $2, ... (a one-off statement: parsed and planned every time).
template <typename... Args>
pqxx::result exec_params(pqxx::transaction_base &tx, const std::string &sql, Args &&...args) {
#if PQXX_VERSION_MAJOR < 7
    return tx.exec_params(sql, std::forward<Args>(args)...);
#else
    return tx.exec(sql, pqxx::params{std::forward<Args>(args)...});
#endif
}

// The prepared statement `name` (prepare_now below) with args as its parameters.
template <typename... Args>
pqxx::result exec_prepared(pqxx::transaction_base &tx, const std::string &name, Args &&...args) {
#if PQXX_VERSION_MAJOR < 7
    return tx.exec_prepared(name, std::forward<Args>(args)...);
#else
    return tx.exec(pqxx::prepped{name}, pqxx::params{std::forward<Args>(args)...});
#endif
}

// The same, for statements that return exactly one row (pqxx::unexpected_rows otherwise).
template <typename... Args>
pqxx::row exec_params1(pqxx::transaction_base &tx, const std::string &sql, Args &&...args) {
#if PQXX_VERSION_MAJOR < 7
    return tx.exec_params1(sql, std::forward<Args>(args)...);
#else
    return exec_params(tx, sql, std::forward<Args>(args)...).one_row();
#endif
}

template <typename... Args>
pqxx::row exec_prepared1(pqxx::transaction_base &tx, const std::string &name, Args &&...args) {
#if PQXX_VERSION_MAJOR < 7
    return tx.exec_prepared1(name, std::forward<Args>(args)...);
#else
    return exec_prepared(tx, name, std::forward<Args>(args)...).one_row();
#endif
}

// sql without parameters, returning no rows (pqxx::unexpected_rows otherwise).
inline void exec0(pqxx::transaction_base &tx, const std::string &sql) {
#if PQXX_VERSION_MAJOR < 7
    tx.exec0(sql);
#else
    tx.exec(sql).no_rows();
#endif
}

// sql without parameters, returning exactly one row (pqxx::unexpected_rows otherwise).
inline pqxx::row exec1(pqxx::transaction_base &tx, const std::string &sql) {
#if PQXX_VERSION_MAJOR < 7
    return tx.exec1(sql);
#else
    return tx.exec(sql).one_row();
#endif
}

// Prepares sql as `name` on connection and registers it with the server now, so that an error in it (a
// function that does not exist) is thrown here. Also inside a transaction on connection, whose statements
// it then counts among (a failure aborts it, like a failed statement); a prepared statement itself is not
// transactional and outlives a rollback.
inline void prepare_now(Connection &connection, const std::string &name, const std::string &sql) {
    connection.prepare(name, sql);
#if PQXX_VERSION_MAJOR < 7
    connection.prepare_now(name);
#endif
}

// The error's SQLSTATE ("" when the server gave none) and the statement it came from.
inline std::string sqlstate(const pqxx::sql_error &error) { return std::string(error.sqlstate()); }
inline std::string query(const pqxx::sql_error &error) { return std::string(error.query()); }

// The server's text of the error, as libpq gives it ("ERROR:  primary\nDETAIL:  ...\n"): what(), less the
// "Failure during '<statement name>': " that libpqxx 7 and 8 put before it for prepared statements.
inline std::string server_text(const pqxx::sql_error &error) {
    std::string text = error.what();
#if PQXX_VERSION_MAJOR >= 7
    const std::string prefix = "Failure during '";
    if (text.compare(0, prefix.size(), prefix) == 0) {
        const std::size_t end = text.find("': ", prefix.size());
        if (end != std::string::npos) text.erase(0, end + 3);
    }
#endif
    return text;
}

// The port libpq reports for connection ("" when none).
inline std::string port(Connection &connection) {  // non-const: 6.4's port() is
#if PQXX_VERSION_MAJOR < 8
    const char *const text = connection.port();
    return text != nullptr ? text : "";
#else
    const std::optional<int> number = connection.port_number();
    return number ? std::to_string(*number) : std::string{};
#endif
}

// A connection that broke stays broken: libpqxx 6.4 would otherwise open a new session by itself at its
// next use (losing the session's settings without a word); 7 and 8 never do that.
inline void disable_reactivation(Connection &connection) {
#if PQXX_VERSION_MAJOR < 7
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    connection.inhibit_reactivation(true);  // deprecated in 6.4, but the only switch there is
#pragma GCC diagnostic pop
#else
    (void)connection;
#endif
}

// Drops the notices that would go to stderr on connection (the server's, and libpqxx's own warnings such as
// a failed ROLLBACK on a lost connection) while it lives (6.4) or for the connection's life (7, 8: its
// notice handler is replaced). Destroy it before the connection.
class QuietNotices {
  public:
    explicit QuietNotices(Connection &connection) {
#if PQXX_VERSION_MAJOR < 7
        handler_ = std::make_unique<pqxx::quiet_errorhandler>(connection);
#else
        connection.set_notice_handler([](pqxx::zview) noexcept {});
#endif
    }

  private:
#if PQXX_VERSION_MAJOR < 7
    std::unique_ptr<pqxx::quiet_errorhandler> handler_;
#endif
};

// Reopens a caller's connection after it broke, for a retry loop that goes on with the same connection
// object: lost() after the failure, reopen() before the next use. libpqxx 6.4: the connection reopens
// itself at its next use (reactivation), with the same connection object, which keeps its prepared
// statements' definitions and its notice handlers (disconnect() makes that first use succeed where it
// would otherwise fail once more). libpqxx 7 and 8: the connection is replaced (move-assigned) by a new
// pqxx::connection to the lost one's connection_string(): nothing of the old session or of the object's own
// state (prepared statements, notice and notification handlers) is kept.
class Reopener {
  public:
    explicit Reopener(Connection &connection) noexcept : connection_(connection) {}

    // The connection broke. Never throws.
    void lost() noexcept {
#if PQXX_VERSION_MAJOR < 7
        connection_.disconnect();
#else
        if (conninfo_) return;
        try {
            conninfo_ = connection_.connection_string();  // still readable from a broken connection
        } catch (...) {
            // Closed before it reached us: nothing to reopen it with; its next use fails as before.
        }
#endif
    }

    // Before the connection's next use: reopens it if lost() saw it break. Throws what opening a connection
    // throws (pqxx::broken_connection while the server is unreachable; reopen() may then be called again).
    void reopen() {
#if PQXX_VERSION_MAJOR >= 7
        if (conninfo_ && !connection_.is_open()) connection_ = pqxx::connection{*conninfo_};
#endif
    }

  private:
    Connection &connection_;
#if PQXX_VERSION_MAJOR >= 7
    std::optional<std::string> conninfo_;
#endif
};

}  // namespace pg_ratelimit::compat
