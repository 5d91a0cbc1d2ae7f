// Shared bits of the libFuzzer targets (scripts/fuzz.sh): the provider a target is built for
// (HICCUP_FUZZ_PROVIDER, one binary per provider) and its request target path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#ifndef HICCUP_FUZZ_PROVIDER
#define HICCUP_FUZZ_PROVIDER "gemini"
#endif

namespace hiccup_fuzz {

inline constexpr std::string_view kProvider = HICCUP_FUZZ_PROVIDER;

/// The streaming request target of `provider` (WIRE-FORMATS.md; the mock serves these paths).
inline std::string_view stream_target(std::string_view provider) {
  if (provider == "openai-chat") return "/v1/chat/completions";
  if (provider == "openai-responses") return "/v1/responses";
  if (provider == "anthropic") return "/v1/messages";
  return "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace hiccup_fuzz
