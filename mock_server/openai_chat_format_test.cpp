// Tests of the OpenAI Chat Completions wire format (mock side): exact chunk bytes, call fragments
// and indexes, finishes, error envelopes and headers, the API's 400 messages, the neutral view.
#include <catch2/catch.hpp>

#include <iterator>
#include <set>

#include "mock_server/openai_chat_format.h"
#include "mock_server/format_test_util.h"
#include "mock_server/script_engine.h"

namespace openai_chat_format_test {

namespace chat = mock::openai_chat;
using nlohmann::json;

using mock::testing::join;

namespace {

const mock::WireFormat& fmt() { return chat::format(); }
const mock::ResponseContext kCtx{"gpt-4.1-mini", 3};

// The fixed head of every chunk of the response to journal entry 3.
const std::string kHead =
    R"(data: {"id":"chatcmpl-hiccup-3","object":"chat.completion.chunk","created":1700000000,)"
    R"("model":"gpt-4.1-mini","service_tier":"default","system_fingerprint":"fp_hiccup","choices":[)";

/// The data payloads of an SSE byte string (frames end with a blank line).
std::vector<std::string> payloads(const std::string& bytes) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < bytes.size()) {
    const std::size_t end = bytes.find("\n\n", at);
    REQUIRE(end != std::string::npos);
    const std::string frame = bytes.substr(at, end - at);
    REQUIRE(frame.rfind("data: ", 0) == 0);
    out.push_back(frame.substr(6));
    at = end + 2;
  }
  return out;
}

mock::DecodedRequest decode(const json& body) {
  return fmt().decode_request("/v1/chat/completions", body.dump());
}

json user(const std::string& text) { return {{"role", "user"}, {"content", text}}; }
json assistant_calls(const std::vector<std::string>& ids) {
  json calls = json::array();
  for (const auto& id : ids) {
    calls.push_back({{"id", id}, {"type", "function"},
                     {"function", {{"name", "shell"}, {"arguments", R"({"command":"ls"})"}}}});
  }
  return {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", calls}};
}
json tool(const std::string& id) {
  return {{"role", "tool"}, {"tool_call_id", id}, {"content", R"({"output":"ok"})"}};
}
json request(json messages) {
  return {{"model", "gpt-4.1-mini"}, {"messages", std::move(messages)}, {"stream", true}};
}
std::string rejection_of(const json& messages) {
  auto d = decode(request(messages));
  return d.rejection ? d.rejection->message : "(accepted)";
}

}  // namespace

TEST_CASE("a text, call and stop stream is byte-exact") {
  auto enc = fmt().stream_encoder(kCtx);
  const mock::CallEvent call{"shell", json{{"command", "ls"}}, fmt().call_id(3, 0)};
  // One statement per call: the encoder is stateful, and the operands of + are unsequenced.
  std::string bytes = enc->open();
  bytes += join(enc->event_units(mock::TextEvent{"Hi"}, 0));
  bytes += join(enc->event_units(call, 0));
  bytes += join(enc->event_units(mock::FinishEvent{mock::FinishReason::kStop}, 1));
  const std::string expected =
      kHead + R"({"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]})" "\n\n" +
      kHead + R"({"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}]})" "\n\n" +
      kHead + R"({"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_3_0","type":"function","function":{"name":"shell","arguments":""}}]},"logprobs":null,"finish_reason":null}]})" "\n\n" +
      kHead + R"({"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"command\":\"ls\"}"}}]},"logprobs":null,"finish_reason":null}]})" "\n\n" +
      kHead + R"({"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]})" "\n\n"
      "data: [DONE]\n\n";
  CHECK(bytes == expected);
}

