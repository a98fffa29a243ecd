#include "http/client_session.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <boost/asio/post.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include <ctime>

#include "http/routes.hpp"
#include "limiter/rate_headers.hpp"
#include "map/map_client.hpp"
#include "request_fields/query.hpp"

namespace gate::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using Clock = std::chrono::steady_clock;

namespace {

// Bytes a throttled request may have sent ahead (its body, pipelined requests) while the gate watches its
// connection for a hang-up; beyond that the gate stops reading until the delay ends.
constexpr std::size_t THROTTLE_READ_AHEAD = std::size_t{64} * 1024;
// Past THROTTLE_READ_AHEAD, how often the connection's state is looked at for a hang-up.
constexpr std::chrono::milliseconds CLOSED_POLL{100};

double millis_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

ClientSession::ClientSession(Worker &worker, asio::ip::tcp::socket socket)
    : worker_(worker), client_(std::move(socket)), throttle_timer_(worker.io), poll_timer_(worker.io) {}

const config::RouteConfig &ClientSession::route() const {
    return worker_.shared.config.routes[static_cast<std::size_t>(x_.route)];
}

void ClientSession::start() {
    boost::system::error_code ec;
    const auto peer = client_.socket().remote_endpoint(ec);
    client_ip_ = ec ? "-" : peer.address().to_string();
    client_.socket().set_option(asio::ip::tcp::no_delay(true), ec);
    read_request();
}

void ClientSession::read_request() {
    x_ = Exchange{};
    claims_.reset();
    upstream_reusable_ = false;
    response_started_ = false;
    retried_ = false;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(worker_.shared.config.max_header_bytes));
    parser_->body_limit(UNLIMITED_BODY);  // bodies are streamed, never held whole
    client_.expires_after(worker_.shared.config.client_timeout);
    bhttp::async_read_header(
        client_, buffer_, *parser_,
        [self = shared_from_this()](boost::system::error_code ec, std::size_t) { self->on_header(ec); });
}

void ClientSession::on_header(boost::system::error_code ec) {
    if (ec) {
        // A client that closes between requests, or idles past client_timeout, just goes.
        // Only a malformed request gets an answer; a client that closes between requests (or half-way
        // through one), or idles past client_timeout, just goes.
        const bool malformed = ec.category() == bhttp::make_error_code(bhttp::error::bad_method).category() &&
                               ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message;
        if (!malformed) {
            close();
            return;
        }
        x_.started = Clock::now();
        x_.keep_alive = false;
        const bool too_large = ec == bhttp::error::header_limit;
        respond(json_error(too_large ? bhttp::status::request_header_fields_too_large : bhttp::status::bad_request, 11,
                           too_large ? "header_too_large" : "bad_request"));
        return;
    }
    client_.expires_never();  // the decision and a throttle delay have timeouts of their own
    x_.started = Clock::now();
    auto &request = parser_->get();
    x_.keep_alive = request.keep_alive();
    client_version_ = request.version();
    head_request_ = request.method() == bhttp::verb::head;
    x_.raw_target = std::string(request.target());
    // Routed, decided and forwarded on the normalised target: the backend gets the path the patterns saw
    // (a normalising backend would otherwise serve "/z/../api/x" as "/api/x" past an '/api/*' limit).
    // A target that cannot be normalised safely (an escaped '/', ".." above the root, ...) gets 400.
    std::string why;
    auto normalized = normalize_target(x_.raw_target, &why);
    if (!normalized) {
        respond(
            json_error(bhttp::status::bad_request, client_version_, "bad_target", "\"detail\": " + json_string(why)));
        return;
    }
    // Absolute-form: the target's authority is the host (RFC 9112 3.2.2: the Host field is replaced).
    if (!normalized->authority.empty()) request.set(bhttp::field::host, normalized->authority);
    if (normalized->target != x_.raw_target) request.target(normalized->target);
    x_.route = match_route(worker_.shared.config.routes, normalized->path, request[bhttp::field::host]);
    if (x_.route < 0) {
        respond(json_error(bhttp::status::not_found, client_version_, "no_route"));
        return;
    }
    const auto &shared = worker_.shared;
    if (!route().ratelimit || !shared.config.ratelimit) {
        forward();
        return;
    }
    x_.monitoring = route().monitoring;
    start_limits();
}

