// Tests of reasoning's round trip through the runtime's codecs (docs/POLICY.md "Reasoning"): each
// codec decodes the reasoning its provider streams (whole only: a thinking block without its
// signature_delta never goes out), history keeps it in the model turn, and each codec sends it back
// in its provider's shape and place; Chat Completions sends none.
#include <catch2/catch.hpp>

#include "runtime_under_test/anthropic_codec.h"
#include "runtime_under_test/codec_test_util.h"
#include "runtime_under_test/gemini_codec.h"
#include "runtime_under_test/history.h"
#include "runtime_under_test/openai_chat_codec.h"
#include "runtime_under_test/openai_responses_codec.h"

namespace rut::reasoning_codec_test {
namespace {

using nlohmann::json;

std::string ev(const std::string& name, const std::string& data) { return "event: " + name + "\ndata: " + data + "\n\n"; }

rut::testing::Decoded decode(const ICodec& codec, const std::string& bytes) {
  auto decoder = codec.stream_decoder();
  return rut::testing::decode_with(*decoder, bytes);
}

/// The committed turn's parts as the neutral history holds them, then the user's tool result.
json history_of(const std::vector<ModelPart>& parts) {
  History h;
  h.add_user_text("Go.");
  h.commit_model_turn(parts);
  h.add_function_responses({json{{"functionResponse", {{"name", "shell"}, {"id", "c1"}, {"response", {{"output", "shell: ok"}}}}}}});
  return h.contents();
}

const std::string kAnthropicThinking =
    ev("message_start", R"({"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"c","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":8,"output_tokens":1}}})") +
    ev("content_block_start", R"({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}})") +
    ev("content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Look at "}})") +
    ev("content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"the logs."}})");
const std::string kAnthropicRest =
    ev("content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCkYI"}})") +
    ev("content_block_stop", R"({"type":"content_block_stop","index":0})") +
    ev("content_block_start", R"({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"c1","name":"shell","input":{}}})") +
    ev("content_block_delta", R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"command\":\"ls\"}"}})") +
    ev("content_block_stop", R"({"type":"content_block_stop","index":1})") +
    ev("message_delta", R"({"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":3}})") +
    ev("message_stop", R"({"type":"message_stop"})");

}  // namespace

TEST_CASE("anthropic: a thinking block is reasoning once its signature arrives, and goes back first in the assistant turn") {
  const auto d = decode(anthropic_codec(), kAnthropicThinking + kAnthropicRest);
  REQUIRE(d.parts.size() == 2);
  REQUIRE(d.parts[0].reasoning);
  CHECK(*d.parts[0].reasoning == Reasoning{"Look at the logs.", "EqQBCkYI", "", true});
  CHECK_FALSE(d.parts[0].text);
  REQUIRE(d.parts[1].call);
  const json messages = anthropic_messages(history_of(d.parts));
  REQUIRE(messages.size() == 3);
  CHECK(messages[1]["content"] ==
        json::array({{{"type", "thinking"}, {"thinking", "Look at the logs."}, {"signature", "EqQBCkYI"}},
                     {{"type", "tool_use"}, {"id", "c1"}, {"name", "shell"}, {"input", {{"command", "ls"}}}}}));
}

TEST_CASE("anthropic: a thinking block cut before its signature_delta is not whole and never goes out") {
  const auto d = decode(anthropic_codec(), kAnthropicThinking);
  CHECK(d.parts.empty());
}

TEST_CASE("gemini: a thought signature goes back on the functionCall part that carried it") {
  const std::string stream =
      "data: " + json{{"candidates", json::array({{{"content", {{"role", "model"}, {"parts", json::array({{{"text", "Use du."}, {"thought", true}}})}}}, {"index", 0}}})}}.dump() + "\r\n\r\n" +
      "data: " + json{{"candidates", json::array({{{"content", {{"role", "model"}, {"parts", json::array({{{"functionCall", {{"name", "shell"}, {"args", {{"command", "du"}}}}}, {"thoughtSignature", "CiQB"}}})}}}, {"index", 0}}})}}.dump() + "\r\n\r\n" +
      "data: " + json{{"candidates", json::array({{{"content", {{"role", "model"}, {"parts", json::array()}}}, {"finishReason", "STOP"}, {"index", 0}}})}}.dump() + "\r\n\r\n";
  const auto d = decode(gemini_codec(), stream);
  // The thought summary is for display: only the signature must go back, on its call part.
  REQUIRE(d.parts.size() == 1);
  CHECK(d.parts[0].thought_signature == "CiQB");
  const json contents = history_of(d.parts);
  CHECK(contents[1]["parts"] == json::array({{{"functionCall", {{"name", "shell"}, {"args", {{"command", "du"}}}}}, {"thoughtSignature", "CiQB"}}}));
  // Gemini's request is the neutral history as it is.
  const json body = json::parse(gemini_codec().make_request(contents, "gemini-3-pro-preview", {}, true).body);
  CHECK(body["contents"][1] == contents[1]);
}

