// Tests of the runtime's openai_chat codec.
#include <catch2/catch.hpp>

#include "runtime_under_test/openai_chat_codec.h"
