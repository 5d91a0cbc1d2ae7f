// Tests of reasoning that must round-trip (WIRE-FORMATS.md "Reasoning"): how each format streams a
// reasoning event, what the journal records of it, and the 400 each provider answers, word for word,
// when a request's history drops or changes reasoning the server delivered with a call.
#include <catch2/catch.hpp>

#include "mock_server/anthropic_format.h"
#include "mock_server/format_test_util.h"
#include "mock_server/gemini_format.h"
#include "mock_server/script_engine.h"

namespace reasoning_test {

using mock::testing::call;
using mock::testing::parsed_frames;
using mock::testing::played_bytes;
using nlohmann::json;

namespace {

const mock::Event kStop = mock::FinishEvent{mock::FinishReason::kStop};
const json kArgs = {{"command", "ls"}};

mock::Script script_of(const std::string& provider, std::vector<mock::Event> first_turn) {
  mock::Script s;
  s.provider = provider;
  mock::Attempt a;
  a.events = std::move(first_turn);
  s.turns.push_back(mock::Turn{{a}});
  mock::Attempt answer;
  answer.events = {mock::TextEvent{"Done."}, kStop};
  s.turns.push_back(mock::Turn{{answer}});
  return s;
}

/// Plays `request` and settles it as delivered whole.
mock::Plan play(mock::ScriptEngine& engine, const mock::Request& request) {
  mock::Plan plan = engine.respond(request);
  engine.settle(plan.journal_index, mock::Delivery{static_cast<int>(plan.actions.size()), false, -1});
  return plan;
}

/// The message of an error answer body, in any of the four envelopes.
std::string error_message(const mock::Plan& plan) {
  const json body = json::parse(plan.body, nullptr, false);
  if (!body.is_object() || !body.contains("error")) return "";
  return body["error"].value("message", "");
}

// ---- Anthropic ----------------------------------------------------------------------------------

std::string anthropic_body(const json& messages) {
  return json{{"model", "claude-sonnet-4-5"}, {"max_tokens", 1024}, {"stream", true}, {"messages", messages}}.dump();
}

json anthropic_history(const json& assistant_content) {
  return json::array({{{"role", "user"}, {"content", "Go."}},
                      {{"role", "assistant"}, {"content", assistant_content}},
                      {{"role", "user"},
                       {"content", json::array({{{"type", "tool_result"}, {"tool_use_id", "toolu_hiccup_0_0"},
                                                 {"content", "{\"output\":\"shell: ok\"}"}}})}}});
}

json tool_use_block() {
  return {{"type", "tool_use"}, {"id", "toolu_hiccup_0_0"}, {"name", "shell"}, {"input", kArgs}};
}

json thinking_block(const std::string& thinking, const std::string& signature) {
  return {{"type", "thinking"}, {"thinking", thinking}, {"signature", signature}};
}

}  // namespace

TEST_CASE("anthropic streams reasoning as a thinking block: thinking_delta, one signature_delta, stopped by the next block") {
  auto enc = mock::anthropic::format().stream_encoder({"claude-sonnet-4-5", 0, false});
  enc->open();
  const std::string reasoning = mock::testing::join(enc->event_units(mock::ReasoningEvent{"plan", "c2ln"}, 0));
  const auto frames = parsed_frames(reasoning);
  REQUIRE(frames.size() == 4);
  CHECK(frames[0].dump() ==
        R"({"content_block":{"signature":"","thinking":"","type":"thinking"},"index":0,"type":"content_block_start"})");
  CHECK(frames[1] == json{{"type", "ping"}});  // the stream's ping, after its first content_block_start
  CHECK(frames[2]["delta"] == json{{"type", "thinking_delta"}, {"thinking", "plan"}});
  CHECK(frames[3]["delta"] == json{{"type", "signature_delta"}, {"signature", "c2ln"}});
  // The block is open until the next event: the call's units begin with its content_block_stop.
  const auto next = parsed_frames(enc->event_units(call("shell", kArgs, "toolu_1"), 0).front());
  REQUIRE(next.size() == 2);
  CHECK(next[0] == json{{"type", "content_block_stop"}, {"index", 0}});
  CHECK(next[1]["content_block"]["type"] == "tool_use");
}

TEST_CASE("anthropic closes a thinking block before the text block that follows it") {
  auto enc = mock::anthropic::format().stream_encoder({"claude-sonnet-4-5", 0, false});
  enc->open();
  (void)enc->event_units(mock::ReasoningEvent{"plan", "c2ln"}, 0);
  const auto frames = parsed_frames(mock::testing::join(enc->event_units(mock::TextEvent{"done"}, 0)));
  REQUIRE(frames.size() == 3);
  CHECK(frames[0] == json{{"type", "content_block_stop"}, {"index", 0}});
  CHECK(frames[1]["content_block"]["type"] == "text");
  CHECK(frames[1]["index"] == 1);
  CHECK(frames[2]["delta"] == json{{"type", "text_delta"}, {"text", "done"}});
}

TEST_CASE("a fault right after reasoning ends the stream inside the thinking block, and the journal records the reasoning") {
  mock::Script s = script_of("anthropic", {mock::ReasoningEvent{"plan", ""}, call("shell", kArgs, ""), kStop});
  mock::ErrorEventFault f;
  f.after_event = 1;
  s.turns[0].attempts[0].fault = f;
  mock::ScriptEngine engine(s);
  const mock::Plan plan = play(engine, {"POST", "/v1/messages", anthropic_body(json::array({{{"role", "user"}, {"content", "Go."}}}))});
  const std::string bytes = played_bytes(plan);
  CHECK(bytes.find("signature_delta") != std::string::npos);
  CHECK(bytes.find("content_block_stop") == std::string::npos);
  CHECK(bytes.find("overloaded_error") != std::string::npos);
  const mock::JournalEntry e = engine.journal().at(0);
  REQUIRE(e.delivered_reasoning.size() == 1);
  CHECK(e.delivered_reasoning[0].text == "plan");
  CHECK(e.delivered_reasoning[0].signature == mock::default_signature(0, 0));
  CHECK(e.delivered_reasoning[0].before_call == 0);
  CHECK(e.delivered_calls.empty());
}

TEST_CASE("anthropic rejects a final assistant turn that drops the thinking block its tool_use came after") {
  mock::ScriptEngine engine(script_of("anthropic", {mock::ReasoningEvent{"plan", ""}, call("shell", kArgs, ""), kStop}));
  play(engine, {"POST", "/v1/messages", anthropic_body(json::array({{{"role", "user"}, {"content", "Go."}}}))});
  const std::string signature = mock::default_signature(0, 0);

  const mock::Plan dropped = play(engine, {"POST", "/v1/messages", anthropic_body(anthropic_history(json::array({tool_use_block()})))});
  CHECK(dropped.status == 400);
  CHECK(error_message(dropped) ==
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is "
        "enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` "
        "and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this "
        "requirement, disable `thinking`. Please consult our documentation at "
        "https://docs.claude.com/en/docs/build-with-claude/extended-thinking");
  const auto journal = engine.journal();
  CHECK(journal.at(1).played == "rejected");
  CHECK_FALSE(journal.at(1).validated);

  const mock::Plan changed = play(engine, {"POST", "/v1/messages",
                                           anthropic_body(anthropic_history(json::array({thinking_block("plan", signature + "x"), tool_use_block()})))});
  CHECK(changed.status == 400);
  CHECK(error_message(changed) == "messages.1.content.0: Invalid `signature` in `thinking` block");

  const mock::Plan edited = play(engine, {"POST", "/v1/messages",
                                          anthropic_body(anthropic_history(json::array({thinking_block("plan!", signature), tool_use_block()})))});
  CHECK(error_message(edited) == "messages.1.content.0: Invalid `signature` in `thinking` block");

  const mock::Plan kept = play(engine, {"POST", "/v1/messages",
                                        anthropic_body(anthropic_history(json::array({thinking_block("plan", signature), tool_use_block()})))});
  CHECK(kept.status == 200);
  CHECK(engine.journal().at(4).turn == 1);
}

TEST_CASE("anthropic streams redacted reasoning as a redacted_thinking block: data whole in its start, no deltas") {
  mock::ReasoningEvent redacted{"", "EmwKAhgB", true};
  auto enc = mock::anthropic::format().stream_encoder({"claude-sonnet-4-5", 0, false});
  enc->open();
  const auto frames = parsed_frames(mock::testing::join(enc->event_units(redacted, 0)));
  REQUIRE(frames.size() == 2);
  CHECK(frames[0].dump() ==
        R"({"content_block":{"data":"EmwKAhgB","type":"redacted_thinking"},"index":0,"type":"content_block_start"})");
  CHECK(frames[1] == json{{"type", "ping"}});  // the stream's ping, after its first content_block_start
  // Stopped by the next block, as a thinking block is.
  const auto next = parsed_frames(enc->event_units(call("shell", kArgs, "toolu_1"), 0).front());
  REQUIRE(next.size() == 2);
  CHECK(next[0] == json{{"type", "content_block_stop"}, {"index", 0}});
  // A unary message holds the block as it came.
  const json body = json::parse(mock::anthropic::format().unary_body({redacted, call("shell", kArgs, "toolu_1"), kStop},
                                                                     {"claude-sonnet-4-5", 0, false}));
  CHECK(body["content"][0] == json{{"type", "redacted_thinking"}, {"data", "EmwKAhgB"}});
}

TEST_CASE("anthropic accepts redacted_thinking sent back unchanged before tool_use, and rejects it dropped or changed") {
  mock::ReasoningEvent redacted{"", "", true};  // the default signature is its data
  mock::ScriptEngine engine(script_of("anthropic", {redacted, call("shell", kArgs, ""), kStop}));
  play(engine, {"POST", "/v1/messages", anthropic_body(json::array({{{"role", "user"}, {"content", "Go."}}}))});
  REQUIRE(engine.journal().at(0).delivered_reasoning.size() == 1);
  CHECK(engine.journal().at(0).delivered_reasoning[0].redacted);
  const std::string data = mock::default_signature(0, 0);
  auto redacted_block = [](const std::string& d) { return json{{"type", "redacted_thinking"}, {"data", d}}; };

  const mock::Plan dropped = play(engine, {"POST", "/v1/messages", anthropic_body(anthropic_history(json::array({tool_use_block()})))});
  CHECK(dropped.status == 400);
  CHECK(error_message(dropped).rfind("messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`.", 0) == 0);

  const mock::Plan changed = play(engine, {"POST", "/v1/messages",
                                           anthropic_body(anthropic_history(json::array({redacted_block(data + "x"), tool_use_block()})))});
  CHECK(changed.status == 400);
  CHECK(error_message(changed) ==
        "messages.1.content.0: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be "
        "modified. These blocks must remain as they were in the original response.");
  // Sent back as a thinking block with the data as its signature: not the block it came as.
  const mock::Plan as_thinking = play(engine, {"POST", "/v1/messages",
                                               anthropic_body(anthropic_history(json::array({thinking_block("", data), tool_use_block()})))});
  CHECK(as_thinking.status == 400);

  const mock::Plan kept = play(engine, {"POST", "/v1/messages",
                                        anthropic_body(anthropic_history(json::array({redacted_block(data), tool_use_block()})))});
  CHECK(kept.status == 200);
  CHECK(engine.journal().at(4).turn == 1);
}

TEST_CASE("without reasoning delivered, a history without thinking blocks is served as before") {
  mock::ScriptEngine engine(script_of("anthropic", {call("shell", kArgs, ""), kStop}));
  play(engine, {"POST", "/v1/messages", anthropic_body(json::array({{{"role", "user"}, {"content", "Go."}}}))});
  const mock::Plan next = play(engine, {"POST", "/v1/messages", anthropic_body(anthropic_history(json::array({tool_use_block()})))});
  CHECK(next.status == 200);
  CHECK(engine.journal().at(0).delivered_reasoning.empty());
}

// ---- Gemini -------------------------------------------------------------------------------------

namespace {

const std::string kGeminiStream = "/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse";

std::string gemini_body(const json& contents) { return json{{"contents", contents}}.dump(); }

json gemini_history(const json& call_part) {
  return json::array({{{"role", "user"}, {"parts", json::array({{{"text", "Go."}}})}},
                      {{"role", "model"}, {"parts", json::array({{{"text", "plan"}, {"thought", true}}, call_part})}},
                      {{"role", "user"},
                       {"parts", json::array({{{"functionResponse", {{"name", "shell"}, {"response", {{"output", "shell: ok"}}}}}}})}}});
}

json call_part(std::optional<std::string> signature) {
  json p = {{"functionCall", {{"name", "shell"}, {"args", kArgs}}}};
  if (signature) p["thoughtSignature"] = *signature;
  return p;
}

}  // namespace

namespace {

/// Gemini frames are `data: JSON` + "\r\n\r\n": their parsed JSON.
std::vector<json> gemini_frames(const std::string& bytes) {
  std::vector<json> out;
  std::size_t at = 0;
  while (true) {
    const std::size_t end = bytes.find("\r\n\r\n", at);
    if (end == std::string::npos) break;
    const std::string frame = bytes.substr(at, end - at);
    at = end + 4;
    if (frame.rfind("data: ", 0) == 0) out.push_back(json::parse(frame.substr(6)));
  }
  return out;
}

}  // namespace

TEST_CASE("gemini streams a thought part and carries its signature on the next functionCall part") {
  auto enc = mock::gemini::format().stream_encoder({"gemini-3-pro-preview", 0, false});
  const auto thought = gemini_frames(mock::testing::join(enc->event_units(mock::ReasoningEvent{"plan", "c2ln"}, 0)));
  REQUIRE(thought.size() == 1);
  CHECK(thought[0]["candidates"][0]["content"]["parts"] == json::array({{{"text", "plan"}, {"thought", true}}}));
  // usageMetadata counts the thoughts from the thought part on (thoughtsTokenCount, in the total).
  const std::string thought_bytes = mock::testing::join(mock::gemini::format().stream_encoder({"gemini-3-pro-preview", 0, false})
                                                         ->event_units(mock::ReasoningEvent{"plan", "c2ln"}, 0));
  CHECK(thought_bytes.find(R"("usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":1,"totalTokenCount":10,)"
                          R"("promptTokensDetails":[{"modality":"TEXT","tokenCount":8}],"thoughtsTokenCount":1})") !=
        std::string::npos);
  const auto first = gemini_frames(mock::testing::join(enc->event_units(call("shell", kArgs, ""), 0)));
  CHECK(first[0]["candidates"][0]["content"]["parts"][0]["thoughtSignature"] == "c2ln");
  const auto second = gemini_frames(mock::testing::join(enc->event_units(call("shell", kArgs, ""), 1)));
  CHECK_FALSE(second[0]["candidates"][0]["content"]["parts"][0].contains("thoughtSignature"));  // parallel: the first only
  // Reasoning no call follows: its signature on the finish frame's one part, its empty text.
  enc->event_units(mock::ReasoningEvent{"answer now", "c2lnMg=="}, 0);
  enc->event_units(mock::TextEvent{"Done."}, 0);
  const auto fin = gemini_frames(mock::testing::join(enc->event_units(kStop, 0)));
  CHECK(fin[0]["candidates"][0]["content"]["parts"] == json::array({{{"text", ""}, {"thoughtSignature", "c2lnMg=="}}}));
  CHECK(fin[0]["usageMetadata"]["thoughtsTokenCount"] == 2);
  CHECK(fin[0]["usageMetadata"]["totalTokenCount"] == 11);
  // The direct path (a text frame after the signatures went out) counts them too.
  auto plain = mock::gemini::format().stream_encoder({"gemini-3-pro-preview", 0, false});
  CHECK_FALSE(gemini_frames(mock::testing::join(plain->event_units(mock::TextEvent{"Hi"}, 0)))[0]["usageMetadata"].contains("thoughtsTokenCount"));
  plain->event_units(mock::ReasoningEvent{"plan", "c2ln"}, 0);
  plain->event_units(call("shell", kArgs, ""), 0);
  const auto text = gemini_frames(mock::testing::join(plain->event_units(mock::TextEvent{"Hi"}, 0)));
  CHECK(text[0]["usageMetadata"]["thoughtsTokenCount"] == 1);
  // A unary answer counts the answer's reasoning events.
  const json unary = json::parse(mock::gemini::format().unary_body({mock::ReasoningEvent{"plan", "c2ln"}, call("shell", kArgs, ""), kStop},
                                                                   {"gemini-3-pro-preview", 0, false}));
  CHECK(unary["usageMetadata"]["thoughtsTokenCount"] == 1);
}

TEST_CASE("gemini rejects a current-turn function call sent back without its thought signature, or with another") {
  mock::ScriptEngine engine(script_of("gemini", {mock::ReasoningEvent{"plan", ""}, call("shell", kArgs, ""), kStop}));
  play(engine, {"POST", kGeminiStream, gemini_body(json::array({{{"role", "user"}, {"parts", json::array({{{"text", "Go."}}})}}}))});
  const std::string signature = mock::default_signature(0, 0);

  const mock::Plan dropped = play(engine, {"POST", kGeminiStream, gemini_body(gemini_history(call_part(std::nullopt)))});
  CHECK(dropped.status == 400);
  CHECK(error_message(dropped) ==
        "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, "
        "and missing thought_signature may lead to degraded model performance. Additional data, function call "
        "`default_api:shell` , position 2. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for "
        "more details.");
  CHECK(json::parse(dropped.body)["error"]["status"] == "INVALID_ARGUMENT");

  const mock::Plan changed = play(engine, {"POST", kGeminiStream, gemini_body(gemini_history(call_part("AAAA")))});
  CHECK(error_message(changed) == "Corrupted thought signature.");

  const mock::Plan kept = play(engine, {"POST", kGeminiStream, gemini_body(gemini_history(call_part(signature)))});
  CHECK(kept.status == 200);

  // A later user text starts a new turn: the earlier turn's calls are no longer validated.
  json later = gemini_history(call_part(std::nullopt));
  later.push_back({{"role", "model"}, {"parts", json::array({{{"text", "Done."}}})}});
  later.push_back({{"role", "user"}, {"parts", json::array({{{"text", "And /home?"}}})}});
  mock::Script two = script_of("gemini", {mock::ReasoningEvent{"plan", ""}, call("shell", kArgs, ""), kStop});
  two.turns.push_back(two.turns.back());
  mock::ScriptEngine engine2(two);
  play(engine2, {"POST", kGeminiStream, gemini_body(json::array({{{"role", "user"}, {"parts", json::array({{{"text", "Go."}}})}}}))});
  CHECK(play(engine2, {"POST", kGeminiStream, gemini_body(later)}).status == 200);
}

// ---- OpenAI Responses ---------------------------------------------------------------------------

namespace {

std::string responses_body(const json& input) {
  return json{{"model", "gpt-5"}, {"input", input}, {"stream", true}, {"store", false}}.dump();
}

json user_message(const std::string& text) { return {{"type", "message"}, {"role", "user"}, {"content", text}}; }

json function_call_item() {
  return {{"type", "function_call"}, {"call_id", "call_hiccup_0_0"}, {"name", "shell"}, {"arguments", kArgs.dump()}};
}

json output_item() {
  return {{"type", "function_call_output"}, {"call_id", "call_hiccup_0_0"}, {"output", "{\"output\":\"shell: ok\"}"}};
}

json reasoning_item(const std::string& encrypted) {
  return {{"type", "reasoning"}, {"id", "rs_hiccup_0_0"}, {"summary", json::array()}, {"encrypted_content", encrypted}};
}

}  // namespace

TEST_CASE("openai-responses streams reasoning as a whole reasoning item with its encrypted_content") {
  auto enc = mock::wire_format("openai-responses")->stream_encoder({"gpt-5", 4, false});
  enc->open();
  const auto frames = parsed_frames(mock::testing::join(enc->event_units(mock::ReasoningEvent{"plan", "c2ln"}, 0)));
  std::vector<std::string> types;
  for (const json& f : frames) types.push_back(f["type"]);
  CHECK(types == std::vector<std::string>{"response.output_item.added", "response.reasoning_summary_part.added",
                                          "response.reasoning_summary_text.delta", "response.reasoning_summary_text.done",
                                          "response.reasoning_summary_part.done", "response.output_item.done"});
  CHECK(frames.front()["item"] == json{{"id", "rs_hiccup_4_0"}, {"type", "reasoning"}, {"summary", json::array()}});
  CHECK(frames.back()["item"]["encrypted_content"] == "c2ln");
  CHECK(frames.back()["item"]["summary"] == json::array({{{"type", "summary_text"}, {"text", "plan"}}}));
  // The completed response's usage counts the reasoning item as reasoning tokens.
  const auto done = parsed_frames(mock::testing::join(enc->event_units(mock::TextEvent{"Hi"}, 0)) +
                                  mock::testing::join(enc->event_units(kStop, 0)));
  const json& usage = done.back()["response"]["usage"];
  CHECK(usage["output_tokens_details"]["reasoning_tokens"] == 1);
  CHECK(usage["output_tokens"] == 2);
  CHECK(usage["input_tokens_details"]["cached_tokens"] == 0);
}

TEST_CASE("openai-responses rejects a function_call sent back without its reasoning item, or with changed encrypted_content") {
  mock::ScriptEngine engine(script_of("openai-responses", {mock::ReasoningEvent{"plan", ""}, call("shell", kArgs, ""), kStop}));
  play(engine, {"POST", "/v1/responses", responses_body("Go.")});
  const std::string signature = mock::default_signature(0, 0);

  const mock::Plan dropped =
      play(engine, {"POST", "/v1/responses", responses_body(json::array({user_message("Go."), function_call_item(), output_item()}))});
  CHECK(dropped.status == 400);
  const json error = json::parse(dropped.body)["error"];
  CHECK(error["message"] ==
        "Item 'fc_hiccup_0_0' of type 'function_call' was provided without its required 'reasoning' item: 'rs_hiccup_0_0'.");
  CHECK(error["type"] == "invalid_request_error");
  CHECK(error["param"] == "input");
  CHECK(error["code"].is_null());

  const mock::Plan changed = play(engine, {"POST", "/v1/responses",
                                           responses_body(json::array({user_message("Go."), reasoning_item("gAAAAABpQxyzDQ=="),
                                                                       function_call_item(), output_item()}))});
  const json changed_error = json::parse(changed.body)["error"];
  CHECK(changed_error["message"] == "The encrypted content gAAA...DQ== could not be verified.");
  CHECK(changed_error["code"] == "invalid_encrypted_content");
  CHECK(changed_error["param"].is_null());

  // Characters, not bytes: the error body stays valid UTF-8 whatever the client sent.
  const mock::Plan wide = play(engine, {"POST", "/v1/responses",
                                        responses_body(json::array({user_message("Go."), reasoning_item("\xe2\x9c\x93\xe2\x9c\x93\xe2\x9c\x93\xe2\x9c\x93\xe2\x9c\x93\xe2\x9c\x93\xe2\x9c\x93\xe2\x9c\x93\xe2\x9c\x93"),
                                                                    function_call_item(), output_item()}))});
  CHECK(error_message(wide) == "The encrypted content \xe2\x9c\x93\xe2\x9c\x93\xe2\x9c\x93\xe2\x9c\x93...\xe2\x9c\x93\xe2\x9c\x93\xe2\x9c\x93\xe2\x9c\x93 could not be verified.");

  const mock::Plan alone = play(engine, {"POST", "/v1/responses",
                                         responses_body(json::array({user_message("Go."), reasoning_item(signature), user_message("Go on.")}))});
  CHECK(error_message(alone) == "Item 'rs_hiccup_0_0' of type 'reasoning' was provided without its required following item.");

  const mock::Plan kept = play(engine, {"POST", "/v1/responses",
                                        responses_body(json::array({user_message("Go."), reasoning_item(signature),
                                                                    function_call_item(), output_item()}))});
  CHECK(kept.status == 200);
  CHECK(engine.journal().back().turn == 1);
}

TEST_CASE("openai-responses takes back reasoning items in a row as it delivered them, before the item they led to") {
  // Two reasoning events in a row (an Anthropic scenario's thinking then redacted_thinking, played
  // with --provider openai-responses): two reasoning items, sent back in a row before the call.
  mock::ScriptEngine engine(script_of("openai-responses", {mock::ReasoningEvent{"plan", ""}, mock::ReasoningEvent{"more", ""},
                                                           call("shell", kArgs, ""), kStop}));
  play(engine, {"POST", "/v1/responses", responses_body("Go.")});
  auto item = [](int k) {
    return json{{"type", "reasoning"}, {"id", "rs_hiccup_0_" + std::to_string(k)}, {"summary", json::array()},
                {"encrypted_content", mock::default_signature(0, k)}};
  };
  const mock::Plan both = play(engine, {"POST", "/v1/responses",
                                        responses_body(json::array({user_message("Go."), item(0), item(1),
                                                                    function_call_item(), output_item()}))});
  CHECK(both.status == 200);
  CHECK(engine.journal().back().turn == 1);
  // The run of them still needs the item it led to after it.
  const mock::Plan last = play(engine, {"POST", "/v1/responses",
                                        responses_body(json::array({user_message("Go."), item(0), item(1), user_message("Go on.")}))});
  CHECK(error_message(last) == "Item 'rs_hiccup_0_0' of type 'reasoning' was provided without its required following item.");
  // And the call needs the reasoning right before it in the answer, the second one.
  const mock::Plan first_only = play(engine, {"POST", "/v1/responses",
                                              responses_body(json::array({user_message("Go."), item(0), function_call_item(), output_item()}))});
  CHECK(error_message(first_only) ==
        "Item 'fc_hiccup_0_0' of type 'function_call' was provided without its required 'reasoning' item: 'rs_hiccup_0_1'.");
}

// ---- OpenAI Chat Completions --------------------------------------------------------------------

TEST_CASE("openai-chat sends nothing for reasoning and journals none") {
  mock::ScriptEngine engine(script_of("openai-chat", {mock::ReasoningEvent{"plan", "c2ln"}, call("shell", kArgs, ""), kStop}));
  const mock::Plan plan = play(engine, {"POST", "/v1/chat/completions",
                                        json{{"model", "gpt-4.1"}, {"stream", true},
                                             {"messages", json::array({{{"role", "user"}, {"content", "Go."}}})}}.dump()});
  const std::string bytes = played_bytes(plan);
  CHECK(bytes.find("plan") == std::string::npos);
  CHECK(bytes.find("c2ln") == std::string::npos);
  const auto e = engine.journal().at(0);
  CHECK(e.delivered_reasoning.empty());
  CHECK(e.delivered_calls.size() == 1);
  CHECK(e.completed);
}

TEST_CASE("a default signature is deterministic base64 of the request and the position") {
  CHECK(mock::default_signature(0, 0) == "aGljY3VwLXRob3VnaHQtMC0w");
  CHECK(mock::default_signature(12, 3) == "aGljY3VwLXRob3VnaHQtMTItMw==");
}

}  // namespace reasoning_test
