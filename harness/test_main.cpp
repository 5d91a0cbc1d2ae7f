// The one Catch2 main shared by every test binary.
// CATCH_CONFIG_CONSOLE_WIDTH 240: a failing case's header is its name on one line. At Catch2
// 2.13's default of 80 a name with ": " far into it (the continuation lines are indented to just
// past the colon) wrapped forever: printHeaderString looped writing the same line (stop 56: a name
// with its colon at column 76 wrote for 14 minutes). The longest TEST_CASE name is 157 characters.
#define CATCH_CONFIG_CONSOLE_WIDTH 240
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
