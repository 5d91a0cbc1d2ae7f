// Scenario spellings of finish reasons and quotas; a call cut by its finish.
#include "mock_server/script.h"

#include <algorithm>
#include <cstdint>

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

std::string_view quota_name(Quota quota) {
  return quota == Quota::kPerDay ? "per_day" : "per_minute";
}

std::string default_signature(std::size_t journal_index, int reasoning_index) {
  const std::string in = "hiccup-thought-" + std::to_string(journal_index) + "-" + std::to_string(reasoning_index);
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < in.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, in.size() - i);
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < 3; ++k) {
      v = (v << 8) | (k < n ? static_cast<unsigned char>(in[i + k]) : 0u);
    }
    for (std::size_t k = 0; k < 4; ++k) {
      out += k <= n ? kAlphabet[(v >> (18 - 6 * k)) & 0x3F] : '=';
    }
  }
  return out;
}

double event_delay_s(const Event& e, const Script::Timing& timing) {
  const std::optional<double> d = std::visit([](const auto& ev) { return ev.delay_s; }, e);
  if (!d || !(*d > 0) || !(timing.scale > 0)) return 0;
  double out = *d * timing.scale;
  if (timing.max_delay_s) out = std::min(out, *timing.max_delay_s);
  return out > 0 ? out : 0;
}

std::optional<int> cut_by_finish(const std::vector<Event>& events, std::size_t i) {
  if (i + 1 >= events.size() || !std::holds_alternative<CallEvent>(events[i])) return std::nullopt;
  const auto* f = std::get_if<FinishEvent>(&events[i + 1]);
  if (f == nullptr) return std::nullopt;
  return f->after_fragment;
}

}  // namespace mock
