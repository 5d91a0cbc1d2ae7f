// The runtime's own Anthropic Messages codec (WIRE-FORMATS.md, "Anthropic Messages"): the neutral history
// encoded as the provider's request, its SSE stream and non-streaming body decoded into parts and
// a finish, its error envelope and Retry-After read. Pure functions; shares no code with the mock.
#pragma once

#include "runtime_under_test/codec.h"

namespace rut {

/// The Anthropic Messages ICodec.
const ICodec& anthropic_codec();

}  // namespace rut
