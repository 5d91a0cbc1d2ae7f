// The Anthropic Messages wire format (WIRE-FORMATS.md, "Anthropic Messages"; what claude-code
// speaks): `POST /v1/messages[?beta=true]` decoded into the neutral history view and validated with
// the API's exact 400 messages, `event:`/`data:` SSE pairs for script events, the
// `{"type":"error","error":{type,message}}` envelope with `retry-after` / `x-should-retry` headers,
// and the non-streaming Message body. Pure functions, no I/O.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mock_server/script.h"
#include "mock_server/wire_format.h"

namespace mock::anthropic {

/// `usage.input_tokens` of every answer (fixed for determinism).
inline constexpr int kInputTokens = 8;

/// The error `type` of the envelope for an HTTP status (docs "Errors", platform.claude.com):
/// 400 invalid_request_error, 401 authentication_error, 402 billing_error, 403 permission_error,
/// 404 not_found_error, 409 conflict_error, 413 request_too_large, 429 rate_limit_error,
/// 500 api_error, 504 timeout_error, 529 overloaded_error. Other 4xx: invalid_request_error (the
/// docs say the API uses it for unlisted 4xx); 503: overloaded_error (the API has no 503 type; an
/// unavailable model is what 529 says); other 5xx: api_error.
std::string_view error_type(int status);

/// The API's usual message for a status: the SDK spec's defaults ("Invalid request", "Permission
/// denied", "Not found", "Rate limited", "Internal server error", "Request timeout",
/// "Overloaded"), 401 "invalid x-api-key" as the API answers a bad key.
std::string_view default_message(int status);

/// The error envelope `{"type":"error","error":{"type","message"}}` (no `request_id`: the real API
/// adds `"request_id":"req_…"`, the SDK only logs it) serialised on one line.
std::string error_body(int status, std::string_view message);

/// The headers of an error answer: `x-should-retry: true` for 408, 409, 429, 500, 502, 503, 504 and
/// 529, else `false` (the API sends it: a real 400 carries `x-should-retry: false`, seen in
/// lobehub/lobehub#1496 and #1601; @anthropic-ai/sdk obeys it before its status rules, client.ts
/// `shouldRetry`), and `retry-after` in seconds when `retry_after_s` is set (integral values
/// without a fraction, e.g. "30"; the SDK parses it with parseFloat).
std::vector<std::pair<std::string, std::string>> error_headers(int status,
                                                               std::optional<double> retry_after_s);

/// The headers the API sends with every answer (WireFormat::add_answer_headers): `request-id`
/// ("req_011C" and 20 base58 characters derived from `journal_index`, 28 characters as live),
/// `anthropic-organization-id` (a fixed UUID), and the four `anthropic-ratelimit-*` families
/// (requests, tokens, input-tokens, output-tokens), each `-limit`, `-remaining` (one less per
/// request; 0 on a 429) and `-reset`, an RFC 3339 time that is fixed and in the past
/// ("2026-01-01T00:00:00Z": the window has already reset; no wall clock reaches an answer). Source:
/// a recorded live answer of 2025-08-21 (tidyllm's test cassette messages-e050b5-POST.R) and
/// docs.anthropic.com/en/api/overview "Response headers", /en/api/rate-limits.
void add_answer_headers(std::size_t journal_index, int status, std::vector<std::pair<std::string, std::string>>& headers);

/// Deterministic Message id of the answer to journal entry `journal_index`: "msg_hiccup_<index>".
std::string message_id(std::size_t journal_index);

/// Deterministic tool_use id: "toolu_hiccup_<journal index>_<call index>" (matches the API's
/// `^[a-zA-Z0-9_-]+$` id pattern).
std::string tool_use_id(std::size_t journal_index, int call_index);

/// `stop_reason` for a scenario finish: stop → "end_turn" ("tool_use" when `delivered_calls`),
/// max_tokens → "max_tokens", content_filter → "refusal". malformed_call has no stop_reason: it is
/// sent as an `api_error` (see malformed_call_error) and this returns "".
std::string_view stop_reason(FinishReason reason, bool delivered_calls);

/// The error a malformed_call finish becomes. The Messages API has no finish reason for a call it
/// could not parse; the nearest real failure is a server-side `api_error` ("Internal server
/// error"), in-stream as `event: error` and, in a non-streaming answer, as the error envelope.
inline constexpr int kMalformedCallStatus = 500;

/// The in-stream error for an HTTP-like status: `event: error` with the error envelope
/// (`overloaded_error`/"Overloaded" for 529 and 503).
std::string stream_error_event(int status);

/// An undecodable event with valid SSE framing: `event: content_block_delta` and a data line whose
/// JSON is cut (the SDK throws on it, "Could not parse message into JSON").
std::string malformed_event();

/// The exact 400 message for tool_use ids of `messages[n]` with no tool_result in `messages[n+1]`
/// (ids joined with ", "). Quoted from the API (anthropics/claude-code#5989 for two ids, #1237,
/// #3512, Kilo-Org/kilocode#5163).
std::string missing_tool_result_message(std::size_t n, const std::vector<std::string>& ids);

/// The exact 400 message for tool_result blocks of `messages[n]` (the first at `content[m]`) whose
/// ids no tool_use of `messages[n-1]` has (ids joined with ", "). Quoted from the API
/// (anthropics/claude-code#10834, #18947, router-for-me/CLIProxyAPI#497).
std::string unexpected_tool_use_id_message(std::size_t n, std::size_t m,
                                           const std::vector<std::string>& ids);

/// The exact 400 message for a tool_use block at `messages[n].content[m]` whose id an earlier
/// tool_use block of the request already has. Quoted from the API
/// (anthropics/claude-code#20901, anomalyco/opencode#1279; also seen without the backticks,
/// anthropics/claude-code#20700).
std::string duplicate_tool_use_id_message(std::size_t n, std::size_t m);

/// The exact 400 message for a final assistant message (`messages[n]`) whose first block is of type
/// `found` (e.g. "tool_use", "text") instead of a thinking block, when one of its tool_use blocks
/// was delivered after thinking. Quoted from the API (opencode#3077, Kilo-Org/kilocode#5219 with
/// "found `tool_use`"; lbjlaq/Antigravity-Manager#139 and #168 with "found `text`"), the
/// "preceeding" sic.
std::string thinking_first_message(std::size_t n, std::string_view found);

/// The exact 400 message for a thinking block at `messages[n].content[m]` whose signature (or
/// thinking text, which the signature covers) is not one the API gave. Quoted from the API
/// (lbjlaq/Antigravity-Manager#498, ding113/claude-code-hub#518, code-yeongyu/oh-my-openagent#2775).
std::string invalid_signature_message(std::size_t n, std::size_t m);

/// Anthropic's reasoning rules for a decoded request (WireFormat::check_reasoning): every thinking
/// block of an assistant message of a turn that delivered thinking is one delivered, unchanged
/// (invalid_signature_message); the final assistant message starts with a thinking block when one
/// of its calls was delivered after thinking (thinking_first_message). Both pairing rejections.
std::optional<Rejection> check_thinking(std::string_view body, const std::vector<ReasoningCheck>& checks);

/// Decodes and validates a Messages request body (see WireFormat::decode_request). Shape problems
/// (body not a JSON object, `model`, `max_tokens` or `messages` missing, a message that is not
/// `{role: "user"|"assistant", content}`, a first message not from the user) give a 400 with
/// pairing = false; tool_use / tool_result pairing gives the messages above with pairing = true.
DecodedRequest decode_messages(std::string_view body);

/// The Anthropic WireFormat.
const WireFormat& format();

}  // namespace mock::anthropic
