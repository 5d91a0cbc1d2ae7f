// json_reader against what it replaces: nlohmann::json::parse(text, nullptr, false) after the
// brackets-outside-strings depth scan the runtime and the mock server ran before it. Same verdict
// (discarded or not) and the same value, types included (unsigned, integer and float are three
// types to nlohmann, and a float must match bit for bit), on hand-written edge cases, the bundled
// scenarios, the encoders' golden frames and 200,000 mutations of all of them.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "json_reader/json_reader.h"
#include "json_reader/reference.h"
#include "tests/test_scale.h"

namespace json_reader_test {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

using json_reader::reference::same;

/// The verdicts differ (a message saying how), or "" when they agree.
std::string difference(std::string_view text, std::size_t max_depth) {
  const json want = json_reader::reference::parse(text, max_depth);
  const json got = json_reader::parse(text, max_depth);
  if (want.is_discarded() != got.is_discarded()) {
    return std::string("nlohmann ") + (want.is_discarded() ? "rejects" : "accepts") + ", the reader " +
           (got.is_discarded() ? "rejects" : "accepts");
  }
  if (!want.is_discarded() && !same(want, got)) return "values differ: " + want.dump() + " vs " + got.dump();
  return "";
}

/// As difference, for json_reader::parse with members left unread: nlohmann's value without the
/// top-level object's `response`, `a` and `message` members.
std::string difference_unread(std::string_view text, std::size_t max_depth) {
  json want = json_reader::reference::parse(text, max_depth);
  const json got = json_reader::parse(text, max_depth, {"response", "a", "message"});
  if (want.is_discarded() != got.is_discarded()) {
    return std::string("nlohmann ") + (want.is_discarded() ? "rejects" : "accepts") + ", the reader leaving members unread " +
           (got.is_discarded() ? "rejects" : "accepts");
  }
  if (want.is_object()) {
    for (const char* name : {"response", "a", "message"}) {
      want.erase(name);
    }
  }
  if (!want.is_discarded() && !same(want, got)) return "values differ: " + want.dump() + " vs " + got.dump();
  return "";
}

std::string printable(std::string_view text) {
  std::string out;
  for (const unsigned char c : text.substr(0, 300)) {
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
  }
  return out;
}

const std::vector<std::string>& edge_cases() {
  using namespace std::string_literals;
  static const std::vector<std::string> cases = {
      "", " ", "null", "true", "false", "nul", "truex", "tru", "[true,false,null]", "{}", "[]", " { } ",
      "{\"a\":1}", "{\"a\":1,}", "[1,]", "[,1]", "{,}", "{\"a\" 1}", "{\"a\":}", "{1:2}", "{\"a\":1 \"b\":2}",
      "{\"a\":1,\"a\":2}", "{\"a\":{\"x\":1},\"a\":[2]}", "[[[]]]", "[[[[", "]]", "\"\"", "\"abc",
      "0", "-0", "-0.0", "00", "01", "-01", "1.", ".5", "+1", "1e", "1e+", "1E-2", "1.5e300", "1e400",
      "-1e400", "1e-400", "2.2250738585072011e-308", "0.1", "123456789012345678901234567890",
      "18446744073709551615", "18446744073709551616", "-9223372036854775808", "-9223372036854775809",
      "9223372036854775807", "9223372036854775808", "1.7976931348623157e308", "1.7976931348623159e308",
      "[1 2]", "1 2", "-", "-a", "- 1", "1-", "0x10", "NaN", "Infinity", "-Infinity",
      "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\a\"", "\"\\u0041\"", "\"\\u00e9\\u00E9\"", "\"\\u0000\"", "\"\\u12\"",
      "\"\\uD83D\\uDE00\"", "\"\\uD83D\"", "\"\\uD83Dx\"", "\"\\uD83D\\u0041\"", "\"\\uDE00\"", "\"\\uDBFF\\uDFFF\"",
      "\"\\uD800\\uDC00\"", "\"\\uD83D\\", "\"\\u", "\"\\", "\"a\tb\"", "\"a\nb\"", "\"\x7F\"",
      "\"\xC3\xA9\"", "\"\xC3\"", "\"\xC0\x80\"", "\"\xC1\xBF\"", "\"\xC2\x80\"", "\"\xDF\xBF\"",
      "\"\xE0\x9F\xBF\"", "\"\xE0\xA0\x80\"", "\"\xED\x9F\xBF\"", "\"\xED\xA0\x80\"", "\"\xEF\xBF\xBF\"",
      "\"\xF0\x8F\xBF\xBF\"", "\"\xF0\x90\x80\x80\"", "\"\xF4\x8F\xBF\xBF\"", "\"\xF4\x90\x80\x80\"",
      "\"\xF5\x80\x80\x80\"", "\"\xFF\"", "\"\x80\"", "\"\xE2\x82\"", "\"\xE2\x82\xAC\"", "\xC3\xA9",
      "\xEF\xBB\xBF{}", "\xEF\xBB\xBF", "\xEF\xBB{}", " \xEF\xBB\xBF{}", "\xEF\xBB\xBF\xEF\xBB\xBF{}",
      "{}\0"s, "{}\0garbage"s, "\0"s, " \0{}"s, "[1,\0]"s, "12\0"s, "true\0x"s, "\"a\0b\""s,
      "{}\0[[[[[[[[[[[[[[[["s, "{}\0\"[[[[[[[[[[[[[[[[\""s, "{}\0\"\\\"[[[[[[[[[[\""s,
      "{\"a\" : [ 1 , 2 ] , \"b\" :\n{\r\t}}", "[\"\\u0041\\u00e9\\u4e2d\\ud83d\\ude00\"]",
      "{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hello\"}]},\"index\":0}]}",
  };
  return cases;
}

/// The bundled scenario files and the encoders' golden frames and bodies.
std::vector<std::string> corpus() {
  std::vector<std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(HICCUP_SOURCE_DIR) / "scenarios")) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    out.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::ifstream golden(fs::path(HICCUP_SOURCE_DIR) / "mock_server/testdata/encoder_bytes.txt", std::ios::binary);
  std::string line;
  while (std::getline(golden, line)) {
    if (line.rfind("data: ", 0) == 0) {
      out.push_back(line.substr(6));
    } else if (line == "{") {
      // A pretty-printed body (Gemini's error envelope): its lines up to the closing brace.
      std::string body = line + "\n";
      while (std::getline(golden, line)) {
        body += line + "\n";
        if (line == "}") break;
      }
      out.push_back(body);
    } else if (!line.empty() && (line[0] == '{' || line[0] == '[')) {
      out.push_back(line);
    }
  }
  return out;
}

