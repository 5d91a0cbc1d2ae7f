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
std::string ledger_command(const LedgerToken& token, const std::string& ledger_path);

/// Whether any string inside `args` holds the placeholder.
bool has_placeholder(const nlohmann::json& args);

/// Replaces the placeholder in every call of `attempt` (strings anywhere inside its args) with the
/// ledger command of (turn, served_attempt, call index). The mock::ScriptEngine attempt rewriter.
void substitute_ledger(int turn, int served_attempt, mock::Attempt& attempt, const std::string& ledger_path);

/// Reads the ledger file: its tokens in order, and lines that are not tokens in `stray`.
/// A missing file is an empty ledger.
std::vector<LedgerToken> read_ledger(const std::string& path, std::vector<std::string>* stray = nullptr);

}  // namespace harness::agents