TEST_CASE("a call is a start chunk, one chunk per argument fragment and no done frame, all at its index") {
  auto enc = fmt().stream_encoder(kCtx);
  const json args = {{"path", "notes/today.txt"}, {"mode", "append"}};
  const auto units = enc->event_units(mock::CallEvent{"write", args, "call_x", 3}, 2);
  REQUIRE(units.size() == 5);  // start, 3 fragments, done
  CHECK(units.back().empty());
  const json start = json::parse(payloads(units[0]).at(0));
  CHECK(start["choices"][0]["delta"]["tool_calls"] ==
        json::parse(R"([{"index":2,"id":"call_x","type":"function","function":{"name":"write","arguments":""}}])"));
  std::string arguments;
  for (std::size_t u = 1; u <= 3; ++u) {
    const json c = json::parse(payloads(units[u]).at(0));
    const json& entry = c["choices"][0]["delta"]["tool_calls"][0];
    CHECK(entry["index"] == 2);
    CHECK_FALSE(entry.contains("id"));
    CHECK_FALSE(entry["function"].contains("name"));
    CHECK_FALSE(entry["function"]["arguments"].get<std::string>().empty());
    arguments += entry["function"]["arguments"].get<std::string>();
  }
  CHECK(arguments == args.dump());
  CHECK(json::parse(arguments) == args);
}

TEST_CASE("fragments default to one and never exceed the argument text's characters") {
  auto enc = fmt().stream_encoder(kCtx);
  CHECK(enc->event_units(mock::CallEvent{"f", json::object(), "call_1", 0}, 0).size() == 3);
  // "{}" has two characters: asking for 5 fragments gives 2.
  CHECK(enc->event_units(mock::CallEvent{"f", json::object(), "call_2", 5}, 1).size() == 4);
}

TEST_CASE("every finish: stop, tool_calls after a call, length, content_filter, each with [DONE]") {
  auto finish_of = [](mock::FinishReason r, bool after_call) {
    auto enc = fmt().stream_encoder(kCtx);
    if (after_call) (void)enc->event_units(mock::CallEvent{"f", json::object(), "call_1"}, 0);
    const auto units = enc->event_units(mock::FinishEvent{r}, 0);
    REQUIRE(units.size() == 1);
    const auto p = payloads(units[0]);
    REQUIRE(p.size() == 2);
    CHECK(p[1] == "[DONE]");
    const json c = json::parse(p[0]);
    CHECK(c["choices"][0]["delta"] == json::object());
    return c["choices"][0]["finish_reason"].get<std::string>();
  };
  CHECK(finish_of(mock::FinishReason::kStop, false) == "stop");
  CHECK(finish_of(mock::FinishReason::kStop, true) == "tool_calls");
  CHECK(finish_of(mock::FinishReason::kMaxTokens, false) == "length");
  CHECK(finish_of(mock::FinishReason::kMaxTokens, true) == "length");
  CHECK(finish_of(mock::FinishReason::kContentFilter, false) == "content_filter");
}

TEST_CASE("a malformed_call finish is the API's in-stream model_error, without [DONE]") {
  auto enc = fmt().stream_encoder(kCtx);
  const auto units = enc->event_units(mock::FinishEvent{mock::FinishReason::kMalformedCall}, 0);
  REQUIRE(units.size() == 1);
  CHECK(units[0] ==
        R"(data: {"error":{"message":"The model produced invalid content. Consider modifying your prompt if you are seeing this error persistently.","type":"model_error","param":null,"code":null}})"
        "\n\n");
}

TEST_CASE("include_usage puts usage null on every chunk and a usage chunk before [DONE]") {
  auto enc = chat::make_encoder(kCtx, true);
  CHECK(json::parse(payloads(enc->open()).at(0))["usage"].is_null());
  const auto p = payloads(enc->event_units(mock::FinishEvent{}, 0).at(0));
  REQUIRE(p.size() == 3);
  CHECK(json::parse(p[0])["usage"].is_null());
  const json usage = json::parse(p[1]);
  CHECK(usage["choices"] == json::array());
  // The live usage object, details included (newrelic-python-agent's recorded answers, 2026-01).
  CHECK(nlohmann::ordered_json::parse(p[1])["usage"].dump() ==
        R"({"prompt_tokens":8,"completion_tokens":1,"total_tokens":9,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},)"
        R"("completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}})");
  // Reasoning the model did server-side counts as reasoning tokens, inside the completion tokens.
  auto reasoned = chat::make_encoder(kCtx, true);
  reasoned->open();
  reasoned->event_units(mock::ReasoningEvent{"plan", "c2ln"}, 0);
  const json after = json::parse(payloads(reasoned->event_units(mock::FinishEvent{}, 0).at(0)).at(1));
  CHECK(after["usage"]["completion_tokens_details"]["reasoning_tokens"] == 1);
  CHECK(after["usage"]["completion_tokens"] == 2);
  CHECK(after["usage"]["total_tokens"] == 10);
  CHECK(p[2] == "[DONE]");
  // Without it (what the WireFormat's encoder does) no chunk carries `usage`.
  auto plain = fmt().stream_encoder(kCtx);
  CHECK_FALSE(json::parse(payloads(plain->open()).at(0)).contains("usage"));
}

