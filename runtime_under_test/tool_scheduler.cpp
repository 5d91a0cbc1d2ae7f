// The tool scheduler (see tool_scheduler.h).
#include "runtime_under_test/tool_scheduler.h"

#include <utility>

namespace rut {

using nlohmann::json;

std::string own_call_id(const PendingCall& call) {
  return "call-" + std::to_string(call.request_seq) + "-" + std::to_string(call.call_index);
}

void ToolScheduler::on_streamed_call(PendingCall& call, bool after_cancel) {
  if (call.replay_of) return;  // a replay is answered, never run
  if (recovery_ == Recovery::kContinue) {
    if (!call.executed) execute(call);  // the continue design: a whole call runs at once
    return;
  }
  if (defects_.contains(Defect::kEagerExecution) || after_cancel) execute(call);  // defect: run before commit
}

std::vector<json> ToolScheduler::run_committed(std::vector<PendingCall>& calls) {
  const std::optional<int> limit = std::exchange(cancel_after_, std::nullopt);
  cancelled_ = 0;
  interrupted_ = limit && *limit < static_cast<int>(calls.size());
  std::vector<json> responses;
  std::vector<json> cancelled;
  // A replay's answer: the response of the call it replays (of an earlier turn, or this batch's).
  auto replay_answer = [&](const PendingCall& c) -> json {
    if (c.replay_response) return *c.replay_response;
    for (const json& r : responses) {
      const json& fr = r["functionResponse"];
      if (fr.contains("id") && fr["id"] == *c.replay_of) return fr["response"];
    }
    return {{"output", c.call.name + ": ok"}};
  };
  for (std::size_t i = 0; i < calls.size(); ++i) {
    PendingCall& c = calls[i];
    if (interrupted_ && static_cast<int>(i) >= *limit) {
      if (defects_.contains(Defect::kExecuteAfterCancel)) {
        // defect: the cancel does not stop the queue; a call that had not started still runs
        if (!c.executed && !c.replay_of) execute(c);
        responses.push_back(function_response_json(c.call, {{"output", c.call.name + ": ok"}}));
        continue;
      }
      if (defects_.contains(Defect::kOrphanCallAfterCancel)) continue;  // defect: no result at all
      cancelled.push_back(function_response_json(c.call, {{"error", "cancelled by the user"}}));
      continue;
    }
    if (c.replay_of) {
      responses.push_back(function_response_json(c.call, replay_answer(c)));
      continue;
    }
    if (!c.executed) execute(c);
    responses.push_back(function_response_json(c.call, {{"output", c.call.name + ": ok"}}));
  }
  cancelled_ = static_cast<int>(cancelled.size());
  for (json& r : cancelled) responses.push_back(std::move(r));
  return responses;
}

void ToolScheduler::execute(PendingCall& call) {
  call.executed = true;
  LedgerEntry entry{call.call.name, call.call.args, call.request_seq, call.call_index,
                    call.call.id.value_or(own_call_id(call))};
  log_.add({{"type", "execute"},
            {"name", entry.name},
            {"args", entry.args},
            {"request_seq", entry.request_seq},
            {"call_index", entry.call_index},
            {"call_id", entry.call_id}});
  log_.ledger.push_back(std::move(entry));
}

}  // namespace rut
