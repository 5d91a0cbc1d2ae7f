// Text from outside made fit for JSON and terminals (json_text.h), and credentials redacted before
// anything stores them (credentials.h): issue 42.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "mock_server/credentials.h"
#include "mock_server/json_text.h"

namespace jt = mock::json_text;

TEST_CASE("utf8_char_length accepts RFC 3629 characters and refuses overlongs, surrogates and truncations") {
  CHECK(jt::utf8_char_length("a") == 1);
  CHECK(jt::utf8_char_length("\xC3\xA9") == 2);           // é
  CHECK(jt::utf8_char_length("\xE2\x80\x9C") == 3);       // “
  CHECK(jt::utf8_char_length("\xF0\x9F\x98\x80") == 4);   // 😀
  CHECK(jt::utf8_char_length("\xC0\xAF") == 0);           // overlong '/'
  CHECK(jt::utf8_char_length("\xE0\x80\xAF") == 0);       // overlong
  CHECK(jt::utf8_char_length("\xED\xA0\x80") == 0);       // surrogate D800
  CHECK(jt::utf8_char_length("\xF4\x90\x80\x80") == 0);   // above U+10FFFF
  CHECK(jt::utf8_char_length("\xE2\x80") == 0);           // truncated
  CHECK(jt::utf8_char_length("\xFF") == 0);
  CHECK(jt::utf8_char_length("") == 0);
}

TEST_CASE("is_utf8 agrees with what nlohmann's dump accepts") {
  for (const std::string& s : {std::string("plain"), std::string("caf\xC3\xA9"), std::string("\xFF"),
                              std::string("a\xE2\x80"), std::string("\xED\xA0\x80"), std::string("\xC3\xA9\xE2\x80\x9C")}) {
    bool dumps = true;
    try {
      (void)nlohmann::json(s).dump();
    } catch (const nlohmann::json::type_error&) {
      dumps = false;
    }
    INFO(s);
    CHECK(jt::is_utf8(s) == dumps);
  }
}

TEST_CASE("cut_utf8 never cuts a character in half") {
  const std::string s = "ab\xC3\xA9\xE2\x80\x9C";  // a b é “
  CHECK(jt::cut_utf8(s, 2) == "ab");
  CHECK(jt::cut_utf8(s, 3) == "ab");
  CHECK(jt::cut_utf8(s, 4) == "ab\xC3\xA9");
  CHECK(jt::cut_utf8(s, 6) == "ab\xC3\xA9");
  CHECK(jt::cut_utf8(s, 7) == s);
  CHECK(jt::cut_utf8("\xFF\xFF", 1) == "\xFF");  // an ill-formed byte is a character of its own
}

TEST_CASE("escape_input writes controls and ill-formed bytes as escapes and is valid UTF-8 for any bytes") {
  CHECK(jt::escape_input("\x1B[31mred\x1B[0m") == "\\x1B[31mred\\x1B[0m");
  CHECK(jt::escape_input("a\nb\tc\r") == "a\\nb\\tc\\r");
  CHECK(jt::escape_input("caf\xC3\xA9 \xE2\x80\x9Cq\xE2\x80\x9D") == "caf\xC3\xA9 \xE2\x80\x9Cq\xE2\x80\x9D");
  CHECK(jt::escape_input("\xC2\x9B" "2J") == "\\u009B2J");  // the 8-bit CSI
  CHECK(jt::escape_input("1\xFF") == "1\\xFF");
  CHECK(jt::escape_input("\xE2\x80") == "\\xE2\\x80");   // half a “
  CHECK(jt::escape_input("\x7F") == "\\x7F");
  CHECK(jt::escape_input(std::string(300, 'x'), 10) == std::string(10, 'x') + "\xE2\x80\xA6");
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  const std::string escaped = jt::escape_input(all, std::string::npos);
  CHECK(jt::is_utf8(escaped));
  for (const char c : escaped) CHECK((static_cast<unsigned char>(c) >= 0x20 && c != 0x7F));
  CHECK(jt::escape_input(escaped, std::string::npos) == escaped);  // escaping twice changes nothing
  CHECK(jt::quote_input("\x1Bx") == "\"\\x1Bx\"");
}

