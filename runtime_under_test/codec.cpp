// The codec registry and the helpers codecs share (see codec.h).
#include "runtime_under_test/codec.h"

#include <cctype>

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
  // A dangling comma, or a key (or an object's opening) still waiting for its value.
  if (!text.empty() && text.back() == ',') text.pop_back();
  trim();
  if (!text.empty() && text.back() == ':') text += "null";
  else if (!stack.empty() && stack.back() == '{' && !text.empty() && text.back() == '"') {
    // `{"a":1,"ke"` — a key without its colon: find whether the last string is a key.
    std::size_t i = text.size() - 1;
    std::size_t open = text.rfind('"', i - 1);
    while (open != std::string::npos && open > 0 && text[open - 1] == '\\') open = text.rfind('"', open - 1);
    if (open != std::string::npos) {
      std::size_t k = open;
      while (k > 0 && std::isspace(static_cast<unsigned char>(text[k - 1]))) --k;
      if (k > 0 && (text[k - 1] == '{' || text[k - 1] == ',')) text += ":null";
    }
  }
  // A truncated literal (tru, nul, fals) or number ending in '-', '.', 'e'.
  for (const char* lit : {"true", "false", "null"}) {
    const std::string l(lit);
    for (std::size_t n = l.size() - 1; n >= 1; --n) {
      if (text.size() >= n && text.compare(text.size() - n, n, l, 0, n) == 0 &&
          (text.size() == n || !std::isalpha(static_cast<unsigned char>(text[text.size() - n - 1])))) {
        text += l.substr(n);
        break;
      }
    }
  }
  while (!text.empty() && (text.back() == '-' || text.back() == '.' || text.back() == 'e' ||
                           text.back() == 'E' || text.back() == '+')) {
    text.pop_back();
  }
  if (text.empty()) return nlohmann::json::object();
  for (auto it = stack.rbegin(); it != stack.rend(); ++it) text.push_back(*it == '{' ? '}' : ']');
  auto parsed = nlohmann::json::parse(text, nullptr, false);
  if (parsed.is_discarded()) return std::nullopt;
  return parsed;
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
