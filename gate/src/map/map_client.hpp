// Asking the map endpoint for a request's limits: GET on its URL with the request's own header fields (hop by
// hop ones removed) and its method and target in X-Forwarded-Method and X-Forwarded-Uri (the seed: "the
// method, path and headers of the original request are forwarded"), answers cached per request identity.
#pragma once

#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/message.hpp>
#include <functional>
#include <string>
#include <vector>

#include "admin/metrics.hpp"
#include "config/config.hpp"
#include "http/upstream_pool.hpp"
#include "map/map_cache.hpp"

namespace gate::map {

class MapClient {
  public:
    using Done = std::function<void(MapAnswer answer, const std::string &error)>;
    using Request = boost::beast::http::request<boost::beast::http::buffer_body>;

    MapClient(http::UpstreamPool &upstreams, const config::MapEndpointConfig &config, admin::Metrics &metrics,
              MapCache &cache);

    // The limits for this request (from the cache while fresh), or an error (the endpoint unreachable, not
    // 200, not the expected JSON, or slower than map_timeout). done runs on this thread: at once for a cached answer.
    void limits_for(const Request &request, const std::string &client_ip, Done done);

    // The cache key: method, target, the configured identity headers' values and those of every field an
    // answer named in Vary (MapCache::vary()). An answer with Vary: * or Cache-Control: no-store (or
    // no-cache) is not cached.
    [[nodiscard]] std::string identity(const Request &request) const;
    [[nodiscard]] std::string identity(const Request &request, const std::vector<std::string> &vary) const;

  private:
    http::UpstreamPool &upstreams_;
    const config::MapEndpointConfig &config_;
    admin::Metrics &metrics_;
    MapCache &cache_;  // the process's, shared by every thread
};

}  // namespace gate::map
