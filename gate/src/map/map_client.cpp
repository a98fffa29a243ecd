#include "map/map_client.hpp"

#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <algorithm>
#include <cctype>

#include "http/proxy_headers.hpp"
#include "map/map_limits.hpp"

namespace gate::map {

namespace bhttp = boost::beast::http;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t MAX_ANSWER_BYTES = 1 << 20;

struct Fetch {
    bhttp::request<bhttp::empty_body> request;
    bhttp::response_parser<bhttp::string_body> parser;
    std::unique_ptr<http::Upstream> upstream;
    MapClient::Done done;
    const MapClient::Request *original = nullptr;  // alive until done runs (its session waits for it)
};

// The field names of a Vary value, lower case; "*" among them if it says "*".
std::vector<std::string> vary_names(std::string_view value) {
    std::vector<std::string> names;
    while (!value.empty()) {
        const auto comma = value.find(',');
        std::string_view item = value.substr(0, comma);
        value = comma == std::string_view::npos ? std::string_view{} : value.substr(comma + 1);
        while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
        while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
        if (item.empty()) continue;
        std::string name(item);
        for (auto &c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        names.push_back(std::move(name));
    }
    return names;
}

bool contains_token(std::string_view value, std::string_view token) {
    for (const auto &name : vary_names(value)) {
        if (name == token || name.rfind(std::string(token) + "=", 0) == 0) return true;
    }
    return false;
}

}  // namespace

MapClient::MapClient(http::UpstreamPool &upstreams, const config::MapEndpointConfig &config, admin::Metrics &metrics,
                     MapCache &cache)
    : upstreams_(upstreams), config_(config), metrics_(metrics), cache_(cache) {}

std::string MapClient::identity(const Request &request) const { return identity(request, cache_.vary()); }

std::string MapClient::identity(const Request &request, const std::vector<std::string> &vary) const {
    std::string key(request.method_string());
    key += ' ';
    key += request.target();
    const auto add = [&](const std::string &name) {
        key += '\n';
        key += name;
        key += ':';
        const auto range = request.equal_range(name);
        for (auto it = range.first; it != range.second; ++it) {
            key += it->value();
            key += '\0';
        }
    };
    for (const auto &name : config_.identity_headers) add(name);
    key += "\nvary";
    for (const auto &name : vary) add(name);
    return key;
}

void MapClient::limits_for(const Request &request, const std::string &client_ip, Done done) {
    auto fetch = std::make_shared<Fetch>();
    fetch->original = &request;
    if (auto cached = cache_.find(identity(request), Clock::now())) {
        metrics_.map_call("cached");
        done(std::move(cached), "");
        return;
    }
    fetch->done = std::move(done);
    fetch->request.method(bhttp::verb::get);
    fetch->request.target(config_.url.path);
    fetch->request.version(11);
    for (const auto &field : request) {
        // Framing fields describe the original body, which is not sent.
        if (field.name() == bhttp::field::content_length || field.name() == bhttp::field::transfer_encoding) continue;
        fetch->request.insert(field.name_string(), field.value());
    }
    http::remove_hop_by_hop(fetch->request);
    fetch->request.set(bhttp::field::host, config_.url.address.text());
    fetch->request.set("X-Forwarded-Method", request.method_string());
    fetch->request.set("X-Forwarded-Uri", request.target());
    fetch->request.set("X-Forwarded-For", client_ip);
    fetch->request.keep_alive(true);
    fetch->parser.body_limit(MAX_ANSWER_BYTES);

    const auto fail = [this](const std::shared_ptr<Fetch> &f, const std::string &error) {
        metrics_.map_call("failed");
        f->done(nullptr, error);
    };
    upstreams_.acquire(config_.url.address, [this, fetch, fail](boost::system::error_code ec,
                                                                std::unique_ptr<http::Upstream> upstream) {
        if (ec) {
            fail(fetch, "connect: " + ec.message());
            return;
        }
        fetch->upstream = std::move(upstream);
        fetch->upstream->stream.expires_after(config_.timeout);
        bhttp::async_write(
            fetch->upstream->stream, fetch->request, [this, fetch, fail](boost::system::error_code ec, std::size_t) {
                if (ec) {
                    fail(fetch, "send: " + ec.message());
                    return;
                }
                bhttp::async_read(
                    fetch->upstream->stream, fetch->upstream->buffer, fetch->parser,
                    [this, fetch, fail](boost::system::error_code ec, std::size_t) {
                        if (ec) {
                            fail(fetch, "read: " + ec.message());
                            return;
                        }
                        auto &response = fetch->parser.get();
                        if (response.result() != bhttp::status::ok) {
                            fail(fetch, "answered " + std::to_string(response.result_int()));
                            return;
                        }
                        if (response.body().size() > MAX_ANSWER_BYTES) {
                            fail(fetch, "an answer of more than 1 MiB");
                            return;
                        }
                        std::string error;
                        auto limits = parse_map_limits(response.body(), config_, &error);
                        if (!limits) {
                            fail(fetch, error);
                            return;
                        }
                        std::vector<std::string> names;
                        for (const auto &limit : *limits) names.push_back(limit.spec.name);
                        if (!cache_.admit_definitions(names)) {
                            fail(fetch, "more than " + std::to_string(MAX_MAP_DEFINITIONS) +
                                            " distinct limits from the map endpoint (numbers "
                                            "that change on every answer?): not defined");
                            return;
                        }
                        if (fetch->parser.keep_alive()) upstreams_.release(std::move(fetch->upstream));
                        auto answer = std::make_shared<const std::vector<limiter::MapLimit>>(std::move(*limits));
                        // Cached unless the answer forbids it, or varies on what the identity
                        // cannot hold; under an identity that includes every field it varies on.
                        const auto vary = vary_names(response[bhttp::field::vary]);
                        const bool storable = std::find(vary.begin(), vary.end(), "*") == vary.end() &&
                                              !contains_token(response[bhttp::field::cache_control], "no-store") &&
                                              !contains_token(response[bhttp::field::cache_control], "no-cache") &&
                                              cache_.learn_vary(vary);
                        if (storable) {
                            cache_.store(identity(*fetch->original), answer, Clock::now());
                        }
                        metrics_.map_call("fetched");
                        fetch->done(std::move(answer), "");
                    });
            });
    });
}

}  // namespace gate::map
