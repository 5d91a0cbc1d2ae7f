// How much of its repetitions a repetition-heavy test runs (the soak's requests, the kill matrices'
// seeds, the HTTP-against-memory cases). The plain ctest runs them all; the sanitizer runs
// (scripts/sanitize.sh) set HICCUP_TEST_SCALE=0.1 (0.25 until stop 56), so those entries still run every code path
// they reach, on fewer seeds or requests: under ASan + UBSan the 1-minimal kill matrix alone took
// 301 s of a 674 s ctest (docs/ROBUSTNESS.md, "CI's time budget").
#pragma once

#include <cmath>
#include <cstdlib>
#include <regex>
#include <stdexcept>
#include <string>

namespace hiccup_test {

/// The scale in HICCUP_TEST_SCALE: a plain decimal number (digits, an optional point, an optional
/// exponent: 0.25, 1, 5e-2) in (0, 1]; 1 when unset or empty. Read on every call, so per test.
/// Throws std::invalid_argument naming the variable and its value when it is anything else, so a
/// mistyped scale fails the test instead of running it whole or not at all. check_reports.py's
/// scaled() accepts exactly the same texts.
inline double test_scale() {
  const char* text = std::getenv("HICCUP_TEST_SCALE");
  if (text == nullptr || *text == '\0') return 1.0;
  static const std::regex kDecimal(R"([0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?)");
  const double scale = std::regex_match(text, kDecimal) ? std::strtod(text, nullptr) : 0.0;
  if (!(scale > 0.0 && scale <= 1.0)) {
    throw std::invalid_argument("HICCUP_TEST_SCALE must be a number in (0, 1]; found '" + std::string(text) + "'");
  }
  return scale;
}

/// `full` repetitions times test_scale(), rounded up: at least 1 (for full >= 1), at most full.
inline int scaled(int full) {
  if (full <= 0) return full;
  const int n = static_cast<int>(std::ceil(full * test_scale()));
  return n < 1 ? 1 : (n > full ? full : n);
}

}  // namespace hiccup_test
