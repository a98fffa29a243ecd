#include "http/listener.hpp"

#include <boost/asio/post.hpp>
#include <stdexcept>

#include "http/client_session.hpp"

namespace gate::http {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

tcp::acceptor bind_acceptor(asio::io_context &io, const config::HostPort &address) {
    boost::system::error_code ec;
    tcp::resolver resolver(io);
    const auto endpoints = resolver.resolve(address.host, std::to_string(address.port), ec);
    if (ec || endpoints.empty()) throw std::runtime_error("cannot resolve " + address.text() + ": " + ec.message());
    const tcp::endpoint endpoint = *endpoints.begin();
    tcp::acceptor acceptor(io);
    acceptor.open(endpoint.protocol(), ec);
    if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor.bind(endpoint, ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) throw std::runtime_error("cannot listen on " + address.text() + ": " + ec.message());
    return acceptor;
}

Listener::Listener(tcp::acceptor acceptor, std::vector<std::unique_ptr<Worker>> &workers)
    : acceptor_(std::move(acceptor)), workers_(workers), retry_timer_(acceptor_.get_executor()) {}

void Listener::start() { accept(); }

void Listener::accept() {
    Worker &worker = *workers_[next_];
    next_ = (next_ + 1) % workers_.size();
    // The new socket belongs to that worker's io_context: the session runs there, on that thread only.
    acceptor_.async_accept(worker.io, [this, &worker](boost::system::error_code ec, tcp::socket socket) {
        if (!ec) {
            if (failing_) workers_[0]->log("accepting connections again", false);
            failing_ = false;
            auto holder = std::make_shared<tcp::socket>(std::move(socket));
            asio::post(worker.io,
                       [&worker, holder] { std::make_shared<ClientSession>(worker, std::move(*holder))->start(); });
        } else if (ec == asio::error::operation_aborted) {
            return;
        } else {
            if (!failing_) {
                workers_[0]->log("cannot accept a connection (" + ec.message() + "): trying again every " +
                                     std::to_string(ACCEPT_RETRY_DELAY.count()) + " ms",
                                 false);
            }
            failing_ = true;
            retry_timer_.expires_after(ACCEPT_RETRY_DELAY);
            retry_timer_.async_wait([this](boost::system::error_code wait_ec) {
                if (wait_ec != asio::error::operation_aborted) accept();
            });
            return;
        }
        accept();
    });
}

}  // namespace gate::http
