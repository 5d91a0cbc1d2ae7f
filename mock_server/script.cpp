// Scenario spellings of finish reasons; a call cut by its finish.
#include "mock_server/script.h"

namespace mock {

std::string_view finish_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kMaxTokens: return "max_tokens";
    case FinishReason::kContentFilter: return "content_filter";
    case FinishReason::kMalformedCall: return "malformed_call";
  }
  return "stop";
}

std::optional<FinishReason> finish_from_name(std::string_view name) {
  for (auto r : {FinishReason::kStop, FinishReason::kMaxTokens, FinishReason::kContentFilter,
                 FinishReason::kMalformedCall}) {
    if (finish_name(r) == name) return r;
  }
  return std::nullopt;
}

std::optional<int> cut_by_finish(const std::vector<Event>& events, std::size_t i) {
  if (i + 1 >= events.size() || !std::holds_alternative<CallEvent>(events[i])) return std::nullopt;
  const auto* f = std::get_if<FinishEvent>(&events[i + 1]);
  if (f == nullptr) return std::nullopt;
  return f->after_fragment;
}

}  // namespace mock
