// Forwarding: the request's header (hop-by-hop fields removed, X-Forwarded-*, Via) and body, streamed in
// chunks of 16 KiB to a kept-alive backend connection; then its answer, streamed back the same way with the
// rate-limit fields added. Bodies are framed for each hop as they came (Content-Length, or chunked); an
// answer delimited by the backend closing its connection is re-framed as chunked for an HTTP/1.1 client.
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include "http/client_session.hpp"
#include "http/proxy_headers.hpp"

namespace gate::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

void ClientSession::forward() {
    auto &request = parser_->get();
    expects_continue_ = beast::iequals(request[bhttp::field::expect], "100-continue");
    request_body_empty_ = parser_->is_done();
    remove_hop_by_hop(request);
    add_forwarding(request, client_ip_, request.version());
    remove_gate_verdicts(request);
    for (const auto &[name, value] : x_.request_fields) request.set(name, value);
    // HTTP/1.1 towards the backend, whatever the client spoke: keep-alive and chunked bodies.
    request.version(11);
    request.keep_alive(true);
    if (expects_continue_ && !parser_->is_done()) {
        // The client waits for this before it sends its body; the backend never saw the Expect field.
        auto interim = std::make_shared<bhttp::response<bhttp::empty_body>>(bhttp::status::continue_, 11);
        client_.expires_after(worker_.shared.config.client_timeout);
        bhttp::async_write(client_, *interim,
                           [self = shared_from_this(), interim](boost::system::error_code ec, std::size_t) {
                               if (ec) {
                                   self->finish(false);
                                   return;
                               }
                               self->connect_upstream();
                           });
        return;
    }
    connect_upstream();
}

void ClientSession::connect_upstream() {
    worker_.upstreams.acquire(
        route().target,
        [self = shared_from_this()](boost::system::error_code ec, std::unique_ptr<Upstream> upstream) {
            self->on_upstream(ec, std::move(upstream));
        },
        retried_);
}

void ClientSession::on_upstream(boost::system::error_code ec, std::unique_ptr<Upstream> upstream) {
    if (ec) {
        upstream_failed(ec, "connect");
        return;
    }
    upstream_ = std::move(upstream);
    request_writer_.emplace(parser_->get());
    send_request_part();
}

void ClientSession::send_request_part() {
    auto &body = parser_->get().body();
    if (parser_->is_done()) {
        body.data = nullptr;
        body.size = 0;
        body.more = false;
        write_request_part();
        return;
    }
    body.data = request_chunk_.data();
    body.size = request_chunk_.size();
    client_.expires_after(worker_.shared.config.client_timeout);
    bhttp::async_read(client_, buffer_, *parser_,
                      [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                          if (ec == bhttp::error::need_buffer) ec = {};
                          if (ec) {
                              // The client went away (or timed out) half-way through its body: nothing to answer.
                              self->finish(false);
                              return;
                          }
                          auto &body = self->parser_->get().body();
                          body.size = self->request_chunk_.size() - body.size;
                          body.data = self->request_chunk_.data();
                          body.more = !self->parser_->is_done();
                          self->write_request_part();
                      });
}

void ClientSession::write_request_part() {
    upstream_->stream.expires_after(worker_.shared.config.backend_timeout);
    bhttp::async_write(upstream_->stream, *request_writer_,
                       [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                           if (ec == bhttp::error::need_buffer) ec = {};
                           if (ec) {
                               self->upstream_failed(ec, "send");
                               return;
                           }
                           if (self->request_writer_->is_done()) {
                               self->read_response_header();
                           } else {
                               self->send_request_part();
                           }
                       });
}

void ClientSession::read_response_header() {
    response_parser_.emplace();
    response_parser_->body_limit(UNLIMITED_BODY);
    // An answer to HEAD has the fields of a body, and no body.
    if (head_request_) response_parser_->skip(true);
    upstream_->stream.expires_after(worker_.shared.config.backend_timeout);
    bhttp::async_read_header(
        upstream_->stream, upstream_->buffer, *response_parser_,
        [self = shared_from_this()](boost::system::error_code ec, std::size_t) { self->on_response_header(ec); });
}

