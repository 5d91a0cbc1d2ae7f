// Tests of the runtime's Gemini codec: targets, bodies, frames, error envelopes.
#include "runtime_under_test/gemini_codec.h"
#include "runtime_under_test/codec.h"

#include <catch2/catch.hpp>

namespace rut {

using nlohmann::json;

TEST_CASE("codec builds the streaming target and request body") {
  CHECK(stream_target("gemini-2.5-flash") ==
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
  json contents = json::array({{{"role", "user"}, {"parts", json::array({{{"text", "hi"}}})}}});
  json body = json::parse(build_request_body(contents, {}));
  CHECK(body["contents"] == contents);
  CHECK_FALSE(body.contains("tools"));
  body = json::parse(build_request_body(contents, {"deploy"}));
  CHECK(body["tools"][0]["functionDeclarations"][0]["name"] == "deploy");
}

TEST_CASE("codec parses text, function calls and finish reason of a frame") {
  auto f = parse_frame(
      R"({"candidates":[{"content":{"role":"model","parts":[{"text":"a"},)"
      R"({"functionCall":{"name":"deploy","args":{"env":"prod"},"id":"c1"}}]},)"
      R"("finishReason":"STOP","index":0}],"usageMetadata":{}})");
  REQUIRE(f);
  REQUIRE(f->parts.size() == 2);
  CHECK(*f->parts[0].text == "a");
  CHECK(f->parts[1].call->name == "deploy");
  CHECK(f->parts[1].call->args == json{{"env", "prod"}});
  CHECK(*f->parts[1].call->id == "c1");
  CHECK(*f->finish_reason == "STOP");
}

TEST_CASE("codec keeps the finish frame's empty text part out of the turn, unless it carries a signature") {
  // gemini-3 streams its finish with one empty text part (tests/conformance/live_facts.json).
  auto fin = parse_frame(R"({"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","index":0}]})");
  REQUIRE(fin);
  CHECK(fin->parts.empty());
  CHECK(*fin->finish_reason == "STOP");
  auto signed_fin = parse_frame(
      R"({"candidates":[{"content":{"role":"model","parts":[{"text":"","thoughtSignature":"c2ln"}]},"finishReason":"STOP","index":0}]})");
  REQUIRE(signed_fin);
  REQUIRE(signed_fin->parts.size() == 1);
  CHECK(signed_fin->parts[0].reasoning->signature == "c2ln");
  // Mid-stream, an empty text part is a text part as before.
  auto mid = parse_frame(R"({"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"index":0}]})");
  REQUIRE(mid);
  REQUIRE(mid->parts.size() == 1);
  CHECK(*mid->parts[0].text == "");
}

TEST_CASE("codec reports an undecodable frame as nullopt") {
  CHECK_FALSE(parse_frame("{not json"));
  CHECK_FALSE(parse_frame("[1,2]"));
  CHECK(parse_frame(R"({"usageMetadata":{}})"));
}

TEST_CASE("codec takes members of the wrong type from the wire without throwing") {
  // Found by fuzz_codec_stream_gemini (FUZZ_FAST): a call name that is a number threw type_error
  // out of parse_frame and aborted the runtime.
  std::optional<GeminiFrame> f;
  REQUIRE_NOTHROW(f = parse_frame(
                      R"({"candidates":[{"content":{"parts":[{"functionCall":{"name":6,"args":{}}},)"
                      R"({"text":"t","thought":"yes"},{"text":"u","thought":true}]}}]})"));
  REQUIRE(f);
  REQUIRE(f->parts.size() == 2);
  CHECK(f->parts[0].call->name.empty());
  CHECK(*f->parts[1].text == "t");  // a thought flag that is not a boolean does not hide the text
  std::optional<GeminiError> e;
  REQUIRE_NOTHROW(e = parse_error(R"({"error":{"code":429,"details":[{"@type":7,"retryDelay":"3s"}]}})"));
  REQUIRE(e);
  CHECK(e->retry_after_s == 0);  // no RetryInfo: its @type is not the string
  // The crash input itself: a call frame cut short, repaired and parsed.
  const std::string cut =
      "{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":6,"
      "\"candidatesTokenCount\":1,\"totalTokenCount\":9},\"modelVersion\":\"gemini-2.5-flash\"";
  auto decoder = codec_for("gemini")->stream_decoder();
  REQUIRE_NOTHROW(decoder->repaired_open_call(cut));
}

TEST_CASE("codec reads error envelopes and RetryInfo delays") {
  auto e = parse_error(
      R"({"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED","details":[)"
      R"({"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"30s"}]}})");
  REQUIRE(e);
  CHECK(e->code == 429);
  CHECK(e->status == "RESOURCE_EXHAUSTED");
  CHECK(e->retry_after_s == 30);
  CHECK(parse_duration_s("1.5s") == 1.5);
  CHECK_FALSE(parse_duration_s("30"));
  CHECK_FALSE(parse_error("hello"));
}

TEST_CASE("codec echoes call ids in function responses only when the call had one") {
  FunctionCall with_id{"deploy", json::object(), "c1"};
  FunctionCall without{"deploy", json::object(), std::nullopt};
  CHECK(function_response_json(with_id, {{"output", "deploy: ok"}})["functionResponse"]["id"] ==
        "c1");
  CHECK_FALSE(function_response_json(without, {})["functionResponse"].contains("id"));
}

}  // namespace rut

namespace rut {

TEST_CASE("codec reads a QuotaFailure's per-day quota id as a daily quota, a per-minute one not") {
  auto quota = [](const std::string& id) {
    return R"({"error":{"code":429,"message":"q","status":"RESOURCE_EXHAUSTED","details":[)"
           R"({"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":")" + id + R"("}]},)"
           R"({"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"38s"}]}})";
  };
  const auto day = parse_error(quota("GenerateRequestsPerDayPerProjectPerModel-FreeTier"));
  REQUIRE(day);
  CHECK(day->daily_quota);
  CHECK(day->retry_after_s == 38);
  const auto minute = parse_error(quota("GenerateRequestsPerMinutePerProjectPerModel-FreeTier"));
  REQUIRE(minute);
  CHECK_FALSE(minute->daily_quota);
  // Through the codec interface, as the model client asks.
  CHECK(codec_for("gemini")->parse_error(quota("GenerateRequestsPerDayPerProjectPerModel-FreeTier"), {}).daily_quota);
  CHECK_FALSE(codec_for("gemini")->parse_error(quota("GenerateRequestsPerMinutePerProjectPerModel-FreeTier"), {}).daily_quota);
  // A QuotaFailure of the wrong shape is no daily quota and no crash.
  CHECK_FALSE(parse_error(R"({"error":{"code":429,"details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":"PerDay"}]}})")->daily_quota);
}

TEST_CASE("OpenAI codecs read a per-day limit in a rate_limit_exceeded message as a daily quota") {
  const std::string day = R"({"error":{"message":"Rate limit reached for gpt-5.5 in organization org-x on requests per day (RPD): Limit 200, Used 200, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}})";
  const std::string minute = R"({"error":{"message":"Rate limit reached for gpt-5.5 in organization org-x on requests per min (RPM): Limit 3, Used 3, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}})";
  for (const char* provider : {"openai-chat", "openai-responses"}) {
    CAPTURE(provider);
    CHECK(codec_for(provider)->parse_error(day, {}).daily_quota);
    CHECK_FALSE(codec_for(provider)->parse_error(minute, {}).daily_quota);
  }
  CHECK(says_daily_quota("on tokens per day (TPD): Limit 90000"));
  CHECK_FALSE(says_daily_quota("Rate limit reached for requests."));
}

}  // namespace rut