/// Deterministic xorshift64*.
struct Random {
  std::uint64_t s;
  std::uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1DULL;
  }
  std::size_t below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(next() % n); }
};

/// One mutation of `text`: a byte replaced, inserted or deleted, a cut, or a slice repeated. The
/// replacement bytes lean on what the grammar cares about.
std::string mutate(std::string text, Random& r) {
  using namespace std::string_literals;  // "..."s: the length is the literal's, NULs included
  static const std::string kBytes = "\"\\{}[]:,0123456789-+.eEuU dDbfnrt\t\n\r/aFx"s +
                                    "\x00\x01\x1F\x7F\x80\xBF\xC0\xC2\xDF\xE0\xED\xEF\xF0\xF4\xF5\xFF"s;
  const char byte = kBytes[r.below(kBytes.size())];
  const std::size_t at = r.below(text.size() + 1);
  switch (r.below(6)) {
    case 0:
      if (!text.empty()) text[std::min(at, text.size() - 1)] = byte;
      break;
    case 1:
      text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), byte);
      break;
    case 2:
      if (at < text.size()) text.erase(at, 1 + r.below(4));
      break;
    case 3:
      text.resize(at);
      break;
    case 4: {
      const std::size_t len = std::min<std::size_t>(r.below(16) + 1, text.size() - std::min(at, text.size()));
      text.insert(at, text.substr(at, len));
      break;
    }
    default:
      if (!text.empty()) text[std::min(at, text.size() - 1)] ^= static_cast<char>(1 << r.below(8));
      break;
  }
  return text;
}

}  // namespace

TEST_CASE("json_reader: hand-written edge cases read as nlohmann reads them") {
  for (const std::string& text : edge_cases()) {
    INFO("text: " << printable(text));
    CHECK(difference(text, 512) == "");
    CHECK(difference(text, 2) == "");
    CHECK(difference_unread(text, 512) == "");
    CHECK(difference_unread(text, 2) == "");
  }
}

