// json_reader: see json_reader.h. The rules below follow nlohmann's lexer (json 3.11, lexer.hpp)
// and parser (parser.hpp) rule for rule; each is named where it is applied.
#include "json_reader/json_reader.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <clocale>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <string>

namespace json_reader {
namespace {

using json = nlohmann::json;

/// Bytes a string copies as they are: U+0020..U+007F except `"` and `\` (lexer.hpp, scan_string).
constexpr std::array<bool, 256> kPlainStringByte = [] {
  std::array<bool, 256> t{};
  for (int c = 0x20; c < 0x80; ++c) t[static_cast<std::size_t>(c)] = c != '"' && c != '\\';
  return t;
}();

bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// A string sink that keeps nothing: string() into it checks a string without building it.
struct Discard {
  void append(const char*, const char*) {}
  void append(const char*, std::size_t) {}
  Discard& operator+=(char) { return *this; }
};

class Reader {
 public:
  /// `unread`: names of the top-level object's members that are checked (skip) and left out.
  Reader(std::string_view text, std::size_t max_depth, std::initializer_list<std::string_view> unread = {})
      : p_(text.data()), end_(text.data() + text.size()), max_depth_(max_depth), unread_(unread) {}

  bool document(json& out) {
    // lexer.hpp skip_bom: EF BB BF at the very start is skipped (a lone EF fails either way).
    if (end_ - p_ >= 3 && p_[0] == '\xEF' && p_[1] == '\xBB' && p_[2] == '\xBF') p_ += 3;
    if (!value(out, 0)) return false;
    skip_whitespace();
    if (p_ == end_) return true;
    // lexer.hpp scan: a NUL outside a string is the end of input, whatever follows it.
    if (*p_ != '\0') return false;
    return nesting_depth(std::string_view(p_ + 1, static_cast<std::size_t>(end_ - p_ - 1)), max_depth_) <= max_depth_;
  }

 private:
  void skip_whitespace() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  bool value(json& out, std::size_t depth) {
    skip_whitespace();
    if (p_ == end_) return false;
    switch (*p_) {
      case '{':
        return object(out, depth + 1);
      case '[':
        return array(out, depth + 1);
      case '"':
        out = json(json::value_t::string);
        return string(*out.get_ptr<std::string*>());
      case 't':
        return literal("true", out, true);
      case 'f':
        return literal("false", out, false);
      case 'n':
        return literal("null", out, nullptr);
      default:
        return (*p_ == '-' || is_digit(*p_)) && number(out);
    }
  }

  template <typename V>
  bool literal(std::string_view word, json& out, V v) {
    if (static_cast<std::size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word) return false;
    p_ += word.size();
    out = v;
    return true;
  }

  bool object(json& out, std::size_t depth) {
    if (depth > max_depth_) return false;
    ++p_;
    out = json(json::value_t::object);
    json::object_t& members = *out.get_ptr<json::object_t*>();
    skip_whitespace();
    if (p_ != end_ && *p_ == '}') {
      ++p_;
      return true;
    }
    std::string key;
    while (true) {
      if (p_ == end_ || *p_ != '"') return false;
      if (!string(key)) return false;
      skip_whitespace();
      if (p_ == end_ || *p_ != ':') return false;
      ++p_;
      // parser.hpp via json_sax_dom_parser::key: operator[] then assignment, so the last of
      // duplicate keys wins.
      if (depth == 1 && is_unread(key)) {
        key.clear();
        if (!skip(depth)) return false;
      } else {
        json& member = members.try_emplace(std::move(key)).first->second;
        member = json();
        key.clear();  // moved from: valid, its value unspecified
        if (!value(member, depth)) return false;
      }
      skip_whitespace();
      if (p_ == end_) return false;
      if (*p_ == '}') {
        ++p_;
        return true;
      }
      if (*p_ != ',') return false;
      ++p_;
      skip_whitespace();
    }
  }

  bool is_unread(std::string_view key) const {
    return std::find(unread_.begin(), unread_.end(), key) != unread_.end();
  }

  /// value() without building the value: the same checks in the same order, so the same verdict.
  bool skip(std::size_t depth) {
    skip_whitespace();
    if (p_ == end_) return false;
    switch (*p_) {
      case '{':
        return skip_object(depth + 1);
      case '[':
        return skip_array(depth + 1);
      case '"': {
        Discard s;
        return string(s);
      }
      default: {
        json scalar;  // a literal or a number: nothing to allocate
        return value(scalar, depth);
      }
    }
  }