TEST_CASE("every chunk ends with obfuscation padding unless the request turns it off") {
  // As live (pydantic-ai's gpt-4o-mini cassette of 2026-07-02): the role, delta, finish and usage
  // chunks each carry `obfuscation` last, 3 to 15 characters of [A-Za-z0-9]; [DONE] has none.
  mock::ResponseContext ctx = kCtx;
  ctx.include_obfuscation = true;
  auto enc = chat::make_encoder(ctx, true);
  std::string s = enc->open();
  s += join(enc->event_units(mock::TextEvent{"Hi"}, 0));
  s += join(enc->event_units(mock::testing::call("shell", {{"command", "ls"}}, "call_1", 2), 0));
  s += join(enc->event_units(mock::FinishEvent{}, 0));
  const auto p = payloads(s);
  REQUIRE(p.size() == 8);  // role, text, call start, 2 fragments, finish, usage, [DONE]
  std::set<std::string> pads;
  for (std::size_t i = 0; i + 1 < p.size(); ++i) {
    const nlohmann::ordered_json chunk = nlohmann::ordered_json::parse(p[i]);
    REQUIRE(chunk.contains("obfuscation"));
    CHECK(std::prev(chunk.end()).key() == "obfuscation");  // the last member, as live
    const std::string pad = chunk["obfuscation"].get<std::string>();
    CHECK(pad.size() >= 3);
    CHECK(pad.size() <= 15);
    CHECK(pad.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") == std::string::npos);
    pads.insert(pad);
  }
  CHECK(pads.size() == 7);  // each chunk its own
  CHECK(p.back() == "[DONE]");
  // Deterministic: the same context pads the same way.
  CHECK("data: " + p[0] + "\n\n" == chat::make_encoder(ctx, true)->open());
  // The request decides: on by default, off with stream_options.include_obfuscation false.
  CHECK(decode(request(json::array({user("hi")}))).include_obfuscation);
  json off = request(json::array({user("hi")}));
  off["stream_options"] = {{"include_usage", true}, {"include_obfuscation", false}};
  CHECK_FALSE(decode(off).include_obfuscation);
  CHECK(fmt().stream_encoder(kCtx)->open().find("obfuscation") == std::string::npos);
}

TEST_CASE("stream_options of the wrong type is a 400 naming the parameter") {
  auto with_options = [](const json& options) {
    json body = request(json::array({user("hi")}));
    body["stream_options"] = options;
    const auto d = decode(body);
    return d.rejection ? d.rejection->message : std::string();
  };
  CHECK(with_options("x") == "Invalid type for 'stream_options': expected an object, but got a string instead.");
  CHECK(with_options({{"include_obfuscation", "false"}}) ==
        "Invalid type for 'stream_options.include_obfuscation': expected a boolean, but got a string instead.");
  CHECK(with_options({{"include_usage", 1}}) ==
        "Invalid type for 'stream_options.include_usage': expected a boolean, but got an integer instead.");
  CHECK(with_options(nullptr).empty());
  CHECK(with_options({{"include_usage", nullptr}, {"include_obfuscation", false}}).empty());
}

TEST_CASE("the in-stream error is one data frame holding the error envelope, typed by status") {
  auto enc = fmt().stream_encoder(kCtx);
  CHECK(enc->error_event(500) ==
        R"(data: {"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}})"
        "\n\n");
  const json overloaded = json::parse(payloads(enc->error_event(529)).at(0));
  CHECK(overloaded["error"]["type"] == "server_error");
  CHECK(overloaded["error"]["message"].get<std::string>().rfind("That model is currently overloaded", 0) == 0);
  const json limited = json::parse(payloads(enc->error_event(429)).at(0));
  CHECK(limited["error"]["code"] == "rate_limit_exceeded");
}

TEST_CASE("the malformed frame has SSE framing and JSON that does not parse") {
  const std::string f = fmt().stream_encoder(kCtx)->malformed_frame();
  const auto p = payloads(f);
  REQUIRE(p.size() == 1);
  CHECK(json::parse(p[0], nullptr, false).is_discarded());
}

