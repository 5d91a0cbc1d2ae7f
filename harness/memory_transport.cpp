// In-process execution of mock::Plan values; see memory_transport.h.
#include "harness/memory_transport.h"

#include <algorithm>
#include <cctype>
#include <variant>

namespace harness {
namespace {

/// Header names lower-cased, as an HTTP client library reports them.
std::vector<std::pair<std::string, std::string>> lower_case(
    const std::vector<std::pair<std::string, std::string>>& headers) {
  auto out = headers;
  for (auto& [name, value] : out) {
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

}  // namespace

rut::TransportResult MemoryTransport::post(const rut::HttpRequest& request,
                                           const std::function<bool(std::string_view)>& on_body) {
  const mock::Plan plan = engine_.respond(mock::Request{"POST", request.target, request.body});
  if (!plan.streaming) {
    // A stall delays the whole answer: at or beyond the idle timeout nothing arrives.
    for (const mock::Action& action : plan.actions) {
      const auto* stall = std::get_if<mock::StallAction>(&action);
      if (stall != nullptr && stall->seconds >= request.idle_timeout_s) {
        engine_.settle(plan.journal_index, mock::Delivery{0, true});
        return {0, rut::TransportEnd::kIdleTimeout};
      }
    }
    if (plan.ending != mock::Ending::kTerminator) {
      // Headers, the first body_bytes of the body, then FIN or RST.
      const std::size_t n = std::min(plan.body_bytes, plan.body.size());
      if (n > 0) on_body(std::string_view(plan.body).substr(0, n));
      engine_.settle(plan.journal_index, mock::Delivery{0, true});
      return {plan.status, rut::TransportEnd::kConnectionLost, lower_case(plan.headers)};
    }
    const bool more = plan.body.empty() || on_body(plan.body);
    engine_.settle(plan.journal_index, mock::Delivery{0, !more});
    return {plan.status, more ? rut::TransportEnd::kComplete : rut::TransportEnd::kCancelled,
            lower_case(plan.headers)};
  }
  int done = 0;
  for (const mock::Action& action : plan.actions) {
    if (const auto* write = std::get_if<mock::WriteAction>(&action)) {
      const bool more = on_body(write->bytes);
      ++done;  // the write reached the client in full, whatever it does next
      if (!more) {
        engine_.settle(plan.journal_index, mock::Delivery{done, true});
        return {plan.status, rut::TransportEnd::kCancelled};
      }
    } else if (std::holds_alternative<mock::DrainAction>(action)) {
      ++done;  // in process every byte is received at once
    } else {
      const auto& stall = std::get<mock::StallAction>(action);
      if (stall.seconds >= request.idle_timeout_s) {
        engine_.settle(plan.journal_index, mock::Delivery{done, true});
        return {plan.status, rut::TransportEnd::kIdleTimeout};
      }
      ++done;
    }
  }
  engine_.settle(plan.journal_index, mock::Delivery{done, false});
  return {plan.status, plan.ending == mock::Ending::kTerminator ? rut::TransportEnd::kComplete
                                                                 : rut::TransportEnd::kConnectionLost};
}

}  // namespace harness
