// The runtime's own OpenAI Chat Completions codec (WIRE-FORMATS.md, "OpenAI Chat Completions"): the neutral history
// encoded as the provider's request, its SSE stream and non-streaming body decoded into parts and
// a finish, its error envelope and Retry-After read. Pure functions; shares no code with the mock.
#pragma once

#include "runtime_under_test/codec.h"

namespace rut {

/// The OpenAI Chat Completions ICodec.
const ICodec& openai_chat_codec();

}  // namespace rut
