// The Gemini wire format (WIRE-FORMATS.md, "Gemini"): request targets and bodies, SSE frames of
// GenerateContentResponse for script events, the error envelope with RetryInfo, the in-stream
// error object and the non-streaming generateContent body. Pure functions, no I/O.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mock_server/script.h"
#include "mock_server/wire_format.h"

namespace mock::gemini {

/// What a request target names: `/v1beta/models/{model}:streamGenerateContent[?alt=sse]`
/// (streaming = true) or `/v1beta/models/{model}:generateContent` (streaming = false).
struct Target {
  std::string model;
  bool streaming = false;
};

/// Parses a request target (path plus optional query); nullopt when it names no Gemini
/// generate method.
std::optional<Target> parse_target(std::string_view target);

/// Google RPC status name for an HTTP status: 400 INVALID_ARGUMENT, 401 UNAUTHENTICATED,
/// 403 PERMISSION_DENIED, 404 NOT_FOUND, 429 RESOURCE_EXHAUSTED, 500 INTERNAL,
/// 502/503/529 UNAVAILABLE, 504 DEADLINE_EXCEEDED; "UNKNOWN" otherwise.
std::string_view status_name(int status);

/// The API's usual message for an HTTP status (e.g. 503: "The model is overloaded. Please try
/// again later.").
std::string_view default_message(int status);

/// `retryDelay` spelling of a delay in seconds: whole seconds as "30s", else e.g. "1.5s".
std::string retry_delay(double seconds);

/// The error envelope `{"error":{"code","message","status","details"?}}`; with `retry_after_s`
/// the details hold one `type.googleapis.com/google.rpc.RetryInfo` with its `retryDelay`.
nlohmann::ordered_json error_envelope(int status, std::string_view message,
                                      std::optional<double> retry_after_s = std::nullopt);

/// The HTTP body of an error answer: error_envelope(...) pretty-printed as Google's front end
/// writes it, two-space indent, `": "` after keys, and a final newline:
/// "{\n  \"error\": {\n    \"code\": 503,\n    \"message\": …,\n    \"status\": \"UNAVAILABLE\"\n  }\n}\n".
/// Sources: a recorded live 404 of streamGenerateContent (googleapis/js-genai
/// test/system/recordings/Chats_Tests_sendMessage_Send_message_stream_with_error.json: its
/// Content-Length, 858, is this layout of its body exactly), the bodies users quote
/// (gemini-cli #2020 and #15745 through @google/genai; google/generative-ai-docs#236 from curl).
std::string error_body(int status, std::string_view message,
                       std::optional<double> retry_after_s = std::nullopt);

/// The body of the 429 for a request quota that ran out (WireFormat::quota_answer), laid out as
/// error_body: status RESOURCE_EXHAUSTED, the live message ("You exceeded your current quota,
/// … * Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests,
/// limit: L, model: MODEL", and "Please retry in S." with `retry_after_s`), and the details
/// `QuotaFailure` (one violation: quotaMetric, quotaId
/// "GenerateRequestsPerDayPerProjectPerModel-FreeTier" or "…PerMinute…", quotaDimensions
/// {location, model}, quotaValue), `Help` (the rate-limits page) and, with `retry_after_s`,
/// `RetryInfo`. Sources: the bodies users quote from the live API (the quota id, metric, limit
/// and a 38 s retryDelay on a per-day quota); gemini-cli's classifyGoogleError
/// (packages/core/src/utils/googleQuotaErrors.ts) reads a quota id containing "PerDay" as a
/// TerminalQuotaError and otherwise waits for RetryInfo.
std::string quota_error_body(mock::Quota quota, std::string_view model, std::optional<double> retry_after_s);

/// The `Content-Type` of an error answer to a request for `target`: "text/event-stream" for
/// streamGenerateContent (the live 404 recording above: the error keeps the stream's type), so
/// @google/genai's throwErrorIfNotOK (src/_api_client.ts) reads the body as text and its ApiError
/// message wraps the pretty text, `{"error":{"message":"{\n  \"error\": …","code":503,
/// "status":"Service Unavailable"}}`, as gemini-cli users see it (#2020, #15745);
/// "application/json; charset=UTF-8" for generateContent and anything else (the type js-genai's
/// own tests expect of a generateContent answer, test/system/node/client_test.ts; the SDK parses
/// it: js-genai #1840 quotes `ApiError: {"error":{"code":429,…}}`).
std::string_view error_content_type(std::string_view target);

/// Deterministic `responseId` for the response to journal entry `journal_index`.
std::string response_id(std::size_t journal_index);

/// Per-response values every frame carries.
struct FrameContext {
  std::string model;        ///< echoed as `modelVersion` (the requested model)
  std::string response_id;  ///< `responseId`
  /// Reasoning events so far in the answer: when > 0, `usageMetadata` carries
  /// `thoughtsTokenCount` (this count) after `totalTokenCount`, which includes it, as a thinking
  /// model's answer does (ai.google.dev/gemini-api/docs/thought-signatures, the Gemini 3 answer
  /// shown there: `promptTokenCount, candidatesTokenCount, totalTokenCount, promptTokensDetails,
  /// thoughtsTokenCount`). `cachedContentTokenCount` is never sent: the API leaves out a zero count,
  /// and nothing is cached here.
  int thoughts = 0;
};

/// Gemini finish reason for a scenario finish: STOP, MAX_TOKENS, SAFETY, MALFORMED_FUNCTION_CALL.
std::string_view finish_reason_name(FinishReason reason);

/// One GenerateContentResponse for one event: text → parts [{text}], call → parts
/// [{functionCall:{name,args,id?}}], finish STOP/MAX_TOKENS → empty parts plus finishReason,
/// finish SAFETY/MALFORMED_FUNCTION_CALL → a candidate with no content (blocked output).
nlohmann::ordered_json event_response(const Event& event, const FrameContext& ctx);

/// One SSE frame: "data: " + one-line JSON + "\r\n\r\n" (no event:/id: lines).
std::string sse_frame(const nlohmann::ordered_json& response);

/// sse_frame(event_response(event, ctx)).
std::string event_frame(const Event& event, const FrameContext& ctx);

/// An undecodable frame with valid SSE framing: `data: {"candidates":[{` + "\r\n\r\n".
std::string malformed_frame();

/// The in-stream error the official SDK recognises: a bare `{"error":{…}}` object on one line +
/// "\n" (not a data: line), written as its own chunk.
std::string stream_error_chunk(int status);

/// The non-streaming generateContent body: one GenerateContentResponse whose single candidate
/// holds all parts of `events` in order (a run of text events as one text part) and the
/// finishReason of the first finish (if any); a
/// SAFETY finish gives a blocked candidate with no content (the parts before it are dropped), as
/// does any other non-STOP/MAX_TOKENS finish with no parts.
nlohmann::ordered_json merged_response(const std::vector<Event>& events, const FrameContext& ctx);

/// The neutral history helpers under their Gemini names (Gemini's `contents` are the neutral view).
using CallPart = HistoryCall;
using ResponsePart = HistoryResponse;
using ContentSummary = HistoryContent;
inline std::vector<ContentSummary> summarize_contents(const nlohmann::json& contents) {
  return summarize_history(contents);
}
inline int turn_index(const nlohmann::json& contents) { return mock::turn_index(contents); }

/// The exact 400 message (INVALID_ARGUMENT) for a function call of the current turn sent back without
/// the thoughtSignature the API gave it: its name and `position`, the content's place in `contents`
/// counted from 1 (a first tool call's answer names "position 2"). Quoted from the API
/// (csells/dartantic#86, manthanabc/paws#103, lbjlaq/Antigravity-Manager#2157, nanbingxyz/5ire#405;
/// the space before the comma is the API's); the count from 1 is inferred from those reports.
std::string missing_signature_message(std::string_view name, std::size_t position);

/// The exact 400 message for a thoughtSignature the API did not give (changed, or another
/// response's): google-gemini/gemini-cli#13467, charmbracelet/crush#1698.
inline constexpr std::string_view kCorruptedSignatureMessage = "Corrupted thought signature.";

/// Gemini 3's rule (ai.google.dev "Thought signatures", WireFormat::check_reasoning): in the current
/// turn (the model contents after the last user text), the functionCall part that carried a
/// thoughtSignature carries it again, unchanged. Pairing rejections.
std::optional<Rejection> check_thought_signatures(std::string_view body, const std::vector<ReasoningCheck>& checks);

/// The Gemini WireFormat: `/v1beta/models/{model}:streamGenerateContent?alt=sse` and
/// `:generateContent`, built from the functions above.
const WireFormat& format();

}  // namespace mock::gemini
