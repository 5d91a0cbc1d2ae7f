// Tests of the Anthropic Messages wire format (mock side): golden event bytes, block indexes and
// fragments, stop reasons, envelopes and headers, request decoding and the exact 400 messages.
#include <catch2/catch.hpp>

#include "mock_server/anthropic_format.h"
#include "mock_server/format_test_util.h"
#include "mock_server/script_engine.h"

namespace anthropic_format_test {

namespace a = mock::anthropic;
using nlohmann::json;

using mock::testing::parsed_frames;
using mock::testing::played_bytes;

using mock::testing::call;
using mock::testing::join;

namespace {

const mock::ResponseContext kCtx{"claude-sonnet-4-5", 3};

const mock::WireFormat& fmt() { return a::format(); }

/// The data JSON of every `data:` line of `bytes`, in order.
std::vector<json> data_of(const std::string& bytes) {
  std::vector<json> out;
  std::size_t at = 0;
  while ((at = bytes.find("data: ", at)) != std::string::npos) {
    const std::size_t end = bytes.find('\n', at);
    out.push_back(json::parse(bytes.substr(at + 6, end - at - 6)));
    at = end;
  }
  return out;
}

/// A request body with `messages` (model and max_tokens set).
std::string body_with(const json& messages, bool stream = true) {
  return json{{"model", "claude-sonnet-4-5"}, {"max_tokens", 1024}, {"stream", stream},
              {"messages", messages}}.dump();
}

mock::DecodedRequest decode(const json& messages) {
  return fmt().decode_request("/v1/messages", body_with(messages));
}

const json kUserGo = {{"role", "user"}, {"content", "go"}};

json tool_use(const std::string& id, const std::string& name = "shell") {
  return {{"type", "tool_use"}, {"id", id}, {"name", name}, {"input", json::object()}};
}
json tool_result(const std::string& id) {
  return {{"type", "tool_result"}, {"tool_use_id", id}, {"content", "ok"}};
}

}  // namespace

TEST_CASE("golden bytes: message_start, a text block with the ping after its start, a call in two fragments, stop") {
  auto enc = fmt().stream_encoder(kCtx);
  std::string s = enc->open();
  s += join(enc->event_units(mock::TextEvent{"Hi"}, 0));
  s += join(enc->event_units(call("shell", {{"command", "ls"}}, "toolu_hiccup_3_0", 2), 0));
  s += join(enc->event_units(mock::FinishEvent{mock::FinishReason::kStop}, 0));
  const std::string golden =
      "event: message_start\n"
      R"(data: {"type":"message_start","message":{"id":"msg_hiccup_3","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":8,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":1,"service_tier":"standard"}}})"
      "\n\n"
      "event: content_block_start\n"
      R"(data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})"
      "\n\n"
      "event: ping\n"
      R"(data: {"type":"ping"})"
      "\n\n"
      "event: content_block_delta\n"
      R"(data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}})"
      "\n\n"
      "event: content_block_stop\n"
      R"(data: {"type":"content_block_stop","index":0})"
      "\n\n"
      "event: content_block_start\n"
      R"(data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_hiccup_3_0","name":"shell","input":{}}})"
      "\n\n"
      "event: content_block_delta\n"
      R"(data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"comman"}})"
      "\n\n"
      "event: content_block_delta\n"
      R"(data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"d\":\"ls\"}"}})"
      "\n\n"
      "event: content_block_stop\n"
      R"(data: {"type":"content_block_stop","index":1})"
      "\n\n"
      "event: message_delta\n"
      R"(data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":8,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":2}})"
      "\n\n"
      "event: message_stop\n"
      R"(data: {"type":"message_stop"})"
      "\n\n";
  CHECK(s == golden);
}

TEST_CASE("a call is start, F input_json_delta fragments and stop, on its own block index") {
  auto enc = fmt().stream_encoder(kCtx);
  (void)enc->open();
  const json args = {{"target", "staging-eu-west-1"}, {"release", "2026.11.30-rc1"}};
  const auto text = enc->event_units(mock::TextEvent{"a"}, 0);
  REQUIRE(text.size() == 1);
  const auto first = enc->event_units(call("deploy", args, "toolu_x", 3), 0);
  REQUIRE(first.size() == 5);
  // The call's start unit first closes the text block the text left open.
  CHECK(data_of(first.front()) ==
        std::vector<json>{json{{"type", "content_block_stop"}, {"index", 0}},
                          json::parse(R"({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_x","name":"deploy","input":{}}})")});
  std::string partial;
  for (std::size_t u = 1; u + 1 < first.size(); ++u) {
    const auto d = data_of(first[u]);
    REQUIRE(d.size() == 1);
    CHECK(d[0]["index"] == 1);
    CHECK(d[0]["delta"]["type"] == "input_json_delta");
    CHECK_FALSE(d[0]["delta"]["partial_json"].get<std::string>().empty());
    partial += d[0]["delta"]["partial_json"].get<std::string>();
  }
  CHECK(partial == args.dump());
  CHECK(data_of(first.back())[0] == json({{"type", "content_block_stop"}, {"index", 1}}));

  // fragments 0 means one fragment; the next block gets the next index
  const auto second = enc->event_units(call("shell", json::object(), "toolu_y"), 1);
  REQUIRE(second.size() == 3);
  CHECK(data_of(second[1])[0]["delta"]["partial_json"] == "{}");
  CHECK(data_of(second[0])[0]["index"] == 2);
  CHECK(data_of(join(enc->event_units(mock::TextEvent{"b"}, 0)))[0]["index"] == 3);
}