void ClientSession::start_limits() {
    const auto &plugin = *worker_.shared.config.ratelimit;
    auto &request = parser_->get();
    view_ = request_fields::RequestView{};
    view_.method = request.method_string();
    view_.target = request.target();
    view_.host = request[bhttp::field::host];
    view_.client_ip = client_ip_;
    view_.header_values = [&request](std::string_view name, std::vector<std::string_view> &out) {
        const auto range = request.equal_range(name);
        for (auto it = range.first; it != range.second; ++it) out.push_back(it->value());
    };
    if (plugin.needs_claims && worker_.shared.jwt) {
        const auto token = jwt::JwtVerifier::bearer_token(request[bhttp::field::authorization]);
        if (token) {
            std::string why;
            claims_ = worker_.shared.jwt->verify(*token, static_cast<std::int64_t>(std::time(nullptr)), &why);
        }
    }
    view_.claims = claims_ ? &*claims_ : nullptr;

    if (!plugin.map_endpoint) {
        with_map_answer(nullptr);
        return;
    }
    worker_.map_client->limits_for(request, client_ip_,
                                   [self = shared_from_this()](map::MapAnswer answer, const std::string &error) {
                                       if (!error.empty()) {
                                           self->bypass("map-endpoint-unavailable", "map endpoint: " + error);
                                           return;
                                       }
                                       self->with_map_answer(std::move(answer));
                                   });
}

void ClientSession::with_map_answer(map::MapAnswer answer) {
    x_.map_answer = std::move(answer);
    static const std::vector<limiter::MapLimit> none;
    x_.plan = limiter::make_plan(worker_.shared.route_limits[static_cast<std::size_t>(x_.route)], view_,
                                 x_.map_answer ? *x_.map_answer : none, x_.monitoring);
    if (!x_.plan.rejected.empty()) {
        x_.outcome = admin::Outcome::rejected;
        respond(json_error(bhttp::status::bad_request, client_version_, "missing_request_field",
                           "\"limit\": " + json_string(x_.plan.rejected)));
        return;
    }
    if (!x_.plan.bad_key.empty()) {
        x_.outcome = admin::Outcome::rejected;
        respond(json_error(bhttp::status::bad_request, client_version_, "bad_request_field",
                           "\"limit\": " + json_string(x_.plan.bad_key) +
                               ", \"detail\": \"a key of more than 1024 bytes, with a NUL byte, or not valid UTF-8\""));
        return;
    }
    if (x_.plan.limits.empty()) {
        forward();
        return;
    }
    std::vector<const limiter::LimitSpec *> specs;
    for (const auto &limit : x_.plan.limits) specs.push_back(limit.spec);
    worker_.definitions->ensure(specs, [self = shared_from_this()](const std::string &error) {
        if (!error.empty()) {
            self->bypass(self->worker_.pool->any_ready() ? "limiter-error" : "database-unavailable", error);
            return;
        }
        self->request_all();
    });
}

void ClientSession::request_all() {
    std::vector<limiter::Triple> triples;
    for (const auto &limit : x_.plan.limits) triples.push_back(limit.triple());
    const auto sent = Clock::now();
    worker_.decider->request_all(std::move(triples), [self = shared_from_this(), sent](limiter::CallOutcome outcome) {
        const auto latency = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - sent);
        self->worker_.shared.metrics.limiter_call(latency);
        self->x_.limiter_ms = static_cast<double>(latency.count()) / 1000.0;
        self->on_decision(std::move(outcome));
    });
}

void ClientSession::apply_decision_metrics(const limiter::CallOutcome &outcome, admin::LimitOutcome allowed_as) {
    const auto &limits = worker_.shared.limits;
    for (std::size_t i = 0; i < x_.plan.limits.size() && i < outcome.each.size(); ++i) {
        int index = -1;
        for (std::size_t l = 0; l < limits.size(); ++l) {
            if (&limits[l].spec == x_.plan.limits[i].spec || &limits[l].monitor_spec == x_.plan.limits[i].spec)
                index = static_cast<int>(l);
        }
        const bool allowed = outcome.each[i].allowed && !outcome.each[i].shadow_denied;
        worker_.shared.metrics.limit(x_.route, index, allowed ? allowed_as : admin::LimitOutcome::denied);
    }
}