TEST_CASE("error envelopes carry message, type, param and code by status") {
  CHECK(fmt().error_answer(503, fmt().default_message(503), std::nullopt).body ==
        R"({"error":{"message":"That model is currently overloaded with other requests. You can retry your request, or contact us through our help center at help.openai.com if the error persists.","type":"server_error","param":null,"code":null}})");
  auto field = [](int status, const char* key) {
    return json::parse(fmt().error_answer(status, "m", std::nullopt).body)["error"][key];
  };
  CHECK(field(400, "type") == "invalid_request_error");
  CHECK(field(401, "code") == "invalid_api_key");
  CHECK(field(404, "code") == "model_not_found");
  CHECK(field(429, "type") == "requests");
  CHECK(field(429, "code") == "rate_limit_exceeded");
  CHECK(field(500, "type") == "server_error");
  CHECK(field(502, "type") == "cf_bad_gateway");
  CHECK(field(502, "code") == 502);
  CHECK(field(504, "type") == "cf_gateway_timeout");
  CHECK(field(529, "type") == "server_error");
  CHECK(field(400, "param").is_null());
  // A parameter problem names the parameter, as live (pydantic/pydantic-ai#2653).
  auto error_of = [](const std::string& message) {
    return json::parse(fmt().error_answer(400, message, std::nullopt).body)["error"];
  };
  const json typed = error_of("Invalid type for 'messages[1].content': expected one of a string or array of objects, but got an object instead.");
  CHECK(typed["param"] == "messages[1].content");
  CHECK(typed["code"] == "invalid_type");
  CHECK(typed["type"] == "invalid_request_error");
  CHECK(error_of("Invalid type for 'stream_options': expected an object, but got a string instead.")["param"] == "stream_options");
  const json missing = error_of("Missing required parameter: 'messages[0].role'.");
  CHECK(missing["param"] == "messages[0].role");
  CHECK(missing["code"] == "missing_required_parameter");
  CHECK(error_of("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.")["code"] ==
        "empty_array");
  CHECK(error_of("you must provide a model parameter")["param"].is_null());
  CHECK(error_of("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.")["param"].is_null());
  CHECK(fmt().default_message(502) == "Bad gateway.");
  CHECK(fmt().error_answer(500, "m", std::nullopt).headers.empty());
}

TEST_CASE("retry_after_s becomes retry-after (whole seconds, rounded up) and retry-after-ms headers") {
  using H = std::vector<std::pair<std::string, std::string>>;
  CHECK(fmt().error_answer(429, "slow down", 30.0).headers == H{{"retry-after", "30"}, {"retry-after-ms", "30000"}});
  CHECK(fmt().error_answer(503, "busy", 1.5).headers == H{{"retry-after", "2"}, {"retry-after-ms", "1500"}});
  // retry-after-ms rounds up too, so the two agree and a positive wait is never 0 ms.
  CHECK(fmt().error_answer(429, "slow down", 0.0001).headers == H{{"retry-after", "1"}, {"retry-after-ms", "1"}});
  CHECK(fmt().error_answer(429, "slow down", 2.0004).headers == H{{"retry-after", "3"}, {"retry-after-ms", "2001"}});
  for (double s : {0.0001, 0.1, 0.29, 0.57, 1.0004, 4.35, 999999.9999}) {
    INFO(s);
    const H h = fmt().error_answer(429, "slow down", s).headers;
    REQUIRE(h.size() == 2);
    CHECK(std::stoll(h[1].second) >= s * 1000 - 1e-6);
    CHECK((std::stoll(h[1].second) + 999) / 1000 == std::stoll(h[0].second));
  }
}

TEST_CASE("call ids and completion ids are deterministic") {
  CHECK(fmt().call_id(7, 1) == "call_7_1");
  CHECK(fmt().call_id(7, 1) != fmt().call_id(8, 1));
  CHECK(chat::completion_id(7) == "chatcmpl-hiccup-7");
  CHECK(fmt().paths() == std::vector<std::string>{"POST /v1/chat/completions"});
  CHECK(fmt().matches("/v1/chat/completions"));
  CHECK_FALSE(fmt().matches("/v1/responses"));
  CHECK(mock::format_for_path("/v1/chat/completions") == &fmt());
}

