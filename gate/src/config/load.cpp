#include "config/load.hpp"

#include <libpq-fe.h>

#include <algorithm>
#include <cctype>

#include "config/duration.hpp"
#include "jwt/keys.hpp"

namespace gate::config {

const char *to_string(Storage storage) {
    switch (storage) {
        case Storage::durable:
            return "durable";
        case Storage::unlogged:
            return "unlogged";
        case Storage::memory:
            return "memory";
    }
    return "durable";
}

const char *to_string(Algorithm algorithm) {
    switch (algorithm) {
        case Algorithm::gcra:
            return "gcra";
        case Algorithm::token_bucket:
            return "token_bucket";
        case Algorithm::fixed_window:
            return "fixed_window";
        case Algorithm::sliding_window:
            return "sliding_window";
    }
    return "gcra";
}

namespace {

// The longest limit key: the database name gate_<key> stays within rate_limit_config's 128 bytes.
constexpr std::size_t MAX_LIMIT_KEY = 100;

class Loader {
  public:
    explicit Loader(const std::string &file) : yaml_(file) { config_.file = file; }

    GateConfig run() {
        const YAML::Node root = yaml_.load();
        if (!root.IsDefined() || root.IsNull()) yaml_.fail_line(1, "the file is empty (it needs a \"gate:\" mapping)");
        yaml_.expect_map(root, "the file", {"gate"});
        const YAML::Node gate = root["gate"];
        if (!gate.IsDefined()) yaml_.fail(root, "the file needs a \"gate:\" mapping");
        yaml_.expect_map(gate, "gate",
                         {"listen", "admin_listen", "threads", "access_log", "client_timeout", "backend_timeout",
                          "max_header_bytes", "plugins", "urls"});
        read_server(gate);
        if (const auto plugins = gate["plugins"]) read_plugins(plugins);
        const YAML::Node urls = gate["urls"];
        if (!urls.IsDefined()) yaml_.fail(gate, "gate needs \"urls:\", the list of URL patterns and their targets");
        read_urls(urls);
        return std::move(config_);
    }

  private:
    HostPort host_port(const YAML::Node &node, const std::string &what) {
        std::string error;
        auto parsed = parse_host_port(yaml_.scalar(node, what), &error);
        if (!parsed) yaml_.fail(node, what + ": " + error);
        return *parsed;
    }

    microseconds duration(const YAML::Node &node, const std::string &what, bool positive) {
        std::string error;
        const std::string text = yaml_.scalar(node, what);
        auto parsed = parse_duration(text, &error);
        if (!parsed) yaml_.fail(node, what + ": " + error);
        if (positive && parsed->count() <= 0) yaml_.fail(node, what + " must be longer than 0");
        return *parsed;
    }

    void read_server(const YAML::Node &gate) {
        if (const auto n = gate["listen"]) config_.listen = host_port(n, "listen");
        if (const auto n = gate["admin_listen"]) {
            if (n.IsScalar() && n.Scalar() == "off") {
                config_.admin_listen.reset();
            } else {
                config_.admin_listen = host_port(n, "admin_listen");
            }
        }
        if (const auto n = gate["threads"]) config_.threads = static_cast<int>(yaml_.integer(n, "threads", 0, 256));
        if (const auto n = gate["access_log"]) config_.access_log = yaml_.boolean(n, "access_log");
        if (const auto n = gate["client_timeout"]) config_.client_timeout = duration(n, "client_timeout", true);
        if (const auto n = gate["backend_timeout"]) config_.backend_timeout = duration(n, "backend_timeout", true);
        if (const auto n = gate["max_header_bytes"]) {
            config_.max_header_bytes = static_cast<std::size_t>(yaml_.integer(n, "max_header_bytes", 1024, 1 << 20));
        }
    }

    void read_plugins(const YAML::Node &plugins) {
        yaml_.expect_sequence(plugins, "plugins");
        for (const auto &plugin : plugins) {
            yaml_.expect_map(plugin, "a plugin", {"id", "type", "enabled", "parameters"});
            const auto type = plugin["type"];
            if (!type) yaml_.fail(plugin, "a plugin needs a type (ratelimit)");
            if (yaml_.scalar(type, "type") != "ratelimit") {
                yaml_.fail(type, "unknown plugin type \"" + type.Scalar() + "\" (this gate has the ratelimit plugin)");
            }
            if (config_.ratelimit) yaml_.fail(plugin, "a second ratelimit plugin (one is allowed)");
            RateLimitPlugin out;
            if (const auto id = plugin["id"]) out.id = yaml_.scalar(id, "id");
            if (const auto enabled = plugin["enabled"]) out.enabled = yaml_.boolean(enabled, "enabled");
            const auto parameters = plugin["parameters"];
            if (!parameters) yaml_.fail(plugin, "the ratelimit plugin needs parameters (limiter, limits)");
            read_ratelimit(parameters, out);
            config_.ratelimit = std::move(out);
        }
    }

