// The fault catalogue: one struct per fault kind (fields carry their units in their names), its
// stable snake_case name, doc line and JSON form. `hiccup faults` prints the catalogue; the scenario
// loader decodes faults in two phases (kind, then the kind's fields) through fault_from_json.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace mock {

// `after_event` = how many events are fully delivered before the fault; nullopt = all of them.
// `after_fragment` = when set, the event right after those (a call) is partly delivered: its start
// and this many of its argument fragments go out before the fault (SCENARIO-FORMAT.md; formats
// that send a call whole (Gemini) send nothing of it).

/// Close the connection (TCP FIN) without the chunked terminator, `delay_ms` after the last write.
struct DisconnectFault {
  std::optional<int> after_event;
  int delay_ms = 0;
  std::optional<int> after_fragment;  ///< see above; last so positional initialisers keep working
  bool operator==(const DisconnectFault&) const = default;
};
/// Wait `idle_ms` (client idle on read), then abort with TCP RST.
struct ResetFault {
  std::optional<int> after_event;
  int idle_ms = 200;
  std::optional<int> after_fragment;  ///< see above; last so positional initialisers keep working
  bool operator==(const ResetFault&) const = default;
};
/// End the HTTP response cleanly (chunked terminator) without the provider's terminal event.
struct EndFault {
  std::optional<int> after_event;
  std::optional<int> after_fragment;  ///< see above; last so positional initialisers keep working
  bool operator==(const EndFault&) const = default;
};
/// Send only the first `bytes` bytes of the next frame, then close (FIN).
struct CutFault {
  std::optional<int> after_event;
  int bytes = 1;
  std::optional<int> after_fragment;  ///< see above; last so positional initialisers keep working
  bool operator==(const CutFault&) const = default;
};
/// Send the provider's in-stream error with HTTP-like `status` (e.g. 503, 529), then end cleanly.
struct ErrorEventFault {
  std::optional<int> after_event;
  int status = 503;
  std::optional<int> after_fragment;  ///< see above; last so positional initialisers keep working
  bool operator==(const ErrorEventFault&) const = default;
};
/// Send one undecodable frame (valid SSE framing, invalid JSON), then go on.
struct MalformedFault {
  std::optional<int> after_event;
  std::optional<int> after_fragment;  ///< see above; last so positional initialisers keep working
  bool operator==(const MalformedFault&) const = default;
};
/// Send nothing for `seconds` (virtual seconds in-process; scaled real time over HTTP), then go on.
struct StallFault {
  std::optional<int> after_event;
  double seconds = 0;
  std::optional<int> after_fragment;  ///< see above; last so positional initialisers keep working
  bool operator==(const StallFault&) const = default;
};

using Fault = std::variant<DisconnectFault, ResetFault, EndFault, CutFault, ErrorEventFault,
                           MalformedFault, StallFault>;

/// One field of a fault kind, for `hiccup faults` and the loader.
struct FaultFieldInfo {
  std::string_view name;     ///< JSON key, e.g. "idle_ms"
  std::string_view type;     ///< "integer" or "number"
  std::string_view doc;      ///< one line, with the default
};

/// One catalogue entry.
struct FaultKindInfo {
  std::string_view name;  ///< stable snake_case name, e.g. "reset"
  std::string_view doc;   ///< one-line effect
  std::vector<FaultFieldInfo> fields;
};

/// Every fault kind, in catalogue order (the order of the Fault variant).
const std::vector<FaultKindInfo>& fault_catalogue();

/// The catalogue name of `fault`'s kind.
std::string_view fault_name(const Fault& fault);

/// `after_event` resolved against an attempt with `event_count` events (nullopt → event_count,
/// clamped to [0, event_count]).
int fault_after_event(const Fault& fault, std::size_t event_count);

/// `after_fragment`: set when the fault cuts the call right after the `after_event` delivered
/// events after its start and this many argument fragments.
std::optional<int> fault_after_fragment(const Fault& fault);

/// The fault's JSON form: `{"kind": NAME, FIELD: VALUE, ...}`; fields at their default are
/// written too except an unset `after_event`.
nlohmann::json fault_to_json(const Fault& fault);

/// A problem found while decoding; `pointer` is a JSON pointer relative to the document root.
struct DecodeProblem {
  std::string pointer;
  std::string message;  ///< lower-case, "expected …, found …" style, no trailing period
};

/// The "found …" part of a decoding message: the JSON type and, for a scalar, the value, e.g.
/// `integer 4294967296`, `number 1.5`, `true`, `null`, `string "10"` (a string cut at 40 bytes on a
/// character boundary, then "…", written as a JSON string: valid UTF-8, no control character),
/// `an array`, `an object`. Shared by every decoder of hiccup's inputs (faults, scenarios, recipes).
std::string found_text(const nlohmann::json& j);

/// The largest value an integer field of a fault takes (after_event, after_fragment, delay_ms,
/// idle_ms, bytes, status): 1,000,000,000, so that sums and millisecond arithmetic stay in an int.
inline constexpr int kMaxFaultInteger = 1'000'000'000;

/// Decodes `j` (found at JSON pointer `pointer`) into a fault: first `kind`, then that kind's
/// fields (unknown fields are problems; a value of the wrong type or out of its range is a problem
/// naming the accepted range and the value found, e.g. "expected an integer in 0..1000000000,
/// found integer 4294967296").
/// On any problem returns nullopt and appends to `problems`.
std::optional<Fault> fault_from_json(const nlohmann::json& j, const std::string& pointer,
                                     std::vector<DecodeProblem>& problems);

}  // namespace mock