void ClientSession::on_decision(limiter::CallOutcome outcome) {
    if (outcome.status != limiter::CallStatus::decided) {
        // A limit dropped by hand (42704): defined again for the next request.
        if (outcome.error.rfind("42704", 0) == 0) {
            for (const auto &limit : x_.plan.limits) worker_.definitions->forget(limit.spec->name);
        }
        // SQLSTATE class 22 (data exception: a key the database refuses, such as 22021 for bytes that are
        // not UTF-8) is the request's doing: 400, never failure_mode, or a client could pick its own bypass.
        if (outcome.status == limiter::CallStatus::error && outcome.sqlstate.rfind("22", 0) == 0) {
            worker_.log("request refused by the database (" + outcome.error + ")");
            x_.outcome = admin::Outcome::rejected;
            respond(json_error(
                bhttp::status::bad_request, client_version_, "bad_request_field",
                "\"detail\": \"the database refused a key of this request (SQLSTATE " + outcome.sqlstate + ")\""));
            return;
        }
        const bool unavailable = outcome.status == limiter::CallStatus::unavailable;
        bypass(unavailable ? "database-unavailable" : "limiter-error", outcome.error);
        return;
    }
    x_.decision = std::move(outcome);
    const auto &d = x_.decision;
    const auto fields = limiter::rate_fields(x_.plan.limits, d.each, d.overall);
    if (x_.monitoring) {
        // Decided on the limits' monitoring twins (limiter::monitoring_twin): the count is this URL's own,
        // and an enforced URL's allowance of the same limit is never spent by monitored traffic.
        apply_decision_metrics(d, admin::LimitOutcome::allowed);
        x_.response_fields.push_back({"RateLimit-Policy", fields.policy});
        x_.response_fields.push_back({"RateLimit", fields.ratelimit});
        // Only when it would have been denied (a shadow limit's would-be denial included): the backend
        // decides what to do with it, the client sees the same.
        if (!d.overall.allowed || d.overall.shadow_denied) {
            x_.outcome = admin::Outcome::would_deny;
            x_.response_fields.push_back({"X-RateLimit-Would-Deny", "true"});
            x_.request_fields.push_back({"X-RateLimit-Would-Deny", "true"});
        } else {
            x_.outcome = admin::Outcome::allowed;
        }
        forward();
        return;
    }
    if (d.overall.allowed) {
        apply_decision_metrics(d, admin::LimitOutcome::allowed);
        x_.outcome = admin::Outcome::allowed;
        x_.response_fields.push_back({"RateLimit-Policy", fields.policy});
        x_.response_fields.push_back({"RateLimit", fields.ratelimit});
        forward();
        return;
    }
    try_throttle();
}

void ClientSession::deny() {
    const auto &d = x_.decision;
    apply_decision_metrics(d, admin::LimitOutcome::allowed);
    x_.outcome = admin::Outcome::denied;
    const auto fields = limiter::rate_fields(x_.plan.limits, d.each, d.overall);
    auto response =
        too_many_requests(client_version_, d.overall.retry_after, limiter::longest_denial(x_.plan.limits, d.each));
    response.set("Retry-After", fields.retry_after);
    response.set("RateLimit-Policy", fields.policy);
    response.set("RateLimit", fields.ratelimit);
    respond(std::move(response));
}

void ClientSession::try_throttle() {
    const auto &d = x_.decision;
    // Throttled only if every limit that refused would admit it within its own max_throttle.
    bool throttle = true;
    std::vector<limiter::Triple> triples;
    std::vector<std::chrono::microseconds> waits;
    for (std::size_t i = 0; i < x_.plan.limits.size(); ++i) {
        const auto &spec = *x_.plan.limits[i].spec;
        if (!d.each[i].allowed && (spec.max_throttle.count() <= 0 || d.each[i].retry_after > spec.max_throttle)) {
            throttle = false;
        }
        triples.push_back(x_.plan.limits[i].triple());
        waits.push_back(spec.max_throttle);
    }
    if (!throttle) {
        deny();
        return;
    }
    worker_.decider->reserve_all(
        std::move(triples), std::move(waits),
        [self = shared_from_this()](limiter::CallOutcome outcome) { self->on_reserved(std::move(outcome)); });
}

