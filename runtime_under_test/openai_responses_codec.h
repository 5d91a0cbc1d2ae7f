// The runtime's own OpenAI Responses codec (WIRE-FORMATS.md, "OpenAI Responses"): the neutral history
// encoded as the provider's request, its SSE stream and non-streaming body decoded into parts and
// a finish, its error envelope and Retry-After read. Pure functions; shares no code with the mock.
#pragma once

#include "runtime_under_test/codec.h"

namespace rut {

/// The OpenAI Responses ICodec.
const ICodec& openai_responses_codec();

}  // namespace rut