TEST_CASE("gemini: a signature on a part of its own (no call in the step) is kept as a signature-only part") {
  const std::string stream =
      "data: " + json{{"candidates", json::array({{{"content", {{"role", "model"}, {"parts", json::array({{{"text", "Hi."}}})}}}, {"index", 0}}})}}.dump() + "\r\n\r\n" +
      "data: " + json{{"candidates", json::array({{{"content", {{"role", "model"}, {"parts", json::array({{{"text", ""}, {"thoughtSignature", "c2ln"}}})}}}, {"finishReason", "STOP"}, {"index", 0}}})}}.dump() + "\r\n\r\n";
  const auto d = decode(gemini_codec(), stream);
  REQUIRE(d.parts.size() == 2);
  CHECK(d.parts[0].text == "Hi.");
  REQUIRE(d.parts[1].reasoning);
  CHECK(*d.parts[1].reasoning == Reasoning{"", "c2ln", "", false});
  CHECK(part_to_json(d.parts[1]) == json{{"text", ""}, {"thoughtSignature", "c2ln"}});
}

TEST_CASE("openai-responses: a reasoning item is whole at its output_item.done and goes back before its function_call") {
  const json rs = {{"id", "rs_1"}, {"type", "reasoning"}, {"summary", json::array({{{"type", "summary_text"}, {"text", "Plan."}}})}, {"encrypted_content", "gAAAA"}};
  const json fc = {{"id", "fc_1"}, {"type", "function_call"}, {"status", "completed"}, {"arguments", "{\"command\":\"ls\"}"}, {"call_id", "c1"}, {"name", "shell"}};
  const std::string stream =
      ev("response.output_item.added", json{{"type", "response.output_item.added"}, {"output_index", 0}, {"item", {{"id", "rs_1"}, {"type", "reasoning"}, {"summary", json::array()}}}}.dump()) +
      ev("response.output_item.done", json{{"type", "response.output_item.done"}, {"output_index", 0}, {"item", rs}}.dump()) +
      ev("response.output_item.added", json{{"type", "response.output_item.added"}, {"output_index", 1}, {"item", fc}}.dump()) +
      ev("response.output_item.done", json{{"type", "response.output_item.done"}, {"output_index", 1}, {"item", fc}}.dump()) +
      ev("response.completed", json{{"type", "response.completed"}, {"response", {{"status", "completed"}}}}.dump());
  const auto d = decode(openai_responses_codec(), stream);
  REQUIRE(d.parts.size() == 2);
  REQUIRE(d.parts[0].reasoning);
  CHECK(*d.parts[0].reasoning == Reasoning{"Plan.", "gAAAA", "rs_1", true});
  const json input = responses_input(history_of(d.parts));
  REQUIRE(input.size() == 4);
  CHECK(input[1] == json{{"type", "reasoning"}, {"id", "rs_1"}, {"summary", json::array({{{"type", "summary_text"}, {"text", "Plan."}}})}, {"encrypted_content", "gAAAA"}});
  CHECK(input[2]["type"] == "function_call");
  CHECK(input[3]["type"] == "function_call_output");
}

TEST_CASE("anthropic: a redacted_thinking block is reasoning at its start and goes back as that block, data unchanged") {
  const std::string stream =
      ev("message_start", R"({"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"c","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":8,"output_tokens":1}}})") +
      ev("content_block_start", R"({"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"EmwKAhgB"}})") +
      ev("content_block_stop", R"({"type":"content_block_stop","index":0})") +
      ev("content_block_start", R"({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"c1","name":"shell","input":{}}})") +
      ev("content_block_delta", R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"command\":\"ls\"}"}})") +
      ev("content_block_stop", R"({"type":"content_block_stop","index":1})") +
      ev("message_delta", R"({"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":3}})") +
      ev("message_stop", R"({"type":"message_stop"})");
  const auto d = decode(anthropic_codec(), stream);
  REQUIRE(d.parts.size() == 2);
  REQUIRE(d.parts[0].reasoning);
  CHECK(*d.parts[0].reasoning == Reasoning{"", "EmwKAhgB", "", true, true});
  REQUIRE(d.parts[1].call);
  const json messages = anthropic_messages(history_of(d.parts));
  REQUIRE(messages.size() == 3);
  REQUIRE(messages[1]["content"].size() == 2);
  CHECK(messages[1]["content"][0] == json{{"type", "redacted_thinking"}, {"data", "EmwKAhgB"}});
  CHECK(messages[1]["content"][1]["type"] == "tool_use");
  // A unary message's block too.
  const auto u = anthropic_codec().decode_body(
      R"({"id":"m","type":"message","role":"assistant","model":"c","content":[{"type":"redacted_thinking","data":"EmwKAhgB"},)"
      R"({"type":"tool_use","id":"c1","name":"shell","input":{"command":"ls"}}],"stop_reason":"tool_use","stop_sequence":null,)"
      R"("usage":{"input_tokens":8,"output_tokens":3}})");
  REQUIRE(u.parts.size() == 2);
  REQUIRE(u.parts[0].reasoning);
  CHECK(u.parts[0].reasoning->redacted);
  CHECK(u.parts[0].reasoning->signature == "EmwKAhgB");
}

TEST_CASE("openai-chat: reasoning in history is never sent (Chat Completions has no round trip for it)") {
  std::vector<ModelPart> parts(2);
  parts[0].reasoning = Reasoning{"secret plan", "c2ln", "", true};
  parts[1].text = "Hello.";
  History h;
  h.add_user_text("Go.");
  h.commit_model_turn(parts);
  const std::string body = openai_chat_codec().make_request(h.contents(), "gpt-4.1", {}, true).body;
  CHECK(body.find("secret plan") == std::string::npos);
  CHECK(body.find("c2ln") == std::string::npos);
  CHECK(body.find("Hello.") != std::string::npos);
}

}  // namespace rut::reasoning_codec_test
