// Tests of the Gemini wire format: exact frame bytes, envelopes, request summaries.
#include <catch2/catch.hpp>

#include "mock_server/gemini_format.h"

namespace gemini_format_test {

namespace g = mock::gemini;
using nlohmann::json;

namespace {
const g::FrameContext kCtx{"gemini-2.5-flash", "hiccup-0"};
const std::string kTail =
    R"("usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":1,"totalTokenCount":9,)"
    R"("promptTokensDetails":[{"modality":"TEXT","tokenCount":8}]},)"
    R"("modelVersion":"gemini-2.5-flash","responseId":"hiccup-0"})";
}  // namespace

TEST_CASE("a text event is one data frame with a text part") {
  CHECK(g::event_frame(mock::TextEvent{"Hi \"there\""}, kCtx) ==
        R"(data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hi \"there\""}]},"index":0}],)" +
            kTail + "\r\n\r\n");
}

TEST_CASE("a call event is a functionCall part, with id only when set") {
  CHECK(g::event_frame(mock::CallEvent{"shell", json{{"command", "ls"}}, ""}, kCtx) ==
        R"(data: {"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"shell","args":{"command":"ls"}}}]},"index":0}],)" +
            kTail + "\r\n\r\n");
  CHECK(g::event_frame(mock::CallEvent{"shell", json::object(), "c1"}, kCtx) ==
        R"(data: {"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"shell","args":{},"id":"c1"}}]},"index":0}],)" +
            kTail + "\r\n\r\n");
}

TEST_CASE("finish frames: STOP and MAX_TOKENS carry one empty text part, SAFETY is a blocked output") {
  // As gemini-3 streams its finish (tests/conformance/live_facts.json, pyd-gemini-call).
  CHECK(g::event_frame(mock::FinishEvent{mock::FinishReason::kStop}, kCtx) ==
        R"(data: {"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","index":0}],)" +
            kTail + "\r\n\r\n");
  CHECK(g::event_frame(mock::FinishEvent{mock::FinishReason::kMaxTokens}, kCtx) ==
        R"(data: {"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"MAX_TOKENS","index":0}],)" +
            kTail + "\r\n\r\n");
  CHECK(g::event_frame(mock::FinishEvent{mock::FinishReason::kContentFilter}, kCtx) ==
        R"(data: {"candidates":[{"finishReason":"SAFETY","index":0}],)" + kTail + "\r\n\r\n");
  CHECK(g::event_frame(mock::FinishEvent{mock::FinishReason::kMalformedCall}, kCtx) ==
        R"(data: {"candidates":[{"finishReason":"MALFORMED_FUNCTION_CALL","index":0}],)" + kTail +
            "\r\n\r\n");
}

TEST_CASE("frames have no event or id lines and exactly one data line") {
  const std::string f = g::event_frame(mock::TextEvent{"a\nb"}, kCtx);
  CHECK(f.rfind("data: ", 0) == 0);
  CHECK(f.find('\n') == f.size() - 3);
  CHECK(f.find("event:") == std::string::npos);
}

TEST_CASE("the error envelope uses Google status names") {
  CHECK(g::error_envelope(503, g::default_message(503)).dump() ==
        R"({"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}})");
  CHECK(g::status_name(400) == "INVALID_ARGUMENT");
  CHECK(g::status_name(401) == "UNAUTHENTICATED");
  CHECK(g::status_name(403) == "PERMISSION_DENIED");
  CHECK(g::status_name(404) == "NOT_FOUND");
  CHECK(g::status_name(429) == "RESOURCE_EXHAUSTED");
  CHECK(g::status_name(500) == "INTERNAL");
  CHECK(g::status_name(502) == "UNAVAILABLE");
  CHECK(g::status_name(504) == "DEADLINE_EXCEEDED");
  CHECK(g::status_name(529) == "UNAVAILABLE");
}

TEST_CASE("an error answer's body is the envelope pretty-printed as Google writes it, under the method's content type") {
  // gemini_format.h, error_body and error_content_type, name the recorded sources.
  CHECK(g::error_body(503, g::default_message(503)) ==
        "{\n"
        "  \"error\": {\n"
        "    \"code\": 503,\n"
        "    \"message\": \"The model is overloaded. Please try again later.\",\n"
        "    \"status\": \"UNAVAILABLE\"\n"
        "  }\n"
        "}\n");
  // Compared as ordered_json on both sides: json == ordered_json is ambiguous under clang.
  CHECK(nlohmann::ordered_json::parse(g::error_body(400, "b\u00e4d \"x\"")) == g::error_envelope(400, "b\u00e4d \"x\""));
  CHECK(g::error_content_type("/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse") == "text/event-stream");
  CHECK(g::error_content_type("/v1beta/models/gemini-2.5-pro:generateContent") == "application/json; charset=UTF-8");
  CHECK(g::error_content_type("/v1beta/unknown") == "application/json; charset=UTF-8");
  CHECK(g::format().error_content_type("/v1beta/models/m:streamGenerateContent?alt=sse") == "text/event-stream");
}

