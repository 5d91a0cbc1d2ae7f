// The tool script's small helpers: call selection, behaviour names, tool-name validity.
#include "mock_server/mcp/tool_script.h"

#include <algorithm>

namespace mock::mcp {

std::string_view behaviour_name(const ToolCall& call) {
  if (call.hang) return "hang";
  if (call.reply_lost) return "reply_lost";
  if (call.session_expired) return "session_expired";
  if (call.jsonrpc_error) return "jsonrpc_error";
  if (call.is_error) return "is_error";
  return "result";
}

const Tool* ToolScript::find(std::string_view name) const {
  for (const Tool& t : tools) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

ToolCall call_behaviour(const Tool& tool, std::size_t call_index) {
  if (tool.calls.empty()) return ToolCall{};
  return tool.calls[std::min(call_index, tool.calls.size() - 1)];
}

bool valid_tool_name(std::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

}  // namespace mock::mcp