TEST_CASE("a multi-turn request decodes into the neutral view") {
  const json body = {
      {"model", "gpt-4.1-mini"},
      {"stream", true},
      {"stream_options", {{"include_usage", true}}},
      {"messages",
       json::array({
           {{"role", "system"}, {"content", "Be brief."}},
           {{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", "Compare "}},
                                                       {{"type", "text"}, {"text", "a and b."}}})}},
           {{"role", "assistant"},
            {"content", "Reading."},
            {"tool_calls",
             json::array({{{"id", "call_a"}, {"type", "function"},
                           {"function", {{"name", "read"}, {"arguments", R"({"path":"a"})"}}}},
                          {{"id", "call_b"}, {"type", "function"},
                           {"function", {{"name", "stat"}, {"arguments", "not json"}}}}})}},
           {{"role", "tool"}, {"tool_call_id", "call_b"}, {"content", R"({"size":3})"}},
           {{"role", "tool"}, {"tool_call_id", "call_a"}, {"content", "plain text"}},
           {{"role", "assistant"}, {"content", "Same."}},
           {{"role", "developer"}, {"content", "ignored"}},
           {{"role", "user"}, {"content", "Thanks"}},
       })}};
  const auto d = decode(body);
  CHECK_FALSE(d.rejection);
  CHECK(d.model == "gpt-4.1-mini");
  CHECK(d.streaming);
  const json expected = json::parse(R"([
    {"role":"user","parts":[{"text":"Compare a and b."}]},
    {"role":"model","parts":[{"text":"Reading."},
      {"functionCall":{"name":"read","args":{"path":"a"},"id":"call_a"}},
      {"functionCall":{"name":"stat","args":"not json","id":"call_b"}}]},
    {"role":"user","parts":[
      {"functionResponse":{"name":"stat","id":"call_b","response":{"size":3}}},
      {"functionResponse":{"name":"read","id":"call_a","response":"plain text"}}]},
    {"role":"model","parts":[{"text":"Same."}]},
    {"role":"user","parts":[{"text":"Thanks"}]}
  ])");
  CHECK(d.contents == expected);
  CHECK(mock::turn_index(d.contents) == 2);
}

TEST_CASE("stream absent or false is a non-streaming request") {
  CHECK_FALSE(decode({{"model", "m"}, {"messages", json::array({user("hi")})}}).streaming);
  CHECK_FALSE(decode({{"model", "m"}, {"messages", json::array({user("hi")})}, {"stream", false}}).streaming);
}

TEST_CASE("pairing: an assistant's tool_calls must all be answered by the tool messages after it") {
  const std::string prefix =
      "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
      "'tool_call_id'. The following tool_call_ids did not have response messages: ";
  CHECK(rejection_of(json::array({user("go"), assistant_calls({"call_a", "call_b"}), tool("call_a"),
                                  user("next")})) == prefix + "call_b");
  CHECK(rejection_of(json::array({user("go"), assistant_calls({"call_a", "call_b"})})) ==
        prefix + "call_a, call_b");
  // A user message between the call and its answer leaves the call unanswered.
  CHECK(rejection_of(json::array({user("go"), assistant_calls({"call_a"}), user("wait"), tool("call_a")})) ==
        prefix + "call_a");
  auto d = decode(request(json::array({user("go"), assistant_calls({"call_a"})})));
  REQUIRE(d.rejection);
  CHECK(d.rejection->status == 400);
  CHECK(d.rejection->pairing);
  CHECK(d.contents.size() == 2);  // what could be decoded is kept
}

TEST_CASE("pairing: a tool message must answer a call of the assistant message before its run") {
  const std::string message =
      "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
      "'tool_calls'.";
  CHECK(rejection_of(json::array({user("go"), tool("call_a")})) == message);
  CHECK(rejection_of(json::array({user("go"), assistant_calls({"call_a"}), tool("call_z")})) == message);
  CHECK(rejection_of(json::array({user("go"), {{"role", "assistant"}, {"content", "hi"}}, tool("call_a")})) ==
        message);
  auto d = decode(request(json::array({user("go"), tool("call_a")})));
  REQUIRE(d.rejection);
  CHECK(d.rejection->pairing);
}