TEST_CASE("retry_after_s becomes a RetryInfo retryDelay in the body") {
  CHECK(g::error_envelope(429, "quota", 30.0).dump() ==
        R"({"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"30s"}]}})");
  CHECK(g::error_body(429, "quota", 30.0) ==
        "{\n  \"error\": {\n    \"code\": 429,\n    \"message\": \"quota\",\n    \"status\": \"RESOURCE_EXHAUSTED\",\n"
        "    \"details\": [\n      {\n        \"@type\": \"type.googleapis.com/google.rpc.RetryInfo\",\n"
        "        \"retryDelay\": \"30s\"\n      }\n    ]\n  }\n}\n");
  CHECK(g::retry_delay(1.5) == "1.5s");
  CHECK(g::retry_delay(0) == "0s");
  CHECK(g::retry_delay(60) == "60s");
}

TEST_CASE("the in-stream error is a bare error object line and the malformed frame is bad JSON") {
  CHECK(g::stream_error_chunk(529) ==
        R"({"error":{"code":529,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}})"
        "\n");
  CHECK(g::malformed_frame() == "data: {\"candidates\":[{\r\n\r\n");
  CHECK(json::parse(g::malformed_frame().substr(6), nullptr, false).is_discarded());
}

TEST_CASE("the non-streaming body merges all parts into one candidate") {
  const std::vector<mock::Event> events = {mock::TextEvent{"a"}, mock::CallEvent{"t", json::object(), ""},
                                           mock::FinishEvent{}};
  const auto r = json::parse(g::merged_response(events, kCtx).dump());
  CHECK(r["candidates"][0]["content"]["parts"] ==
        json::parse(R"([{"text":"a"},{"functionCall":{"name":"t","args":{}}}])"));
  CHECK(r["candidates"][0]["finishReason"] == "STOP");
  CHECK(r["modelVersion"] == "gemini-2.5-flash");
  const auto blocked = json::parse(
      g::merged_response({mock::FinishEvent{mock::FinishReason::kContentFilter}}, kCtx).dump());
  CHECK_FALSE(blocked["candidates"][0].contains("content"));
  // Text before a SAFETY finish is not in the blocked answer.
  const auto late = json::parse(
      g::merged_response({mock::TextEvent{"a"}, mock::FinishEvent{mock::FinishReason::kContentFilter}}, kCtx).dump());
  CHECK_FALSE(late["candidates"][0].contains("content"));
  CHECK(late["candidates"][0]["finishReason"] == "SAFETY");
}

TEST_CASE("the non-streaming body holds one text part per run of text") {
  // A stream sends each text part in its own chunk, as the live API does; a generateContent answer
  // holds the run as one part (issue 41).
  const auto r = json::parse(g::merged_response({mock::TextEvent{"Run"}, mock::TextEvent{"ning."},
                                                 mock::CallEvent{"t", json::object(), ""}, mock::TextEvent{"A"},
                                                 mock::TextEvent{"nd"}, mock::FinishEvent{}},
                                                kCtx)
                                 .dump());
  CHECK(r["candidates"][0]["content"]["parts"] ==
        json::parse(R"([{"text":"Running."},{"functionCall":{"name":"t","args":{}}},{"text":"And"}])"));
}

TEST_CASE("request targets name the model and the method") {
  auto t = g::parse_target("/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse");
  REQUIRE(t);
  CHECK(t->model == "gemini-2.5-pro");
  CHECK(t->streaming);
  t = g::parse_target("/v1beta/models/gemini-2.5-flash:generateContent");
  REQUIRE(t);
  CHECK_FALSE(t->streaming);
  CHECK_FALSE(g::parse_target("/v1beta/models/x:countTokens"));
  CHECK_FALSE(g::parse_target("/v1/chat/completions"));
  CHECK_FALSE(g::parse_target("/v1beta/models/:generateContent"));
}

TEST_CASE("the turn index counts model contents and summaries find calls and responses") {
  const auto contents = json::parse(R"([
    {"role":"user","parts":[{"text":"go"}]},
    {"role":"model","parts":[{"text":"ok"},{"functionCall":{"name":"a","args":{"x":1},"id":"i1"}},{"functionCall":{"name":"b","args":{}}}]},
    {"role":"user","parts":[{"functionResponse":{"name":"a","id":"i1","response":{}}},{"functionResponse":{"name":"b","response":{}}}]}
  ])");
  CHECK(g::turn_index(contents) == 1);
  const auto s = g::summarize_contents(contents);
  REQUIRE(s.size() == 3);
  REQUIRE(s[1].calls.size() == 2);
  CHECK(s[1].calls[0].id == "i1");
  CHECK(s[1].calls[0].args == json{{"x", 1}});
  CHECK(s[1].calls[1].id.empty());
  REQUIRE(s[2].responses.size() == 2);
  CHECK(s[2].responses[1].name == "b");
  CHECK(g::response_id(7) != g::response_id(8));
}

