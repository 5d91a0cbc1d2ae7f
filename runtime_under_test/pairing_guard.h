// The pre-send pairing guard (docs/POLICY.md "Tools"): before each request, drop function
// responses that match no call of the preceding model turn (by id when present, else by name;
// each call answered at most once). Gemini rejects mismatched counts with HTTP 400.
#pragma once

#include <nlohmann/json.hpp>

namespace rut {

/// Filters `contents` in place; a user content left without parts is removed. Returns the number
/// of function responses dropped.
int apply_pairing_guard(nlohmann::json& contents);

}  // namespace rut
