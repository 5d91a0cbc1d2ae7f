// Tests of the openai_chat wire format (mock side): golden frames, decoding, validation.
#include <catch2/catch.hpp>

#include "mock_server/openai_chat_format.h"
