// JSON form of journal entries.
#include "mock_server/journal.h"

namespace mock {

nlohmann::json journal_entry_to_json(const JournalEntry& e) {
  nlohmann::json calls = nlohmann::json::array();
  for (const auto& c : e.delivered_calls) {
    nlohmann::json call = {{"name", c.name}, {"args", c.args}, {"call_index", c.call_index}};
    if (!c.id.empty()) call["id"] = c.id;
    if (c.reuse_id) call["reuse_id"] = true;
    calls.push_back(std::move(call));
  }
  nlohmann::json j = {
      {"index", e.index},
      {"method", e.method},
      {"target", e.target},
      {"provider", e.provider},
      {"model", e.model},
      {"streaming", e.streaming},
      {"turn", e.turn},
      {"attempt", e.attempt},
      {"script_attempt", e.script_attempt},
      {"contents", e.contents},
      {"body_digest", e.body_digest},
      {"response_status", e.response_status},
      {"played", e.played},
      {"fault", e.fault},
      {"validated", e.validated},
      {"rejection", e.rejection},
      {"issues", e.issues},
      {"settled", e.settled},
      {"events_delivered", e.events_delivered},
      {"completed", e.completed},
      {"delivered_calls", std::move(calls)},
      {"delivered_text", e.delivered_text},
  };
  if (e.reasoning_due > 0) j["reasoning_due"] = e.reasoning_due;
  if (!e.delivered_reasoning.empty()) {
    nlohmann::json reasoning = nlohmann::json::array();
    for (const auto& r : e.delivered_reasoning) {
      nlohmann::json one = {{"text", r.text}, {"signature", r.signature}, {"reasoning_index", r.reasoning_index}};
      if (r.before_call >= 0) one["before_call"] = r.before_call;
      if (r.redacted) one["redacted"] = true;
      reasoning.push_back(std::move(one));
    }
    j["delivered_reasoning"] = std::move(reasoning);
  }
  if (!e.transport.empty()) j["transport"] = e.transport;
  if (e.arrived_ms >= 0) j["arrived_ms"] = e.arrived_ms;
  if (e.answered_ms >= 0) j["answered_ms"] = e.answered_ms;
  return j;
}

void JournalSummary::add(const JournalEntry& e) {
  ++requests;
  completed += e.completed ? 1 : 0;
  rejected += e.validated ? 0 : 1;
  with_issues += e.issues.empty() ? 0 : 1;
  ++played[e.played];
  if (!e.fault.empty()) ++faults[e.fault];
  ++statuses[e.response_status];
}

nlohmann::json journal_summary_to_json(const JournalSummary& s) {
  nlohmann::json statuses = nlohmann::json::object();
  for (const auto& [status, n] : s.statuses) statuses[std::to_string(status)] = n;
  return {{"requests", s.requests}, {"completed", s.completed}, {"rejected", s.rejected},
          {"with_issues", s.with_issues}, {"played", s.played}, {"faults", s.faults},
          {"statuses", std::move(statuses)}};
}

}  // namespace mock
