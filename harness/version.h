// hiccup's release version: written into every summary.json (`hiccup_version`) and printed by
// `hiccup --version`. `hiccup report merge` refuses shards written by different versions, since
// the same seed may generate other cases in another version.
#pragma once

#include <string_view>

namespace harness {

/// Semantic version; bump the minor for any change to generated cases, verdicts or report shapes.
inline constexpr std::string_view kHiccupVersion = "0.10.0";

}  // namespace harness
