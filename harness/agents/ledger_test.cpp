// Ledger tokens, placeholder substitution per served attempt, and reading the ledger file back.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "harness/agents/ledger.h"

namespace harness::agents {
namespace {

TEST_CASE("ledger token text round-trips") {
  const LedgerToken t{2, 1, 3};
  CHECK(token_text(t) == "hiccup:t2:a1:c3");
  CHECK(parse_token("  hiccup:t2:a1:c3 \n") == t);
  CHECK_FALSE(parse_token("hiccup:t2:a1"));
  CHECK_FALSE(parse_token("hiccup:t2:a1:c3x"));
  CHECK_FALSE(parse_token("hiccup:t-1:a1:c3"));
  CHECK_FALSE(parse_token("hi"));
}

TEST_CASE("the placeholder becomes a command appending the token of each call of the served attempt") {
  mock::Attempt a;
  a.events.push_back(mock::CallEvent{"run_shell_command", {{"command", "{{ledger}}"}, {"description", "x"}}, ""});
  a.events.push_back(mock::TextEvent{"between"});
  a.events.push_back(mock::CallEvent{"run_shell_command", {{"command", "true && {{ledger}}"}}, ""});
  REQUIRE(has_placeholder(std::get<mock::CallEvent>(a.events[0]).args));
  substitute_ledger(1, 2, a, "/tmp/x/ledger");
  CHECK(std::get<mock::CallEvent>(a.events[0]).args["command"] == "echo hiccup:t1:a2:c0 >> '/tmp/x/ledger'");
  CHECK(std::get<mock::CallEvent>(a.events[0]).args["description"] == "x");
  CHECK(std::get<mock::CallEvent>(a.events[2]).args["command"] == "true && echo hiccup:t1:a2:c1 >> '/tmp/x/ledger'");
  CHECK_FALSE(has_placeholder(std::get<mock::CallEvent>(a.events[2]).args));
  CHECK_THROWS(ledger_command({0, 0, 0}, "/tmp/it's"));
}

TEST_CASE("a tools entry named like the call scripts each execution of the ledger command") {
  mock::mcp::Tool shell;
  shell.name = "run_shell_command";
  shell.calls = {mock::mcp::ToolCall{.duration_s = 0.25},
                 mock::mcp::ToolCall{.result = std::string("it's full"), .is_error = true},
                 mock::mcp::ToolCall{.is_error = true},
                 mock::mcp::ToolCall{.hang = true}};
  // Appended first, then the execution's number (the ledger's line count) picks the call; the
  // last call repeats; a subshell keeps `&&` around the placeholder meaningful.
  CHECK(ledger_command({0, 1, 0}, "/tmp/x/ledger", &shell) ==
        "(echo hiccup:t0:a1:c0 >> '/tmp/x/ledger'; grep -c '' '/tmp/x/ledger' | (read n; case $n in"
        " 1) sleep 0.25;;"
        " 2) printf '%s\\n' 'it'\\''s full'; exit 1;;"
        " 3) printf '%s\\n' 'the tool failed'; exit 1;;"
        " *) sleep 2147483647;; esac))");
  // No calls, or no entry: the plain command.
  mock::mcp::Tool plain;
  plain.name = "run_shell_command";
  CHECK(ledger_command({0, 0, 0}, "/tmp/l", &plain) == "echo hiccup:t0:a0:c0 >> '/tmp/l'");
  mock::mcp::ToolScript tools;
  tools.tools = {shell};
  mock::Attempt a;
  a.events.push_back(mock::CallEvent{"run_shell_command", {{"command", "{{ledger}}"}}, ""});
  a.events.push_back(mock::CallEvent{"other_tool", {{"command", "{{ledger}}"}}, ""});
  substitute_ledger(0, 0, a, "/tmp/l", tools);
  CHECK(std::get<mock::CallEvent>(a.events[0]).args["command"].get<std::string>().rfind("(echo hiccup:t0:a0:c0 >> '/tmp/l'; grep -c", 0) == 0);
  CHECK(std::get<mock::CallEvent>(a.events[1]).args["command"] == "echo hiccup:t0:a0:c1 >> '/tmp/l'");
  // What only MCP can do is no shell command's.
  CHECK(shell_call_problem(mock::mcp::ToolCall{.reply_lost = true}));
  CHECK(shell_call_problem(mock::mcp::ToolCall{.progress = 3}));
  CHECK_FALSE(shell_call_problem(mock::mcp::ToolCall{.duration_s = 1, .result = std::string("x")}));
  mock::mcp::Tool lost = shell;
  lost.calls.push_back(mock::mcp::ToolCall{.session_expired = true});
  CHECK_THROWS_AS(ledger_command({0, 0, 0}, "/tmp/l", &lost), std::invalid_argument);
}

TEST_CASE("reading the ledger keeps tokens in order and reports stray lines") {
  const std::string path = "/tmp/hiccup-ledger-test-" + std::to_string(::getpid());
  {
    std::ofstream out(path);
    out << "hiccup:t0:a0:c0\nnoise\nhiccup:t0:a1:c0\n";
  }
  std::vector<std::string> stray;
  const auto tokens = read_ledger(path, &stray);
  CHECK(tokens == std::vector<LedgerToken>{{0, 0, 0}, {0, 1, 0}});
  CHECK(stray == std::vector<std::string>{"noise"});
  std::remove(path.c_str());
  CHECK(read_ledger(path).empty());
}

}  // namespace
}  // namespace harness::agents
