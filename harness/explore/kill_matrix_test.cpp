// The kill matrix per format: exploring with each seeded defect on, every case in one provider's
// format, finds a failure and shrinks it small (seeds 1-3). Its own binary, ctest label
// `kill-matrix`, which the sanitizer trees leave out (scripts/unsanitized_labels): under ASan +
// UBSan these four entries took 160 of the ASan ctest's 564 test-seconds at one seed each (stop
// 56), while the entry with providers drawn per case (explorer_test.cpp, in harness_tests) runs
// every format's encoder, codec, explorer and shrinker there too. The plain tree runs them whole.
#include <catch2/catch.hpp>

#include "harness/explore/explore_testing.h"

using hiccup_test::require_every_defect_found;

TEST_CASE("exploration finds every seeded defect and shrinks it small (seeds 1-3): gemini", "[explore][kill-matrix]") {
  require_every_defect_found("gemini");
}
TEST_CASE("exploration finds every seeded defect and shrinks it small (seeds 1-3): openai-chat", "[explore][kill-matrix]") {
  require_every_defect_found("openai-chat");
}
TEST_CASE("exploration finds every seeded defect and shrinks it small (seeds 1-3): openai-responses", "[explore][kill-matrix]") {
  require_every_defect_found("openai-responses");
}
TEST_CASE("exploration finds every seeded defect and shrinks it small (seeds 1-3): anthropic", "[explore][kill-matrix]") {
  require_every_defect_found("anthropic");
}
