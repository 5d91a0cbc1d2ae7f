// The runtime's own Anthropic Messages codec (WIRE-FORMATS.md, "Anthropic Messages"): the neutral
// history encoded as `POST /v1/messages` messages, the `event:`/`data:` stream decoded by content
// block index into parts and a finish, the non-streaming Message body, and the
// `{"type":"error","error":{type,message}}` envelope with `retry-after-ms` / `retry-after`. Pure
// functions; shares no code with the mock server.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "runtime_under_test/codec.h"

namespace rut {

/// The request target: `/v1/messages` (claude-code adds `?beta=true`; the runtime does not).
inline constexpr std::string_view kAnthropicTarget = "/v1/messages";

/// The `anthropic-version` request header the runtime sends.
inline constexpr std::string_view kAnthropicVersion = "2023-06-01";

/// `max_tokens` of every request (required by the API).
inline constexpr int kAnthropicMaxTokens = 4096;

/// The neutral history `contents` (role user/model, parts text / functionCall / functionResponse)
/// as Messages `messages`: a user content → a user message with one `tool_result` block per
/// functionResponse (`tool_use_id` = its id, `content` = its response serialised) first, then its
/// non-empty texts as `text` blocks; a model content → an assistant message with its non-empty
/// texts as `text` blocks, then one `tool_use` block `{id, name, input}` per functionCall. A call
/// without an id gets "toolu_rut_<content>_<part>", and a response without one the id of the call
/// at its position in the previous model content (by name when positions differ).
nlohmann::json anthropic_messages(const nlohmann::json& contents);

/// The finish class of a `stop_reason`: end_turn, tool_use, stop_sequence → kStop; max_tokens and
/// model_context_window_exceeded → kMaxTokens; refusal → kContentFilter; anything else (pause_turn,
/// null, unknown) → kOther.
FinishClass anthropic_finish_class(std::string_view stop_reason);

/// The Anthropic Messages ICodec: target `/v1/messages`, headers `x-api-key: hiccup` and
/// `anthropic-version: 2023-06-01`, body `{model, max_tokens, messages, stream, tools?}` with tools
/// `{name, input_schema: {type: "object"}}`.
const ICodec& anthropic_codec();

}  // namespace rut
