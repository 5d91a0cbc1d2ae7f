// Tests of the format registry and shared helpers (wire_format.h).
#include <catch2/catch.hpp>

#include "mock_server/wire_format.h"

#include "mock_server/format_test_util.h"
#include "mock_server/script_engine.h"

#include <string>
#include <vector>

namespace {

std::string joined(const std::vector<std::string>& pieces) {
  std::string s;
  for (const auto& p : pieces) s += p;
  return s;
}

}  // namespace

TEST_CASE("every format is registered once, by name and by its paths") {
  const auto& formats = mock::wire_formats();
  REQUIRE(formats.size() == 4u);
  CHECK(formats[0]->name() == "gemini");
  CHECK(formats[1]->name() == "openai-chat");
  CHECK(formats[2]->name() == "openai-responses");
  CHECK(formats[3]->name() == "anthropic");
  for (const mock::WireFormat* f : formats) {
    CHECK(mock::wire_format(f->name()) == f);
    CHECK_FALSE(f->paths().empty());
  }
  CHECK(mock::wire_format("openai") == nullptr);
  CHECK(mock::format_for_path("/v1beta/models/gemini-2.5-flash:streamGenerateContent")->name() == "gemini");
  CHECK(mock::format_for_path("/v1/chat/completions")->name() == "openai-chat");
  CHECK(mock::format_for_path("/v1/responses")->name() == "openai-responses");
  CHECK(mock::format_for_path("/v1/messages")->name() == "anthropic");
  CHECK(mock::format_for_path("/v1/completions") == nullptr);
  CHECK(mock::format_for_path("/") == nullptr);
}

TEST_CASE("split_fragments gives n near-equal pieces that join back and never split a UTF-8 sequence") {
  const std::string ascii = R"({"command":"./deploy.sh staging"})";
  for (int n = 1; n <= 8; ++n) {
    const auto pieces = mock::split_fragments(ascii, n);
    CHECK(pieces.size() == static_cast<std::size_t>(n));
    CHECK(joined(pieces) == ascii);
    for (const auto& p : pieces) CHECK_FALSE(p.empty());
  }
  CHECK(mock::split_fragments(ascii, 0).size() == 1u);
  CHECK(mock::split_fragments("ab", 5) == std::vector<std::string>{"a", "b"});
  CHECK(mock::split_fragments("", 3) == std::vector<std::string>{""});
  // "é" is two bytes and "€" three: a piece boundary never falls inside them.
  const std::string utf8 = "{\"t\":\"é€é€é€\"}";
  for (int n = 1; n <= 12; ++n) {
    const auto pieces = mock::split_fragments(utf8, n);
    CHECK(joined(pieces) == utf8);
    for (const auto& p : pieces) {
      INFO(p);
      CHECK(!p.empty());
      CHECK((static_cast<unsigned char>(p.front()) & 0xC0) != 0x80);  // starts at a character
    }
  }
}

TEST_CASE("the neutral history helpers count model turns and read calls and responses") {
  const auto contents = nlohmann::json::parse(R"([
    {"role":"user","parts":[{"text":"go"}]},
    {"role":"model","parts":[{"text":"ok"},{"functionCall":{"name":"shell","id":"call_1","args":{"c":1}}}]},
    {"role":"user","parts":[{"functionResponse":{"name":"shell","id":"call_1"}}]},
    {"role":"model","parts":[{"text":"done"}]}
  ])");
  CHECK(mock::turn_index(contents) == 2);
  const auto h = mock::summarize_history(contents);
  REQUIRE(h.size() == 4u);
  REQUIRE(h[1].calls.size() == 1u);
  CHECK(h[1].calls[0].id == "call_1");
  CHECK(h[1].calls[0].args == nlohmann::json{{"c", 1}});
  REQUIRE(h[2].responses.size() == 1u);
  CHECK(h[2].responses[0].name == "shell");
  CHECK(mock::turn_index(nlohmann::json::object()) == 0);
}