TEST_CASE("a run of text events is one text block: deltas, closed at a call or the finish") {
  // The live API streams a run of text as many text_delta events of one block (issue 41): a block
  // per text event made langchain-anthropic return a list of blocks instead of a string.
  auto enc = fmt().stream_encoder(kCtx);
  (void)enc->open();
  std::vector<json> frames;
  auto add = [&](const std::vector<std::string>& units) {
    for (json& f : data_of(join(units))) frames.push_back(std::move(f));
  };
  add(enc->event_units(mock::TextEvent{"Look"}, 0));
  add(enc->event_units(mock::TextEvent{"ing."}, 0));
  add(enc->event_units(call("shell", {{"command", "ls"}}, "toolu_x"), 0));
  add(enc->event_units(mock::TextEvent{"Do"}, 0));
  add(enc->event_units(mock::TextEvent{"ne."}, 0));
  add(enc->event_units(mock::FinishEvent{mock::FinishReason::kStop}, 0));
  std::vector<std::string> seen;
  for (const json& f : frames) {
    std::string what = f["type"].get<std::string>();
    if (f.contains("index")) what += " " + std::to_string(f["index"].get<int>());
    if (f.contains("delta") && f["delta"].contains("text")) what += " " + f["delta"]["text"].get<std::string>();
    seen.push_back(what);
  }
  CHECK(seen == std::vector<std::string>{
                    "content_block_start 0", "ping", "content_block_delta 0 Look", "content_block_delta 0 ing.",
                    "content_block_stop 0", "content_block_start 1", "content_block_delta 1",
                    "content_block_stop 1", "content_block_start 2", "content_block_delta 2 Do",
                    "content_block_delta 2 ne.", "content_block_stop 2", "message_delta", "message_stop"});
  // Each text event is still one unit: its delta (the first of a run also opens the block).
  auto enc2 = fmt().stream_encoder(kCtx);
  (void)enc2->open();
  CHECK(enc2->event_units(mock::TextEvent{"a"}, 0).size() == 1);
  const auto second = enc2->event_units(mock::TextEvent{"b"}, 0);
  REQUIRE(second.size() == 1);
  CHECK(data_of(second[0]) == std::vector<json>{json::parse(
                                   R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"b"}})")});
}

TEST_CASE("the one ping follows the first content_block_start, whatever its block, and an answer without blocks has none") {
  // Live streams ping right after the first content_block_start, never before the first block
  // (tests/conformance/live_facts.json, the Anthropic recordings).
  auto names = [](const std::vector<mock::Event>& events) {
    auto enc = fmt().stream_encoder(kCtx);
    std::string s = enc->open();
    for (const auto& e : events) s += join(enc->event_units(e, 0));
    std::vector<std::string> out;
    for (const json& f : data_of(s)) {
      out.push_back(f["type"].get<std::string>());
      if (f.contains("content_block")) out.back() += ":" + f["content_block"]["type"].get<std::string>();
    }
    return out;
  };
  const mock::FinishEvent stop{mock::FinishReason::kStop};
  CHECK(names({mock::TextEvent{"a"}, mock::TextEvent{"b"}, stop}) ==
        std::vector<std::string>{"message_start", "content_block_start:text", "ping", "content_block_delta",
                                 "content_block_delta", "content_block_stop", "message_delta", "message_stop"});
  CHECK(names({call("shell", {{"command", "ls"}}, "toolu_x", 1), mock::TextEvent{"b"}, stop}) ==
        std::vector<std::string>{"message_start", "content_block_start:tool_use", "ping", "content_block_delta",
                                 "content_block_stop", "content_block_start:text", "content_block_delta",
                                 "content_block_stop", "message_delta", "message_stop"});
  CHECK(names({mock::ReasoningEvent{"plan", "c2ln"}, mock::TextEvent{"b"}, stop}) ==
        std::vector<std::string>{"message_start", "content_block_start:thinking", "ping", "content_block_delta",
                                 "content_block_delta", "content_block_stop", "content_block_start:text",
                                 "content_block_delta", "content_block_stop", "message_delta", "message_stop"});
  CHECK(names({stop}) == std::vector<std::string>{"message_start", "message_delta", "message_stop"});
  // A fault before the first event sends message_start alone.
  CHECK(names({}) == std::vector<std::string>{"message_start"});
}