void ClientSession::on_reserved(limiter::CallOutcome outcome) {
    if (outcome.status != limiter::CallStatus::decided) {
        // The first answer stands: denied (a reservation that may have been made is in doubt; nothing to undo
        // that can be known).
        deny();
        return;
    }
    std::vector<limiter::Triple> taken;
    for (std::size_t i = 0; i < x_.plan.limits.size(); ++i) {
        // A shadow limit's would-be denial took nothing: nothing to give back.
        if (outcome.each[i].allowed && !outcome.each[i].shadow_denied) taken.push_back(x_.plan.limits[i].triple());
    }
    if (!outcome.overall.allowed) {
        // Another request took the units between the two calls: give back what was reserved, then deny.
        if (!taken.empty()) {
            worker_.decider->refund_all(taken, [self = shared_from_this()](const limiter::CallOutcome &refund) {
                self->worker_.shared.metrics.refund(refund.status == limiter::CallStatus::decided);
            });
        }
        deny();
        return;
    }
    x_.reserved = std::move(taken);
    x_.outcome = admin::Outcome::throttled;
    const auto fields = limiter::rate_fields(x_.plan.limits, outcome.each, outcome.overall);
    x_.response_fields.push_back({"RateLimit-Policy", fields.policy});
    x_.response_fields.push_back({"RateLimit", fields.ratelimit});
    for (std::size_t i = 0; i < x_.plan.limits.size(); ++i) {
        int index = -1;
        for (std::size_t l = 0; l < worker_.shared.limits.size(); ++l) {
            if (&worker_.shared.limits[l].spec == x_.plan.limits[i].spec) index = static_cast<int>(l);
        }
        worker_.shared.metrics.limit(
            x_.route, index,
            outcome.each[i].retry_after.count() > 0 ? admin::LimitOutcome::throttled : admin::LimitOutcome::allowed);
    }
    // Wait on a timer (no thread held), watching the connection: a client that hangs up gets its
    // reservations given back at once and its request never reaches the backend.
    throttle_started_ = Clock::now();
    timer_fired_ = false;
    client_gone_ = false;
    throttle_timer_.expires_after(outcome.overall.retry_after);
    throttle_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (ec || self->client_gone_) return;
        self->on_throttle_timer();
    });
    watch_client();
}

bool ClientSession::peer_closed() {
    // FIN or RST received, even behind bytes not read yet: the kernel's TCP state is no longer ESTABLISHED
    // (CLOSE_WAIT after a FIN; CLOSE after a reset).
    tcp_info info{};
    socklen_t length = sizeof info;
    if (getsockopt(client_.socket().native_handle(), IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return false;
    return info.tcpi_state != TCP_ESTABLISHED;
}

void ClientSession::poll_client() {
    // The read-ahead is full: no more reading, so a hang-up would go unseen behind the bytes the client
    // sent; the connection's TCP state tells it instead, looked at every CLOSED_POLL.
    poll_timer_.expires_after(CLOSED_POLL);
    poll_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (ec || self->client_gone_ || self->timer_fired_) return;
        if (self->peer_closed()) {
            self->client_left_while_throttled();
            return;
        }
        self->poll_client();
    });
}

void ClientSession::watch_client() {
    if (buffer_.size() >= THROTTLE_READ_AHEAD) {
        watching_ = false;
        poll_client();
        return;
    }
    watching_ = true;
    client_.expires_never();
    client_.async_read_some(
        buffer_.prepare(THROTTLE_READ_AHEAD - buffer_.size()),
        [self = shared_from_this()](boost::system::error_code ec, std::size_t n) { self->on_watch(ec, n); });
}

void ClientSession::on_watch(boost::system::error_code ec, std::size_t bytes) {
    watching_ = false;
    if (!ec) {
        // Body bytes or a pipelined request: kept for the parser, which reads its buffer first.
        buffer_.commit(bytes);
        if (timer_fired_) {
            x_.throttled_ms = millis_since(throttle_started_);
            forward();
        } else {
            watch_client();
        }
        return;
    }
    if (ec == asio::error::operation_aborted && timer_fired_) {
        x_.throttled_ms = millis_since(throttle_started_);
        forward();
        return;
    }
    client_left_while_throttled();
}

