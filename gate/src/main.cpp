// pg_ratelimit_gate: a reverse proxy that decides each request with pg_ratelimit (docs/gate.md).
//   pg_ratelimit_gate --config gate.yaml [--listen HOST:PORT] [--admin-listen HOST:PORT]
//   pg_ratelimit_gate --config gate.yaml --check-config
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "config/load.hpp"
#include "http/server.hpp"
#include "limiter/definitions.hpp"

namespace {

constexpr int EXIT_CONFIG = 2;  // the configuration is wrong
constexpr int EXIT_START = 1;   // it is right, and the gate cannot start with it

std::string describe(const gate::config::GateConfig &config) {
    std::size_t limits = config.ratelimit ? config.ratelimit->limits.size() : 0;
    return std::to_string(config.routes.size()) + " URL pattern(s), " + std::to_string(limits) + " limit(s)" +
           (config.ratelimit && config.ratelimit->map_endpoint ? ", a map endpoint" : "");
}

int run(int argc, char **argv) {
    CLI::App app{"pg_ratelimit_gate: a reverse proxy whose rate limits live in PostgreSQL (pg_ratelimit)"};
    std::string file;
    std::string listen;
    std::string admin_listen;
    bool check_only = false;
    app.add_option("--config", file, "the YAML configuration file")->required();
    app.add_flag("--check-config", check_only, "check the configuration, print a summary and exit");
    app.add_option("--listen", listen, "HOST:PORT to serve on, instead of the file's gate.listen");
    app.add_option("--admin-listen", admin_listen,
                   "HOST:PORT for /metrics and /healthz, instead of the file's gate.admin_listen ('off': none)");
    CLI11_PARSE(app, argc, argv);

    gate::config::GateConfig config;
    try {
        config = gate::config::load_config(file);
        std::string error;
        // The command line overrides the file, so that several gates can share one file.
        if (!listen.empty()) {
            auto address = gate::config::parse_host_port(listen, &error);
            if (!address) throw gate::config::ConfigError("--listen: " + error);
            config.listen = *address;
        }
        if (admin_listen == "off") {
            config.admin_listen.reset();
        } else if (!admin_listen.empty()) {
            auto address = gate::config::parse_host_port(admin_listen, &error);
            if (!address) throw gate::config::ConfigError("--admin-listen: " + error);
            config.admin_listen = *address;
        }
    } catch (const gate::config::ConfigError &e) {
        std::cerr << "pg_ratelimit_gate: configuration error: " << e.what() << "\n";
        return EXIT_CONFIG;
    }
    if (check_only) {
        std::cout << file << ": configuration OK (" << describe(config) << ")\n";
        return 0;
    }

    gate::http::Shared shared(std::move(config));
    if (shared.config.ratelimit) {
        const auto &limiter = shared.config.ratelimit->limiter;
        std::vector<gate::limiter::LimitSpec> specs;
        for (const auto &limit : shared.limits) specs.push_back(limit.spec);
        try {
            gate::limiter::define_limits_blocking(limiter.conninfo, limiter.schema, specs);
            shared.defined_at_start = true;
        } catch (const gate::limiter::DefineError &e) {
            if (!e.unreachable()) {
                std::cerr << "pg_ratelimit_gate: " << e.what() << "\n";
                return EXIT_START;
            }
            // The gate starts anyway (failure_mode applies meanwhile) and defines them once the server answers.
            std::cerr << "pg_ratelimit_gate: the database is unreachable; the limits will be defined when it is ("
                      << e.what() << ")\n";
        }
    }
    try {
        gate::http::Server server(shared);
        std::cerr << "pg_ratelimit_gate: listening on " << shared.config.listen.text()
                  << (shared.config.admin_listen ? ", admin on " + shared.config.admin_listen->text() : "") << "; "
                  << describe(shared.config) << "; " << server.threads() << " thread(s)"
                  << (shared.config.ratelimit
                          ? ", " + std::to_string(server.connections_per_thread()) + " database connection(s) each" +
                                (shared.config.ratelimit->limiter.pipeline ? " (pipeline mode)" : "")
                          : "")
                  << std::endl;
        server.run();
    } catch (const std::exception &e) {
        std::cerr << "pg_ratelimit_gate: " << e.what() << "\n";
        return EXIT_START;
    }
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    // What run() does not catch itself (an allocation failing while the configuration is read, ...) ends
    // the gate with a message rather than std::terminate.
    try {
        return run(argc, argv);
    } catch (const std::exception &e) {
        std::cerr << "pg_ratelimit_gate: " << e.what() << "\n";
    } catch (...) {
        std::cerr << "pg_ratelimit_gate: an unknown error\n";
    }
    return EXIT_START;
}
