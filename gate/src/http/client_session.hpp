// One client connection: read a request's header, decide it (client_session.cpp), then forward it with its
// body streamed both ways, or answer it (forward.cpp); then the next request on the same connection.
#pragma once

#include <array>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/serializer.hpp>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "admin/metrics.hpp"
#include "http/responses.hpp"
#include "http/worker.hpp"
#include "limiter/decision.hpp"
#include "limiter/plan.hpp"
#include "map/map_cache.hpp"
#include "request_fields/request_view.hpp"

namespace gate::http {

// Bodies are streamed, never held whole: no limit. (Not boost::none: Boost 1.74's parser compares a
// Content-Length with the optional limit, and any number is greater than none: every body would be refused.)
constexpr std::uint64_t UNLIMITED_BODY = std::numeric_limits<std::uint64_t>::max();

class ClientSession : public std::enable_shared_from_this<ClientSession> {
  public:
    ClientSession(Worker &worker, boost::asio::ip::tcp::socket socket);
    void start();

  private:
    using Clock = std::chrono::steady_clock;
    using Fields = std::vector<std::pair<std::string, std::string>>;

    // One request's state.
    struct Exchange {
        int route = -1;
        std::string raw_target{};  // the request target as received (the access log's)
        Clock::time_point started{};
        bool keep_alive = true;
        bool monitoring = false;
        map::MapAnswer map_answer{};  // the plan's map limits point into it
        limiter::Plan plan{};
        limiter::CallOutcome decision{};
        Fields response_fields{};  // added to the answer (RateLimit, ...)
        Fields request_fields{};   // added to the request for the backend
        admin::Outcome outcome = admin::Outcome::unlimited;
        double limiter_ms = -1;
        double throttled_ms = 0;
        std::vector<limiter::Triple> reserved{};  // throttled: what to give back if the client leaves
        unsigned status = 0;
        std::uint64_t bytes = 0;
    };

    // client_session.cpp: reading and deciding.
    void read_request();
    void on_header(boost::system::error_code ec);
    void start_limits();
    void with_map_answer(map::MapAnswer answer);
    void request_all();
    void on_decision(limiter::CallOutcome outcome);
    void apply_decision_metrics(const limiter::CallOutcome &outcome, admin::LimitOutcome allowed_as);
    void deny();
    void try_throttle();
    void on_reserved(limiter::CallOutcome outcome);
    void watch_client();
    void poll_client();
    [[nodiscard]] bool peer_closed();
    void on_throttle_timer();
    void on_watch(boost::system::error_code ec, std::size_t bytes);
    void client_left_while_throttled();
    void bypass(const std::string &reason, const std::string &detail);
    void respond(Response response);
    void finish(bool keep_alive);
    void close();
    [[nodiscard]] const config::RouteConfig &route() const;

    // forward.cpp: proxying.
    void forward();
    void connect_upstream();
    void on_upstream(boost::system::error_code ec, std::unique_ptr<Upstream> upstream);
    void send_request_part();
    void write_request_part();
    void read_response_header();
    void on_response_header(boost::system::error_code ec);
    void send_response_part();
    void write_response_part();
    void upstream_failed(boost::system::error_code ec, const char *stage);
    [[nodiscard]] bool may_retry_upstream() const;

    Worker &worker_;
    boost::beast::tcp_stream client_;
    boost::beast::flat_buffer buffer_;
    std::string client_ip_;
    std::optional<boost::beast::http::request_parser<boost::beast::http::buffer_body>> parser_{};
    request_fields::RequestView view_{};
    std::optional<nlohmann::json> claims_{};
    Exchange x_{};

    // Throttling.
    boost::asio::steady_timer throttle_timer_;
    boost::asio::steady_timer poll_timer_;  // read-ahead full: looks for a hang-up (peer_closed)
    bool timer_fired_ = false;
    bool watching_ = false;
    bool client_gone_ = false;
    Clock::time_point throttle_started_{};

    // Forwarding.
    std::unique_ptr<Upstream> upstream_{};
    std::optional<boost::beast::http::request_serializer<boost::beast::http::buffer_body>> request_writer_{};
    std::optional<boost::beast::http::response_parser<boost::beast::http::buffer_body>> response_parser_{};
    std::optional<boost::beast::http::response_serializer<boost::beast::http::buffer_body>> response_writer_{};
    bool expects_continue_ = false;
    bool request_body_empty_ = true;
    bool retried_ = false;
    bool upstream_reusable_ = false;
    bool response_started_ = false;
    bool head_request_ = false;
    unsigned client_version_ = 11;
    std::array<char, 16384> request_chunk_{};
    std::array<char, 16384> response_chunk_{};
};

}  // namespace gate::http
