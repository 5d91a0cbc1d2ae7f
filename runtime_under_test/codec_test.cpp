// Tests of the codec registry and shared helpers (codec.h).
#include <catch2/catch.hpp>

#include "runtime_under_test/codec.h"
