// The client against a database without pg_ratelimit, or with it where the client does not look: a
// typed ExtensionMissing with a hint (CREATE EXTENSION, Options::schema), from the constructor and from
// the calls, with the server's SQLSTATE kept.
#include <gtest/gtest.h>

#include <pg_ratelimit/client.hpp>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "support.hpp"

namespace pr = pg_ratelimit;

namespace {

// Runs SQL outside a transaction block (CREATE / DROP DATABASE cannot run in one).
void exec_autocommit(const std::string &conninfo, const std::string &sql) {
    pqxx::connection conn{conninfo};
    pqxx::nontransaction tx{conn};
    tx.exec(sql);
}

// The test server's connection string for another database of it. (Later keywords override earlier
// ones in a libpq key=value string.)
std::string conninfo_for(const std::string &database) {
    const std::string base = test_support::conninfo();
    return (base.empty() ? "" : base + " ") + "dbname=" + database;
}

// Each test gets a database of its own in which pg_ratelimit was never created, dropped afterwards.
class ExtensionMissingTest : public test_support::ServerTest {
  protected:
    void SetUp() override {
        ServerTest::SetUp();
        limit = test_support::define_limit("missing", 5, "1 minute");
        key = test_support::unique_key("k");
        database = test_support::unique_key("client_no_extension");
        exec_autocommit(test_support::conninfo(), "CREATE DATABASE " + database);
    }

    void TearDown() override {
        if (database.empty()) return;  // SetUp failed before making anything
        for (const std::string &schema : schemas) test_support::exec("DROP SCHEMA " + schema + " CASCADE");
        exec_autocommit(test_support::conninfo(), "DROP DATABASE IF EXISTS " + database + " WITH (FORCE)");
    }

    // Creates a schema of the four rate_limit_* functions (thin wrappers around the real ones, in the
    // test server's main database) without rate_limit_config: the functions are found, the table is not.
    std::string schema_without_config() {
        std::string schema = test_support::unique_key("client_no_config");
        std::string sql = R"(
            CREATE SCHEMA @s;
            CREATE FUNCTION @s.rate_limit_request(text, text, float8, boolean) RETURNS public.rate_limit_decision
                LANGUAGE sql AS $$ SELECT * FROM public.rate_limit_request($1, $2, $3, $4) $$;
            CREATE FUNCTION @s.rate_limit_check(text, text, float8) RETURNS public.rate_limit_decision
                LANGUAGE sql AS $$ SELECT * FROM public.rate_limit_check($1, $2, $3) $$;
            CREATE FUNCTION @s.rate_limit_refund(text, text, float8) RETURNS public.rate_limit_decision
                LANGUAGE sql AS $$ SELECT * FROM public.rate_limit_refund($1, $2, $3) $$;
            CREATE FUNCTION @s.rate_limit_reset(text, text) RETURNS void
                LANGUAGE sql AS $$ SELECT public.rate_limit_reset($1, $2) $$;)";
        for (std::size_t at = sql.find("@s"); at != std::string::npos; at = sql.find("@s", at))
            sql.replace(at, 2, schema);
        test_support::exec(sql);
        schemas.push_back(schema);
        return schema;
    }

    std::string limit;
    std::string key;
    std::string database;
    std::vector<std::string> schemas;  // made by schema_without_config(), dropped at TearDown
};

// What every ExtensionMissing carries: the server's SQLSTATE and primary message, the server's text in
// what() followed by our hint line, and the pqxx::sql_error base.
void expect_well_formed(const pr::ExtensionMissing &error, const std::string &sqlstate, const std::string &advice) {
    EXPECT_EQ(error.sqlstate(), sqlstate);
    const std::string what = error.what();
    EXPECT_EQ(what.rfind("ERROR:  " + error.message() + "\n", 0), 0u) << what;
    EXPECT_EQ(error.message().find('\n'), std::string::npos) << error.message();
    EXPECT_NE(what.find("\nHINT (pg_ratelimit):  " + error.hint() + "\n"), std::string::npos) << what;
    EXPECT_NE(error.hint().find(advice), std::string::npos) << error.hint();
    EXPECT_NE(dynamic_cast<const pqxx::sql_error *>(&error), nullptr);
}

}  // namespace