void ClientSession::on_throttle_timer() {
    timer_fired_ = true;
    if (watching_) {
        client_.cancel();  // the watch's handler goes on with the request
        return;
    }
    poll_timer_.cancel();
    // The read-ahead was full: the last look before the request goes to the backend.
    if (peer_closed()) {
        client_left_while_throttled();
        return;
    }
    x_.throttled_ms = millis_since(throttle_started_);
    forward();
}

void ClientSession::client_left_while_throttled() {
    client_gone_ = true;
    throttle_timer_.cancel();
    poll_timer_.cancel();
    x_.outcome = admin::Outcome::cancelled;
    x_.throttled_ms = millis_since(throttle_started_);
    x_.status = 499;  // nginx's "client closed request"
    if (!x_.reserved.empty()) {
        worker_.decider->refund_all(
            std::move(x_.reserved), [self = shared_from_this()](const limiter::CallOutcome &refund) {
                const bool ok = refund.status == limiter::CallStatus::decided;
                self->worker_.shared.metrics.refund(ok);
                if (!ok) self->worker_.log("could not give back a throttled request's reservation: " + refund.error);
            });
        x_.reserved.clear();
    }
    finish(false);
}

void ClientSession::bypass(const std::string &reason, const std::string &detail) {
    worker_.log("limiter bypassed (" + reason + "): " + detail);
    if (worker_.shared.config.ratelimit->limiter.failure_mode == config::FailureMode::closed) {
        x_.outcome = admin::Outcome::unavailable;
        auto response = json_error(bhttp::status::service_unavailable, client_version_, "limiter_unavailable",
                                   "\"reason\": " + json_string(reason));
        response.set("Retry-After", "1");
        respond(std::move(response));
        return;
    }
    x_.outcome = admin::Outcome::bypassed;
    x_.response_fields.push_back({"RateLimit-Bypassed", reason});
    x_.request_fields.push_back({"RateLimit-Bypassed", reason});
    forward();
}

void ClientSession::respond(Response response) {
    // A body the client is still sending would be read as the next request: close after the answer instead.
    const bool keep = x_.keep_alive && parser_ && parser_->is_done();
    response.version(client_version_ == 10 ? 10 : 11);
    response.keep_alive(keep);
    for (const auto &[name, value] : x_.response_fields) response.set(name, value);
    x_.status = response.result_int();
    x_.bytes = response.body().size();
    auto shared = std::make_shared<Response>(std::move(response));
    client_.expires_after(worker_.shared.config.client_timeout);
    bhttp::async_write(client_, *shared,
                       [self = shared_from_this(), shared, keep](boost::system::error_code ec, std::size_t) {
                           self->finish(!ec && keep);
                       });
}

void ClientSession::finish(bool keep_alive) {
    auto &shared = worker_.shared;
    shared.metrics.request(x_.route, x_.outcome);
    static const char *const NAMES[] = {"allowed",  "denied",    "throttled", "bypassed",   "would_deny",
                                        "rejected", "unlimited", "cancelled", "unavailable"};
    if (parser_) {
        AccessRecord record;
        record.client_ip = client_ip_;
        record.method = std::string(parser_->get().method_string());
        // As the client sent it (the backend got the normalised form).
        record.target = x_.raw_target.empty() ? std::string(parser_->get().target()) : x_.raw_target;
        record.version = client_version_;
        record.status = x_.status;
        record.bytes_sent = x_.bytes;
        record.decision = NAMES[static_cast<int>(x_.outcome)];
        record.route = x_.route < 0 ? "-" : route().pattern;
        record.limiter_ms = x_.limiter_ms;
        record.throttled_ms = x_.throttled_ms;
        record.total_ms = millis_since(x_.started);
        shared.access_log.write(record);
    }
    if (keep_alive) {
        read_request();
    } else {
        close();
    }
}

void ClientSession::close() {
    boost::system::error_code ec;
    client_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
    client_.close();
    upstream_.reset();
}

}  // namespace gate::http
