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