    void read_ratelimit(const YAML::Node &parameters, RateLimitPlugin &out) {
        yaml_.expect_map(parameters, "parameters",
                         {"limiter", "limits", "map_endpoint", "map_cache_ttl", "map_timeout", "map_identity_headers",
                          "map_storage", "map_algorithm", "jwt"});
        const auto limiter = parameters["limiter"];
        if (!limiter) yaml_.fail(parameters, "parameters need a limiter (type: pg_ratelimit, conninfo: ...)");
        read_limiter(limiter, out.limiter);
        if (const auto jwt = parameters["jwt"]) read_jwt(jwt, out.jwt);
        if (const auto limits = parameters["limits"]) {
            yaml_.expect_sequence(limits, "limits");
            for (const auto &limit : limits) out.limits.push_back(read_limit(limit, out));
        }
        for (std::size_t i = 0; i < out.limits.size(); ++i) {
            for (std::size_t j = 0; j < i; ++j) {
                if (out.limits[i].key == out.limits[j].key) {
                    yaml_.fail_line(out.limits[i].line, "a second limit with key \"" + out.limits[i].key +
                                                            "\" (the first is on line " +
                                                            std::to_string(out.limits[j].line) + ")");
                }
            }
        }
        if (const auto endpoint = parameters["map_endpoint"]) {
            std::string error;
            auto url = parse_http_url(yaml_.scalar(endpoint, "map_endpoint"), &error);
            if (!url) yaml_.fail(endpoint, "map_endpoint: " + error);
            // Built from the parsed URL (not defaulted, then assigned): GCC 12 at -O3 warns that a defaulted
            // one's strings "may be used uninitialized" on the exception paths below (a false positive).
            MapEndpointConfig map{std::move(*url)};
            if (const auto n = parameters["map_cache_ttl"]) map.cache_ttl = duration(n, "map_cache_ttl", false);
            if (const auto n = parameters["map_timeout"]) map.timeout = duration(n, "map_timeout", true);
            if (const auto n = parameters["map_storage"]) map.storage = storage(n);
            if (const auto n = parameters["map_algorithm"]) map.algorithm = algorithm(n);
            if (const auto n = parameters["map_identity_headers"]) {
                yaml_.expect_sequence(n, "map_identity_headers");
                map.identity_headers.clear();
                for (const auto &header : n) {
                    std::string name = yaml_.scalar(header, "a header name");
                    std::transform(name.begin(), name.end(), name.begin(),
                                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
                    map.identity_headers.push_back(name);
                }
            }
            out.map_endpoint = std::move(map);
        } else {
            for (const char *key :
                 {"map_cache_ttl", "map_timeout", "map_identity_headers", "map_storage", "map_algorithm"}) {
                if (parameters[key]) yaml_.fail(parameters[key], std::string(key) + " needs map_endpoint");
            }
        }
    }

    void read_limiter(const YAML::Node &node, LimiterConfig &out) {
        yaml_.expect_map(node, "limiter",
                         {"type", "conninfo", "pool_size", "schema", "failure_mode", "pipeline", "timeout"});
        const auto type = node["type"];
        if (!type) yaml_.fail(node, "the limiter needs type: pg_ratelimit");
        if (yaml_.scalar(type, "type") != "pg_ratelimit") {
            yaml_.fail(type, "limiter type \"" + type.Scalar() +
                                 "\" is not supported (this gate's limiter is type: pg_ratelimit, with a conninfo)");
        }
        const auto conninfo = node["conninfo"];
        if (!conninfo) yaml_.fail(node, "the limiter needs a conninfo (\"host=/run/postgresql dbname=app\")");
        out.conninfo = yaml_.scalar(conninfo, "conninfo");
        // libpq's own parser: a typo is a configuration error now, not a failed connection at every attempt
        // (and a bare word, which the connection's params form would take as a database name, is refused).
        char *error = nullptr;
        PQconninfoOption *parsed = PQconninfoParse(out.conninfo.c_str(), &error);
        if (parsed == nullptr) {
            std::string why = error != nullptr ? error : "out of memory";
            PQfreemem(error);
            while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
            yaml_.fail(conninfo, "conninfo: " + why);
        }
        PQconninfoFree(parsed);
        if (const auto n = node["pool_size"]) out.pool_size = static_cast<int>(yaml_.integer(n, "pool_size", 1, 256));
        if (const auto n = node["schema"]) {
            out.schema = yaml_.scalar(n, "schema");
            if (out.schema.empty() || out.schema.find('\0') != std::string::npos)
                yaml_.fail(n, "schema must name a schema");
        }
        if (const auto n = node["failure_mode"]) {
            const std::string mode = yaml_.scalar(n, "failure_mode");
            if (mode == "open") {
                out.failure_mode = FailureMode::open;
            } else if (mode == "closed") {
                out.failure_mode = FailureMode::closed;
            } else {
                yaml_.fail(n, "failure_mode must be open or closed, not \"" + mode + "\"");
            }
        }
        if (const auto n = node["pipeline"]) out.pipeline = yaml_.boolean(n, "pipeline");
        if (const auto n = node["timeout"]) out.timeout = duration(n, "timeout", true);
    }

    void read_jwt(const YAML::Node &node, jwt::JwtSettings &out) {
        yaml_.expect_map(node, "jwt", {"hs256_secret", "public_keys", "leeway"});
        if (const auto n = node["hs256_secret"]) {
            out.hs256_secret = yaml_.scalar(n, "hs256_secret");
            if (out.hs256_secret.size() < 32) {
                yaml_.fail(n, "hs256_secret must be at least 32 bytes (RFC 7518 3.2: a key as long as the hash)");
            }
        }
        if (const auto n = node["public_keys"]) {
            yaml_.expect_sequence(n, "public_keys");
            for (const auto &pem : n) {
                std::string error;
                auto key = jwt::load_public_key(yaml_.scalar(pem, "a public key"), &error);
                if (!key) yaml_.fail(pem, "public key: " + error);
                out.public_keys.push_back(*key);
            }
        }
        if (const auto n = node["leeway"]) {
            out.leeway = std::chrono::duration_cast<std::chrono::seconds>(duration(n, "leeway", false));
        }
        if (out.hs256_secret.empty() && out.public_keys.empty()) {
            yaml_.fail(node, "jwt configures no key (hs256_secret, public_keys)");
        }
    }

    Storage storage(const YAML::Node &n) {
        const std::string text = yaml_.scalar(n, "storage");
        for (const Storage s : {Storage::durable, Storage::unlogged, Storage::memory}) {
            if (text == to_string(s)) return s;
        }
        yaml_.fail(n, "storage must be durable, unlogged or memory, not \"" + text + "\"");
    }

    Algorithm algorithm(const YAML::Node &n) {
        const std::string text = yaml_.scalar(n, "algorithm");
        for (const Algorithm a :
             {Algorithm::gcra, Algorithm::token_bucket, Algorithm::fixed_window, Algorithm::sliding_window}) {
            if (text == to_string(a)) return a;
        }
        yaml_.fail(n, "algorithm must be gcra, token_bucket, fixed_window or sliding_window, not \"" + text + "\"");
    }

    LimitConfig read_limit(const YAML::Node &node, RateLimitPlugin &plugin) {
        yaml_.expect_map(node, "a limit",
                         {"key", "comment", "burst", "interval", "window", "max_throttle", "request_field", "storage",
                          "algorithm", "on_missing"});
        LimitConfig out;
        out.line = YamlReader::line(node);
        const auto key = node["key"];
        if (!key) yaml_.fail(node, "a limit needs a key (global, username, ...)");
        out.key = yaml_.scalar(key, "key");
        const bool key_ok = !out.key.empty() && out.key.size() <= MAX_LIMIT_KEY &&
                            std::all_of(out.key.begin(), out.key.end(), [](unsigned char c) {
                                return std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == ':';
                            });
        if (!key_ok) {
            yaml_.fail(key, "limit key \"" + out.key + "\": 1 to " + std::to_string(MAX_LIMIT_KEY) +
                                " letters, digits, '_', '-', '.' or ':'");
        }
        if (const auto n = node["comment"]) out.comment = yaml_.scalar(n, "comment");
        const auto window = node["window"];
        if (!window) yaml_.fail(node, "limit \"" + out.key + "\" needs a window (1s, 1m, ...)");
        out.window = duration(window, "window", true);
        const auto burst = node["burst"];
        const auto interval = node["interval"];
        if (burst && interval) yaml_.fail(interval, "limit \"" + out.key + "\": give burst or interval, not both");
        if (burst) {
            out.burst = yaml_.number(burst, "burst");
            if (out.burst < 1 || out.burst > 1e12) yaml_.fail(burst, "burst must be from 1 to 1e12");
        } else if (interval) {
            const auto every = duration(interval, "interval", true);
            out.burst = static_cast<double>(out.window.count()) / static_cast<double>(every.count());
            if (out.burst < 1)
                yaml_.fail(interval, "interval is longer than the window (less than one request per window)");
        } else {
            yaml_.fail(node, "limit \"" + out.key + "\" needs burst (requests per window) or interval");
        }
        if (const auto n = node["max_throttle"]) out.max_throttle = duration(n, "max_throttle", false);
        if (const auto n = node["storage"]) out.storage = storage(n);
        if (const auto n = node["algorithm"]) out.algorithm = algorithm(n);
        if (out.algorithm == Algorithm::sliding_window && out.max_throttle.count() > 0) {
            yaml_.fail(node["max_throttle"], "limit \"" + out.key +
                                                 "\": a sliding window takes no reservations, so it cannot throttle "
                                                 "(remove max_throttle or choose another algorithm)");
        }
        if (const auto n = node["request_field"]) {
            std::string error;
            auto path = request_fields::parse_field_path(yaml_.scalar(n, "request_field"), &error);
            if (!path) yaml_.fail(n, error);
            if (path->kind == request_fields::FieldKind::claim) {
                if (plugin.jwt.hs256_secret.empty() && plugin.jwt.public_keys.empty()) {
                    yaml_.fail(n, "request_field " + path->text +
                                      " reads a JWT claim, but parameters.jwt configures no key to verify tokens with");
                }
                plugin.needs_claims = true;
            }
            out.request_field = std::move(path);
        }
        if (const auto n = node["on_missing"]) {
            if (!out.request_field) yaml_.fail(n, "on_missing applies only to a limit with a request_field");
            const std::string text = yaml_.scalar(n, "on_missing");
            if (text == "skip") {
                out.on_missing = OnMissing::skip;
            } else if (text == "reject") {
                out.on_missing = OnMissing::reject;
            } else if (text.rfind("key:", 0) == 0 && text.size() > 4) {
                out.on_missing = OnMissing::constant;
                out.missing_key = text.substr(4);
            } else {
                yaml_.fail(n, "on_missing must be skip, reject or key:<constant>, not \"" + text + "\"");
            }
        }
        return out;
    }

    void read_urls(const YAML::Node &urls) {
        yaml_.expect_sequence(urls, "urls");
        for (const auto &url : urls) {
            yaml_.expect_map(url, "a URL", {"pattern", "host", "target", "plugins"});
            RouteConfig route;
            route.line = YamlReader::line(url);
            const auto pattern = url["pattern"];
            if (!pattern) yaml_.fail(url, "a URL needs a pattern ('*/hello')");
            route.pattern = yaml_.scalar(pattern, "pattern");
            if (route.pattern.empty()) yaml_.fail(pattern, "an empty pattern");
            if (const auto host = url["host"]) route.host_pattern = yaml_.scalar(host, "host");
            const auto target = url["target"];
            if (!target) yaml_.fail(url, "URL " + route.pattern + " needs a target (http://host:port)");
            std::string error;
            auto parsed = parse_http_url(yaml_.scalar(target, "target"), &error);
            if (!parsed) yaml_.fail(target, "target: " + error);
            if (parsed->path != "/")
                yaml_.fail(target, "a target is http://host:port: the request's path is kept as is");
            route.target = parsed->address;
            if (config_.ratelimit) {
                route.ratelimit = config_.ratelimit->enabled;
                for (std::size_t i = 0; i < config_.ratelimit->limits.size(); ++i) route.limits.push_back(i);
            }
            if (const auto plugins = url["plugins"]) read_url_plugins(plugins, route);
            config_.routes.push_back(std::move(route));
        }
    }

    void read_url_plugins(const YAML::Node &plugins, RouteConfig &route) {
        if (!plugins.IsMap()) yaml_.fail(plugins, "a URL's plugins must be a mapping (ratelimit: {enabled: true})");
        for (const auto &entry : plugins) {
            const std::string id = entry.first.Scalar();
            if (!config_.ratelimit || id != config_.ratelimit->id) {
                yaml_.fail(entry.first, "plugin \"" + id + "\" is not defined under gate.plugins");
            }
            const YAML::Node settings = entry.second;
            yaml_.expect_map(settings, "plugin " + id + " of a URL", {"enabled", "monitoring", "limits"});
            if (const auto n = settings["enabled"]) route.ratelimit = yaml_.boolean(n, "enabled");
            if (const auto n = settings["monitoring"]) route.monitoring = yaml_.boolean(n, "monitoring");
            if (const auto n = settings["limits"]) {
                yaml_.expect_sequence(n, "limits");
                route.limits.clear();
                for (const auto &name : n) {
                    const std::string key = yaml_.scalar(name, "a limit key");
                    const auto &limits = config_.ratelimit->limits;
                    const auto found =
                        std::find_if(limits.begin(), limits.end(), [&](const LimitConfig &l) { return l.key == key; });
                    if (found == limits.end()) yaml_.fail(name, "no limit has key \"" + key + "\"");
                    route.limits.push_back(static_cast<std::size_t>(found - limits.begin()));
                }
            }
        }
    }

    YamlReader yaml_;
    GateConfig config_;
};

}  // namespace

GateConfig load_config(const std::string &file) { return Loader(file).run(); }

}  // namespace gate::config
