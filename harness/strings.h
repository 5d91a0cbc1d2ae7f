// Small text helpers shared by the harness's reports, explorer and agent runner.
#pragma once

#include <string>
#include <vector>

namespace harness {

/// `parts` joined with `sep` between each two ("a, b, c"); "" for none.
inline std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

}  // namespace harness
