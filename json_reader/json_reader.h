// json_reader: reads JSON text into nlohmann::json exactly as nlohmann::json::parse(text, nullptr,
// /*allow_exceptions=*/false) does, about 2.5 times as fast. Both the runtime (SSE frames, bodies)
// and the mock server (request bodies) parse every byte they exchange, and nlohmann's lexer, which
// copies each character into a token buffer, was the largest single cost of an in-memory
// exploration case. The reader knows nothing of any wire format: it is a library both sides use,
// as they both use nlohmann's; its values are nlohmann's and so are their semantics.
//
// "Exactly" is checked, not assumed: json_reader_test compares the two on the bundled scenarios,
// the encoders' golden frames, hand-written edge cases and 200,000 mutations of them, and the
// libFuzzer target fuzz_json_reader does so on whatever libFuzzer makes (docs/ROBUSTNESS.md).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string_view>

#include <nlohmann/json.hpp>

namespace json_reader {

/// The value of the JSON text `text`, or a discarded value (is_discarded()) when
/// nlohmann::json::parse(text, nullptr, false) would discard it or when arrays and objects nest
/// deeper than `max_depth` levels (`[[1]]` is 2). Never throws.
///
/// What nlohmann accepts, and so this: RFC 8259 JSON with one leading UTF-8 byte-order mark
/// skipped; strings of well-formed UTF-8 (RFC 3629) without raw control characters, `\u`
/// surrogates only in pairs; numbers without leading zeros, a non-negative integer read as
/// number_unsigned and a negative one as number_integer when it fits in 64 bits, any other number
/// as a finite double (strtod; an overflow to infinity is rejected); one NUL byte outside a
/// string ends the input (what follows it is not read, except by the depth count, which, as the
/// brackets-outside-strings scans it replaces did, also covers it). Duplicate keys: the last wins.
///
/// Recursion: one stack frame per level, so `max_depth` bounds the stack the reader uses.
nlohmann::json parse(std::string_view text, std::size_t max_depth);

/// parse(text, max_depth), except that when the text is an object, its members named in `unread`
/// are read without being built: checked as parse checks them (the verdict is the same), and left
/// out of the value. For a caller that reads only the other members of an object: an SSE frame
/// whose `response` member holds a whole response object the decoder never looks at, or whose
/// usage and ids it ignores. Only the top-level object's members are matched.
nlohmann::json parse(std::string_view text, std::size_t max_depth, std::initializer_list<std::string_view> unread);

/// The deepest nesting of arrays and objects in a JSON text (brackets inside strings do not
/// count), found by one linear scan without parsing; stops counting at `cap` + 1. Valid or not,
/// the text is not parsed: for a caller that refuses deep input before any parser sees it.
std::size_t nesting_depth(std::string_view text, std::size_t cap);

}  // namespace json_reader
