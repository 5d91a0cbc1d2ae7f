// Tests of the runtime's anthropic codec.
#include <catch2/catch.hpp>

#include "runtime_under_test/anthropic_codec.h"