TEST_CASE("a fault after a text event falls inside its open text block, as a live overload does") {
  const std::vector<mock::Event> events = {mock::TextEvent{"Hel"}, mock::TextEvent{"lo"},
                                           mock::FinishEvent{mock::FinishReason::kStop}};
  for (int kind : {0, 1, 2, 4}) {  // disconnect, reset, end, error_event
    INFO("fault kind " << kind);
    const auto plan = mock::testing::play_attempt("anthropic", "/v1/messages", body_with(json::array({kUserGo})),
                                                  events, mock::testing::fault_of(kind, 2, std::nullopt, 529));
    const auto frames = parsed_frames(played_bytes(plan));
    int stops = 0, starts = 0;
    std::string text;
    for (const json& f : frames) {
      stops += f["type"] == "content_block_stop";
      starts += f["type"] == "content_block_start";
      if (f["type"] == "content_block_delta") text += f["delta"]["text"].get<std::string>();
    }
    CHECK(starts == 1);
    CHECK(stops == 0);
    CHECK(text == "Hello");
    if (kind == 4) CHECK(frames.back() == json::parse(R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})"));
  }
}

TEST_CASE("every stop_reason: end_turn, tool_use after a call, max_tokens, refusal") {
  auto stop_of = [](std::vector<mock::Event> events) {
    auto enc = fmt().stream_encoder(kCtx);
    std::string s = enc->open();
    for (const auto& e : events) s += join(enc->event_units(e, 0));
    const auto d = data_of(s);
    REQUIRE(d.size() >= 2);
    CHECK(d.back() == json({{"type", "message_stop"}}));
    CHECK(d[d.size() - 2]["type"] == "message_delta");
    CHECK(d[d.size() - 2]["delta"]["stop_sequence"].is_null());
    return d[d.size() - 2]["delta"]["stop_reason"].get<std::string>();
  };
  using R = mock::FinishReason;
  CHECK(stop_of({mock::TextEvent{"x"}, mock::FinishEvent{R::kStop}}) == "end_turn");
  CHECK(stop_of({call("t", json::object(), "toolu_1"), mock::FinishEvent{R::kStop}}) == "tool_use");
  CHECK(stop_of({mock::FinishEvent{R::kMaxTokens}}) == "max_tokens");
  CHECK(stop_of({call("t", json::object(), "toolu_1"), mock::FinishEvent{R::kMaxTokens}}) == "max_tokens");
  CHECK(stop_of({mock::FinishEvent{R::kContentFilter}}) == "refusal");
  CHECK(a::stop_reason(R::kStop, false) == "end_turn");
  CHECK(a::stop_reason(R::kStop, true) == "tool_use");
}

TEST_CASE("a malformed_call finish is an in-stream api_error with no message_stop") {
  auto enc = fmt().stream_encoder(kCtx);
  const auto units = enc->event_units(mock::FinishEvent{mock::FinishReason::kMalformedCall}, 0);
  REQUIRE(units.size() == 1);
  CHECK(units[0] ==
        "event: error\n"
        R"(data: {"type":"error","error":{"type":"api_error","message":"Internal server error"}})"
        "\n\n");
}

TEST_CASE("the in-stream error is an error event typed by status") {
  auto enc = fmt().stream_encoder(kCtx);
  CHECK(enc->error_event(529) ==
        "event: error\n"
        R"(data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})"
        "\n\n");
  CHECK(enc->error_event(503) == enc->error_event(529));
  CHECK(data_of(enc->error_event(429))[0]["error"] ==
        json({{"type", "rate_limit_error"}, {"message", "Rate limited"}}));
  CHECK(data_of(enc->error_event(500))[0]["error"]["type"] == "api_error");
}

TEST_CASE("the malformed frame has valid SSE framing and JSON that does not parse") {
  const std::string f = fmt().stream_encoder(kCtx)->malformed_frame();
  CHECK(f.rfind("event: content_block_delta\ndata: ", 0) == 0);
  CHECK(f.size() > 2);
  CHECK(f.substr(f.size() - 2) == "\n\n");
  const std::size_t data = f.find("data: ") + 6;
  CHECK(json::parse(f.substr(data, f.size() - 2 - data), nullptr, false).is_discarded());
}

TEST_CASE("error answers: envelope, error types by status, retry-after and x-should-retry") {
  const auto e = fmt().error_answer(429, "Rate limited", 30.0);
  CHECK(e.body == R"({"type":"error","error":{"type":"rate_limit_error","message":"Rate limited"}})");
  CHECK(e.headers == std::vector<std::pair<std::string, std::string>>{{"retry-after", "30"},
                                                                      {"x-should-retry", "true"}});
  CHECK(fmt().error_answer(529, "Overloaded", 1.5).headers.front().second == "1.5");
  const auto bad = fmt().error_answer(400, "nope", std::nullopt);
  CHECK(bad.headers == std::vector<std::pair<std::string, std::string>>{{"x-should-retry", "false"}});
  CHECK(fmt().error_answer(501, "x", std::nullopt).headers.back().second == "false");
  CHECK(fmt().error_answer(503, "x", std::nullopt).headers.back().second == "true");

  const std::vector<std::pair<int, std::string>> types = {
      {400, "invalid_request_error"}, {401, "authentication_error"}, {402, "billing_error"},
      {403, "permission_error"},      {404, "not_found_error"},      {409, "conflict_error"},
      {413, "request_too_large"},     {422, "invalid_request_error"}, {429, "rate_limit_error"},
      {500, "api_error"},             {501, "api_error"},            {502, "api_error"},
      {503, "overloaded_error"},      {504, "timeout_error"},        {529, "overloaded_error"}};
  for (const auto& [status, type] : types) {
    INFO("status " << status);
    CHECK(a::error_type(status) == type);
    CHECK(json::parse(fmt().error_answer(status, fmt().default_message(status), std::nullopt).body)
              ["error"]["type"] == type);
  }
  CHECK(fmt().default_message(529) == "Overloaded");
  CHECK(fmt().default_message(500) == "Internal server error");
  CHECK(fmt().default_message(401) == "invalid x-api-key");
}

