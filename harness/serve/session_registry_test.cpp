// SessionRegistry without sockets: ids, isolation of engines, and how recorded executions resolve
// against the journal.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "harness/serve/session_registry.h"
#include "tests/test_temp.h"

namespace {

using nlohmann::json;
namespace serve = harness::serve;

harness::Scenario scenario() {
  harness::Scenario s;
  s.name = "x";
  s.prompt = "p";
  s.script.provider = "openai-chat";
  return s;
}

mock::JournalEntry entry(std::size_t index, std::vector<mock::DeliveredCall> calls) {
  mock::JournalEntry e;
  e.index = index;
  e.delivered_calls = std::move(calls);
  return e;
}

}  // namespace

TEST_CASE("session ids are generated, checked and unique") {
  serve::SessionRegistry r;
  CHECK(r.create("", scenario())->id() == "s1");
  CHECK(r.create("mine", scenario())->id() == "mine");
  CHECK(r.create("mine", scenario()) == nullptr);
  CHECK(r.create("", scenario())->id() == "s3");
  CHECK(serve::SessionRegistry::valid_id("a-b_c.9"));
  CHECK_FALSE(serve::SessionRegistry::valid_id(""));
  CHECK_FALSE(serve::SessionRegistry::valid_id("a/b"));
  CHECK_FALSE(serve::SessionRegistry::valid_id(".."));
  CHECK_FALSE(serve::SessionRegistry::valid_id("."));
  CHECK_FALSE(serve::SessionRegistry::valid_id(std::string(65, 'a')));
  CHECK(r.list().size() == 3);
  CHECK(r.list()[1]->id() == "mine");
  CHECK(r.remove("mine"));
  CHECK_FALSE(r.remove("mine"));
  CHECK(r.find("mine") == nullptr);
}

TEST_CASE("sessions have their own engines and reset replaces the engine") {
  serve::SessionRegistry r;
  auto a = r.create("a", scenario());
  auto b = r.create("b", scenario());
  CHECK(a->engine() != b->engine());
  auto before = a->engine();
  a->record_execution("t", json::object(), "");
  a->record_outcome({true, "done", std::nullopt});
  a->reset();
  CHECK(a->engine() != before);
  CHECK(a->ledger().empty());
  CHECK_FALSE(a->outcome().has_value());
}

TEST_CASE("an execution resolves to the latest request before it that delivered its call") {
  const mock::Journal journal = {
      entry(0, {{"deploy", json{{"env", "a"}}, "call_0", 0}}),
      entry(1, {{"other", json::object(), "call_1a", 0}, {"deploy", json{{"env", "a"}}, "call_1b", 1}}),
      entry(2, {{"deploy", json{{"env", "a"}}, "call_2", 0}}),
  };
  // By id: wherever that id was delivered.
  auto l = serve::resolve_execution({"deploy", json{{"env", "a"}}, "call_0", 3}, journal);
  CHECK(l.request_seq == 0);
  CHECK(l.call_index == 0);
  // By name and args: the latest delivery before the execution was recorded.
  l = serve::resolve_execution({"deploy", json{{"env", "a"}}, "", 2}, journal);
  CHECK(l.request_seq == 1);
  CHECK(l.call_index == 1);
  l = serve::resolve_execution({"deploy", json{{"env", "a"}}, "", 3}, journal);
  CHECK(l.request_seq == 2);
  // Nothing delivered it (other args, an unknown id, or recorded before the request): -1.
  CHECK(serve::resolve_execution({"deploy", json{{"env", "b"}}, "", 3}, journal).request_seq == -1);
  CHECK(serve::resolve_execution({"deploy", json{{"env", "a"}}, "call_9", 3}, journal).request_seq == -1);
  CHECK(serve::resolve_execution({"deploy", json{{"env", "a"}}, "call_2", 2}, journal).request_seq == -1);
}

TEST_CASE("an execution resolves against a journal window by the entries' own indices") {
  // Entries 0-4 left the window; 5 and 6 remain.
  const mock::Journal window = {
      entry(5, {{"deploy", json{{"env", "a"}}, "call_5", 0}}),
      entry(6, {{"deploy", json{{"env", "a"}}, "call_6", 0}}),
  };
  // Recorded when 6 requests were journaled: request 5 delivered it, request 6 came later.
  CHECK(serve::resolve_execution({"deploy", json{{"env", "a"}}, "", 6}, window).request_seq == 5);
  CHECK(serve::resolve_execution({"deploy", json{{"env", "a"}}, "", 7}, window).request_seq == 6);
  CHECK(serve::resolve_execution({"deploy", json{{"env", "a"}}, "call_6", 6}, window).request_seq == -1);
}

TEST_CASE("a session keeps at most its window of journal entries and executions and counts the rest") {
  serve::SessionRegistry r(4);
  auto s = r.create("a", scenario());
  CHECK(s->options().journal_window == 4);
  for (int i = 0; i < 50; ++i) {
    mock::Request req{"POST", "/v1/chat/completions", R"({"model":"m","messages":[{"role":"user","content":"hi"}]})", -1};
    const mock::Plan plan = s->engine()->respond(req);
    s->engine()->settle(plan.journal_index, mock::Delivery{0, false, -1});
    s->record_execution("t", json::object(), "");
  }
  CHECK(s->journal().size() <= 4);
  CHECK(s->journal().back().index == 49);
  CHECK(s->ledger().size() == 4);
  CHECK(s->executions_recorded() == 50);
  const serve::WindowInfo w = s->window();
  CHECK(w.requests_evicted + s->journal().size() == 50);
  CHECK(w.executions_evicted == 46);
  // Judged over a window: never a pass, and the counts cover every request and execution.
  const serve::SessionVerdict v = s->verdict();
  CHECK(v.verdict() == "unknown");
  CHECK_FALSE(v.passed());
  CHECK(v.requests == 50);
  CHECK(v.executions == 50);
  // A session may ask for its own window; a reset empties the window and its counts.
  auto big = r.create("big", scenario(), serve::SessionOptions{0, false, 100});
  CHECK(big->options().journal_window == 100);
  s->reset();
  CHECK_FALSE(s->window().partial());
}

TEST_CASE("a session with a journal file streams its entries there as they leave the window, the rest when deleted") {
  const std::filesystem::path dir = hiccup_test::temp_path("hiccup-session-journals");
  std::filesystem::create_directories(dir);
  serve::SessionRegistry r(2, dir.string());
  auto s = r.create("j", scenario(), serve::SessionOptions{0, false, 0, true});
  auto quiet = r.create("q", scenario());
  CHECK(s->journal_path() == (dir / "j.jsonl").string());
  CHECK(quiet->journal_path().empty());
  auto lines = [&] {
    std::ifstream in(dir / "j.jsonl");
    std::vector<json> out;
    for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
    return out;
  };
  for (int i = 0; i < 5; ++i) {
    mock::Request req{"POST", "/v1/chat/completions", R"({"model":"m","messages":[{"role":"user","content":"hi"}]})", -1};
    const mock::Plan plan = s->engine()->respond(req);
    s->engine()->settle(plan.journal_index, mock::Delivery{0, false, -1});
  }
  s->flush_journal(false);
  auto written = lines();
  REQUIRE(written.size() == 3u);  // entries 0-2 left the window of 2
  for (std::size_t i = 0; i < written.size(); ++i) CHECK(written[i]["index"] == i);
  CHECK(r.remove("j"));
  written = lines();
  REQUIRE(written.size() == 5u);  // the window's two followed, once each
  CHECK(written[4]["index"] == 4);
  std::filesystem::remove_all(dir);
}
