// The routing layer of `hiccup serve`: control API requests under `/_hiccup/` are answered from
// the session registry (JSON in and out, docs/CONTROL-API.md, version 1), `/s/{id}/…` goes to
// session {id}'s engine with the prefix stripped (`/s/{id}/mcp` to its MCP server), and every
// other path to the default session (`hiccup serve SCENARIO`; `/mcp` to its MCP server). No provider path starts with `/_hiccup/` or `/s/`, so neither prefix
// shadows one (checked by a test over every wire format's paths).
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/serve/session_registry.h"
#include "mock_server/http_server.h"

namespace harness::serve {

/// The control API's path prefix and the sessions' base path prefix.
inline constexpr std::string_view kControlPrefix = "/_hiccup/";
inline constexpr std::string_view kSessionPrefix = "/s/";
/// The MCP endpoint of a session (`/s/{id}/mcp`) and of the default session (`/mcp`):
/// mock::mcp::McpServer serves it (docs/CONTROL-API.md "MCP").
inline constexpr std::string_view kMcpPath = "/mcp";

/// The version of the control API's JSON shapes (docs/CONTROL-API.md); every answer carries it.
inline constexpr int kControlApiVersion = 1;

/// A mock::RequestRouter over a SessionRegistry (which must outlive it). Thread-safe.
class ControlApi : public mock::RequestRouter {
 public:
  explicit ControlApi(SessionRegistry& registry) : registry_(registry) {}

  /// "http://HOST:PORT" of the server, for the `base_url` of sessions in answers ("" = omitted).
  void set_server_url(std::string url);

  /// Where GET /_hiccup/health reads `internal_errors` (MockHttpServer::internal_errors; 0 when unset).
  void set_internal_errors(std::function<std::uint64_t()> count);

  mock::Route route(const std::string& method, const std::string& target, const std::string& body) override;
  /// Refusals of the HTTP layer on /_hiccup/ paths in hiccup's envelope (code "payload_too_large",
  /// "headers_too_large", "bad_request", "not_implemented", or "internal_error" for a 500 after an
  /// exception in hiccup); provider paths keep their own.
  std::optional<mock::DirectAnswer> refusal(int status, const std::string& message, std::string_view target) override;

  /// Answers one control API request; `path` without the query.
  mock::DirectAnswer control(const std::string& method, const std::string& path, const std::string& body);

 private:
  nlohmann::json session_json(const Session& s) const;

  SessionRegistry& registry_;
  mutable std::mutex mu_;
  std::string server_url_;
  std::function<std::uint64_t()> internal_errors_;
};

/// hiccup's own error envelope: `{"version":1,"error":{"status":S,"code":CODE,"message":M}}`, plus
/// `"problems":[{"pointer":P,"message":M},…]` when given.
mock::DirectAnswer error_answer(int status, std::string code, std::string message,
                                nlohmann::json problems = nullptr);

/// The largest `journal_window` a session may ask for in its create body (entries).
inline constexpr long long kMaxJournalWindow = 1'000'000;

/// The JSON form of what left a session's window: {journal_window, requests_evicted,
/// executions_evicted, evicted_summary (mock::journal_summary_to_json), message}.
nlohmann::json window_json(const WindowInfo& window);

/// The JSON form of a verdict (docs/CONTROL-API.md "Verdict"), with `window` when it was judged
/// over a window.
nlohmann::json verdict_to_json(const Session& session, const SessionVerdict& verdict);

}  // namespace harness::serve
