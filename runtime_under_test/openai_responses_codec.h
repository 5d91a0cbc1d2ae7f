// The runtime's own OpenAI Responses codec (WIRE-FORMATS.md, "OpenAI Responses"): the neutral
// history encoded as `POST /v1/responses` input items, its `event:`/`data:` stream and
// non-streaming response object decoded into parts and a finish, its error envelope and
// Retry-After read. Pure functions; shares no code with the mock server.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime_under_test/codec.h"

namespace rut {

/// The `input` items for a neutral `contents` array: a user text content is one user message
/// (`input_text` parts); its function responses are `function_call_output` items
/// `{call_id: id, output: response.dump()}`; a model content is one assistant message (its text
/// parts joined into one `output_text`; an empty content still gives one, so the turn count
/// survives) when it has text, then one `function_call` item per call
/// `{call_id: id, name, arguments: args.dump()}`.
nlohmann::json responses_input(const nlohmann::json& contents);

/// The request body `{model, input, stream, store:false, tools?}`; each tool is declared
/// `{type:"function", name, description, parameters:{type:"object"}, strict:false}` (Responses
/// makes function tools strict by default, which an open schema does not satisfy).
std::string responses_request_body(const nlohmann::json& contents, std::string_view model,
                                   const std::vector<std::string>& tool_names, bool stream);

/// The OpenAI Responses ICodec. Finishes: `response.completed` → stop; `response.incomplete` with
/// `incomplete_details.reason` `max_output_tokens` → max tokens, `content_filter` → content
/// filter, any other → other; `response.failed` whose error says "The model produced invalid
/// content" → malformed call, any other `response.failed` or `error` event → stream error.
const ICodec& openai_responses_codec();

}  // namespace rut
