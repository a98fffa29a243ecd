#include "admin/admin_server.hpp"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <memory>

#include "admin/health.hpp"
#include "http/listener.hpp"
#include "request_fields/query.hpp"

namespace gate::admin {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;

namespace {

class AdminSession : public std::enable_shared_from_this<AdminSession> {
  public:
    AdminSession(tcp::socket socket, http::Shared &shared) : stream_(std::move(socket)), shared_(shared) {}

    void read() {
        request_ = {};
        stream_.expires_after(std::chrono::seconds(30));
        bhttp::async_read(stream_, buffer_, request_,
                          [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                              if (ec) {
                                  self->stream_.close();
                                  return;
                              }
                              self->answer();
                          });
    }

  private:
    void answer() {
        auto response = std::make_shared<bhttp::response<bhttp::string_body>>();
        response->version(request_.version());
        const auto path = request_fields::target_path(request_.target());
        if (path == "/metrics") {
            response->result(bhttp::status::ok);
            response->set(bhttp::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
            response->body() = shared_.metrics.render(shared_.db_ready.load());
        } else if (path == "/healthz") {
            const Health h = health(shared_.config, shared_.db_ready.load());
            response->result(h.status);
            response->set(bhttp::field::content_type, "application/json");
            response->body() = h.body;
        } else {
            response->result(bhttp::status::not_found);
            response->set(bhttp::field::content_type, "application/json");
            response->body() = "{\"error\": \"not_found\", \"endpoints\": [\"/metrics\", \"/healthz\"]}\n";
        }
        response->keep_alive(request_.keep_alive());
        response->prepare_payload();
        bhttp::async_write(stream_, *response,
                           [self = shared_from_this(), response](boost::system::error_code ec, std::size_t) {
                               if (ec || !response->keep_alive()) {
                                   self->stream_.close();
                                   return;
                               }
                               self->read();
                           });
    }

    beast::tcp_stream stream_;
    beast::flat_buffer buffer_;
    bhttp::request<bhttp::string_body> request_;
    http::Shared &shared_;
};

}  // namespace

AdminServer::AdminServer(tcp::acceptor acceptor, http::Shared &shared)
    : acceptor_(std::move(acceptor)), shared_(shared), retry_timer_(acceptor_.get_executor()) {}

void AdminServer::start() { accept(); }

void AdminServer::accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
        if (ec == asio::error::operation_aborted) return;
        if (ec) {
            // Out of file descriptors, most likely: the gate's listener logs it; try again in a while.
            retry_timer_.expires_after(http::ACCEPT_RETRY_DELAY);
            retry_timer_.async_wait([this](boost::system::error_code wait_ec) {
                if (wait_ec != asio::error::operation_aborted) accept();
            });
            return;
        }
        std::make_shared<AdminSession>(std::move(socket), shared_)->read();
        accept();
    });
}

}  // namespace gate::admin
