#include "map/map_client.hpp"

#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

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
    std::string identity;
};

}  // namespace

MapClient::MapClient(http::UpstreamPool &upstreams, const config::MapEndpointConfig &config, admin::Metrics &metrics,
                     MapCache &cache)
    : upstreams_(upstreams), config_(config), metrics_(metrics), cache_(cache) {}

std::string MapClient::identity(const Request &request) const {
    std::string key(request.method_string());
    key += ' ';
    key += request.target();
    for (const auto &name : config_.identity_headers) {
        key += '\n';
        const auto range = request.equal_range(name);
        for (auto it = range.first; it != range.second; ++it) {
            key += it->value();
            key += '\0';
        }
    }
    return key;
}

void MapClient::limits_for(const Request &request, const std::string &client_ip, Done done) {
    auto fetch = std::make_shared<Fetch>();
    fetch->identity = identity(request);
    if (auto cached = cache_.find(fetch->identity, Clock::now())) {
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
                bhttp::async_read(fetch->upstream->stream, fetch->upstream->buffer, fetch->parser,
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
                                      std::string error;
                                      auto limits = parse_map_limits(response.body(), config_, &error);
                                      if (!limits) {
                                          fail(fetch, error);
                                          return;
                                      }
                                      if (fetch->parser.keep_alive()) upstreams_.release(std::move(fetch->upstream));
                                      auto answer =
                                          std::make_shared<const std::vector<limiter::MapLimit>>(std::move(*limits));
                                      cache_.store(fetch->identity, answer, Clock::now());
                                      metrics_.map_call("fetched");
                                      fetch->done(std::move(answer), "");
                                  });
            });
    });
}

}  // namespace gate::map