TEST_CASE("pairing: repeated ids, in one assistant message or in two tool messages") {
  CHECK(rejection_of(json::array({user("go"), assistant_calls({"call_a", "call_a"}), tool("call_a"),
                                  tool("call_a")})) ==
        "Invalid parameter: Duplicate value for 'id' of 'call_a' in messages[1].tool_calls[0] and "
        "messages[1].tool_calls[1].");
  CHECK(rejection_of(json::array({user("go"), assistant_calls({"call_a", "call_b"}), tool("call_a"),
                                  tool("call_a"), tool("call_b")})) ==
        "Invalid parameter: Duplicate value for 'tool_call_id' of 'call_a' in messages[2] and messages[3].");
  auto d = decode(request(json::array({user("go"), assistant_calls({"call_a", "call_a"}), tool("call_a")})));
  REQUIRE(d.rejection);
  CHECK(d.rejection->pairing);
}

TEST_CASE("a well-paired history with parallel calls is accepted") {
  auto d = decode(request(json::array({user("go"), assistant_calls({"call_a", "call_b"}), tool("call_b"),
                                       tool("call_a"), assistant_calls({"call_c"}), tool("call_c")})));
  CHECK_FALSE(d.rejection);
  CHECK(mock::turn_index(d.contents) == 2);
}

TEST_CASE("shape problems are 400s with the API's messages, not pairing rejections") {
  auto shape = [](std::string_view body) {
    auto d = fmt().decode_request("/v1/chat/completions", body);
    REQUIRE(d.rejection);
    CHECK_FALSE(d.rejection->pairing);
    CHECK(d.rejection->status == 400);
    return d.rejection->message;
  };
  CHECK(shape("{not json") ==
        "We could not parse the JSON body of your request. (HINT: This likely means you aren't using "
        "your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not "
        "valid JSON. If you have trouble figuring out how to fix this, please contact us through our "
        "help center at help.openai.com.)");
  CHECK(shape(R"({"model":"m"})") == "Missing required parameter: 'messages'.");
  CHECK(shape(R"({"model":"m","messages":"hi"})") ==
        "Invalid type for 'messages': expected an array, but got a string instead.");
  CHECK(shape(R"({"model":"m","messages":[]})") ==
        "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty "
        "array instead.");
  CHECK(shape(R"({"messages":[{"role":"user","content":"hi"}]})") == "you must provide a model parameter");
  CHECK(shape(R"({"model":"m","messages":[{"role":"robot","content":"hi"}]})") ==
        "Invalid value: 'robot'. Supported values are: 'system', 'assistant', 'user', 'function', "
        "'tool', and 'developer'.");
  CHECK(shape(R"({"model":"m","messages":[{"content":"hi"}]})") ==
        "Missing required parameter: 'messages[0].role'.");
  CHECK(shape(R"({"model":"m","messages":[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f"}}]}]})") ==
        "Missing required parameter: 'messages[0].tool_calls[0].id'.");
  CHECK(shape(R"({"model":"m","messages":[{"role":"user","content":"x"},{"role":"tool","content":"x"}]})") ==
        "Missing required parameter: 'messages[1].tool_call_id'.");
  CHECK(fmt().decode_request("/v1/chat/completions", "[1]").contents.is_null());
}

