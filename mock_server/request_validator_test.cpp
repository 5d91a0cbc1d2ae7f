// Tests of request validation: body shape and the exact Gemini pairing messages.
#include <catch2/catch.hpp>

#include "mock_server/request_validator.h"

namespace g = mock::gemini;

namespace {

const char* kUser = R"({"role":"user","parts":[{"text":"go"}]})";
const char* kModelText = R"({"role":"model","parts":[{"text":"done"}]})";
const char* kModelTwoCalls =
    R"({"role":"model","parts":[{"functionCall":{"name":"a","args":{}}},{"functionCall":{"name":"b","args":{}}}]})";
const char* kOneResponse =
    R"({"role":"user","parts":[{"functionResponse":{"name":"a","response":{}}}]})";
const char* kTwoResponses =
    R"({"role":"user","parts":[{"functionResponse":{"name":"a","response":{}}},{"functionResponse":{"name":"b","response":{}}}]})";

std::string body(std::initializer_list<const char*> contents) {
  std::string s = R"({"contents":[)";
  bool first = true;
  for (const char* c : contents) {
    if (!first) s += ",";
    s += c;
    first = false;
  }
  return s + "]}";
}

std::string message_of(const std::string& b) {
  auto r = g::validate_request(b);
  return r ? r->message : "";
}

}  // namespace

TEST_CASE("valid histories pass validation") {
  CHECK_FALSE(g::validate_request(body({kUser})));
  CHECK_FALSE(g::validate_request(body({kUser, kModelTwoCalls, kTwoResponses})));
  CHECK_FALSE(g::validate_request(body({kUser, kModelTwoCalls, kTwoResponses, kModelText, kUser})));
  CHECK_FALSE(g::validate_request(body({kUser, kModelTwoCalls, kTwoResponses, kModelTwoCalls, kTwoResponses})));
}

TEST_CASE("the parsed body is handed back on success") {
  nlohmann::json parsed;
  REQUIRE_FALSE(g::validate_request(body({kUser}), &parsed));
  CHECK(parsed["contents"].size() == 1);
}

TEST_CASE("malformed JSON and a missing contents array are 400 INVALID_ARGUMENT") {
  auto r = g::validate_request("{not json");
  REQUIRE(r);
  CHECK(r->status == 400);
  CHECK(r->message == "Invalid JSON payload received. Unexpected token.");
  CHECK(message_of(R"({"generationConfig":{}})") ==
        "* GenerateContentRequest.contents: contents is not specified");
  CHECK(message_of(R"({"contents":[]})") ==
        "* GenerateContentRequest.contents: contents is not specified");
  CHECK(message_of(R"({"contents":{}})") ==
        "Invalid JSON payload received. Invalid value at 'contents', expected an array");
  CHECK(message_of(R"([1])") == "Invalid JSON payload received. Expected an object at the top level.");
  CHECK(message_of(R"({"contents":[{"role":"system","parts":[{"text":"x"}]}]})") ==
        "Please use a valid role: user, model.");
  CHECK(message_of(R"({"contents":[{"role":"user","parts":[]}]})") ==
        "* GenerateContentRequest.contents[0].parts: contents.parts must not be empty.");
}

TEST_CASE("two responses for one call are rejected with the count message") {
  const char* one_call = R"({"role":"model","parts":[{"functionCall":{"name":"a","args":{}}}]})";
  auto r = g::validate_request(body({kUser, one_call, kTwoResponses}));
  REQUIRE(r);
  CHECK(r->status == 400);
  CHECK(r->message ==
        "Please ensure that the number of function response parts is equal to the number of "
        "function call parts of the function call turn.");
}

TEST_CASE("fewer responses than calls, or none, is rejected with the count message") {
  CHECK(message_of(body({kUser, kModelTwoCalls, kOneResponse})) == g::kResponseCountMessage);
  CHECK(message_of(body({kUser, kModelTwoCalls, kUser})) == g::kResponseCountMessage);
  CHECK(message_of(body({kUser, kModelTwoCalls})) == g::kResponseCountMessage);
}

TEST_CASE("function responses without a preceding call turn are rejected with the count message") {
  CHECK(message_of(body({kUser, kModelText, kOneResponse})) == g::kResponseCountMessage);
  CHECK(message_of(body({kOneResponse})) == g::kResponseCountMessage);
}

TEST_CASE("a call turn not right after a user or function response turn is rejected") {
  auto r = g::validate_request(body({kUser, kModelText, kModelTwoCalls, kTwoResponses}));
  REQUIRE(r);
  CHECK(r->message ==
        "Please ensure that function call turn comes immediately after a user turn or after a "
        "function response turn.");
  CHECK(message_of(body({kModelTwoCalls, kTwoResponses})) == g::kCallTurnOrderMessage);
}

TEST_CASE("wrongly typed parts are 400 INVALID_ARGUMENT naming the field") {
  // `parts` that is not an array is not "empty".
  CHECK(message_of(R"({"contents":[{"role":"user","parts":"x"}]})") ==
        "Invalid JSON payload received. Invalid value at 'contents[0].parts', expected an array");
  CHECK(message_of(R"({"contents":[{"role":"user","parts":{"text":"x"}}]})") ==
        "Invalid JSON payload received. Invalid value at 'contents[0].parts', expected an array");
  // A part must be an object (a Part message).
  auto r = g::validate_request(R"({"contents":[{"role":"user","parts":[5]}]})");
  REQUIRE(r);
  CHECK(r->status == 400);
  CHECK_FALSE(r->pairing);
  CHECK(r->message ==
        "Invalid value at 'contents[0].parts[0]' "
        "(type.googleapis.com/google.ai.generativelanguage.v1beta.Part), 5");
  CHECK(message_of(body({kUser, R"({"role":"model","parts":[{"text":"ok"},"str"]})"})) ==
        "Invalid value at 'contents[1].parts[1]' "
        "(type.googleapis.com/google.ai.generativelanguage.v1beta.Part), \"str\"");
  // `text` must be a string.
  CHECK(message_of(R"({"contents":[{"role":"user","parts":[{"text":5}]}]})") ==
        "Invalid value at 'contents[0].parts[0].text' (TYPE_STRING), 5");
  CHECK(message_of(R"({"contents":[{"role":"user","parts":[{"text":true}]}]})") ==
        "Invalid value at 'contents[0].parts[0].text' (TYPE_STRING), true");
  CHECK(message_of(R"({"contents":[{"role":"user","parts":[{"text":["a"]}]}]})") ==
        "Invalid JSON payload received. Unknown name \"text\" at 'contents[0].parts[0]': Proto field "
        "is not repeating, cannot start list.");
  // A missing or null parts is still "empty"; a null text is an absent one.
  CHECK(message_of(R"({"contents":[{"role":"user"}]})") ==
        "* GenerateContentRequest.contents[0].parts: contents.parts must not be empty.");
  CHECK(message_of(R"({"contents":[{"role":"user","parts":null}]})") ==
        "* GenerateContentRequest.contents[0].parts: contents.parts must not be empty.");
  CHECK_FALSE(g::validate_request(R"({"contents":[{"role":"user","parts":[{"text":null,"inlineData":{}}]}]})"));
}