TEST_CASE("status tables: each provider names the statuses it never sends and its own alternative") {
  const auto* gemini = mock::wire_format("gemini");
  const auto* chat = mock::wire_format("openai-chat");
  const auto* responses = mock::wire_format("openai-responses");
  const auto* anthropic = mock::wire_format("anthropic");
  CHECK(gemini->status_note(529) ==
        std::optional<std::string>("gemini does not send 529 (Anthropic's overloaded_error); its overload is 503 UNAVAILABLE"));
  CHECK(chat->status_note(529)->find("openai-chat does not send 529 (Anthropic's overloaded_error); its overload is 503") == 0);
  CHECK(responses->status_note(529)->find("openai-responses does not send 529") == 0);
  CHECK_FALSE(anthropic->status_note(529));
  for (int s : {400, 401, 403, 404, 429, 500, 503, 504}) {
    INFO(s);
    for (const mock::WireFormat* f : mock::wire_formats()) CHECK_FALSE(f->status_note(s));
  }
  CHECK(gemini->status_note(418) ==
        std::optional<std::string>("gemini does not send 418; its client errors are 400, 401, 403, 404, 409, 429, 499"));
  CHECK(anthropic->status_note(501) ==
        std::optional<std::string>("anthropic does not send 501; its server errors are 500, 502, 503, 504, 529 and its "
                                   "overload is 529 overloaded_error"));
  CHECK_FALSE(gemini->status_note(501));  // google.rpc UNIMPLEMENTED
  CHECK(chat->status_note(501));
}

TEST_CASE("the non-streaming content-filter answer keeps its parts only for Anthropic") {
  CHECK_FALSE(mock::wire_format("gemini")->filtered_answer_keeps_parts());
  CHECK_FALSE(mock::wire_format("openai-chat")->filtered_answer_keeps_parts());
  CHECK_FALSE(mock::wire_format("openai-responses")->filtered_answer_keeps_parts());
  CHECK(mock::wire_format("anthropic")->filtered_answer_keeps_parts());
}

TEST_CASE("a streamed answer's Content-Type is the provider's: charset=utf-8 from the OpenAI formats, JSON answers unchanged") {
  // As recorded live (tests/conformance/live_facts.json `framing.content_type`; docs/WIRE-FORMATS.md
  // "Checked against recordings"): OpenAI streams `text/event-stream; charset=utf-8`, its JSON
  // answers `application/json`; Gemini's and Anthropic's streams `text/event-stream`.
  struct Case {
    std::string provider, target, body, stream_type, unary_type;
  };
  const std::vector<Case> cases = {
      {"gemini", "/v1beta/models/m:streamGenerateContent?alt=sse", R"({"contents":[{"role":"user","parts":[{"text":"hi"}]}]})",
       "text/event-stream", ""},
      {"openai-chat", "/v1/chat/completions", R"({"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]})",
       "text/event-stream; charset=utf-8", "application/json"},
      {"openai-responses", "/v1/responses", R"({"model":"m","stream":true,"input":"hi"})",
       "text/event-stream; charset=utf-8", "application/json"},
      {"anthropic", "/v1/messages",
       R"({"model":"m","max_tokens":8,"stream":true,"messages":[{"role":"user","content":"hi"}]})",
       "text/event-stream", "application/json"},
  };
  const std::vector<mock::Event> events = {mock::TextEvent{"Hi"}, mock::FinishEvent{mock::FinishReason::kStop}};
  for (const Case& c : cases) {
    INFO(c.provider);
    const mock::Plan streamed = mock::testing::play_attempt(c.provider, c.target, c.body, events, std::nullopt);
    CHECK(streamed.status == 200);
    CHECK(streamed.streaming);
    CHECK(streamed.content_type == c.stream_type);
    CHECK(mock::wire_format(c.provider)->stream_content_type() == c.stream_type);
    if (c.unary_type.empty()) continue;
    std::string unary_body = c.body;
    unary_body.replace(unary_body.find("\"stream\":true"), 13, "\"stream\":false");
    const mock::Plan unary = mock::testing::play_attempt(c.provider, c.target, unary_body, events, std::nullopt);
    CHECK(unary.status == 200);
    CHECK_FALSE(unary.streaming);
    CHECK(unary.content_type == c.unary_type);
  }
}
