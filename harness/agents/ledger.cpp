// Ledger tokens, the placeholder substitution and reading the ledger file back.
#include "harness/agents/ledger.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace harness::agents {
namespace {

bool read_int(std::string_view& s, char tag, int& out) {
  if (s.size() < 2 || s[0] != tag) return false;
  s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || out < 0) return false;
  s.remove_prefix(static_cast<std::size_t>(p - s.data()));
  return true;
}

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

void replace_in(nlohmann::json& j, const std::string& with) {
  if (j.is_string()) {
    std::string s = j.get<std::string>();
    for (std::size_t at = s.find(kLedgerPlaceholder); at != std::string::npos;
         at = s.find(kLedgerPlaceholder, at + with.size())) {
      s.replace(at, kLedgerPlaceholder.size(), with);
    }
    j = s;
  } else if (j.is_structured()) {
    for (auto& v : j) replace_in(v, with);
  }
}

/// `s` as one single-quoted shell word (a quote inside written '\'').
std::string single_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// Seconds for sleep(1): fixed-point to the millisecond, no exponent ("0.25", "3"), at least 0.001.
std::string sleep_seconds(double s) {
  const long long ms = std::max(1LL, static_cast<long long>(std::llround(std::min(s, 1e9) * 1000)));
  std::string out = std::to_string(ms / 1000);
  if (ms % 1000 != 0) {
    char frac[8];
    std::snprintf(frac, sizeof frac, ".%03lld", ms % 1000);
    out += frac;
    while (out.back() == '0') out.pop_back();
  }
  return out;
}

}  // namespace

std::string token_text(const LedgerToken& t) {
  return "hiccup:t" + std::to_string(t.turn) + ":a" + std::to_string(t.attempt) + ":c" + std::to_string(t.call);
}

std::optional<LedgerToken> parse_token(std::string_view line) {
  const std::string text = trim(line);
  std::string_view s = text;
  constexpr std::string_view kPrefix = "hiccup:";
  if (s.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  s.remove_prefix(kPrefix.size());
  LedgerToken t;
  if (!read_int(s, 't', t.turn) || s.empty() || s[0] != ':') return std::nullopt;
  s.remove_prefix(1);
  if (!read_int(s, 'a', t.attempt) || s.empty() || s[0] != ':') return std::nullopt;
  s.remove_prefix(1);
  if (!read_int(s, 'c', t.call) || !s.empty()) return std::nullopt;
  return t;
}

std::optional<std::string> shell_call_problem(const mock::mcp::ToolCall& call) {
  if (call.jsonrpc_error) return "jsonrpc_error (a JSON-RPC error exists over MCP only)";
  if (call.reply_lost) return "reply_lost (an MCP connection drop)";
  if (call.session_expired) return "session_expired (an MCP session)";
  if (call.progress > 0) return "progress (MCP notifications)";
  return std::nullopt;
}

std::string ledger_command(const LedgerToken& token, const std::string& ledger_path, const mock::mcp::Tool* script) {
  if (ledger_path.find('\'') != std::string::npos) {
    throw std::invalid_argument("ledger path must not contain a single quote: " + ledger_path);
  }
  const std::string append = "echo " + token_text(token) + " >> '" + ledger_path + "'";
  if (script == nullptr || script->calls.empty()) return append;
  // The count reaches `case` through a pipe, not a command substitution: gemini-cli 0.61.0
  // refuses a command holding `$()` or backticks ("Command injection detected: command
  // substitution syntax … This is a security risk and the command was blocked.").
  std::string out = "(" + append + "; grep -c '' '" + ledger_path + "' | (read n; case $n in";
  for (std::size_t i = 0; i < script->calls.size(); ++i) {
    const mock::mcp::ToolCall& call = script->calls[i];
    if (auto why = shell_call_problem(call)) {
      throw std::invalid_argument("tool " + script->name + " call " + std::to_string(i) + ": a shell command cannot play " + *why);
    }
    const bool last = i + 1 == script->calls.size();
    out += last ? " *) " : " " + std::to_string(i + 1) + ") ";
    std::string body;
    auto then = [&](const std::string& step) { body += (body.empty() ? "" : "; ") + step; };
    if (call.hang) {
      then("sleep 2147483647");
    } else {
      if (call.duration_s > 0) then("sleep " + sleep_seconds(call.duration_s));
      if (call.result || call.is_error) {
        then("printf '%s\\n' " +
             single_quoted(call.result ? *call.result : std::string(mock::mcp::kDefaultErrorResult)));
      }
      if (call.is_error) then("exit 1");
    }
    out += (body.empty() ? ":" : body) + ";;";
  }
  return out + " esac))";
}

bool has_placeholder(const nlohmann::json& args) {
  if (args.is_string()) return args.get<std::string>().find(kLedgerPlaceholder) != std::string::npos;
  if (args.is_structured()) {
    for (const auto& v : args) {
      if (has_placeholder(v)) return true;
    }
  }
  return false;
}

void substitute_ledger(int turn, int served_attempt, mock::Attempt& attempt, const std::string& ledger_path,
                       const mock::mcp::ToolScript& tools) {
  int call = 0;
  for (mock::Event& e : attempt.events) {
    auto* c = std::get_if<mock::CallEvent>(&e);
    if (c == nullptr) continue;
    if (has_placeholder(c->args)) replace_in(c->args, ledger_command({turn, served_attempt, call}, ledger_path, tools.find(c->name)));
    ++call;
  }
}

std::vector<LedgerToken> read_ledger(const std::string& path, std::vector<std::string>* stray) {
  std::vector<LedgerToken> tokens;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (auto t = parse_token(line)) tokens.push_back(*t);
    else if (stray != nullptr && !trim(line).empty()) stray->push_back(line);
  }
  return tokens;
}

}  // namespace harness::agents
