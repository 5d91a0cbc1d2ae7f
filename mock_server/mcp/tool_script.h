// The tool side of a scenario (SCENARIO-FORMAT.md "Tools"): the tools the scenario offers over MCP
// and, per tool, what each of its calls does (how long it runs, its result or error, whether it
// hangs, loses its reply or sends progress). Provider-neutral, beside mock::Script: the MCP server
// (mcp_server.h) plays it, harness::Scenario holds it, scenario_io reads and writes it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace mock::mcp {

/// A JSON-RPC error object a scripted call answers with instead of a result (JSON-RPC 2.0 §5.1):
/// `code` any integer (-32768..-32000 are JSON-RPC's and the transport's, e.g. -32603 internal
/// error, -32001 MCP's "session not found"), `message` non-empty.
struct JsonRpcError {
  long long code = -32603;
  std::string message;
  bool operator==(const JsonRpcError&) const = default;
};

/// What one `tools/call` of a tool does (`tools[].calls[i]`). At most one ending: a `result`
/// (text content; with `is_error` an error result, `isError: true`, MCP's channel for a tool that
/// ran and failed), a `jsonrpc_error`, `hang` (never answers), `reply_lost` (the call counts as
/// executed, its reply never arrives: the connection is dropped) or `session_expired` (the call
/// does not run: the server answers 404 with -32001 and ends the MCP session, so the client must
/// initialize again; MCP 2025-11-25 basic/transports "Session Management"). None: a result with
/// the text kDefaultResult. `duration_s` virtual seconds pass before the ending (over HTTP scaled as a
/// stall: ServerOptions::stall_ms_per_s); `progress` progress notifications go out evenly spread
/// over them when the request asked for progress (a `progressToken`) and allows an SSE answer.
struct ToolCall {
  double duration_s = 0;
  std::optional<std::string> result;
  bool is_error = false;
  std::optional<JsonRpcError> jsonrpc_error;
  bool hang = false;
  bool reply_lost = false;
  bool session_expired = false;
  int progress = 0;
  bool operator==(const ToolCall&) const = default;
};

/// The result text of a call that scripts none.
inline constexpr std::string_view kDefaultResult = "ok";
/// The result text of an error result (`is_error`) that scripts none.
inline constexpr std::string_view kDefaultErrorResult = "the tool failed";

/// The behaviour a call played, by name: "result", "is_error", "jsonrpc_error", "hang",
/// "reply_lost", "session_expired" (the journal's `behaviour`).
std::string_view behaviour_name(const ToolCall& call);

/// One tool the scenario offers (`tools[]`). `name` is MCP's tool name (1 to 128 of
/// [A-Za-z0-9_.-], unique; MCP 2025-11-25 "Tool names"); `input_schema` a JSON Schema object
/// whose `type` is "object" (sent as `inputSchema`); `annotations` MCP's tool annotations as
/// written (title, readOnlyHint, destructiveHint, idempotentHint, openWorldHint), sent as they are.
/// `idempotent`: whether a repeat of a call is harmless, the harness's truth for judging a
/// replayed call (not sent; annotations.idempotentHint is what a client sees). `calls[i]` is what
/// the tool's call number i (from 0, counted per tool over the session) does; the last repeats
/// when they are used up; none: every call answers kDefaultResult at once.
struct Tool {
  std::string name;
  std::string description;
  nlohmann::json input_schema = nlohmann::json{{"type", "object"}};
  bool idempotent = false;
  std::optional<nlohmann::json> annotations;
  std::vector<ToolCall> calls;
  bool operator==(const Tool&) const = default;
};

/// The tools of one scenario, in the order tools/list sends them. Empty: the scenario offers no
/// tools (tools/list answers an empty list).
struct ToolScript {
  std::vector<Tool> tools;
  bool operator==(const ToolScript&) const = default;

  /// The tool named `name`, or nullptr.
  const Tool* find(std::string_view name) const;
};

/// What call number `call_index` (from 0) of `tool` does: calls[call_index], the last one when
/// they are used up, the default result when there are none.
ToolCall call_behaviour(const Tool& tool, std::size_t call_index);

/// Whether `name` is a valid MCP tool name: 1 to 128 of A-Z a-z 0-9 _ - . (MCP 2025-11-25,
/// server/tools "Tool names").
bool valid_tool_name(std::string_view name);

}  // namespace mock::mcp