bool ClientSession::may_retry_upstream() const {
    // A kept-alive connection the backend closed just as it was reused: the request (without a body, so
    // nothing of it is lost) goes again on a new connection, once.
    return upstream_ && upstream_->reused && !retried_ && request_body_empty_ && !response_started_;
}

void ClientSession::on_response_header(boost::system::error_code ec) {
    if (ec) {
        upstream_failed(ec, "read");
        return;
    }
    auto &response = response_parser_->get();
    const unsigned status = response.result_int();
    if (status >= 100 && status < 200 && status != 101) {
        read_response_header();  // an interim answer (103 Early Hints): the final one follows
        return;
    }
    upstream_reusable_ = response_parser_->keep_alive() && !response_parser_->need_eof();
    bool client_keep = x_.keep_alive;
    const bool delimited_by_close = response_parser_->need_eof();
    remove_hop_by_hop(response);
    add_via(response, response.version());
    for (const auto &[name, value] : x_.response_fields) response.set(name, value);
    if (delimited_by_close) {
        if (client_version_ >= 11) {
            response.chunked(true);
        } else {
            client_keep = false;
        }
    }
    response.version(client_version_ >= 11 ? 11 : 10);
    response.keep_alive(client_keep);
    x_.keep_alive = client_keep;
    x_.status = status;
    response_started_ = true;
    response_writer_.emplace(response);
    send_response_part();
}

void ClientSession::send_response_part() {
    auto &body = response_parser_->get().body();
    if (response_parser_->is_done()) {
        body.data = nullptr;
        body.size = 0;
        body.more = false;
        write_response_part();
        return;
    }
    body.data = response_chunk_.data();
    body.size = response_chunk_.size();
    upstream_->stream.expires_after(worker_.shared.config.backend_timeout);
    bhttp::async_read(
        upstream_->stream, upstream_->buffer, *response_parser_,
        [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
            if (ec == bhttp::error::need_buffer) ec = {};
            if (ec) {
                // The answer is half sent: all the client can be told is a closed connection.
                self->worker_.log("backend " + self->route().target.text() + " failed mid-answer: " + ec.message());
                self->finish(false);
                return;
            }
            auto &body = self->response_parser_->get().body();
            body.size = self->response_chunk_.size() - body.size;
            body.data = self->response_chunk_.data();
            body.more = !self->response_parser_->is_done();
            self->x_.bytes += body.size;
            self->write_response_part();
        });
}

void ClientSession::write_response_part() {
    client_.expires_after(worker_.shared.config.client_timeout);
    bhttp::async_write(client_, *response_writer_,
                       [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                           if (ec == bhttp::error::need_buffer) ec = {};
                           if (ec) {
                               self->finish(false);
                               return;
                           }
                           if (!self->response_writer_->is_done()) {
                               self->send_response_part();
                               return;
                           }
                           if (self->upstream_reusable_ && self->upstream_) {
                               self->worker_.upstreams.release(std::move(self->upstream_));
                           }
                           self->upstream_.reset();
                           self->response_writer_.reset();
                           self->request_writer_.reset();
                           self->finish(self->x_.keep_alive);
                       });
}

void ClientSession::upstream_failed(boost::system::error_code ec, const char *stage) {
    if (may_retry_upstream()) {
        retried_ = true;
        upstream_.reset();
        connect_upstream();
        return;
    }
    upstream_.reset();
    worker_.log(std::string("backend ") + route().target.text() + ": " + stage + " failed: " + ec.message());
    if (response_started_) {
        finish(false);
        return;
    }
    const bool timeout = ec == beast::error::timeout;
    respond(json_error(timeout ? bhttp::status::gateway_timeout : bhttp::status::bad_gateway, client_version_,
                       timeout ? "backend_timeout" : "backend_unavailable"));
}

}  // namespace gate::http
