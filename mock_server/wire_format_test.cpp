// Tests of the format registry and shared helpers (wire_format.h).
#include <catch2/catch.hpp>

#include "mock_server/wire_format.h"
