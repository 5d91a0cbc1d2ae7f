// The OpenAI Chat Completions wire format (WIRE-FORMATS.md, "OpenAI Chat Completions"): request decoding into the neutral
// history view with the provider's exact 400 messages, SSE frames for script events, error
// envelopes and non-streaming bodies. Pure functions, no I/O.
#pragma once

#include "mock_server/wire_format.h"

namespace mock::openai_chat {

/// The OpenAI Chat Completions WireFormat (`POST /v1/chat/completions`).
const WireFormat& format();

}  // namespace mock::openai_chat
