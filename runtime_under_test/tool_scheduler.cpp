// The tool scheduler (see tool_scheduler.h).
#include "runtime_under_test/tool_scheduler.h"

#include <cmath>
#include <sstream>
#include <utility>

namespace rut {

using nlohmann::json;

std::string_view tool_end_name(ToolEnd end) {
  switch (end) {
    case ToolEnd::kResult: return "result";
    case ToolEnd::kJsonRpcError: return "jsonrpc_error";
    case ToolEnd::kTimedOut: return "timed_out";
    case ToolEnd::kReplyLost: return "reply_lost";
    case ToolEnd::kSessionExpired: return "session_expired";
  }
  return "result";
}

namespace {

/// Seconds as a message shows them: "60", "0.5", "no limit".
std::string seconds_words(double s) {
  if (!std::isfinite(s)) return "an unlimited time";
  std::ostringstream out;
  out << s << " s";
  return out.str();
}

}  // namespace

json tool_response(const std::string& name, const ToolReply& reply, double timeout_s) {
  switch (reply.end) {
    case ToolEnd::kResult:
      if (reply.is_error) return {{"error", reply.text}};
      return {{"output", reply.text}};
    case ToolEnd::kJsonRpcError:
      return {{"error", name + " failed: JSON-RPC error " + std::to_string(reply.error_code) + ": " + reply.text}};
    case ToolEnd::kTimedOut:
      return {{"error", "outcome unknown: " + name + " did not answer within " + seconds_words(timeout_s) +
                            "; it may or may not have taken effect, and it was not sent again"}};
    case ToolEnd::kReplyLost:
      return {{"error", "outcome unknown: the connection to " + name +
                            " dropped before its reply; it may or may not have taken effect, and it was not sent again"}};
    case ToolEnd::kSessionExpired:
      return {{"error", name + " did not run: its MCP session expired (HTTP 404, Session not found)"}};
  }
  return {{"error", name + " failed"}};
}

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
  auto answer = [](const PendingCall& c) -> json {
    return c.result ? *c.result : json{{"output", c.call.name + ": ok"}};
  };
  for (std::size_t i = 0; i < calls.size(); ++i) {
    PendingCall& c = calls[i];
    if (interrupted_ && static_cast<int>(i) >= *limit) {
      if (defects_.contains(Defect::kExecuteAfterCancel)) {
        // defect: the cancel does not stop the queue; a call that had not started still runs
        if (!c.executed && !c.replay_of) execute(c);
        responses.push_back(function_response_json(c.call, answer(c)));
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
    // defect: a call whose tool failed (or whose outcome is unknown) gets no result at all
    if (c.failed && defects_.contains(Defect::kDropFailedToolResult)) continue;
    responses.push_back(function_response_json(c.call, answer(c)));
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
  const std::string call_id = entry.call_id;
  log_.ledger.push_back(std::move(entry));
  if (tools_ == nullptr || !tools_->offers(call.call.name)) {
    call.result = json{{"output", call.call.name + ": ok"}};
    return;
  }
  // defect: no per-call timeout: the runtime waits on the tool for ever
  const double timeout_s = defects_.contains(Defect::kNoToolTimeout) ? kNoToolTimeout : tool_timeout_s_;
  ToolRequest request{call.call.name, call.call.args, call.request_seq, call.call_index, call_id, timeout_s};
  ToolReply reply = tools_->call(request);
  int sent = 1;
  // defect: a call whose outcome is unknown is sent to the tool again, as a request that failed
  if (outcome_unknown(reply.end) && defects_.contains(Defect::kReplayUnknownOutcome)) {
    reply = tools_->call(request);
    ++sent;
  }
  const bool failed = reply.end != ToolEnd::kResult || reply.is_error;
  call.failed = failed;
  call.result = tool_response(call.call.name, reply, timeout_s);
  // defect: a tool's error is answered to the model as the tool's output
  const bool tool_error = reply.is_error || reply.end == ToolEnd::kJsonRpcError;
  if (tool_error && defects_.contains(Defect::kToolErrorAsSuccess)) {
    call.result = json{{"output", reply.text}};
  }
  json event = {{"type", "tool_result"},
                {"name", call.call.name},
                {"request_seq", call.request_seq},
                {"call_index", call.call_index},
                {"end", tool_end_name(reply.end)},
                {"sent", sent}};
  if (reply.is_error) event["is_error"] = true;
  log_.add(std::move(event));
}

}  // namespace rut
