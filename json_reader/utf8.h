// Well-formed UTF-8 (RFC 3629 §4), in the one library both sides link: the mock server makes
// foreign text fit for JSON with it (mock_server/json_text.h) and the runtime's WebSocket client
// checks text messages with it (RFC 6455 §8.1), without either including the other.
#pragma once

#include <cstddef>
#include <string_view>

namespace json_reader {

/// The length in bytes (1–4) of the well-formed UTF-8 character `s` starts with (RFC 3629 §4: no
/// overlong forms, no surrogates, nothing above U+10FFFF); 0 when `s` is empty or starts with an
/// ill-formed or truncated sequence.
std::size_t utf8_char_length(std::string_view s);

/// True when all of `s` is well-formed UTF-8 (what nlohmann's dump() accepts).
bool is_utf8(std::string_view s);

}  // namespace json_reader
