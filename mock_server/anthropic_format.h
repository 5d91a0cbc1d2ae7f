// The Anthropic Messages wire format (WIRE-FORMATS.md, "Anthropic Messages"): request decoding into the neutral
// history view with the provider's exact 400 messages, SSE frames for script events, error
// envelopes and non-streaming bodies. Pure functions, no I/O.
#pragma once

#include "mock_server/wire_format.h"

namespace mock::anthropic {

/// The Anthropic Messages WireFormat (`POST /v1/messages`).
const WireFormat& format();

}  // namespace mock::anthropic
