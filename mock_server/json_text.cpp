// Direct JSON text (see json_text.h).
#include "mock_server/json_text.h"

#include <algorithm>
#include <charconv>

#include <nlohmann/json.hpp>

namespace mock::json_text {

void append_string(std::string& out, std::string_view s) {
  for (const char ch : s) {
    if (static_cast<unsigned char>(ch) >= 0x80) {
      out += nlohmann::json(is_utf8(s) ? std::string(s) : to_utf8(s)).dump();
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

std::string_view cut_utf8(std::string_view s, std::size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  std::size_t end = 0;
  while (end < max_bytes) {
    const std::size_t n = std::max<std::size_t>(1, utf8_char_length(s.substr(end)));
    if (end + n > max_bytes) break;
    end += n;
  }
  return s.substr(0, end);
}

std::string to_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_char_length(s.substr(i));
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out;
}

namespace {

constexpr char kUpperHex[] = "0123456789ABCDEF";

/// True for a C1 control: U+0080..U+009F, whose UTF-8 is C2 80..C2 9F.
bool is_c1(std::string_view s, std::size_t n) {
  return n == 2 && static_cast<unsigned char>(s[0]) == 0xC2 && static_cast<unsigned char>(s[1]) <= 0x9F;
}

}  // namespace

std::string escape_input(std::string_view s, std::size_t max_bytes) {
  const std::string_view kept = cut_utf8(s, max_bytes);
  std::string out;
  out.reserve(kept.size() + 8);
  auto hex = [&](const char* prefix, unsigned char c) {
    out += prefix;
    out += kUpperHex[c >> 4];
    out += kUpperHex[c & 0xf];
  };
  for (std::size_t i = 0; i < kept.size();) {
    const auto c = static_cast<unsigned char>(kept[i]);
    if (c < 0x20 || c == 0x7F) {
      if (c == '\n') out += "\\n";
      else if (c == '\r') out += "\\r";
      else if (c == '\t') out += "\\t";
      else hex("\\x", c);
      ++i;
      continue;
    }
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    const std::size_t n = utf8_char_length(kept.substr(i));
    if (n == 0) {
      hex("\\x", c);
      ++i;
    } else if (is_c1(kept.substr(i), n)) {
      hex("\\u00", static_cast<unsigned char>(kept[i + 1]));
      i += n;
    } else {
      out.append(kept, i, n);
      i += n;
    }
  }
  if (kept.size() < s.size()) out += "\xE2\x80\xA6";  // …
  return out;
}

std::string quote_input(std::string_view s, std::size_t max_bytes) {
  return "\"" + escape_input(s, max_bytes) + "\"";
}

bool is_printable_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c >= 0x20 && c < 0x7F;
  });
}

std::string percent_encode_unsafe(std::string_view target) {
  if (is_printable_ascii(target)) return std::string(target);
  std::string out;
  bool changed = false;
  for (std::size_t i = 0; i < target.size();) {
    const auto c = static_cast<unsigned char>(target[i]);
    const std::size_t n = c < 0x80 ? 1 : utf8_char_length(target.substr(i));
    const bool unsafe = c < 0x20 || c == 0x7F || n == 0 || is_c1(target.substr(i), n);
    if (unsafe && !changed) {
      out.assign(target.substr(0, i));
      changed = true;
    }
    const std::size_t take = n == 0 ? 1 : n;
    if (unsafe) {
      for (std::size_t k = 0; k < take; ++k) {
        const auto b = static_cast<unsigned char>(target[i + k]);
        out += '%';
        out += kUpperHex[b >> 4];
        out += kUpperHex[b & 0xf];
      }
    } else if (changed) {
      out.append(target, i, take);
    }
    i += take;
  }
  return changed ? out : std::string(target);
}

}  // namespace mock::json_text
