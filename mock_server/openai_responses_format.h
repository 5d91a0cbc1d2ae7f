// The OpenAI Responses wire format (WIRE-FORMATS.md, "OpenAI Responses"; what codex speaks):
// `POST /v1/responses` requests decoded into the neutral history view with the provider's exact
// 400 messages, `event:`/`data:` SSE pairs for script events, error envelopes with Retry-After
// headers, and non-streaming response objects. Pure functions, no I/O.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "mock_server/wire_format.h"

namespace mock::openai_responses {

/// The OpenAI Responses WireFormat (`POST /v1/responses`).
///
/// Streams: `response.created` + `response.in_progress` open the response; a run of text events is
/// one message item (`output_item.added`, `content_part.added`, then one `output_text.delta` per
/// text event), completed (`output_text.done`, `content_part.done`, `output_item.done`) at the next
/// call or the finish and left open by a fault, as live; a call is a `function_call` item
/// whose arguments stream as `function_call_arguments.delta` fragments. Every data object carries
/// `type` and a `sequence_number` counting from 0 across the response (a fault inside a call skips
/// the numbers of the frames it withholds).
/// Finishes: stop → `response.completed`; max_tokens / content_filter → `response.incomplete`
/// (`incomplete_details.reason` `max_output_tokens` / `content_filter`, the only two reasons of the
/// openai-node `Response.IncompleteDetails`); malformed_call → `response.failed` with error
/// `server_error` "The model produced invalid content. …" (OpenAI's message for a model output it
/// cannot parse; the Responses API has no dedicated finish for it).
/// In-stream errors: `event: error` (`{"type":"error","sequence_number":N,"error":{"type","code",
/// "message","param":null}}`, as live; the openai SDKs throw on it), then `response.failed` (N+1)
/// with `error.code` `rate_limit_exceeded` (429) or `server_error` (any other status); codex reads
/// only `response.failed` (codex-rs/codex-api/src/sse/responses.rs), and `ResponseError.code` lists
/// both codes.
const WireFormat& format();

/// Conversation state (`previous_response_id`, `store`: platform.openai.com/docs/api-reference/
/// responses/create; WIRE-FORMATS.md "Conversation state"). A stored response is kept in the run's
/// SessionMemory under stored_key(its id), as stored_value(the full request, its payload), by the
/// engine (format().stored_answer) and by the WebSocket transport (a `store: false` response on
/// its own connection only).

/// The SessionMemory key of stored response `id`.
std::string stored_key(std::string_view id);

/// The response id of a stored payload (a JSON object text whose `response` member begins with
/// `"id"`, as this format writes it: the response.completed event's data, or `{"response": BODY}`),
/// a view into `payload`; nullopt when it holds none. Read without parsing.
std::optional<std::string_view> payload_response_id(std::string_view payload);

/// A stored value: `request_body` (the full request the response answered, as JSON text) and
/// `payload` (a JSON object text whose `response` member is the response object: the
/// response.completed event's data, or `{"response": BODY}` for a unary answer).
std::string stored_value(std::string_view request_body, std::string_view payload);

/// The input items of a request continuing stored value `stored` with its own `input` (a string
/// = one user message, an array of items, or null = none): the stored request's input items, the
/// stored response's output items, then `input`'s. nullopt when `stored` is not a value
/// stored_value made. Never throws.
std::optional<nlohmann::json> continued_input(std::string_view stored, const nlohmann::json& input);

/// What the provider answers the own `input` of a continuation (before the stored conversation
/// is put in front of it): a type other than string, array or null, or an item's own problem
/// (a missing field, an unknown type), with the indexes the client sent; nullopt when none.
/// Pairing is checked on the full conversation, not here.
std::optional<Rejection> continuation_input_problem(const nlohmann::json& input);

/// The provider's message for a continuation of a response it does not hold (400, `code`
/// `previous_response_not_found`, `param` `previous_response_id`), `id` as the request sent it.
std::string not_found_message(std::string_view id);

}  // namespace mock::openai_responses
