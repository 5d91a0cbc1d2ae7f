// Small text helpers shared by the harness's reports, explorer and agent runner.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

namespace harness {

/// `parts` joined with `sep` between each two ("a, b, c"); "" for none.
inline std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

/// The whitespace trim_space drops: space, tab, CR, LF.
inline constexpr const char* kSpace = " \t\r\n";

/// Drops the whitespace (kSpace) at both ends of `text`.
inline void trim_space(std::string& text) {
  const std::size_t end = text.find_last_not_of(kSpace);
  if (end == std::string::npos) {
    text.clear();
    return;
  }
  text.erase(end + 1);
  text.erase(0, text.find_first_not_of(kSpace));
}

/// `text` with its ASCII letters in lower case (other bytes as they are).
inline std::string ascii_lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

}  // namespace harness