TEST_CASE("text and finish frames written directly are the bytes of the JSON tree's dump") {
  // event_frame writes text and finish frames without nlohmann; sse_frame(event_response(...))
  // is the tree it must match byte for byte, escapes included.
  std::string every_ascii;
  for (int c = 1; c < 0x80; ++c) every_ascii += static_cast<char>(c);
  const std::vector<std::string> texts = {"", "Deploying.", "a \"quoted\" \\ backslash", "tab\tnew\nline\rcr\bbs\fff",
                                          std::string("nul\0byte", 8), "\x01\x1f\x7f", every_ascii,
                                          "caf\xc3\xa9 \xe2\x9c\x93 (UTF-8: the general path)"};
  const std::vector<g::FrameContext> contexts = {kCtx, {"models/\"odd\\name\"", "hiccup-123456789"}};
  for (const auto& ctx : contexts) {
    for (const auto& text : texts) {
      const mock::Event e = mock::TextEvent{text};
      CHECK(g::event_frame(e, ctx) == g::sse_frame(g::event_response(e, ctx)));
    }
    for (auto reason : {mock::FinishReason::kStop, mock::FinishReason::kMaxTokens, mock::FinishReason::kContentFilter,
                        mock::FinishReason::kMalformedCall}) {
      const mock::Event e = mock::FinishEvent{reason};
      CHECK(g::event_frame(e, ctx) == g::sse_frame(g::event_response(e, ctx)));
    }
  }
  // The escapes themselves, spelled out (a tree dump and a direct write could agree on a wrong one).
  CHECK(g::event_frame(mock::TextEvent{std::string("\"\\\n\x01\x7f", 5)}, kCtx).find(R"({"text":"\"\\\n\u0001)"
                                                                                     "\x7f\"}") != std::string::npos);
}

}  // namespace gemini_format_test

namespace gemini_quota_test {
namespace g = mock::gemini;

TEST_CASE("a per-day quota 429 names its quota id in a QuotaFailure, as gemini-cli reads it") {
  const auto body = nlohmann::json::parse(g::quota_error_body(mock::Quota::kPerDay, "gemini-2.5-pro", 38.0));
  const auto& e = body["error"];
  CHECK(e["code"] == 429);
  CHECK(e["status"] == "RESOURCE_EXHAUSTED");
  const std::string message = e["message"];
  CHECK(message.rfind("You exceeded your current quota, please check your plan and billing details.", 0) == 0);
  CHECK(message.find("limit: 20, model: gemini-2.5-pro\nPlease retry in 38s.") != std::string::npos);
  REQUIRE(e["details"].size() == 3);
  CHECK(e["details"][0]["@type"] == "type.googleapis.com/google.rpc.QuotaFailure");
  const auto& v = e["details"][0]["violations"][0];
  CHECK(v["quotaId"] == "GenerateRequestsPerDayPerProjectPerModel-FreeTier");
  CHECK(v["quotaMetric"] == "generativelanguage.googleapis.com/generate_content_free_tier_requests");
  CHECK(v["quotaDimensions"]["model"] == "gemini-2.5-pro");
  CHECK(e["details"][1]["@type"] == "type.googleapis.com/google.rpc.Help");
  CHECK(e["details"][2]["@type"] == "type.googleapis.com/google.rpc.RetryInfo");
  CHECK(e["details"][2]["retryDelay"] == "38s");
  // Laid out as every Gemini error body: two-space indent and a final newline.
  CHECK(g::quota_error_body(mock::Quota::kPerDay, "m", std::nullopt).rfind("{\n  \"error\": {\n    \"code\": 429,", 0) == 0);
}

TEST_CASE("a per-minute quota 429 names a per-minute quota id, no retry text without retry_after_s") {
  const auto e = nlohmann::json::parse(g::quota_error_body(mock::Quota::kPerMinute, "gemini-2.5-flash", std::nullopt))["error"];
  CHECK(e["details"][0]["violations"][0]["quotaId"] == "GenerateRequestsPerMinutePerProjectPerModel-FreeTier");
  CHECK(e["details"].size() == 2);  // no RetryInfo
  CHECK(e["message"].get<std::string>().find("Please retry") == std::string::npos);
  // gemini-cli treats "limit: 0" as terminal whatever the quota: the per-minute limit is not 0.
  CHECK(e["message"].get<std::string>().find("limit: 5, model: gemini-2.5-flash") != std::string::npos);
  // Through the WireFormat interface, the same body; other formats fall back to their plain 429.
  CHECK(g::format().quota_answer(mock::Quota::kPerMinute, "gemini-2.5-flash", std::nullopt).body ==
        g::quota_error_body(mock::Quota::kPerMinute, "gemini-2.5-flash", std::nullopt));
  const mock::WireFormat* anthropic = mock::wire_format("anthropic");
  REQUIRE(anthropic != nullptr);
  CHECK(anthropic->quota_answer(mock::Quota::kPerMinute, "claude", 2.0).body == anthropic->error_answer(429, anthropic->default_message(429), 2.0).body);
}

}  // namespace gemini_quota_test
