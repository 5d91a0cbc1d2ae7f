// Tests of the runtime's openai_responses codec.
#include <catch2/catch.hpp>

#include "runtime_under_test/openai_responses_codec.h"