  bool skip_object(std::size_t depth) {
    if (depth > max_depth_) return false;
    ++p_;
    skip_whitespace();
    if (p_ != end_ && *p_ == '}') {
      ++p_;
      return true;
    }
    Discard key;
    while (true) {
      if (p_ == end_ || *p_ != '"') return false;
      if (!string(key)) return false;
      skip_whitespace();
      if (p_ == end_ || *p_ != ':') return false;
      ++p_;
      if (!skip(depth)) return false;
      skip_whitespace();
      if (p_ == end_) return false;
      if (*p_ == '}') {
        ++p_;
        return true;
      }
      if (*p_ != ',') return false;
      ++p_;
      skip_whitespace();
    }
  }

  bool skip_array(std::size_t depth) {
    if (depth > max_depth_) return false;
    ++p_;
    skip_whitespace();
    if (p_ != end_ && *p_ == ']') {
      ++p_;
      return true;
    }
    while (true) {
      if (!skip(depth)) return false;
      skip_whitespace();
      if (p_ == end_) return false;
      if (*p_ == ']') {
        ++p_;
        return true;
      }
      if (*p_ != ',') return false;
      ++p_;
    }
  }

  bool array(json& out, std::size_t depth) {
    if (depth > max_depth_) return false;
    ++p_;
    out = json(json::value_t::array);
    json::array_t& items = *out.get_ptr<json::array_t*>();
    skip_whitespace();
    if (p_ != end_ && *p_ == ']') {
      ++p_;
      return true;
    }
    while (true) {
      items.emplace_back();
      if (!value(items.back(), depth)) return false;
      skip_whitespace();
      if (p_ == end_) return false;
      if (*p_ == ']') {
        ++p_;
        return true;
      }
      if (*p_ != ',') return false;
      ++p_;
    }
  }

  /// lexer.hpp scan_number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, then an integer
  /// without fraction or exponent as strtoull / strtoll when that sets no errno, else strtod,
  /// which the parser rejects when it is not finite.
  bool number(json& out) {
    const char* const start = p_;
    const bool negative = *p_ == '-';
    if (negative) ++p_;
    if (p_ == end_) return false;
    if (*p_ == '0') {
      ++p_;
    } else if (is_digit(*p_)) {
      while (p_ != end_ && is_digit(*p_)) ++p_;
    } else {
      return false;
    }
    bool integer = true;
    if (p_ != end_ && *p_ == '.') {
      integer = false;
      ++p_;
      if (p_ == end_ || !is_digit(*p_)) return false;
      while (p_ != end_ && is_digit(*p_)) ++p_;
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      integer = false;
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end_ || !is_digit(*p_)) return false;
      while (p_ != end_ && is_digit(*p_)) ++p_;
    }
    // The strto* functions need a terminated copy; short tokens (all but pathological ones) stay
    // on the stack.
    const std::size_t length = static_cast<std::size_t>(p_ - start);
    char small[64];
    std::string large;
    char* token = small;
    if (length >= sizeof small) {
      large.assign(start, length);
      token = large.data();
    } else {
      std::copy(start, p_, small);
      small[length] = '\0';
    }
    char* parsed_end = nullptr;
    if (integer) {
      errno = 0;
      if (negative) {
        const long long v = std::strtoll(token, &parsed_end, 10);
        if (errno == 0) {
          out = static_cast<json::number_integer_t>(v);
          return true;
        }
      } else {
        const unsigned long long v = std::strtoull(token, &parsed_end, 10);
        if (errno == 0) {
          out = static_cast<json::number_unsigned_t>(v);
          return true;
        }
      }
    }
    // nlohmann writes the locale's decimal point in place of '.' before strtod.
    const char point = *std::localeconv()->decimal_point;
    if (point != '.') {
      for (std::size_t i = 0; i < length; ++i) {
        if (token[i] == '.') token[i] = point;
      }
    }
    const double v = std::strtod(token, &parsed_end);
    if (!std::isfinite(v)) return false;
    out = v;
    return true;
  }