TEST_CASE("paths and targets: POST /v1/messages, with or without ?beta=true") {
  CHECK(fmt().name() == "anthropic");
  CHECK(fmt().paths() == std::vector<std::string>{"POST /v1/messages[?beta=true]"});
  CHECK(fmt().matches("/v1/messages"));
  CHECK_FALSE(fmt().matches("/v1/messages/count_tokens"));
  CHECK_FALSE(fmt().matches("/v1/chat/completions"));
  CHECK(mock::format_for_path("/v1/messages") == &fmt());

  // The engine strips the query before routing; ?beta=true plays the script like the bare path.
  mock::Script script;
  script.provider = "anthropic";
  script.turns = {mock::Turn{{mock::Attempt{std::nullopt, std::nullopt,
                                            {mock::TextEvent{"ok"}, mock::FinishEvent{}},
                                            std::nullopt, std::nullopt}}}};
  mock::ScriptEngine engine(script);
  const auto plan = engine.respond({"POST", "/v1/messages?beta=true", body_with(json::array({kUserGo}))});
  CHECK(plan.status == 200);
  CHECK(plan.streaming);
  CHECK(plan.content_type == "text/event-stream");
  const auto journal = engine.journal();
  REQUIRE(journal.size() == 1);
  CHECK(journal[0].provider == "anthropic");
  CHECK(journal[0].played == "stream");
  CHECK(journal[0].model == "claude-sonnet-4-5");
}

TEST_CASE("call ids are toolu_ ids derived from the journal index and the call index") {
  CHECK(fmt().call_id(7, 0) == "toolu_hiccup_7_0");
  CHECK(fmt().call_id(7, 1) != fmt().call_id(7, 0));
  CHECK(fmt().call_id(8, 0) != fmt().call_id(7, 0));
  CHECK(a::message_id(7) == "msg_hiccup_7");
}

TEST_CASE("a multi-turn request decodes into the neutral view, model and stream come from the body") {
  const json messages = json::parse(R"([
    {"role":"user","content":"Deploy it."},
    {"role":"assistant","content":[
      {"type":"thinking","thinking":"hm","signature":"s"},
      {"type":"text","text":"Running."},
      {"type":"tool_use","id":"toolu_a","name":"shell","input":{"command":"./deploy.sh"}},
      {"type":"tool_use","id":"toolu_b","name":"read_file","input":{}}]},
    {"role":"user","content":[
      {"type":"tool_result","tool_use_id":"toolu_a","content":"{\"output\":\"ok\"}"},
      {"type":"tool_result","tool_use_id":"toolu_b","content":[{"type":"text","text":"x"}],"is_error":true},
      {"type":"text","text":"And then?"}]},
    {"role":"assistant","content":"Done."},
    {"role":"user","content":[{"type":"text","text":"Thanks"},{"type":"image","source":{}}]}
  ])");
  const auto d = fmt().decode_request("/v1/messages?beta=true", body_with(messages, false));
  CHECK_FALSE(d.rejection);
  CHECK(d.model == "claude-sonnet-4-5");
  CHECK_FALSE(d.streaming);
  CHECK(d.contents == json::parse(R"([
    {"role":"user","parts":[{"text":"Deploy it."}]},
    {"role":"model","parts":[{"text":"Running."},
      {"functionCall":{"name":"shell","args":{"command":"./deploy.sh"},"id":"toolu_a"}},
      {"functionCall":{"name":"read_file","args":{},"id":"toolu_b"}}]},
    {"role":"user","parts":[
      {"functionResponse":{"name":"shell","id":"toolu_a","response":{"output":"ok"}}},
      {"functionResponse":{"name":"read_file","id":"toolu_b","response":{"content":[{"type":"text","text":"x"}],"isError":true}}},
      {"text":"And then?"}]},
    {"role":"model","parts":[{"text":"Done."}]},
    {"role":"user","parts":[{"text":"Thanks"}]}
  ])"));
  CHECK(mock::turn_index(d.contents) == 2);
  CHECK(fmt().decode_request("/v1/messages", body_with(json::array({kUserGo}), true)).streaming);
}