TEST_F(ExtensionMissingTest, ConstructorOnDatabaseWithoutExtension) {
    try {
        const pr::Limiter limiter{conninfo_for(database)};
        ADD_FAILURE() << "constructed a Limiter on a database without pg_ratelimit";
    } catch (const pr::ExtensionMissing &error) {
        expect_well_formed(error, "42883", "CREATE EXTENSION pg_ratelimit");
        EXPECT_NE(error.hint().find("Options::schema"), std::string::npos) << error.hint();
        EXPECT_NE(error.message().find("rate_limit_request"), std::string::npos) << error.message();
    }
}

TEST_F(ExtensionMissingTest, InTransactionCallsOnDatabaseWithoutExtension) {
    pr::Limiter limiter{test_support::conninfo()};  // its own database has the extension
    pqxx::connection elsewhere{conninfo_for(database)};
    for (int call = 0; call < 4; ++call) {
        pqxx::work tx{elsewhere};
        try {
            switch (call) {
                case 0:
                    (void)limiter.request(tx, key, limit);
                    break;
                case 1:
                    (void)limiter.check(tx, key, limit);
                    break;
                case 2:
                    (void)limiter.refund(tx, key, limit);
                    break;
                default:
                    limiter.reset(tx, key, limit);
                    break;
            }
            ADD_FAILURE() << "call " << call << " succeeded on a database without pg_ratelimit";
        } catch (const pr::ExtensionMissing &error) {
            expect_well_formed(error, "42883", "CREATE EXTENSION pg_ratelimit");
        }
    }
    EXPECT_EQ(limiter.stats().retries, 0u);  // never retried
}

TEST_F(ExtensionMissingTest, SchemaThatDoesNotExist) {
    pr::Options options;
    options.schema = "client_no_such_schema";
    try {
        const pr::Limiter limiter{test_support::conninfo(), options};
        ADD_FAILURE() << "constructed a Limiter on a schema that does not exist";
    } catch (const pr::ExtensionMissing &error) {
        expect_well_formed(error, "3F000", "Options::schema names a schema that does not exist");
    }
}

TEST_F(ExtensionMissingTest, SchemaWithoutConfigTable) {
    pr::Options options;
    options.schema = schema_without_config();
    try {
        const pr::Limiter limiter{test_support::conninfo(), options};
        ADD_FAILURE() << "constructed a Limiter on a schema without rate_limit_config";
    } catch (const pr::ExtensionMissing &error) {
        expect_well_formed(error, "42P01", "CREATE EXTENSION pg_ratelimit");
        EXPECT_NE(error.message().find("rate_limit_config"), std::string::npos) << error.message();
    }
}

// In the caller's transaction the call itself may succeed and the policy read after it fail: the
// caller's search_path finds the functions but not the table.
TEST_F(ExtensionMissingTest, InTransactionPolicyReadWithoutConfigTable) {
    const std::string schema = schema_without_config();
    pr::Limiter limiter{test_support::conninfo()};
    auto conn = test_support::connect();
    pqxx::work tx{*conn};
    tx.exec("SET LOCAL search_path = " + schema);
    try {
        (void)limiter.request(tx, key, limit);
        ADD_FAILURE() << "the policy read found a rate_limit_config";
    } catch (const pr::ExtensionMissing &error) {
        expect_well_formed(error, "42P01", "Options::schema");
    }
}

// The extension dropped under a running Limiter: its statements, prepared on its open connection while
// the extension existed, are planned again on their next use and fail, typed.
TEST_F(ExtensionMissingTest, ExtensionDroppedUnderALimiter) {
    exec_autocommit(conninfo_for(database), "CREATE EXTENSION pg_ratelimit");
    pr::Limiter limiter{conninfo_for(database)};
    EXPECT_TRUE(limiter.request(key).allowed);
    exec_autocommit(conninfo_for(database), "DROP EXTENSION pg_ratelimit");
    try {
        (void)limiter.request(key);
        ADD_FAILURE() << "request succeeded after DROP EXTENSION";
    } catch (const pr::ExtensionMissing &error) {
        expect_well_formed(error, "42883", "CREATE EXTENSION pg_ratelimit");
    }
}
