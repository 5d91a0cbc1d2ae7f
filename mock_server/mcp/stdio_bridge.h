// `hiccup mcp URL`: MCP's stdio transport bridged to hiccup's Streamable HTTP MCP endpoint, for
// clients that spawn their MCP servers as subprocesses (a CLI's MCP configuration names the
// command). Each newline-delimited JSON-RPC message read from stdin is POSTed to the endpoint of
// the run's session (`/mcp`, `/s/{id}/mcp`); each message the endpoint answers (a JSON body, or
// each SSE event's data: progress notifications, then the response) is written to stdout as one
// line. So every scripted behaviour plays through the same server and journal as over HTTP: a
// lost reply (the connection drops) writes nothing, a hang writes nothing until the client gives
// up. MCP 2025-11-25 basic/transports "stdio" and "Streamable HTTP".
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <istream>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace mock::mcp {

/// Where the bridge posts: `http://HOST:PORT/PATH` (HOST a name, an IPv4 address or a bracketed
/// IPv6 one; PORT default 80; PATH default "/mcp").
struct Endpoint {
  std::string host;
  int port = 80;
  std::string path = "/mcp";
};

/// `url` read as an Endpoint; nullopt with a lower-case `error` (what was expected, what was
/// found) when it is not an http:// URL with a host.
std::optional<Endpoint> parse_endpoint(std::string_view url, std::string& error);

/// Splits a text/event-stream body into its events' data as bytes arrive in any pieces (WHATWG
/// HTML "Server-sent events": lines end with CRLF, LF or CR; `data:` lines of one event joined
/// with LF; an event ends at a blank line; other fields and comments ignored).
class SseSplitter {
 public:
  /// The data of every event `bytes` completes, in order (events without data are skipped).
  std::vector<std::string> feed(std::string_view bytes);

 private:
  void line(std::string_view text, std::vector<std::string>& out);
  std::string pending_;   // bytes of an incomplete line
  bool after_cr_ = false;  // the last byte fed was CR: an LF right after it ends no line
  std::string data_;
  bool has_data_ = false;
};

/// Settings of one bridge.
struct BridgeOptions {
  /// A request's answer may go this long without a byte before the bridge gives it up (a hung
  /// call outlives any client's patience: one real day).
  int read_timeout_s = 86400;
  int connect_timeout_s = 5;
};

/// The stdio-to-HTTP bridge. Messages go out concurrently (a cancel can overtake the call it
/// cancels) except `initialize`, which is posted alone: later messages wait for its answer and
/// the `Mcp-Session-Id` it brings, which every later request carries.
class StdioBridge {
 public:
  explicit StdioBridge(Endpoint endpoint, BridgeOptions options = {});
  ~StdioBridge();
  StdioBridge(const StdioBridge&) = delete;
  StdioBridge& operator=(const StdioBridge&) = delete;

  /// Reads messages from `in` until EOF and writes the answers to `out`, one message per line,
  /// each whole and flushed (lines of concurrent answers never interleave); one note per lost
  /// reply or failed request to `log`. With `wait`, returns once every request has ended; without,
  /// at EOF (requests still running are abandoned: the caller exits the process).
  void run(std::istream& in, std::ostream& out, std::ostream& log, bool wait = true);

  /// After run(wait = false): waits until every request still in flight has ended (its answer
  /// written) or `limit` has passed, whichever comes first. Returns how many were still running
  /// then (a hung call, a reply slower than `limit`); the caller abandons them with the process.
  std::size_t drain(std::chrono::milliseconds limit);

  /// Requests posted so far.
  std::uint64_t posted() const;

  /// Requests that found nothing accepting connections at the endpoint (no server there).
  std::uint64_t refused() const;

 private:
  void post(const std::string& message);
  void write_line(const std::string& message);
  /// Writes `body` (an answer to `request`, HTTP `status`) when it is a JSON-RPC message; otherwise
  /// notes it on the log and, when `request` has an id, answers that id with a JSON-RPC error, so
  /// that stdout carries MCP messages only and the client is not left waiting.
  void write_answer(const std::string& request, int status, const std::string& body);
  /// Answers `request`, when it has an id, with a JSON-RPC error -32603 carrying `message`.
  void answer_with_error(const std::string& request, const std::string& message);

  const Endpoint endpoint_;
  const BridgeOptions options_;
  mutable std::mutex mu_;  // out_, log_, session_id_, posted_, in_flight_
  std::ostream* out_ = nullptr;
  std::ostream* log_ = nullptr;
  std::string session_id_;
  std::uint64_t posted_ = 0;
  std::uint64_t refused_ = 0;
  std::size_t in_flight_ = 0;   // requests whose post() has not returned
  std::condition_variable ended_;  // signalled when in_flight_ drops
  std::vector<std::thread> threads_;
};

}  // namespace mock::mcp