TEST_CASE("validation: tool_use ids without tool_result blocks in the next message") {
  // The assistant message's index; every unanswered id, in block order.
  auto d = decode(json::array({kUserGo,
                               {{"role", "assistant"}, {"content", json::array({tool_use("toolu_a"), tool_use("toolu_b")})}},
                               {{"role", "user"}, {"content", json::array({tool_result("toolu_b")})}}}));
  REQUIRE(d.rejection);
  CHECK(d.rejection->status == 400);
  CHECK(d.rejection->pairing);
  CHECK(d.rejection->message ==
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
        "toolu_a. Each `tool_use` block must have a corresponding `tool_result` block in the next "
        "message.");
  CHECK(d.contents.is_array());

  // A plain text reply, two ids joined with ", ", at a later index.
  d = decode(json::array({kUserGo, {{"role", "assistant"}, {"content", "ok"}}, kUserGo,
                          {{"role", "assistant"}, {"content", json::array({tool_use("toolu_a"), tool_use("toolu_b")})}},
                          kUserGo}));
  REQUIRE(d.rejection);
  CHECK(d.rejection->message ==
        "messages.3: `tool_use` ids were found without `tool_result` blocks immediately after: "
        "toolu_a, toolu_b. Each `tool_use` block must have a corresponding `tool_result` block in "
        "the next message.");

  // The request ends on the tool_use.
  d = decode(json::array({kUserGo, {{"role", "assistant"}, {"content", json::array({tool_use("toolu_z")})}}}));
  REQUIRE(d.rejection);
  CHECK(d.rejection->message == a::missing_tool_result_message(1, {"toolu_z"}));
}

