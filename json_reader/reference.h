// What json_reader::parse replaced, and a type-exact comparison: shared by the differential test
// (json_reader_test.cpp) and the libFuzzer target (fuzz/json_reader_fuzz.cpp). Not for use in
// hiccup itself.
#pragma once

#include <cstring>
#include <string_view>

#include <nlohmann/json.hpp>

namespace json_reader::reference {

/// mock::parse_json / rut::parse_json before stop 32: the brackets-outside-strings depth scan,
/// then nlohmann's parser.
inline nlohmann::json parse(std::string_view text, std::size_t max_depth) {
  std::size_t depth = 0;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i++];
    if (c == '"') {
      while (i < text.size() && text[i] != '"') i += text[i] == '\\' ? 2 : 1;
      ++i;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return nlohmann::json(nlohmann::json::value_t::discarded);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
}

/// Equal values of equal types all the way down (unsigned, integer and float are three types to
/// nlohmann); floats bit for bit.
inline bool same(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.type() != b.type()) return false;
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
      if (ia.key() != ib.key() || !same(*ia, *ib)) return false;
    }
    return true;
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!same(a[i], b[i])) return false;
    }
    return true;
  }
  if (a.is_number_float()) {
    const double x = a.get<double>(), y = b.get<double>();
    return std::memcmp(&x, &y, sizeof x) == 0;
  }
  return a == b;
}

}  // namespace json_reader::reference
