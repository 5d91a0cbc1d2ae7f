// The OpenAI Chat Completions wire format (WIRE-FORMATS.md, "OpenAI Chat Completions"): request
// decoding into the neutral history view with the provider's exact 400 messages, SSE frames of
// `chat.completion.chunk` for script events, the `{"error":{message,type,param,code}}` envelope
// with `retry-after`/`retry-after-ms` headers, and the non-streaming `chat.completion` body.
// Pure functions, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "mock_server/wire_format.h"

namespace mock::openai_chat {

/// `created` of every chunk and completion (seconds since the epoch; fixed for determinism).
inline constexpr long long kCreated = 1700000000;

/// `system_fingerprint` of every chunk and completion.
inline constexpr std::string_view kSystemFingerprint = "fp_hiccup";

/// The message of OpenAI's `model_error` (sent as HTTP 500 or as an in-stream `{"error"}` data
/// frame when the model's output, e.g. a tool call, cannot be parsed): the nearest real
/// equivalent of Gemini's MALFORMED_FUNCTION_CALL. Quoted from the API (seen in
/// BerriAI/litellm#8020, microsoft/autogen#3247, OpenHands#5876).
inline constexpr std::string_view kModelErrorMessage =
    "The model produced invalid content. Consider modifying your prompt if you are seeing this "
    "error persistently.";

/// The message of OpenAI's 429 `rate_limit_exceeded` when a request quota ran out (both OpenAI
/// formats; WireFormat::quota_answer): "Rate limit reached for MODEL in organization org-hiccup on
/// requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s. Visit
/// https://platform.openai.com/account/rate-limits to learn more.", "per day (RPD)" and
/// "Limit 200, Used 200" for a per-day quota, the "Please try again in" part only with
/// `retry_after_s` (spelt as the API does: "20s", "1.5s", "7m12s", "1h2m3s"). Source: the
/// messages users quote from the API (openai-python and langchain issue threads).
std::string rate_limit_message(Quota quota, std::string_view model, std::optional<double> retry_after_s);

/// The headers both OpenAI formats send with every answer (WireFormat::add_answer_headers):
/// `x-request-id` `req_` + 32 lowercase hex digits, different per journal index (as live:
/// newrelic/newrelic-python-agent tests/mlmodel_langchain/_mock_external_openai_server.py records
/// `req_619548c272db4f1ab380b83de9fdedef`, January 2026), `x-ratelimit-limit-requests`
/// 10000, `x-ratelimit-remaining-requests` one less per request, `x-ratelimit-reset-requests` "6ms",
/// `x-ratelimit-limit-tokens` 30000000, `x-ratelimit-remaining-tokens`, `x-ratelimit-reset-tokens`
/// "0s"; a 429 says 0 remaining requests and tokens. Source: live response headers users quote
/// (community.openai.com "How to get rate limit reset time for response API?", 2025-05: the same
/// family on Chat Completions and Responses; platform.openai.com/docs/guides/rate-limits).
void add_answer_headers(std::size_t journal_index, int status, std::vector<std::pair<std::string, std::string>>& headers);

/// The Retry-After headers both OpenAI formats send for a wait of `retry_after_s` seconds
/// (negative, NaN or infinite read as 0): `retry-after` in whole seconds and `retry-after-ms` in
/// whole milliseconds, both rounded up, so they agree (ceil(ms / 1000) == the seconds) and a
/// positive wait is never 0 ms (0.0001 s → "1" and "1"). Names: platform.openai.com/docs/guides/
/// rate-limits and the `openai` SDKs, which read `retry-after-ms` first (WIRE-FORMATS.md).
std::vector<std::pair<std::string, std::string>> retry_after_headers(double retry_after_s);

/// `length` characters of `obfuscation` padding ([A-Za-z0-9], as live), the same for the same
/// (`journal_index`, `frame`) in every run and different from frame to frame. Both OpenAI formats
/// pad every streamed delta with it, a defence against reading token lengths off encrypted frame
/// sizes (platform.openai.com/docs/api-reference: `stream_options.include_obfuscation`, on by
/// default; false leaves it out).
std::string obfuscation_padding(std::size_t journal_index, std::uint64_t frame, std::size_t length);

/// Deterministic completion id of the response to `journal_index`: `chatcmpl-hiccup-<n>`.
std::string completion_id(std::size_t journal_index);

/// The envelope `{"error":{"message","type","param","code"}}` for `status`: 400/401/404
/// `invalid_request_error` (a 400 whose message names a parameter, `Invalid type for 'P': …`,
/// `Missing required parameter: 'P'.`, `Invalid 'P': empty array. …`, has `param` P and `code`
/// `invalid_type`, `missing_required_parameter` or `empty_array`, as live: pydantic/pydantic-ai#2653;
/// otherwise both null), 403 `request_forbidden`, 429 type `requests` code
/// `rate_limit_exceeded`, 500/503/529 `server_error`, 502 `cf_bad_gateway` and 504
/// `cf_gateway_timeout` (Cloudflare's, code = the status as a number).
nlohmann::ordered_json error_envelope(int status, std::string_view message);

/// A fresh encoder; `include_usage` adds the usage chunk (`choices: []`) before `data: [DONE]`
/// the way the API does for `stream_options.include_usage`. WireFormat::stream_encoder passes
/// false: its ResponseContext does not carry the request's stream_options.
std::unique_ptr<StreamEncoder> make_encoder(const ResponseContext& ctx, bool include_usage);

/// The OpenAI Chat Completions WireFormat (`POST /v1/chat/completions`).
const WireFormat& format();

}  // namespace mock::openai_chat
