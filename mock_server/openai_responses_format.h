// The OpenAI Responses wire format (WIRE-FORMATS.md, "OpenAI Responses"): request decoding into the neutral
// history view with the provider's exact 400 messages, SSE frames for script events, error
// envelopes and non-streaming bodies. Pure functions, no I/O.
#pragma once

#include "mock_server/wire_format.h"

namespace mock::openai_responses {

/// The OpenAI Responses WireFormat (`POST /v1/responses`).
const WireFormat& format();

}  // namespace mock::openai_responses
