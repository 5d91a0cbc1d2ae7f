// Tests of the anthropic wire format (mock side): golden frames, decoding, validation.
#include <catch2/catch.hpp>

#include "mock_server/anthropic_format.h"