TEST_CASE("validation: tool_result ids no tool_use of the previous message has") {
  auto d = decode(json::array({kUserGo,
                               {{"role", "assistant"}, {"content", json::array({{{"type", "text"}, {"text", "x"}}, tool_use("toolu_a")})}},
                               {{"role", "user"}, {"content", json::array({tool_result("toolu_a"), tool_result("toolu_stale")})}}}));
  REQUIRE(d.rejection);
  CHECK(d.rejection->pairing);
  CHECK(d.rejection->message ==
        "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_stale. "
        "Each `tool_result` block must have a corresponding `tool_use` block in the previous "
        "message.");
  CHECK(d.contents[2]["parts"][1]["functionResponse"]["name"] == "");

  // A tool_result right after a user message (no previous tool_use at all).
  d = decode(json::array({{{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", "hi"}}, tool_result("toolu_q")})}}}));
  REQUIRE(d.rejection);
  CHECK(d.rejection->message == a::unexpected_tool_use_id_message(0, 1, {"toolu_q"}));
}

TEST_CASE("validation: duplicate tool_use ids across the request") {
  auto d = decode(json::array({kUserGo,
                               {{"role", "assistant"}, {"content", json::array({tool_use("toolu_a"), tool_use("toolu_a")})}},
                               {{"role", "user"}, {"content", json::array({tool_result("toolu_a")})}}}));
  REQUIRE(d.rejection);
  CHECK(d.rejection->pairing);
  CHECK(d.rejection->message == "messages.1.content.1: `tool_use` ids must be unique");

  d = decode(json::array({kUserGo,
                          {{"role", "assistant"}, {"content", json::array({tool_use("toolu_a")})}},
                          {{"role", "user"}, {"content", json::array({tool_result("toolu_a")})}},
                          {{"role", "assistant"}, {"content", json::array({{{"type", "text"}, {"text", "again"}}, tool_use("toolu_a")})}},
                          {{"role", "user"}, {"content", json::array({tool_result("toolu_a")})}}}));
  REQUIRE(d.rejection);
  CHECK(d.rejection->message == "messages.3.content.1: `tool_use` ids must be unique");
}

TEST_CASE("a well-paired request passes validation") {
  const auto d = decode(json::array({kUserGo,
                                     {{"role", "assistant"}, {"content", json::array({tool_use("toolu_a"), tool_use("toolu_b")})}},
                                     {{"role", "user"}, {"content", json::array({tool_result("toolu_b"), tool_result("toolu_a")})}},
                                     {{"role", "assistant"}, {"content", "Done."}}}));
  CHECK_FALSE(d.rejection);
  CHECK(mock::turn_index(d.contents) == 2);
}

// claude-code 2.1.332 sends a `role: "system"` message second: a list of text blocks on the first
// request, a string later. The API accepts mid-conversation system messages right after a user
// message; the mock must not answer 400 (claude-code then folds it into the user message and
// resends, so the 400 was a hiccup fidelity bug).
TEST_CASE("a mid-conversation system message after a user message is valid and not a turn") {
  const json sys_blocks = {{"role", "system"},
                           {"content", json::array({{{"type", "text"}, {"text", "# Environment"}}})}};
  const json sys_text = {{"role", "system"}, {"content", "# Environment"}};
  // First request: [user, system(blocks)].
  auto d = decode(json::array({kUserGo, sys_blocks}));
  CHECK_FALSE(d.rejection);
  CHECK(d.contents == json::array({{{"role", "user"}, {"parts", json::array({{{"text", "go"}}})}}}));
  CHECK(mock::turn_index(d.contents) == 0);
  // Next request: [user, system(string), assistant(tool_use), user(tool_result)].
  d = decode(json::array({kUserGo, sys_text,
                          {{"role", "assistant"}, {"content", json::array({tool_use("toolu_a")})}},
                          {{"role", "user"}, {"content", json::array({tool_result("toolu_a")})}}}));
  CHECK_FALSE(d.rejection);
  CHECK(d.contents.size() == 3);
  CHECK(mock::turn_index(d.contents) == 1);
  // Placement: not after an assistant message, not followed by a user message, text blocks only.
  d = decode(json::array({kUserGo, {{"role", "assistant"}, {"content", "ok"}}, sys_text}));
  REQUIRE(d.rejection);
  CHECK(d.rejection->status == 400);
  CHECK(d.rejection->message == "messages.2: a system message must immediately follow a user message");
  d = decode(json::array({kUserGo, sys_text, kUserGo}));
  REQUIRE(d.rejection);
  CHECK(d.rejection->message ==
        "messages.1: a system message must be the last message or be followed by an assistant message");
  d = decode(json::array({kUserGo, {{"role", "system"}, {"content", json::array({tool_result("toolu_a")})}}}));
  REQUIRE(d.rejection);
  CHECK(d.rejection->message == "messages.1.content.0: a system message may only contain text blocks");
  // messages[0] can never be a system message; other roles stay invalid.
  d = decode(json::array({sys_text, kUserGo}));
  REQUIRE(d.rejection);
  CHECK(d.rejection->message == "messages.0.role: Input should be 'user' or 'assistant'");
  d = decode(json::array({kUserGo, {{"role", "developer"}, {"content", "x"}}}));
  REQUIRE(d.rejection);
  CHECK(d.rejection->message == "messages.1.role: Input should be 'user' or 'assistant'");
}

TEST_CASE("shape rejections are 400s that are not pairing rejections and never throw") {
  auto shape = [](std::string_view body) {
    const auto d = fmt().decode_request("/v1/messages", body);
    REQUIRE(d.rejection);
    CHECK(d.rejection->status == 400);
    CHECK_FALSE(d.rejection->pairing);
    return d.rejection->message;
  };
  CHECK(shape("{not json") == "invalid request: the body is not a JSON object");
  CHECK(shape("[1]") == "invalid request: the body is not a JSON object");
  CHECK(shape(R"({"model":"m","max_tokens":1})") == "messages: Field required");
  CHECK(shape(R"({"model":"m","messages":[]})") == "max_tokens: Field required");
  CHECK(shape(R"({"max_tokens":1,"messages":[]})") == "model: Field required");
  CHECK(shape(R"({"model":"m","max_tokens":1,"messages":{}})") == "messages: Input should be a valid list");
  CHECK(shape(R"({"model":"m","max_tokens":1,"messages":[]})") == "messages: at least one message is required");
  CHECK(shape(R"({"model":"m","max_tokens":1,"messages":[{"role":"system","content":"x"}]})") ==
        "messages.0.role: Input should be 'user' or 'assistant'");
  CHECK(shape(R"({"model":"m","max_tokens":1,"messages":[{"role":"user"}]})") == "messages.0.content: Field required");
  CHECK(shape(R"({"model":"m","max_tokens":1,"messages":[{"role":"assistant","content":"x"},{"role":"user","content":"y"}]})") ==
        "messages: first message must use the \"user\" role");
  CHECK(shape(R"({"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"},"junk"]})") ==
        "messages.1: Input should be a valid dictionary");
}

TEST_CASE("wrongly typed fields and blocks are shape rejections naming the field") {
  auto shape = [](const json& messages) {
    const auto d = decode(messages);
    REQUIRE(d.rejection);
    CHECK(d.rejection->status == 400);
    CHECK_FALSE(d.rejection->pairing);
    return d.rejection->message;
  };
  const json use_a = {{"role", "assistant"}, {"content", json::array({tool_use("toolu_a")})}};
  const json result_a = {{"role", "user"}, {"content", json::array({tool_result("toolu_a")})}};
  // A block that is not an object, a block without a type.
  CHECK(shape(json::array({{{"role", "user"}, {"content", json::array({5})}}})) ==
        "messages.0.content.0: Input should be a valid dictionary or object to extract fields from");
  CHECK(shape(json::array({{{"role", "user"}, {"content", json::array({{{"text", "hi"}}})}}})) ==
        "messages.0.content.0: Unable to extract tag using discriminator 'type'");
  CHECK(shape(json::array({{{"role", "user"}, {"content", json::array({{{"type", 1}, {"text", "hi"}}})}}})) ==
        "messages.0.content.0: Unable to extract tag using discriminator 'type'");
  // Empty content, except for a final assistant message (a prefill).
  CHECK(shape(json::array({{{"role", "user"}, {"content", json::array()}}})) ==
        "messages.0: all messages must have non-empty content except for the optional final assistant "
        "message");
  CHECK(shape(json::array({kUserGo, {{"role", "assistant"}, {"content", ""}}, kUserGo})) ==
        "messages.1: all messages must have non-empty content except for the optional final assistant "
        "message");
  CHECK_FALSE(decode(json::array({kUserGo, {{"role", "assistant"}, {"content", json::array()}}})).rejection);
  // tool_use fields: input an object, id present.
  json bad_input = tool_use("toolu_a");
  bad_input["input"] = "notobj";
  CHECK(shape(json::array({kUserGo, {{"role", "assistant"}, {"content", json::array({bad_input})}}, result_a})) ==
        "messages.1.content.0.tool_use.input: Input should be a valid dictionary");
  json no_id = tool_use("toolu_a");
  no_id.erase("id");
  CHECK(shape(json::array({kUserGo, {{"role", "assistant"}, {"content", json::array({no_id})}}, kUserGo})) ==
        "messages.1.content.0.tool_use.id: Field required");
  json no_use_id = tool_result("toolu_a");
  no_use_id.erase("tool_use_id");
  CHECK(shape(json::array({kUserGo, use_a, {{"role", "user"}, {"content", json::array({no_use_id})}}})) ==
        "messages.2.content.0.tool_result.tool_use_id: Field required");
  // max_tokens must be an integer.
  const auto d = fmt().decode_request(
      "/v1/messages", json{{"model", "m"}, {"max_tokens", "5"}, {"messages", json::array({kUserGo})}}.dump());
  REQUIRE(d.rejection);
  CHECK_FALSE(d.rejection->pairing);
  CHECK(d.rejection->message == "max_tokens: Input should be a valid integer");
  CHECK_FALSE(fmt().decode_request(
                      "/v1/messages", json{{"model", "m"}, {"max_tokens", 5.0}, {"messages", json::array({kUserGo})}}.dump())
                  .rejection);
}

TEST_CASE("validation: two tool_result blocks for one tool_use id") {
  const auto d = decode(json::array({kUserGo,
                                     {{"role", "assistant"}, {"content", json::array({tool_use("toolu_a"), tool_use("toolu_b")})}},
                                     {{"role", "user"}, {"content", json::array({tool_result("toolu_a"), tool_result("toolu_b"),
                                                                                tool_result("toolu_a")})}}}));
  REQUIRE(d.rejection);
  CHECK(d.rejection->status == 400);
  CHECK(d.rejection->pairing);  // a pairing problem, like duplicate tool_use ids
  CHECK(d.rejection->message ==
        "messages.2.content.2: each tool_use must have a single result. Found multiple `tool_result` "
        "blocks with id: toolu_a");
}

TEST_CASE("the non-streaming answer is one Message: blocks, stop_reason and usage") {
  const std::vector<mock::Event> events = {mock::TextEvent{"Running."},
                                           call("shell", {{"command", "ls"}}, "toolu_hiccup_3_0"),
                                           mock::FinishEvent{}, mock::TextEvent{"after"}};
  CHECK(json::parse(fmt().unary_body(events, kCtx)) == json::parse(R"({
    "id":"msg_hiccup_3","type":"message","role":"assistant","model":"claude-sonnet-4-5",
    "content":[{"type":"text","text":"Running."},
               {"type":"tool_use","id":"toolu_hiccup_3_0","name":"shell","input":{"command":"ls"}}],
    "stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":8,"cache_creation_input_tokens":0,
    "cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},
    "output_tokens":2,"service_tier":"standard"}})"));
  CHECK(json::parse(fmt().unary_body({mock::TextEvent{"x"}}, kCtx))["stop_reason"].is_null());
  CHECK(json::parse(fmt().unary_body({mock::FinishEvent{mock::FinishReason::kContentFilter}}, kCtx))
            ["stop_reason"] == "refusal");
  CHECK(json::parse(fmt().unary_body({mock::TextEvent{"x"}, mock::FinishEvent{mock::FinishReason::kMaxTokens}}, kCtx))
            ["stop_reason"] == "max_tokens");
  CHECK(fmt().unary_body({mock::FinishEvent{mock::FinishReason::kMalformedCall}}, kCtx) ==
        R"({"type":"error","error":{"type":"api_error","message":"Internal server error"}})");
}

TEST_CASE("the non-streaming answer holds one text block per run of text") {
  const std::vector<mock::Event> events = {mock::TextEvent{"Run"}, mock::TextEvent{"ning."},
                                           call("shell", {{"command", "ls"}}, "toolu_hiccup_3_0"),
                                           mock::TextEvent{"A"}, mock::TextEvent{"nd"}, mock::FinishEvent{}};
  const json m = json::parse(fmt().unary_body(events, kCtx));
  CHECK(m["content"] == json::parse(R"([{"type":"text","text":"Running."},
      {"type":"tool_use","id":"toolu_hiccup_3_0","name":"shell","input":{"command":"ls"}},
      {"type":"text","text":"And"}])"));
  CHECK(m["usage"]["output_tokens"] == 3);
}

// ---- Streams played through the script engine, with every fault at every position -------------

namespace {

mock::Fault fault_of(int kind, int after_event, std::optional<int> frag) {
  return mock::testing::fault_of(kind, after_event, frag, 529);
}

std::string play(const std::vector<mock::Event>& events, std::optional<mock::Fault> fault) {
  const auto plan = mock::testing::play_attempt("anthropic", "/v1/messages", body_with(json::array({kUserGo})),
                                                events, std::move(fault));
  REQUIRE(plan.streaming);
  return played_bytes(plan);
}

/// Block indexes start at 0 and rise by one; deltas and stops name the open block; a block opens
/// only when none is open; message_delta and error come with no block open... except that a fault
/// may end the stream (or send its error) inside a block.
void check_blocks(const std::vector<json>& frames) {
  int next = 0;
  int open = -1;
  for (const json& f : frames) {
    const std::string type = f.value("type", "");
    if (type == "content_block_start") {
      CHECK(open == -1);
      CHECK(f["index"] == next);
      open = next++;
    } else if (type == "content_block_delta") {
      CHECK(f["index"] == open);
    } else if (type == "content_block_stop") {
      CHECK(f["index"] == open);
      open = -1;
    } else if (type == "message_delta") {
      CHECK(open == -1);
      CHECK(f["usage"]["output_tokens"] == std::max(next, 1));
    }
  }
}

const std::vector<mock::Event> kFaultEvents = {
    mock::TextEvent{"Looking."}, call("shell", {{"command", "ls -la"}}, "", 3),
    call("read", {{"path", "/etc/hosts"}}, "", 2), mock::TextEvent{"Done."},
    mock::FinishEvent{mock::FinishReason::kStop}};

}  // namespace

TEST_CASE("block indexes stay consistent for every fault at every position") {
  const int n = static_cast<int>(kFaultEvents.size());
  for (int kind = 0; kind < 7; ++kind) {
    for (int at = 0; at <= n; ++at) {
      INFO("fault kind " << kind << " after_event " << at);
      const auto frames = parsed_frames(play(kFaultEvents, fault_of(kind, at, std::nullopt)));
      check_blocks(frames);
      // A fault that ends the stream before event `at` leaves the blocks of the events before it.
      int blocks = 0;
      for (const json& f : frames) blocks += f.value("type", "") == "content_block_start";
      CHECK(blocks == (kind <= 4 ? std::min(at, 4) : 4));
      if (kind == 4) CHECK(frames.back()["type"] == "error");
    }
    for (int at : {1, 2}) {
      const int fragments = std::get<mock::CallEvent>(kFaultEvents[static_cast<std::size_t>(at)]).fragments;
      for (int frag = 0; frag <= fragments; ++frag) {
        INFO("fault kind " << kind << " after_event " << at << " after_fragment " << frag);
        check_blocks(parsed_frames(play(kFaultEvents, fault_of(kind, at, frag))));
      }
    }
  }
  check_blocks(parsed_frames(play(kFaultEvents, std::nullopt)));
}

TEST_CASE("a max_tokens finish inside a call: partial input, the block closed, stop_reason max_tokens, the call not delivered") {
  // POLICY.md "Truncation": fine-grained tool streaming sends the partial input, closes the block,
  // then message_delta max_tokens (anthropic-sdk-python #794).
  mock::FinishEvent finish{mock::FinishReason::kMaxTokens};
  finish.after_fragment = 1;
  const std::vector<mock::Event> events = {mock::TextEvent{"Looking."}, call("shell", {{"command", "ls -la /var/log"}}, "", 3), finish};
  const auto frames = parsed_frames(play(events, std::nullopt));
  check_blocks(frames);
  std::string input;
  std::vector<std::string> types;
  for (const json& f : frames) {
    types.push_back(f.value("type", ""));
    if (f.value("type", "") == "content_block_delta" && f["delta"]["type"] == "input_json_delta") input += f["delta"]["partial_json"];
  }
  CHECK(input == mock::split_fragments(json{{"command", "ls -la /var/log"}}.dump(), 3)[0]);
  REQUIRE(types.size() >= 3);
  CHECK(types[types.size() - 3] == "content_block_stop");
  CHECK(frames[frames.size() - 2]["delta"]["stop_reason"] == "max_tokens");
  CHECK(types.back() == "message_stop");

  mock::Script script;
  script.provider = "anthropic";
  mock::Attempt a;
  a.events = events;
  script.turns.push_back({{a}});
  mock::ScriptEngine engine(script);
  const mock::Plan plan = engine.respond({"POST", "/v1/messages", body_with(json::array({kUserGo}))});
  engine.settle(0, mock::Delivery{static_cast<int>(plan.actions.size()), false, -1});
  const mock::JournalEntry e = engine.journal().at(0);
  CHECK(e.completed);
  CHECK(e.delivered_text == "Looking.");
  CHECK(e.delivered_calls.empty());
}

}  // namespace anthropic_format_test