  /// lexer.hpp scan_string: plain bytes in runs, escapes, and UTF-8 sequences checked byte by
  /// byte against RFC 3629's ranges. `*p_` is the opening quote.
  template <typename Sink>
  bool string(Sink& s) {
    ++p_;
    while (true) {
      const char* run = p_;
      while (p_ != end_ && kPlainStringByte[static_cast<unsigned char>(*p_)]) ++p_;
      s.append(run, p_);
      if (p_ == end_) return false;
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        ++p_;
        return true;
      }
      if (c == '\\') {
        if (!escape(s)) return false;
      } else if (c < 0x20) {
        return false;  // a control character must be escaped
      } else if (!utf8_sequence(s)) {
        return false;
      }
    }
  }

  template <typename Sink>
  bool utf8_sequence(Sink& s) {
    const auto lead = static_cast<unsigned char>(*p_);
    // (lo, hi) of each continuation byte after `lead`.
    unsigned char ranges[3][2];
    int n = 0;
    auto need = [&](unsigned char lo, unsigned char hi) {
      ranges[n][0] = lo;
      ranges[n][1] = hi;
      ++n;
    };
    if (lead >= 0xC2 && lead <= 0xDF) {
      need(0x80, 0xBF);
    } else if (lead == 0xE0) {
      need(0xA0, 0xBF), need(0x80, 0xBF);
    } else if ((lead >= 0xE1 && lead <= 0xEC) || lead == 0xEE || lead == 0xEF) {
      need(0x80, 0xBF), need(0x80, 0xBF);
    } else if (lead == 0xED) {
      need(0x80, 0x9F), need(0x80, 0xBF);
    } else if (lead == 0xF0) {
      need(0x90, 0xBF), need(0x80, 0xBF), need(0x80, 0xBF);
    } else if (lead >= 0xF1 && lead <= 0xF3) {
      need(0x80, 0xBF), need(0x80, 0xBF), need(0x80, 0xBF);
    } else if (lead == 0xF4) {
      need(0x80, 0x8F), need(0x80, 0xBF), need(0x80, 0xBF);
    } else {
      return false;  // 80..C1 and F5..FF are ill-formed as a first byte
    }
    if (end_ - p_ <= n) return false;
    for (int i = 0; i < n; ++i) {
      const auto b = static_cast<unsigned char>(p_[1 + i]);
      if (b < ranges[i][0] || b > ranges[i][1]) return false;
    }
    s.append(p_, static_cast<std::size_t>(n + 1));
    p_ += n + 1;
    return true;
  }

  /// Four hex digits after `\u` (either case); -1 when they are not.
  int hex4() {
    if (end_ - p_ < 4) return -1;
    int v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = *p_++;
      v <<= 4;
      if (c >= '0' && c <= '9') v |= c - '0';
      else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
      else return -1;
    }
    return v;
  }

  template <typename Sink>
  bool escape(Sink& s) {
    ++p_;  // the backslash
    if (p_ == end_) return false;
    switch (*p_++) {
      case '"': s += '"'; return true;
      case '\\': s += '\\'; return true;
      case '/': s += '/'; return true;
      case 'b': s += '\b'; return true;
      case 'f': s += '\f'; return true;
      case 'n': s += '\n'; return true;
      case 'r': s += '\r'; return true;
      case 't': s += '\t'; return true;
      case 'u': break;
      default: return false;
    }
    int cp = hex4();
    if (cp < 0) return false;
    if (cp >= 0xD800 && cp <= 0xDBFF) {  // a high surrogate: a low one must follow
      if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
      p_ += 2;
      const int low = hex4();
      if (low < 0xDC00 || low > 0xDFFF) return false;
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
      return false;  // a low surrogate alone
    }
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return true;
  }

  const char* p_;
  const char* const end_;
  const std::size_t max_depth_;
  const std::initializer_list<std::string_view> unread_;
};

}  // namespace

std::size_t nesting_depth(std::string_view text, std::size_t cap) {
  std::size_t depth = 0, deepest = 0;
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const char c = text[i++];
    if (c == '"') {
      // Skip the string: to its closing quote, stepping over escaped characters.
      while (i < n && text[i] != '"') i += text[i] == '\\' ? 2 : 1;
      ++i;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > cap) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

nlohmann::json parse(std::string_view text, std::size_t max_depth) {
  json out;
  if (!Reader(text, max_depth).document(out)) return json(json::value_t::discarded);
  return out;
}

nlohmann::json parse(std::string_view text, std::size_t max_depth, std::initializer_list<std::string_view> unread) {
  json out;
  if (!Reader(text, max_depth, unread).document(out)) return json(json::value_t::discarded);
  return out;
}

}  // namespace json_reader