TEST_CASE("percent_encode_unsafe encodes what a target may not hold raw and keeps the rest") {
  CHECK(jt::percent_encode_unsafe("/v1/chat/completions?x=1") == "/v1/chat/completions?x=1");
  CHECK(jt::percent_encode_unsafe("/s/\xFF/v1") == "/s/%FF/v1");
  CHECK(jt::percent_encode_unsafe("/a?q=\xC3\xA9&b=\x1B") == "/a?q=\xC3\xA9&b=%1B");
  CHECK(jt::percent_encode_unsafe("/\xE2\x80") == "/%E2%80");
  CHECK(jt::percent_encode_unsafe("/\xC2\x9B") == "/%C2%9B");
  CHECK(jt::percent_encode_unsafe("/a\x7F~") == "/a%7F~");  // DEL, next to the last printable byte
  CHECK(jt::percent_encode_unsafe(std::string("/a\0b", 4)) == "/a%00b");
}

TEST_CASE("is_printable_ascii holds exactly for targets percent_encode_unsafe leaves alone") {
  CHECK(jt::is_printable_ascii("/v1beta/models/m:streamGenerateContent?alt=sse ~"));
  CHECK(jt::is_printable_ascii(""));
  CHECK_FALSE(jt::is_printable_ascii("/a\x7F"));
  CHECK_FALSE(jt::is_printable_ascii("/a\x1F"));
  CHECK_FALSE(jt::is_printable_ascii("/\xC3\xA9"));  // valid UTF-8, kept by the encoder, but not ASCII
  for (int b = 0; b < 256; ++b) {
    const std::string t = std::string("/x") + static_cast<char>(b);
    if (jt::is_printable_ascii(t)) CHECK(jt::percent_encode_unsafe(t) == t);
  }
}

TEST_CASE("append_string writes ill-formed UTF-8 with U+FFFD instead of throwing") {
  std::string out;
  jt::append_string(out, "a\xFF" "b");
  CHECK(out == "\"a\xEF\xBF\xBD" "b\"");
  out.clear();
  jt::append_string(out, "caf\xC3\xA9");
  CHECK(out == nlohmann::json("caf\xC3\xA9").dump());
}

TEST_CASE("credentials in a query string are redacted and the rest of the target is kept") {
  CHECK(mock::redact_target("/v1beta/models/m:streamGenerateContent?alt=sse&key=AIzaSECRET") ==
        "/v1beta/models/m:streamGenerateContent?alt=sse&key=REDACTED");
  CHECK(mock::redact_target("/x?KEY=a&api_key=b&access_token=c&keep=d") == "/x?KEY=REDACTED&api_key=REDACTED&access_token=REDACTED&keep=d");
  CHECK(mock::redact_target("/x?key=&alt=sse") == "/x?key=&alt=sse");
  CHECK(mock::redact_target("/x?monkey=1") == "/x?monkey=1");
  CHECK(mock::redact_target("/no/query") == "/no/query");
  // Names as a server reads them: percent-decoded, + as a space, a trailing [] dropped.
  CHECK(mock::redact_target("/x?%6Bey=S03&ke%79=S22&key[]=S23&key+=S24&%20key=S25&k%65y%5B%5D=S26") ==
        "/x?%6Bey=REDACTED&ke%79=REDACTED&key[]=REDACTED&key+=REDACTED&%20key=REDACTED&k%65y%5B%5D=REDACTED");
  CHECK(mock::redact_target("/x?%6Beys=1&k%=2") == "/x?%6Beys=1&k%=2");
}

TEST_CASE("credential headers are redacted, Authorization keeping its scheme") {
  CHECK(mock::redact_header("Authorization", "Bearer sk-secret") == "Bearer REDACTED");
  CHECK(mock::redact_header("x-api-key", "sk-ant-secret") == "REDACTED");
  CHECK(mock::redact_header("X-Goog-Api-Key", "AIza") == "REDACTED");
  CHECK(mock::redact_header("api-key", "azure") == "REDACTED");
  CHECK(mock::redact_header("Content-Type", "application/json") == "application/json");
}
