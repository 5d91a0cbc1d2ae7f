// Direct JSON text (see json_text.h).
#include "mock_server/json_text.h"

#include <charconv>

#include <nlohmann/json.hpp>

namespace mock::json_text {

void append_string(std::string& out, std::string_view s) {
  for (const char ch : s) {
    if (static_cast<unsigned char>(ch) >= 0x80) {
      out += nlohmann::json(std::string(s)).dump();
      return;
    }
  }
  static constexpr char kHex[] = "0123456789abcdef";
  out.reserve(out.size() + s.size() + 2);
  out += '"';
  std::size_t run = 0;  // start of the bytes not yet copied
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 0xf];
    }
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
}

void append_int(std::string& out, long long v) {
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  (void)ec;  // 24 bytes hold every long long
  out.append(buf, end);
}

}  // namespace mock::json_text
