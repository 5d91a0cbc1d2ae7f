// Validates a request body the way the real Gemini API would, before any script is played:
// JSON shape (HTTP 400 INVALID_ARGUMENT naming the problem) and function call / function
// response pairing with the API's exact messages (WIRE-FORMATS.md, "Pairing rejections").
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "mock_server/wire_format.h"

namespace mock::gemini {

/// Exact 400 message for a function response turn whose count differs from the call turn's
/// (also used for function responses not preceded by a function call turn).
inline constexpr std::string_view kResponseCountMessage =
    "Please ensure that the number of function response parts is equal to the number of function "
    "call parts of the function call turn.";
/// Exact 400 message for a function call turn not right after a user or function response turn.
inline constexpr std::string_view kCallTurnOrderMessage =
    "Please ensure that function call turn comes immediately after a user turn or after a "
    "function response turn.";

using Rejection = mock::Rejection;

/// Checks the call/response pairing of a `contents` array (assumed to be an array of objects).
/// nullopt when valid.
std::optional<Rejection> check_pairing(const nlohmann::json& contents);

/// Parses and validates a generateContent request body: JSON object, non-empty `contents` array
/// of objects with role "user"/"model" (absent = user) and a `parts` array, then pairing.
/// On success stores the parsed body in `parsed` (when given) and returns nullopt.
std::optional<Rejection> validate_request(std::string_view body,
                                          nlohmann::json* parsed = nullptr);

}  // namespace mock::gemini
