// The ledger of an external agent's side effects. A scenario's call arguments may hold the
// placeholder `{{ledger}}`; when the server plays an attempt, the harness replaces it with a shell
// command appending a token unique to that call (`hiccup:tTURN:aATTEMPT:cCALL`) to the ledger file,
// so every real execution of the call leaves one line. Reading the file back yields the
// executions the at-most-once checker needs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mock_server/mcp/tool_script.h"
#include "mock_server/script.h"

namespace harness::agents {

/// The placeholder scenario authors write in call arguments.
inline constexpr std::string_view kLedgerPlaceholder = "{{ledger}}";

/// One line of the ledger: a call of turn `turn`, served in attempt `attempt` (the server's
/// attempt index for that turn, from 0), at position `call` among that attempt's calls.
struct LedgerToken {
  int turn = 0;
  int attempt = 0;
  int call = 0;
  bool operator==(const LedgerToken&) const = default;
};

/// "hiccup:t0:a1:c0".
std::string token_text(const LedgerToken& token);

/// Parses one ledger line (surrounding whitespace ignored); nullopt when it is not a token.
std::optional<LedgerToken> parse_token(std::string_view line);

/// The shell command recording `token` in `ledger_path`: `echo hiccup:t0:a1:c0 >> 'PATH'`.
/// `ledger_path` must not contain a single quote (the harness makes it; checked).
///
/// With `script` (the scenario's `tools[]` entry named like the call, SCENARIO-FORMAT.md "Scripted
/// ledger commands") that has `calls`, the command also does what the execution's call script
/// says, in a subshell so `&&` and `;` around the placeholder keep their meaning:
/// `(echo TOKEN >> 'PATH'; n=$(grep -c '' 'PATH'); case $n in 1) …;; 2) …;; *) …;; esac)`. The
/// execution's number is the ledger's line count once its own line is appended (from 1; the i-th
/// execution, from 0, plays `calls[i]`, the last one repeating), so the line is written first and
/// counts even when the command then fails, hangs or is killed, as an MCP call counts when it
/// arrives. Per call: `duration_s` real seconds of `sleep` (to the millisecond); `result` printed
/// on stdout; `is_error` exits 1 after printing the result (default mock::mcp::kDefaultErrorResult);
/// `hang` sleeps until killed (2^31 - 1 s). Throws std::invalid_argument for a call a shell
/// command cannot play (jsonrpc_error, reply_lost, session_expired, progress: shell_call_problem).
/// Two executions that append at the same instant may both read the later count.
std::string ledger_command(const LedgerToken& token, const std::string& ledger_path,
                           const mock::mcp::Tool* script = nullptr);

/// Why `call` cannot be played by the ledger command (an MCP-only behaviour: `jsonrpc_error`,
/// `reply_lost`, `session_expired`, `progress`), naming the field; nullopt when it can.
std::optional<std::string> shell_call_problem(const mock::mcp::ToolCall& call);

/// Whether any string inside `args` holds the placeholder.
bool has_placeholder(const nlohmann::json& args);

/// Replaces the placeholder in every call of `attempt` (strings anywhere inside its args) with the
/// ledger command of (turn, served_attempt, call index), scripted by the entry of `tools` named
/// like the call (ledger_command) when there is one. The mock::ScriptEngine attempt rewriter.
void substitute_ledger(int turn, int served_attempt, mock::Attempt& attempt, const std::string& ledger_path,
                       const mock::mcp::ToolScript& tools = {});

/// Reads the ledger file: its tokens in order, and lines that are not tokens in `stray`.
/// A missing file is an empty ledger.
std::vector<LedgerToken> read_ledger(const std::string& path, std::vector<std::string>* stray = nullptr);

}  // namespace harness::agents
