#include "cut_proxy.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <pqxx/connection>
#include <stdexcept>

#include "pqxx_compat.hpp"
#include "support.hpp"

namespace test_support {
namespace {

// Splits a byte stream into protocol messages: the client's first is untyped (the startup packet: a length,
// then the rest), every other one a type byte and a length (which counts itself, not the type byte).
class Framer {
  public:
    explicit Framer(bool startup) : startup_(startup) {}

    void feed(const char *data, std::size_t size) { buffer_.append(data, size); }

    bool next(std::string *message) {
        const std::size_t type_bytes = startup_ ? 0 : 1;
        if (buffer_.size() < type_bytes + 4) return false;
        const auto *length_bytes = reinterpret_cast<const unsigned char *>(buffer_.data() + type_bytes);
        const std::uint32_t length = (std::uint32_t{length_bytes[0]} << 24) | (std::uint32_t{length_bytes[1]} << 16) |
                                     (std::uint32_t{length_bytes[2]} << 8) | std::uint32_t{length_bytes[3]};
        const std::size_t total = type_bytes + length;
        if (buffer_.size() < total) return false;
        message->assign(buffer_, 0, total);
        buffer_.erase(0, total);
        startup_ = false;
        return true;
    }

  private:
    bool startup_;
    std::string buffer_;
};

bool send_all(int fd, const std::string &bytes) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
        const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) return false;
        sent += static_cast<std::size_t>(n);
    }
    return true;
}

void close_both(int a, int b) {
    ::shutdown(a, SHUT_RDWR);
    ::shutdown(b, SHUT_RDWR);
    ::close(a);
    ::close(b);
}

}  // namespace

CutProxy::CutProxy() {
    {
        // Where the test server is: as libpq reached it through the test conninfo.
        pqxx::connection probe{test_support::conninfo()};
        const std::string host = probe.hostname() != nullptr ? probe.hostname() : "";
        const std::string reported_port = pg_ratelimit::compat::port(probe);
        const std::string port = reported_port.empty() ? "5432" : reported_port;
        upstream_ = !host.empty() && host[0] == '/' ? host + "/.s.PGSQL." + port : host + ":" + port;
    }
    char directory[] = "/tmp/pgrl_proxy.XXXXXX";
    if (::mkdtemp(directory) == nullptr) throw std::runtime_error("CutProxy: mkdtemp failed");
    directory_ = directory;
    socket_path_ = directory_ + "/.s.PGSQL.5432";
    listener_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, socket_path_.c_str(), sizeof address.sun_path - 1);
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr *>(&address), sizeof address) != 0 ||
        ::listen(listener_, 64) != 0)
        throw std::runtime_error("CutProxy: cannot listen on " + socket_path_ + ": " + std::strerror(errno));
    acceptor_ = std::thread([this] { accept_loop(); });
}

CutProxy::~CutProxy() {
    stopping_ = true;
    if (acceptor_.joinable()) acceptor_.join();
    std::vector<std::thread> connections;
    {
        const std::lock_guard<std::mutex> guard(mutex_);
        connections.swap(connections_);
    }
    for (std::thread &connection : connections) connection.join();
    if (listener_ >= 0) ::close(listener_);
    ::unlink(socket_path_.c_str());
    ::rmdir(directory_.c_str());
}

std::string CutProxy::conninfo(const std::string &application_name) const {
    const std::string base = test_support::conninfo();
    std::string out = (base.empty() ? "" : base + " ") + "host=" + directory_ +
                      " port=5432 sslmode=disable gssencmode=disable";  // later keywords win
    if (!application_name.empty()) out += " application_name=" + application_name;
    return out;
}

void CutProxy::arm(const std::string &statement, Cut how) {
    const std::lock_guard<std::mutex> guard(mutex_);
    armed_ = Armed{statement, how};
}

bool CutProxy::claim(const std::string &message, Cut *how) {
    // Bind: 'B', length, the portal's name, the prepared statement's name (both NUL-terminated), ...
    if (message.empty() || message[0] != 'B') return false;
    const std::size_t portal_end = message.find('\0', 5);
    if (portal_end == std::string::npos) return false;
    const std::size_t name_end = message.find('\0', portal_end + 1);
    if (name_end == std::string::npos) return false;
    const std::string name = message.substr(portal_end + 1, name_end - portal_end - 1);
    const std::lock_guard<std::mutex> guard(mutex_);
    if (!armed_ || armed_->statement != name) return false;
    *how = armed_->how;
    armed_.reset();
    return true;
}

int CutProxy::connect_upstream() const {
    if (!upstream_.empty() && upstream_[0] == '/') {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, upstream_.c_str(), sizeof address.sun_path - 1);
        if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) == 0) return fd;
        if (fd >= 0) ::close(fd);
        return -1;
    }
    const std::size_t colon = upstream_.rfind(':');
    const std::string host = upstream_.substr(0, colon).empty() ? "localhost" : upstream_.substr(0, colon);
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *found = nullptr;
    if (::getaddrinfo(host.c_str(), upstream_.substr(colon + 1).c_str(), &hints, &found) != 0) return -1;
    int fd = -1;
    for (addrinfo *a = found; a != nullptr && fd < 0; a = a->ai_next) {
        fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd >= 0 && ::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            ::close(fd);
            fd = -1;
        }
    }
    ::freeaddrinfo(found);
    return fd;
}

void CutProxy::accept_loop() {
    while (!stopping_) {
        pollfd waiting{listener_, POLLIN, 0};
        if (::poll(&waiting, 1, 50) <= 0) continue;
        const int client = ::accept(listener_, nullptr, nullptr);
        if (client < 0) continue;
        const int server = connect_upstream();
        if (server < 0) {
            ::close(client);
            continue;
        }
        const std::lock_guard<std::mutex> guard(mutex_);
        connections_.emplace_back([this, client, server] { forward(client, server); });
    }
}

void CutProxy::forward(int client, int server) {
    Framer from_client{true};
    Framer from_server{false};
    bool cutting = false;
    Cut how = Cut::answer_lost;
    char chunk[65536];
    std::string message;
    while (!stopping_) {
        pollfd fds[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
        if (::poll(fds, 2, 50) <= 0) continue;
        if (fds[0].revents != 0) {
            const ssize_t n = ::recv(client, chunk, sizeof chunk, 0);
            if (n <= 0) break;
            from_client.feed(chunk, static_cast<std::size_t>(n));
            while (from_client.next(&message)) {
                if (!cutting && claim(message, &how)) cutting = true;
                if (cutting && how == Cut::commit_lost && message[0] == 'Q' && message.compare(5, 6, "COMMIT") == 0) {
                    ++cuts_;
                    close_both(client, server);
                    return;
                }
                if (!send_all(server, message)) break;
            }
        }
        if (fds[1].revents != 0) {
            const ssize_t n = ::recv(server, chunk, sizeof chunk, 0);
            if (n <= 0) break;
            from_server.feed(chunk, static_cast<std::size_t>(n));
            while (from_server.next(&message)) {
                if (!cutting || how == Cut::commit_lost) {
                    if (!send_all(client, message)) break;
                    continue;
                }
                // The statement's answer ends with ReadyForQuery: the server is done with it.
                if (how == Cut::after_answer) send_all(client, message);
                if (message[0] == 'Z') {
                    ++cuts_;
                    close_both(client, server);
                    return;
                }
            }
        }
    }
    close_both(client, server);
}

}  // namespace test_support
