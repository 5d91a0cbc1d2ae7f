// Playing a scenario's tool script behind the runtime's tool port; see scripted_tools.h.
#include "harness/scripted_tools.h"

#include <cmath>

namespace harness {

using nlohmann::json;

json tool_call_record_to_json(const ToolCallRecord& r) {
  json out = {{"index", r.index},
          {"tool", r.tool},
          {"arguments", r.arguments},
          {"tool_call", r.tool_call},
          {"turn", r.turn},
          {"request_seq", r.request_seq},
          {"call_index", r.call_index},
          {"call_id", r.call_id},
          {"behaviour", r.behaviour},
          {"executed", r.executed},
          {"outcome", r.outcome},
          {"is_error", r.is_error},
          {"timeout_s", std::isfinite(r.timeout_s) ? json(r.timeout_s) : json()},
          {"started_s", r.started_s},
          {"ended_s", r.ended_s}};
  if (!r.call_name.empty()) out["call_name"] = r.call_name;
  return out;
}

rut::ToolReply ScriptedToolPort::call(const rut::ToolRequest& request) {
  const mock::mcp::Tool* tool = script_.find(request.name);
  rut::ToolReply reply;
  if (tool == nullptr) {
    // Not offered: the server's "Unknown tool" (invalid params), a JSON-RPC error; nothing runs.
    reply.end = rut::ToolEnd::kJsonRpcError;
    reply.error_code = -32602;
    reply.text = "Unknown tool: " + request.name;
    return reply;
  }
  int& count = calls_per_tool_[tool->name];
  const mock::mcp::ToolCall scripted = mock::mcp::call_behaviour(*tool, static_cast<std::size_t>(count));
  ToolCallRecord r;
  r.index = static_cast<int>(records_.size());
  r.tool = tool->name;
  r.arguments = request.arguments;
  r.tool_call = count++;
  r.request_seq = request.request_seq;
  r.call_index = request.call_index;
  r.call_id = request.call_id;
  r.behaviour = std::string(mock::mcp::behaviour_name(scripted));
  r.executed = !scripted.session_expired;
  r.timeout_s = request.timeout_s;
  r.started_s = clock_.now_s();
  r.ended_s = r.started_s;
  records_.push_back(r);  // recorded before the wait: a capped clock may end the run in it
  const std::size_t at = records_.size() - 1;

  const double takes_s = scripted.hang ? mock::mcp::kHangS : scripted.duration_s;
  if (takes_s >= request.timeout_s) {
    clock_.sleep_s(std::isfinite(request.timeout_s) ? request.timeout_s : mock::mcp::kHangS);
    reply.end = rut::ToolEnd::kTimedOut;
  } else {
    if (takes_s > 0) clock_.sleep_s(takes_s);
    if (scripted.session_expired) {
      reply.end = rut::ToolEnd::kSessionExpired;
    } else if (scripted.reply_lost) {
      reply.end = rut::ToolEnd::kReplyLost;
    } else if (scripted.jsonrpc_error) {
      reply.end = rut::ToolEnd::kJsonRpcError;
      reply.error_code = scripted.jsonrpc_error->code;
      reply.text = scripted.jsonrpc_error->message;
    } else {
      reply.end = rut::ToolEnd::kResult;
      reply.is_error = scripted.is_error;
      reply.text = scripted.result ? *scripted.result
                                   : std::string(scripted.is_error ? mock::mcp::kDefaultErrorResult
                                                                   : mock::mcp::kDefaultResult);
    }
  }
  ToolCallRecord& done = records_[at];
  done.outcome = std::string(rut::tool_end_name(reply.end));
  done.is_error = reply.is_error;
  done.ended_s = clock_.now_s();
  return reply;
}

}  // namespace harness
