// Tests of the openai_responses wire format (mock side): golden frames, decoding, validation.
#include <catch2/catch.hpp>

#include "mock_server/openai_responses_format.h"
