// The script the mock model server plays: turns of attempts, each an HTTP error or a stream of
// events with at most one fault. This is the server's view of a scenario (harness::Scenario holds
// one); it is provider-neutral: gemini_format turns events into the provider's SSE frames.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "mock_server/faults.h"

namespace mock {

/// Finish reasons of SCENARIO-FORMAT.md; mapped per provider (Gemini: STOP, MAX_TOKENS, SAFETY,
/// MALFORMED_FUNCTION_CALL; WIRE-FORMATS.md).
enum class FinishReason { kStop, kMaxTokens, kContentFilter, kMalformedCall };

/// Scenario spelling of a finish reason: "stop", "max_tokens", "content_filter", "malformed_call".
std::string_view finish_name(FinishReason reason);
/// Inverse of finish_name; nullopt for an unknown name.
std::optional<FinishReason> finish_from_name(std::string_view name);

/// `{ "text": "…" }`: one text part.
struct TextEvent {
  std::string text;
  /// `delay_s`: the event's timing, virtual seconds before its first byte goes out (played as a
  /// `stall` of that length, scaled by Script::timing); unset: none. `hiccup record --timing`
  /// records it (SCENARIO-FORMAT.md "Event timing").
  std::optional<double> delay_s;
  bool operator==(const TextEvent&) const = default;
};

/// `{ "call": { "name", "args", "id"?, "fragments"?, "reuse_id"? } }`: one complete function call.
/// `args` is a JSON object. `id` empty means "the format's default" (Gemini sends none; the others
/// get a deterministic id from the server). `fragments` = how many argument fragments formats that
/// stream arguments send (0 = the default, one fragment); Gemini always sends a call whole.
/// `reuse_id`: the provider misbehaves on purpose: `id` repeats the id of an earlier call of the
/// same attempt or of an earlier turn (SCENARIO-FORMAT.md "Call ids"; without it lint refuses a
/// repeated id). The server sends the id as scripted either way; the journal marks the call.
struct CallEvent {
  std::string name;
  nlohmann::json args = nlohmann::json::object();
  std::string id;
  int fragments = 0;
  bool reuse_id = false;
  /// `delay_s`: the event's timing, virtual seconds before its first byte goes out (played as a
  /// `stall` of that length, scaled by Script::timing); unset: none. `hiccup record --timing`
  /// records it (SCENARIO-FORMAT.md "Event timing").
  std::optional<double> delay_s;
  bool operator==(const CallEvent&) const = default;
};

/// `{ "finish": "stop" }`: the terminal event. `after_fragment` (only with `max_tokens`): the
/// token limit falls inside the call event right before this finish: that call's start and its
/// first `after_fragment` argument fragments go out, then this finish; the call is never delivered
/// whole (formats that send a call whole, Gemini, send nothing of it). SCENARIO-FORMAT.md.
struct FinishEvent {
  FinishReason reason = FinishReason::kStop;
  std::optional<int> after_fragment;
  /// `delay_s`: the event's timing, virtual seconds before its first byte goes out (played as a
  /// `stall` of that length, scaled by Script::timing); unset: none. `hiccup record --timing`
  /// records it (SCENARIO-FORMAT.md "Event timing").
  std::optional<double> delay_s;
  bool operator==(const FinishEvent&) const = default;
};

/// `{ "reasoning": { "text": "…", "signature"?: "…" } }`: reasoning the model attaches to its answer
/// and the client must send back unchanged (SCENARIO-FORMAT.md "Reasoning"; WIRE-FORMATS.md per
/// provider): an Anthropic `thinking` block with its `signature`, a Responses `reasoning` output
/// item (`summary` text, `encrypted_content`), a Gemini `thought: true` part whose
/// `thoughtSignature` travels on the next functionCall part; Chat Completions sends nothing.
/// `signature` empty means "the server's deterministic one" (default_signature). It is neither
/// text output nor a call.
/// `redacted`: reasoning the provider withholds (Anthropic flags part of the thinking): only its
/// opaque `signature` travels, as an Anthropic `redacted_thinking` block whose `data` it is (whole
/// in its content_block_start, no deltas), a Responses reasoning item with `encrypted_content` and
/// an empty `summary`, a Gemini thought part with empty text; `text` is then "".
struct ReasoningEvent {
  std::string text;
  std::string signature;
  bool redacted = false;
  /// `delay_s`: the event's timing, virtual seconds before its first byte goes out (played as a
  /// `stall` of that length, scaled by Script::timing); unset: none. `hiccup record --timing`
  /// records it (SCENARIO-FORMAT.md "Event timing").
  std::optional<double> delay_s;
  bool operator==(const ReasoningEvent&) const = default;
};

using Event = std::variant<TextEvent, CallEvent, FinishEvent, ReasoningEvent>;

/// The signature a reasoning event without a scripted one carries: deterministic from the
/// request's journal index J and the event's position R among its attempt's reasoning events,
/// base64 (the standard alphabet with padding) of "hiccup-thought-J-R", as opaque to a client as a
/// real one.
std::string default_signature(std::size_t journal_index, int reasoning_index);

/// When event `i` of `events` is a call that the finish right after it cuts (a `max_tokens`
/// finish with `after_fragment`): how many argument fragments of it go out. nullopt otherwise.
std::optional<int> cut_by_finish(const std::vector<Event>& events, std::size_t i);

/// Which request quota a 429 says ran out (SCENARIO-FORMAT.md "Turns and attempts", `quota`):
/// one that resets within the minute (a client may wait and retry) or one that resets only the
/// next day (Gemini's `QuotaFailure` names a per-day quota id, which gemini-cli and others treat
/// as terminal: googleQuotaErrors.ts `classifyGoogleError`).
enum class Quota { kPerMinute, kPerDay };

/// "per_minute" or "per_day", as scenarios spell it.
std::string_view quota_name(Quota quota);

/// One attempt: either `status` (an HTTP error before any stream, body in the provider's error
/// envelope, optional Retry-After in seconds, and for a 429 optionally the `quota` that ran out)
/// or a stream of `events` (HTTP 200) with an optional fault and optional slicing of the stream
/// into writes of at most `slice_bytes` bytes.
/// How an attempt plays over the WebSocket transport (mock_server/websocket/,
/// docs/SCENARIO-FORMAT.md "Over WebSocket"). The engine carries it to Plan::websocket untouched;
/// over HTTP it has no effect.
struct WebSocketChoices {
  /// The close that ends a fault which ends the connection (disconnect, cut, end): 1000 or 1011 =
  /// a close frame with that code, 1006 = no close frame (FIN). Unset: 1006, and 1000 for `end`.
  std::optional<int> close_code;
  /// The in-band error of a status attempt carries `"error": "<message>"`, a string, instead of
  /// an object (the shape that crashed opencode, anomalyco/opencode#49338).
  bool string_error = false;
  /// The `malformed` fault sends a frame that breaks RFC 6455 (RSV1 set) instead of a text frame
  /// whose JSON does not parse.
  bool malformed_frame = false;
  /// The server does not keep this attempt's response: a later `previous_response_id` naming it is
  /// answered `previous_response_not_found` (400), as after a reconnect to another node.
  bool forget_response = false;
  bool operator==(const WebSocketChoices&) const = default;
};

struct Attempt {
  std::optional<int> status;
  std::optional<double> retry_after_s;
  std::vector<Event> events;
  std::optional<Fault> fault;
  std::optional<int> slice_bytes;
  std::optional<Quota> quota;  ///< with status 429 only; last so that positional initializers stay valid
  std::optional<WebSocketChoices> websocket;  ///< over WebSocket only; after quota for the same reason
  bool operator==(const Attempt&) const = default;
};

/// One model turn: its attempts in order; the last one repeats when they are used up.
struct Turn {
  std::vector<Attempt> attempts;
  bool operator==(const Turn&) const = default;
};

/// The whole script of one run. `provider` is the scenario's wire format ("gemini",
/// "openai-chat", "openai-responses", "anthropic"): the runtime speaks it and errors for paths no
/// format serves use its envelope; a request is answered in the format its path names.
struct Script {
  std::string provider = "gemini";
  std::vector<Turn> turns;
  /// Over WebSocket: every upgrade is refused with this status (403, 404, 405 or 426) and the
  /// client must fall back to HTTP; unset: upgrades are accepted.
  std::optional<int> websocket_upgrade_status;
  /// How events' `delay_s` play (SCENARIO-FORMAT.md "Event timing"): each delay times `scale`,
  /// then at most `max_delay_s`.
  struct Timing {
    double scale = 1;
    std::optional<double> max_delay_s;
    bool operator==(const Timing&) const = default;
  };
  Timing timing;
  bool operator==(const Script&) const = default;
};

/// Event `e`'s delay as Script `timing` plays it, in virtual seconds (0: none).
double event_delay_s(const Event& e, const Script::Timing& timing);

}  // namespace mock
