// The runtime's own OpenAI Chat Completions codec (WIRE-FORMATS.md, "OpenAI Chat Completions"):
// the neutral history encoded as `messages` (assistant `tool_calls`, one `tool` message per
// function response), the `chat.completion.chunk` stream decoded with tool calls accumulated by
// their `index` and handed out as soon as their arguments form a complete JSON object (the
// Vercel AI SDK's rule; at the finish chunk at the latest), the finish reported only at
// `data: [DONE]`, the non-streaming
// `chat.completion` body, and the `{"error"}` envelope with `retry-after-ms` / `retry-after`.
// Pure functions; shares no code with the mock.
#pragma once

#include <string_view>

#include "runtime_under_test/codec.h"

namespace rut {

/// The finish class of a Chat Completions `finish_reason`: `stop`, `tool_calls` (and the legacy
/// `function_call`) → kStop, `length` → kMaxTokens, `content_filter` → kContentFilter, anything
/// else → kOther. (The API has no malformed-call finish reason: it sends an error of type
/// `model_error` instead, which the codec reports as kMalformedCall.)
FinishClass openai_chat_finish_class(std::string_view finish_reason);

/// The OpenAI Chat Completions ICodec (`POST /v1/chat/completions`, `Authorization: Bearer`).
const ICodec& openai_chat_codec();

}  // namespace rut
