// Tests of History and the ToolScheduler.
#include "runtime_under_test/history.h"

#include <catch2/catch.hpp>

#include "runtime_under_test/tool_scheduler.h"

namespace rut {

using nlohmann::json;

TEST_CASE("history holds prompt, model turn and function responses in Gemini shape") {
  History h;
  h.add_user_text("p");
  h.commit_model_turn({{std::string("t"), std::nullopt},
                       {std::nullopt, FunctionCall{"deploy", {{"x", 1}}, std::nullopt}}});
  CHECK(h.model_turns() == 1);
  h.add_function_responses({json{{"functionResponse", {{"name", "deploy"}}}}});
  CHECK(h.contents().size() == 3);
  CHECK(h.contents()[1]["parts"][1]["functionCall"]["args"]["x"] == 1);
  CHECK(h.remove_last_user_content());
  CHECK(h.contents().size() == 2);
  CHECK_FALSE(h.remove_last_user_content());
}

TEST_CASE("scheduler executes committed calls in order with ledger entries and responses") {
  RunLog log;
  DefectSet none;
  ToolScheduler s(none, log);
  std::vector<PendingCall> calls = {{{"a", json::object(), std::nullopt}, 3, 0, false},
                                    {{"b", {{"k", 2}}, "id-b"}, 3, 1, false}};
  auto responses = s.run_committed(calls);
  REQUIRE(log.ledger.size() == 2);
  CHECK(log.ledger[0] == LedgerEntry{"a", json::object(), 3, 0, "call-3-0"});
  CHECK(log.ledger[1].call_id == "id-b");
  CHECK(responses[0]["functionResponse"]["response"]["output"] == "a: ok");
  CHECK(responses[1]["functionResponse"]["id"] == "id-b");
}

TEST_CASE("scheduler does not execute streamed calls before commit") {
  RunLog log;
  DefectSet none;
  ToolScheduler s(none, log);
  PendingCall c{{"a", json::object(), std::nullopt}, 0, 0, false};
  s.on_streamed_call(c);
  CHECK(log.ledger.empty());
  DefectSet eager = {Defect::kEagerExecution};
  ToolScheduler e(eager, log);
  e.on_streamed_call(c);
  CHECK(log.ledger.size() == 1);
  std::vector<PendingCall> committed = {c};
  (void)e.run_committed(committed);
  CHECK(log.ledger.size() == 1);  // not re-run at commit
}

}  // namespace rut
