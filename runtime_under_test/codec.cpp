// The codec registry and the helpers codecs share (see codec.h).
#include "runtime_under_test/codec.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "json_reader/json_reader.h"
#include "runtime_under_test/anthropic_codec.h"
#include "runtime_under_test/gemini_codec.h"
#include "runtime_under_test/openai_chat_codec.h"
#include "runtime_under_test/openai_responses_codec.h"

namespace rut {

const ICodec* codec_for(std::string_view provider) {
  for (const ICodec* c : {&gemini_codec(), &openai_chat_codec(), &openai_responses_codec(),
                          &anthropic_codec()}) {
    if (c->provider() == provider) return c;
  }
  return nullptr;
}

const std::vector<std::string>& codec_names() {
  static const std::vector<std::string> names = {"gemini", "openai-chat", "openai-responses",
                                                 "anthropic"};
  return names;
}

std::string tools_text(const std::vector<std::string>& tool_names,
                       std::string (*build)(const std::vector<std::string>& tool_names)) {
  struct Remembered {
    std::string (*build)(const std::vector<std::string>&);
    std::vector<std::string> names;
    std::string text;
  };
  thread_local std::vector<Remembered> remembered;  // one per codec at most: four
  for (Remembered& r : remembered) {
    if (r.build != build) continue;
    if (r.names != tool_names) {
      r.text = build(tool_names);
      r.names = tool_names;
    }
    return r.text;
  }
  remembered.push_back({build, tool_names, build(tool_names)});
  return remembered.back().text;
}

std::string string_member(const nlohmann::json& o, const char* key) {
  if (!o.is_object()) return {};
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

void append_json_string(std::string& out, std::string_view s) {
  // Printable ASCII needs only `"` and `\\` escaped (a call's arguments as text, mostly);
  // control characters and bytes >= 0x80 go through nlohmann's serializer, which owns the rules.
  const bool ascii = std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7F; });
  if (!ascii) {
    out += nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return;
  }
  out += '"';
  std::size_t from = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '"' && s[i] != '\\') continue;
    out.append(s.substr(from, i - from));
    out += '\\';
    out += s[i];
    from = i + 1;
  }
  out.append(s.substr(from));
  out += '"';
}

void append_json(std::string& out, const nlohmann::json& v) {
  if (v.is_string()) return append_json_string(out, v.get_ref<const std::string&>());
  out += v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json parse_json(std::string_view text) {
  // json_reader reads as nlohmann's parser does (about 2.5 times as fast) and refuses nesting
  // deeper than kMaxJsonDepth as it reads, as the bracket scan that ran before the parser did.
  return json_reader::parse(text, kMaxJsonDepth);
}

nlohmann::json parse_json(std::string_view text, std::initializer_list<std::string_view> unread) {
  return json_reader::parse(text, kMaxJsonDepth, unread);
}

std::optional<nlohmann::json> repair_json(std::string_view prefix) {
  std::string text(prefix);
  // Walk the text, tracking open containers and whether we are inside a string.
  std::vector<char> stack;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') stack.push_back(c);
    else if ((c == '}' || c == ']') && !stack.empty()) stack.pop_back();
  }
  if (in_string) {
    if (escaped) text.pop_back();  // a lone backslash cannot end a string
    text.push_back('"');
  }
  auto trim = [&] {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  };
  trim();
  // A number cut after its sign, point or exponent mark ("-", "1.", "2e", "2e+").
  {
    std::size_t start = text.size();
    while (start > 0 && std::string_view("0123456789+-.eE").find(text[start - 1]) != std::string_view::npos) --start;
    const bool number = start < text.size() && (start == 0 || !std::isalnum(static_cast<unsigned char>(text[start - 1]))) &&
                        text[start] != 'e' && text[start] != 'E';
    if (number) {
      while (text.size() > start && std::string_view("+-.eE").find(text.back()) != std::string_view::npos) text.pop_back();
    }
  }
  // A truncated literal (tr, fals, nu).
  for (const char* lit : {"true", "false", "null"}) {
    const std::string l(lit);
    bool done = false;
    for (std::size_t n = l.size() - 1; n >= 1 && !done; --n) {
      if (text.size() >= n && text.compare(text.size() - n, n, l, 0, n) == 0 &&
          (text.size() == n || !std::isalpha(static_cast<unsigned char>(text[text.size() - n - 1])))) {
        text += l.substr(n);
        done = true;
      }
    }
    if (done) break;
  }
  trim();
  // A dangling comma, or a key (or an object's opening) still waiting for its value.
  if (!text.empty() && text.back() == ',') text.pop_back();
  trim();
  if (!text.empty() && text.back() == ':') {
    text += "null";
  } else if (!stack.empty() && stack.back() == '{' && !text.empty() && text.back() == '"') {
    // `{"a":1,"ke"`: a string right after `{` or `,` is a key without its colon.
    std::size_t open = text.rfind('"', text.size() - 2);
    while (open != std::string::npos && open > 0 && text[open - 1] == '\\') open = text.rfind('"', open - 1);
    if (open != std::string::npos) {
      std::size_t k = open;
      while (k > 0 && std::isspace(static_cast<unsigned char>(text[k - 1]))) --k;
      if (k > 0 && (text[k - 1] == '{' || text[k - 1] == ',')) text += ":null";
    }
  }
  if (text.empty()) return nlohmann::json::object();
  for (auto it = stack.rbegin(); it != stack.rend(); ++it) text.push_back(*it == '{' ? '}' : ']');
  auto parsed = parse_json(text);
  if (parsed.is_discarded()) return std::nullopt;
  return parsed;
}

bool says_daily_quota(std::string_view message) {
  return message.find("per day (RPD)") != std::string_view::npos || message.find("per day (TPD)") != std::string_view::npos;
}

std::optional<double> retry_after_from_headers(const Headers& headers) {
  auto number = [](const std::string& text) -> std::optional<double> {
    if (text.empty()) return std::nullopt;
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size() || !(v >= 0)) return std::nullopt;
    return v;
  };
  if (auto ms = header_value(headers, "retry-after-ms")) {
    if (auto v = number(*ms)) return *v / 1000.0;
  }
  if (auto s = header_value(headers, "retry-after")) {
    if (auto v = number(*s)) return *v;
  }
  return std::nullopt;
}

std::optional<std::string> header_value(const Headers& headers, std::string_view name) {
  for (const auto& [k, v] : headers) {
    if (k.size() != name.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < k.size() && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(k[i])) == name[i];
    }
    if (same) return v;
  }
  return std::nullopt;
}

}  // namespace rut
