// RecordingProxy: the I/O shell of `hiccup record`. An HTTP/1.1 server on its own sockets (one
// thread per client connection, requests parsed by mock::RequestParser) that relays every request
// to an upstream provider (cpp-httplib's client: http or https) and streams the upstream answer
// back as it arrives, re-chunked, each piece sent as soon as it is read (SSE frames are never held
// back to the end). Model requests (the path names the wire format, as `hiccup serve` routes them)
// are handed to a SessionRecorder together with the answer's bytes. Request headers, credentials
// included (Authorization, x-api-key, x-goog-api-key, api-key, cookies), go upstream unchanged and
// never to the recorder. Real time and sockets live here.
#pragma once

#include <atomic>
#include <list>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>

#include "harness/record/session_recorder.h"
#include "mock_server/script.h"

namespace httplib {
class Client;
}

namespace harness::record {

class UpstreamConnection;

/// An upstream base URL: `http://HOST[:PORT][/PREFIX]` or `https://…` (a prefix is put before
/// every request target).
struct UpstreamUrl {
  std::string scheme;  ///< "http" or "https"
  std::string host;
  int port = 0;        ///< 80 / 443 when the URL names none
  std::string prefix;  ///< "" or "/path" without a trailing slash
  /// "SCHEME://HOST:PORT" (what the HTTP client connects to).
  std::string origin() const;
};

/// Parses `text`; nullopt with `error` set ("expected http://HOST[:PORT][/PATH] or https://…,
/// found …", lower-case) on anything else (another scheme, user info, no host, a bad port, a query).
std::optional<UpstreamUrl> parse_upstream_url(std::string_view text, std::string& error);

/// Settings of one RecordingProxy.
struct ProxyOptions {
  std::string host = "127.0.0.1";
  int port = 0;                      ///< 0 = any free port
  UpstreamUrl upstream;
  int connect_timeout_s = 10;        ///< connecting to upstream
  int read_timeout_s = 600;          ///< silence from upstream after which the answer is cut
  /// `hiccup proxy`: the scenario script whose attempts are applied to live answers by turn and
  /// attempt, as `hiccup serve` matches them (the last attempt of a turn repeats; a turn past the
  /// script is relayed untouched). An attempt with `status` is answered with that status in the
  /// provider's envelope without asking upstream; one with a fault or a content-filter finish goes
  /// through a LiveFaultGate (streamed answers only); others are relayed untouched. Null: none.
  const mock::Script* faults = nullptr;
  double stall_ms_per_s = 20;        ///< real ms per virtual second of a stall fault
  int max_delay_ms = -1;             ///< caps delay_ms / idle_ms when >= 0
};

/// The recording proxy. start() binds and serves on a thread of its own; stop() ends every
/// connection (an answer in flight is cut) and joins the threads.
class RecordingProxy {
 public:
  /// `recorder` (may be null: relay only) must outlive the proxy.
  RecordingProxy(ProxyOptions options, SessionRecorder* recorder);
  ~RecordingProxy();
  RecordingProxy(const RecordingProxy&) = delete;
  RecordingProxy& operator=(const RecordingProxy&) = delete;

  /// Binds and starts accepting; returns the bound port. Throws std::runtime_error when the
  /// address cannot be bound.
  int start();
  /// Stops accepting, shuts down open connections, joins every thread. Safe to call twice.
  void stop();
  /// "http://HOST:PORT" of the running proxy.
  std::string base_url() const;
  /// Connection threads not yet joined: the open connections' and those of connections that
  /// ended since the last accept (a connection's thread is joined when the next one is accepted).
  std::size_t connection_threads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return threads_.size();
  }
  /// Requests relayed so far (model requests and others).
  std::size_t relayed() const { return relayed_.load(); }
  /// Connections ended by an exception inside hiccup (a bug; the proxy went on serving the others).
  std::size_t internal_errors() const { return internal_errors_.load(); }
  /// One entry per model request (with ProxyOptions::faults), in arrival order: {"request" (from 0, as
  /// `hiccup serve`'s journal `index` counts),
  /// "turn", "attempt", "played": "live" | "status" | "live+fault", "status" (sent to the client),
  /// "fault" (what was applied, "" for none), "upstream": bool (upstream was asked)}, and when the client got less than the whole answer
  /// for a reason not upstream's: "client_left": true (the client closed its connection mid-answer,
  /// a pause included) or "proxy_stopped": true (stop() cut the answer, a pause included). What a
  /// gate applied is journaled before a pause starts. When upstream
  /// gave no answer (down, refused, timed out, not HTTP), "played" is "upstream-failed" and "status"
  /// 502 (the proxy's own answer); whenever the exchange failed, "upstream_error" says why in words
  /// ("connection refused", "closed the connection in the middle of the answer", …).
  nlohmann::json journal() const;

 private:
  void accept_loop();
  void serve_connection(int fd);

  ProxyOptions options_;
  SessionRecorder* recorder_;
  int listen_fd_ = -1;
  int wake_fds_[2] = {-1, -1};
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<std::size_t> relayed_{0};
  std::atomic<std::size_t> internal_errors_{0};
  std::thread accept_thread_;
  mutable std::mutex mu_;
  std::set<int> open_fds_;
  std::set<httplib::Client*> clients_;  // https:// upstream clients in use, stopped by stop()
  std::set<UpstreamConnection*> plain_clients_;  // http:// ones
  std::list<std::thread> threads_;
  std::vector<std::thread::id> finished_;  // threads whose connection ended, joined at the next accept
  std::map<int, int> attempts_;          // turn index → requests seen (faults only)
  std::vector<nlohmann::json> journal_;  // see journal()
};

}  // namespace harness::record
