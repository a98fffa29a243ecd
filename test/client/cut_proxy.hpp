// A forwarding proxy in front of the test server that cuts one connection at a chosen moment: right after
// the server has answered a chosen prepared statement. It shows what a client does when its connection
// breaks after the server acted on a call but before the client learnt of it, which no server-side trick
// (terminating the backend) can stage: the backend must finish the statement first.
//
// It listens on a unix socket of its own (a fresh directory) and forwards each connection to the server the
// test conninfo reaches (unix socket or TCP). It reads the PostgreSQL protocol in both directions (the
// startup packet, then messages of a type byte and a length), so it knows where each message ends.
#pragma once

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace test_support {

class CutProxy {
  public:
    enum class Cut {
        // The server's answer (up to ReadyForQuery) is read but not passed on; then both sides are closed.
        // The statement ran; the client sees its connection break while waiting for the answer.
        answer_lost,
        // The answer is passed on whole, then both sides are closed: the client finds the connection broken
        // right after the answer or at its next message (a policy read, COMMIT), whichever notices first.
        after_answer,
        // Everything passes until the client sends COMMIT (a simple query), which is withheld; then both sides
        // are closed. The transaction never commits; the client cannot know that.
        commit_lost,
    };

    CutProxy();  // listening when constructed; throws std::runtime_error if it cannot
    ~CutProxy();
    CutProxy(const CutProxy &) = delete;
    CutProxy &operator=(const CutProxy &) = delete;

    // The test conninfo, through the proxy (sslmode and gssencmode off: the proxy reads the plain protocol),
    // with application_name set when given.
    std::string conninfo(const std::string &application_name = "") const;

    // Arms one cut: the first connection that binds the prepared statement `statement` (a Bind message
    // naming it) from now on is cut as `how` says: once the server has answered that statement (its
    // ReadyForQuery), or at the COMMIT that follows. Later connections and statements pass untouched until
    // arm() is called again.
    void arm(const std::string &statement, Cut how);

    // Connections cut so far.
    int cuts() const { return cuts_.load(); }

  private:
    struct Armed {
        std::string statement;
        Cut how = Cut::answer_lost;
    };

    void accept_loop();
    void forward(int client, int server);
    int connect_upstream() const;
    // Claims the armed cut if message (a complete client message) binds its statement.
    bool claim(const std::string &message, Cut *how);

    std::string directory_;
    std::string socket_path_;
    std::string upstream_;  // a socket path (starts with '/'), or "host:port"
    int listener_ = -1;
    std::atomic<bool> stopping_{false};
    std::atomic<int> cuts_{0};
    std::mutex mutex_;
    std::optional<Armed> armed_;            // guarded by mutex_
    std::vector<std::thread> connections_;  // guarded by mutex_
    std::thread acceptor_;
};

}  // namespace test_support