TEST_CASE("json_reader: the bundled scenarios and golden frames read as nlohmann reads them") {
  const std::vector<std::string> texts = corpus();
  REQUIRE(texts.size() > 300);  // 51+ scenarios and the frames of encoder_bytes.txt
  std::size_t accepted = 0;
  std::size_t done = 0;
  for (const std::string& text : texts) {
    INFO("text: " << printable(text));
    CHECK(difference(text, 512) == "");
    CHECK(difference_unread(text, 512) == "");
    if (!json_reader::parse(text, 512).is_discarded()) ++accepted;
    if (text == "[DONE]") ++done;
  }
  // All but the golden malformed frames (one per format) and Chat Completions' `[DONE]`s (one per
  // corpus stream that finishes).
  CHECK(accepted + done + 4 >= texts.size());
  CHECK(accepted < texts.size());
}

TEST_CASE("json_reader: a member left unread is checked as a read one and left out") {
  const json frame = json_reader::parse(R"({"type":"response.created","response":{"id":"r","output":[1,"x"]}})", 512,
                                        {"response"});
  CHECK(frame == json{{"type", "response.created"}});
  // Nested members of that name are read; a bad value, or one nested too deep, is refused.
  CHECK(json_reader::parse(R"({"a":{"response":2}})", 512, {"response"}) == json{{"a", {{"response", 2}}}});
  CHECK(json_reader::parse(R"({"response":{"x":"\ud800"}})", 512, {"response"}).is_discarded());
  CHECK(json_reader::parse(R"({"response":[1,2,]})", 512, {"response"}).is_discarded());
  CHECK(json_reader::parse(R"({"response":1e400})", 512, {"response"}).is_discarded());
  CHECK(json_reader::parse(R"({"response":[[1]]})", 2, {"response"}).is_discarded());
  CHECK_FALSE(json_reader::parse(R"({"response":[1]})", 2, {"response"}).is_discarded());
}

TEST_CASE("json_reader: nesting is limited as the depth scan limited it") {
  const auto nested = [](int levels, const std::string& inner) {
    return std::string(static_cast<std::size_t>(levels), '[') + inner + std::string(static_cast<std::size_t>(levels), ']');
  };
  CHECK_FALSE(json_reader::parse(nested(512, "1"), 512).is_discarded());
  CHECK(json_reader::parse(nested(513, "1"), 512).is_discarded());
  CHECK(json_reader::parse("{\"a\":" + nested(512, "") + "}", 512).is_discarded());
  CHECK_FALSE(json_reader::parse("{\"a\":" + nested(511, "") + "}", 512).is_discarded());
  // Brackets in strings do not count; a 100,000-deep text is refused without recursing into it.
  CHECK_FALSE(json_reader::parse("[\"" + std::string(100000, '[') + "\"]", 512).is_discarded());
  CHECK(json_reader::parse(nested(100000, ""), 512).is_discarded());
  CHECK(json_reader::parse(std::string(1000000, '['), 512).is_discarded());
}

TEST_CASE("json_reader: 200,000 mutations of the corpus read as nlohmann reads them") {
  std::vector<std::string> bases = corpus();
  for (const std::string& text : edge_cases()) bases.push_back(text);
  Random r{0x9E3779B97F4A7C15ULL};
  const int total = hiccup_test::scaled(200000);
  int checked = 0, accepted = 0, failures = 0;
  for (int i = 0; i < total; ++i) {
    std::string text = bases[r.below(bases.size())];
    if (text.size() > 2000) text.resize(2000 + r.below(200));  // most of the time goes to long files
    const int rounds = 1 + static_cast<int>(r.below(3));
    for (int k = 0; k < rounds; ++k) text = mutate(std::move(text), r);
    const std::size_t depth = r.below(4) == 0 ? 1 + r.below(4) : 512;
    std::string diff = difference(text, depth);
    if (diff.empty()) diff = difference_unread(text, depth);
    ++checked;
    if (!json_reader::parse(text, depth).is_discarded()) ++accepted;
    if (!diff.empty() && ++failures <= 5) {
      FAIL_CHECK(diff << " for " << printable(text) << " (max depth " << depth << ")");
    }
  }
  INFO(checked << " mutations, " << accepted << " accepted");
  CHECK(failures == 0);
  // Both verdicts were exercised: the mutations are not all broken, nor all harmless.
  CHECK(accepted > checked / 20);
  CHECK(accepted < checked - checked / 20);
}

}  // namespace json_reader_test