TEST_CASE("wrongly typed content and bodies are 400s naming the field") {
  auto shape = [](const json& body) {
    auto d = fmt().decode_request("/v1/chat/completions", body.dump());
    REQUIRE(d.rejection);
    CHECK_FALSE(d.rejection->pairing);
    CHECK(d.rejection->status == 400);
    return d.rejection->message;
  };
  CHECK(shape(request(json::array({{{"role", "user"}, {"content", 5}}}))) ==
        "Invalid type for 'messages[0].content': expected one of a string or array of objects, but got "
        "an integer instead.");
  CHECK(shape(request(json::array({{{"role", "user"}, {"content", {{"text", "hi"}}}}}))) ==
        "Invalid type for 'messages[0].content': expected one of a string or array of objects, but got "
        "an object instead.");
  CHECK(shape(request(json::array({user("go"), {{"role", "user"}}}))) ==
        "Missing required parameter: 'messages[1].content'.");
  CHECK(shape(request(json::array({{{"role", "system"}, {"content", nullptr}}, user("go")}))) ==
        "Missing required parameter: 'messages[0].content'.");
  CHECK(shape(request(json::array({{{"role", "user"}, {"content", json::array({5})}}}))) ==
        "Invalid type for 'messages[0].content[0]': expected an object, but got an integer instead.");
  CHECK(shape(request(json::array({{{"role", "user"}, {"content", json::array({{{"text", "hi"}}})}}}))) ==
        "Missing required parameter: 'messages[0].content[0].type'.");
  CHECK(shape(request(json::array({user("go"), assistant_calls({"call_1"}),
                                   {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", 7}}}))) ==
        "Invalid type for 'messages[2].content': expected one of a string or array of objects, but got "
        "an integer instead.");
  CHECK(shape(request(json::array({user("go"), {{"role", "assistant"}, {"content", 5}}}))) ==
        "Invalid type for 'messages[1].content': expected one of a string or array of objects, but got "
        "an integer instead.");
  // Valid JSON that is not an object is not "could not parse".
  CHECK(shape(json::array()) == "Invalid type for 'body': expected an object, but got an array instead.");
  CHECK(shape(json()) == "Invalid type for 'body': expected an object, but got null instead.");
  CHECK(shape(json("str")) == "Invalid type for 'body': expected an object, but got a string instead.");
  // What stays accepted: an assistant with tool calls and null or no content, typed parts.
  json no_content = assistant_calls({"call_1"});
  no_content.erase("content");
  CHECK_FALSE(decode(request(json::array({user("go"), no_content, tool("call_1")}))).rejection);
  CHECK_FALSE(decode(request(json::array(
                  {{{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", "hi"}}})}}})))
                  .rejection);
}

TEST_CASE("decoding never throws on odd JSON") {
  for (const char* body : {R"({"model":1,"messages":[1,null,{"role":3}]})",
                           R"({"model":"m","messages":[{"role":"assistant","tool_calls":[1,{"id":2,"function":"x"}]}]})",
                           R"({"model":"m","messages":[{"role":"tool","tool_call_id":5,"content":{"a":1}}]})",
                           R"({"model":"m","stream":"yes","messages":[{"role":"user","content":[1,{"text":2}]}]})"}) {
    mock::DecodedRequest d;
    CHECK_NOTHROW(d = fmt().decode_request("/v1/chat/completions", body));
    CHECK(d.rejection);
  }
}

TEST_CASE("the non-streaming answer is a chat.completion with the message and finish reason") {
  const std::vector<mock::Event> events = {mock::TextEvent{"Reading "}, mock::TextEvent{"both."},
                                           mock::CallEvent{"read", json{{"path", "a"}}, "call_3_0"},
                                           mock::FinishEvent{}};
  CHECK(fmt().unary_body(events, kCtx) ==
        R"({"id":"chatcmpl-hiccup-3","object":"chat.completion","created":1700000000,"model":"gpt-4.1-mini",)"
        R"("choices":[{"index":0,"message":{"role":"assistant","content":"Reading both.","refusal":null,)"
        R"("tool_calls":[{"id":"call_3_0","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}}]},)"
        R"("logprobs":null,"finish_reason":"tool_calls"}],)"
        R"("usage":{"prompt_tokens":8,"completion_tokens":1,"total_tokens":9,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},)"
        R"("completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},)"
        R"("service_tier":"default","system_fingerprint":"fp_hiccup"})");
  const json text_only = json::parse(fmt().unary_body({mock::TextEvent{"Hi"}, mock::FinishEvent{}}, kCtx));
  CHECK(text_only["choices"][0]["finish_reason"] == "stop");
  CHECK_FALSE(text_only["choices"][0]["message"].contains("tool_calls"));
  const json length = json::parse(fmt().unary_body({mock::TextEvent{"Hi"}, mock::FinishEvent{mock::FinishReason::kMaxTokens}}, kCtx));
  CHECK(length["choices"][0]["finish_reason"] == "length");
}

TEST_CASE("a non-streaming content filter has null content, no finish gives finish_reason null") {
  const json filtered = json::parse(fmt().unary_body(
      {mock::TextEvent{"Sure"}, mock::FinishEvent{mock::FinishReason::kContentFilter}}, kCtx));
  CHECK(filtered["choices"][0]["finish_reason"] == "content_filter");
  CHECK(filtered["choices"][0]["message"]["content"].is_null());
  const json open = json::parse(fmt().unary_body({mock::TextEvent{"Hal"}}, kCtx));
  CHECK(open["choices"][0]["finish_reason"].is_null());
  CHECK(open["choices"][0]["message"]["content"] == "Hal");
  const json calls_only = json::parse(fmt().unary_body({mock::CallEvent{"f", json::object(), "call_1"}, mock::FinishEvent{}}, kCtx));
  CHECK(calls_only["choices"][0]["message"]["content"].is_null());
  CHECK(json::parse(fmt().unary_body({mock::FinishEvent{mock::FinishReason::kMalformedCall}}, kCtx))["error"]["type"] ==
        "model_error");
}

TEST_CASE("an after_fragment fault cuts a call after its start and that many fragments") {
  mock::Script script;
  script.provider = "openai-chat";
  mock::Attempt a;
  a.events = {mock::CallEvent{"write", json{{"text", "abcdefghijklmnop"}}, "", 4}, mock::FinishEvent{}};
  a.fault = mock::Fault(mock::DisconnectFault{0, 0, 2});
  script.turns.push_back({{a}});
  mock::ScriptEngine engine(script);
  const auto plan = engine.respond({"POST", "/v1/chat/completions", request(json::array({user("go")})).dump()});
  REQUIRE(plan.streaming);
  std::string bytes;
  for (const auto& act : plan.actions) bytes += std::get<mock::WriteAction>(act).bytes;
  const auto p = payloads(bytes);
  REQUIRE(p.size() == 4);  // role chunk, call start, 2 fragments
  const json start = json::parse(p[1])["choices"][0]["delta"]["tool_calls"][0];
  CHECK(start["id"] == "call_0_0");
  CHECK(start["index"] == 0);
  const std::string sent = json::parse(p[2])["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].get<std::string>() +
                           json::parse(p[3])["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].get<std::string>();
  const std::string whole = json{{"text", "abcdefghijklmnop"}}.dump();
  CHECK(sent.size() < whole.size());
  CHECK(whole.rfind(sent, 0) == 0);
  CHECK(plan.ending == mock::Ending::kFin);
}

}  // namespace openai_chat_format_test

namespace openai_quota_test {

TEST_CASE("a quota 429 is rate_limit_exceeded naming the limit that ran out, RPM or RPD, in both OpenAI formats") {
  const mock::ErrorAnswer day = mock::openai_chat::format().quota_answer(mock::Quota::kPerDay, "gpt-5.5", 432.0);
  const auto e = nlohmann::json::parse(day.body)["error"];
  CHECK(e["type"] == "requests");
  CHECK(e["code"] == "rate_limit_exceeded");
  CHECK(e["message"] ==
        "Rate limit reached for gpt-5.5 in organization org-hiccup on requests per day (RPD): Limit 200, Used 200, "
        "Requested 1. Please try again in 7m12s. Visit https://platform.openai.com/account/rate-limits to learn more.");
  using H = std::vector<std::pair<std::string, std::string>>;
  CHECK(day.headers == H{{"retry-after", "432"}, {"retry-after-ms", "432000"}});
  CHECK(mock::openai_chat::rate_limit_message(mock::Quota::kPerMinute, "m", 20.0).find("on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.") !=
        std::string::npos);
  CHECK(mock::openai_chat::rate_limit_message(mock::Quota::kPerMinute, "m", 1.5).find("Please try again in 1.5s.") != std::string::npos);
  CHECK(mock::openai_chat::rate_limit_message(mock::Quota::kPerDay, "m", 3723.0).find("Please try again in 1h2m3s.") != std::string::npos);
  CHECK(mock::openai_chat::rate_limit_message(mock::Quota::kPerDay, "m", std::nullopt).find("Please try again") == std::string::npos);
  const mock::WireFormat* responses = mock::wire_format("openai-responses");
  REQUIRE(responses != nullptr);
  const auto r = nlohmann::json::parse(responses->quota_answer(mock::Quota::kPerDay, "gpt-5.5", std::nullopt).body)["error"];
  CHECK(r["code"] == "rate_limit_exceeded");
  CHECK(r["message"].get<std::string>().find("requests per day (RPD)") != std::string::npos);
}

}  // namespace openai_quota_test
