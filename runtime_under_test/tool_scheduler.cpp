// The tool scheduler (see tool_scheduler.h).
#include "runtime_under_test/tool_scheduler.h"

namespace rut {

using nlohmann::json;

std::string own_call_id(const PendingCall& call) {
  return "call-" + std::to_string(call.request_seq) + "-" + std::to_string(call.call_index);
}

void ToolScheduler::on_streamed_call(PendingCall& call) {
  if (defects_.contains(Defect::kEagerExecution)) execute(call);  // defect: run before commit
}

std::vector<json> ToolScheduler::run_committed(std::vector<PendingCall>& calls) {
  std::vector<json> responses;
  for (PendingCall& c : calls) {
    if (!c.executed) execute(c);
    responses.push_back(function_response_json(c.call, {{"output", c.call.name + ": ok"}}));
  }
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
