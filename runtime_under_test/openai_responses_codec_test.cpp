// Tests of the runtime's OpenAI Responses codec: request encoding, stream decoding under any
// chunking, every finish and error, the open call a cut leaves, bodies and error answers.
#include "runtime_under_test/openai_responses_codec.h"
#include "runtime_under_test/codec_test_util.h"

#include <catch2/catch.hpp>

namespace rut {
namespace {

using nlohmann::json;

const ICodec& codec() { return openai_responses_codec(); }

/// One `event:`/`data:` pair.
std::string pair(const std::string& type, json data) {
  data["type"] = type;
  return "event: " + type + "\ndata: " + data.dump() + "\n\n";
}

std::string text_item(int oi, const std::string& id, const std::string& text) {
  json item = {{"id", id}, {"type", "message"}, {"status", "in_progress"}, {"content", json::array()}, {"role", "assistant"}};
  json done = item;
  done["status"] = "completed";
  done["content"] = json::array({{{"type", "output_text"}, {"text", text}, {"annotations", json::array()}}});
  return pair("response.output_item.added", {{"output_index", oi}, {"item", item}}) +
         pair("response.content_part.added",
              {{"item_id", id}, {"output_index", oi}, {"content_index", 0}, {"part", {{"type", "output_text"}, {"text", ""}}}}) +
         pair("response.output_text.delta", {{"item_id", id}, {"output_index", oi}, {"content_index", 0}, {"delta", text}}) +
         pair("response.output_text.done", {{"item_id", id}, {"output_index", oi}, {"content_index", 0}, {"text", text}}) +
         pair("response.output_item.done", {{"output_index", oi}, {"item", done}});
}

std::string call_start(int oi, const std::string& id, const std::string& call_id, const std::string& name) {
  return pair("response.output_item.added",
              {{"output_index", oi},
               {"item", {{"id", id}, {"type", "function_call"}, {"status", "in_progress"}, {"arguments", ""}, {"call_id", call_id}, {"name", name}}}});
}
std::string call_delta(int oi, const std::string& id, const std::string& delta) {
  return pair("response.function_call_arguments.delta", {{"item_id", id}, {"output_index", oi}, {"delta", delta}});
}
std::string call_done(int oi, const std::string& id, const std::string& call_id, const std::string& name,
                      const std::string& args) {
  return pair("response.function_call_arguments.done", {{"item_id", id}, {"output_index", oi}, {"arguments", args}}) +
         pair("response.output_item.done",
              {{"output_index", oi},
               {"item", {{"id", id}, {"type", "function_call"}, {"status", "completed"}, {"arguments", args}, {"call_id", call_id}, {"name", name}}}});
}
std::string ending(const std::string& type, json response) {
  response["id"] = "resp_1";
  response["object"] = "response";
  return pair(type, {{"response", response}});
}

using rut::testing::Decoded;

/// Decodes `bytes` in pieces of `step` with `keep` (or a fresh decoder).
Decoded decode_stream(const std::string& bytes, std::size_t step, IStreamDecoder* keep = nullptr) {
  auto owned = codec().stream_decoder();
  return rut::testing::decode_with(keep ? *keep : *owned, bytes, step);
}

const std::string kCompleted = ending("response.completed", {{"status", "completed"}, {"output", json::array()}});

std::string full_stream() {
  return ending("response.created", {{"status", "in_progress"}, {"output", json::array()}}) +
         ending("response.in_progress", {{"status", "in_progress"}, {"output", json::array()}}) +
         text_item(0, "msg_1", "Deploying ") +
         call_start(1, "fc_1", "call_1", "shell") + call_delta(1, "fc_1", R"({"comm)") +
         call_delta(1, "fc_1", R"(and":"./deploy.sh"})") +
         call_done(1, "fc_1", "call_1", "shell", R"({"command":"./deploy.sh"})") +
         call_start(2, "fc_2", "call_2", "read") + call_delta(2, "fc_2", "{}") +
         call_done(2, "fc_2", "call_2", "read", "{}") + text_item(3, "msg_2", "now.") + kCompleted;
}

}  // namespace

TEST_CASE("responses codec: the request body's input is written as text, byte for byte the items' tree dumped") {
  // make_request writes the input without building it (append_responses_input); responses_input
  // builds the same items as a tree. Histories with reasoning (items in delivered order), text and
  // calls in one model turn, user text beside function responses, a call without args, text that
  // needs escaping and text that is not ASCII.
  const std::vector<json> histories = {
      json::array(),
      json::parse(R"([{"role":"user","parts":[{"text":"Deploy \"it\"\n\u00e9 \u0001"}]}])"),
      json::parse(R"([
        {"role":"user","parts":[{"text":"Go."}]},
        {"role":"model","parts":[{"text":"On it. "},{"functionCall":{"name":"shell","args":{"command":"ls \"x\""},"id":"c1"}},
                                 {"text":"More."},{"functionCall":{"name":"read","id":"c2"}}]},
        {"role":"user","parts":[{"functionResponse":{"name":"shell","id":"c1","response":{"output":"ok\n\u00e9"}}},
                                {"text":"a note"},{"functionResponse":{"name":"read","id":"c2"}},{"text":"more"}]},
        {"role":"model","parts":[]}
      ])"),
      json::parse(R"([
        {"role":"user","parts":[{"text":"Go."}]},
        {"role":"model","parts":[{"text":"Plan","thought":true,"thoughtSignature":"gAAA","reasoningId":"rs_1"},
                                 {"text":"Let me."},
                                 {"thoughtSignature":"gBBB"},
                                 {"functionCall":{"name":"shell","args":{},"id":"c1"}}]},
        {"role":"user","parts":[{"functionResponse":{"name":"shell","id":"c1","response":{"output":"ok"}}}]},
        {"role":"model","parts":[{"text":"x","thought":true,"thoughtSignature":"s"}]}
      ])"),
  };
  for (const json& contents : histories) {
    INFO(contents.dump());
    const std::string body = codec().make_request(contents, "m", {}, true).body;
    CHECK(body == "{\"model\":\"m\",\"input\":" + responses_input(contents).dump() + ",\"stream\":true,\"store\":false}");
  }
}

TEST_CASE("responses codec: the request is POST /v1/responses with input items, store false and tools") {
  const json contents = json::parse(R"([
    {"role":"user","parts":[{"text":"Deploy."}]},
    {"role":"model","parts":[{"text":"On "},{"text":"it."},
      {"functionCall":{"name":"shell","args":{"command":"./deploy.sh"},"id":"call_1"}},
      {"functionCall":{"name":"read","args":{},"id":"call_2"}}]},
    {"role":"user","parts":[{"functionResponse":{"name":"shell","id":"call_1","response":{"output":"shell: ok"}}},
                            {"functionResponse":{"name":"read","id":"call_2","response":{"output":"read: ok"}}}]},
    {"role":"model","parts":[{"functionCall":{"name":"shell","args":{},"id":"call_3"}}]},
    {"role":"user","parts":[{"functionResponse":{"name":"shell","id":"call_3","response":{"output":"shell: ok"}}}]},
    {"role":"model","parts":[]}
  ])");
  const HttpRequest req = codec().make_request(contents, "gpt-4.1-mini", {"shell", "read"}, true);
  CHECK(req.target == "/v1/responses");
  CHECK(req.headers == std::vector<std::pair<std::string, std::string>>{
                           {"Content-Type", "application/json"}, {"Authorization", "Bearer hiccup"}});
  const json expected = json::parse(R"({
    "model":"gpt-4.1-mini",
    "input":[
      {"type":"message","role":"user","content":[{"type":"input_text","text":"Deploy."}]},
      {"type":"message","role":"assistant","content":[{"type":"output_text","text":"On it."}]},
      {"type":"function_call","call_id":"call_1","name":"shell","arguments":"{\"command\":\"./deploy.sh\"}"},
      {"type":"function_call","call_id":"call_2","name":"read","arguments":"{}"},
      {"type":"function_call_output","call_id":"call_1","output":"{\"output\":\"shell: ok\"}"},
      {"type":"function_call_output","call_id":"call_2","output":"{\"output\":\"read: ok\"}"},
      {"type":"function_call","call_id":"call_3","name":"shell","arguments":"{}"},
      {"type":"function_call_output","call_id":"call_3","output":"{\"output\":\"shell: ok\"}"},
      {"type":"message","role":"assistant","content":[{"type":"output_text","text":""}]}
    ],
    "stream":true,
    "store":false,
    "tools":[
      {"type":"function","name":"shell","description":"simulated tool shell","parameters":{"type":"object"},"strict":false},
      {"type":"function","name":"read","description":"simulated tool read","parameters":{"type":"object"},"strict":false}
    ]
  })");
  CHECK(json::parse(req.body) == expected);
  // Byte for byte the dump of the ordered tree (the body is written as text around the input),
  // with and without tools, and for a model name that needs escaping.
  for (const bool with_tools : {true, false}) {
    using ojson = nlohmann::ordered_json;
    const std::string model = "m\"\u00e9\n";
    ojson tree = ojson::object();
    tree["model"] = model;
    tree["input"] = ojson(responses_input(contents));
    tree["stream"] = with_tools;
    tree["store"] = false;
    if (with_tools) {
      tree["tools"] = ojson::array();
      for (const std::string name : {"shell", "read"}) {
        ojson t = ojson::object();
        t["type"] = "function";
        t["name"] = name;
        t["description"] = "simulated tool " + name;
        t["parameters"] = ojson{{"type", "object"}};
        t["strict"] = false;
        tree["tools"].push_back(std::move(t));
      }
    }
    const std::vector<std::string> tools =
        with_tools ? std::vector<std::string>{"shell", "read"} : std::vector<std::string>{};
    CHECK(codec().make_request(contents, model, tools, with_tools).body == tree.dump());
  }
  // Without tools there is no tools member; without streaming stream is false.
  const json plain = json::parse(codec().make_request(json::array(), "m", {}, false).body);
  CHECK_FALSE(plain.contains("tools"));
  CHECK(plain["stream"] == false);
  CHECK(plain["input"] == json::array());
}

TEST_CASE("responses codec: text deltas and calls decode the same under any chunking") {
  const std::string bytes = full_stream();
  for (std::size_t step : {bytes.size(), std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{64}, std::size_t{333}}) {
    INFO("step " << step);
    const Decoded d = decode_stream(bytes, step);
    REQUIRE(d.parts.size() == 4);
    CHECK(d.parts[0].text == "Deploying ");
    REQUIRE(d.parts[1].call);
    CHECK(d.parts[1].call->name == "shell");
    CHECK(d.parts[1].call->args == json{{"command", "./deploy.sh"}});
    CHECK(d.parts[1].call->id == "call_1");
    CHECK(d.parts[1].position_in_frame == 0);
    REQUIRE(d.parts[2].call);
    CHECK(d.parts[2].call->name == "read");
    CHECK(d.parts[2].call->args == json::object());
    CHECK(d.parts[2].call->id == "call_2");
    CHECK(d.parts[2].position_in_frame == 0);
    CHECK(d.parts[3].text == "now.");
    CHECK(d.finish == FinishClass::kStop);
    CHECK(d.finish_reason == "completed");
  }
}

TEST_CASE("responses codec: a call is handed out at its output_item.done, not before") {
  auto dec = codec().stream_decoder();
  SseDecoder sse;
  std::vector<SseFrame> frames;
  sse.feed(call_start(0, "fc_1", "call_1", "shell") + call_delta(0, "fc_1", "{}") +
               pair("response.function_call_arguments.done", {{"item_id", "fc_1"}, {"output_index", 0}, {"arguments", "{}"}}),
           frames);
  REQUIRE(frames.size() == 3);
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const DecodedChunk c = dec->on_frame(frames[i]);
    CHECK(c.parts.empty());
    // The open call's argument fragments so far: 0 at its output_item.added, 1 after the delta;
    // arguments.done adds none.
    if (i < 2) CHECK(c.open_call_fragments == static_cast<int>(i));
    else CHECK_FALSE(c.open_call_fragments);
  }
  frames.clear();
  // The done item alone names everything; arguments that were streamed are not needed again.
  sse.feed(pair("response.output_item.done",
                {{"output_index", 0}, {"item", {{"type", "function_call"}, {"id", "fc_1"}, {"call_id", "call_1"}, {"name", "shell"}, {"arguments", R"({"a":1})"}}}}),
           frames);
  REQUIRE(frames.size() == 1);
  const DecodedChunk c = dec->on_frame(frames[0]);
  REQUIRE(c.parts.size() == 1);
  CHECK(c.parts[0].call->args == json{{"a", 1}});
}

TEST_CASE("responses codec: deltas are routed by output_index, or by item_id when it is missing") {
  auto dec = codec().stream_decoder();
  SseDecoder sse;
  std::vector<SseFrame> frames;
  // Two calls open at once; fragments interleave; the done items carry no arguments.
  sse.feed(call_start(0, "fc_a", "call_a", "a") + call_start(1, "fc_b", "call_b", "b") +
               call_delta(1, "fc_b", R"({"b":)") + pair("response.function_call_arguments.delta", {{"item_id", "fc_a"}, {"delta", R"({"a":1})"}}) +
               call_delta(1, "fc_b", "2}") +
               pair("response.output_item.done", {{"output_index", 1}, {"item", {{"type", "function_call"}, {"id", "fc_b"}}}}) +
               pair("response.output_item.done", {{"output_index", 0}, {"item", {{"type", "function_call"}, {"id", "fc_a"}}}}),
           frames);
  std::vector<FunctionCall> calls;
  for (const auto& f : frames) {
    for (auto& p : dec->on_frame(f).parts) calls.push_back(*p.call);
  }
  REQUIRE(calls.size() == 2);
  CHECK(calls[0] == FunctionCall{"b", json{{"b", 2}}, "call_b"});
  CHECK(calls[1] == FunctionCall{"a", json{{"a", 1}}, "call_a"});
}

TEST_CASE("responses codec: every ending maps to its finish class or a stream error") {
  auto end_with = [](const std::string& frame) { return decode_stream(text_item(0, "m", "x") + frame, 5); };
  CHECK(end_with(kCompleted).finish == FinishClass::kStop);

  const Decoded max = end_with(ending("response.incomplete", {{"status", "incomplete"}, {"incomplete_details", {{"reason", "max_output_tokens"}}}}));
  CHECK(max.finish == FinishClass::kMaxTokens);
  CHECK(max.finish_reason == "incomplete: max_output_tokens");

  const Decoded filter = end_with(ending("response.incomplete", {{"status", "incomplete"}, {"incomplete_details", {{"reason", "content_filter"}}}}));
  CHECK(filter.finish == FinishClass::kContentFilter);

  CHECK(end_with(ending("response.incomplete", {{"status", "incomplete"}, {"incomplete_details", {{"reason", "other"}}}})).finish ==
        FinishClass::kOther);
  CHECK(end_with(ending("response.incomplete", {{"status", "incomplete"}})).finish == FinishClass::kOther);

  const Decoded malformed = end_with(ending(
      "response.failed",
      {{"status", "failed"},
       {"error", {{"code", "server_error"},
                  {"message", "The model produced invalid content. Consider modifying your prompt if you are seeing this error persistently."}}}}));
  CHECK(malformed.finish == FinishClass::kMalformedCall);
  CHECK_FALSE(malformed.stream_error);

  const Decoded failed = end_with(ending(
      "response.failed", {{"status", "failed"}, {"error", {{"code", "server_error"}, {"message", "An error occurred."}}}}));
  CHECK_FALSE(failed.finish);
  CHECK(failed.stream_error == "response.failed: server_error: An error occurred.");
  CHECK(end_with(ending("response.failed", {{"status", "failed"}, {"error", {{"code", "rate_limit_exceeded"}, {"message", "slow down"}}}}))
            .stream_error == "response.failed: rate_limit_exceeded: slow down");

  const Decoded error = end_with(pair("error", {{"code", "server_error"}, {"message", "boom"}, {"param", nullptr}, {"sequence_number", 9}}));
  CHECK(error.stream_error == "server_error: boom");
  CHECK(end_with(pair("error", {{"error", {{"type", "server_error"}, {"message", "nested"}}}})).stream_error ==
        "server_error: nested");
}

TEST_CASE("responses codec: an error event and then response.failed are one stream error, the first") {
  // The live in-stream failure: an open message item's delta, `error` (nested error object), then
  // `response.failed`. The attempt fails once, at the error event, with the text delivered before it.
  const std::string open_item =
      pair("response.output_item.added",
           {{"output_index", 0}, {"item", {{"id", "msg_1"}, {"type", "message"}, {"status", "in_progress"}, {"content", json::array()}, {"role", "assistant"}}}}) +
      pair("response.content_part.added",
           {{"item_id", "msg_1"}, {"output_index", 0}, {"content_index", 0}, {"part", {{"type", "output_text"}, {"text", ""}}}}) +
      pair("response.output_text.delta", {{"item_id", "msg_1"}, {"output_index", 0}, {"content_index", 0}, {"delta", "partial "}});
  const std::string error = pair(
      "error", {{"sequence_number", 5},
                {"error", {{"type", "server_error"}, {"code", "server_error"}, {"message", "An error occurred."}, {"param", nullptr}}}});
  const std::string failed = ending("response.failed", {{"status", "failed"}, {"error", {{"code", "server_error"}, {"message", "An error occurred."}}}});
  for (std::size_t step : {std::size_t{0}, std::size_t{7}}) {
    const Decoded d = decode_stream(open_item + error + failed, step);
    REQUIRE(d.parts.size() == 1);
    CHECK(d.parts[0].text == "partial ");
    CHECK(d.stream_error == "server_error: An error occurred.");
    CHECK(d.frames == 4);  // decided at the error event: response.failed is never read
    CHECK_FALSE(d.finish);
  }
}

TEST_CASE("responses codec: a stream without its terminal event reports no finish") {
  const std::string bytes = full_stream();
  const Decoded d = decode_stream(bytes.substr(0, bytes.size() - kCompleted.size()), 11);
  CHECK(d.parts.size() == 4);
  CHECK_FALSE(d.finish);
  CHECK_FALSE(d.stream_error);
}

TEST_CASE("responses codec: unparsable JSON is undecodable") {
  const Decoded d = decode_stream(text_item(0, "m", "a") +
                                      "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\n\n" +
                                      kCompleted,
                                  3);
  CHECK(d.undecodable);
  CHECK_FALSE(d.finish);
  CHECK(d.parts.size() == 1);
}

TEST_CASE("responses codec: the open call is the one added and not done, its arguments repaired") {
  auto dec = codec().stream_decoder();
  CHECK_FALSE(dec->repaired_open_call(""));
  const std::string done_first = call_start(0, "fc_1", "call_1", "shell") + call_delta(0, "fc_1", "{}") +
                                 call_done(0, "fc_1", "call_1", "shell", "{}");
  const std::string open = call_start(1, "fc_2", "call_2", "shell") + call_delta(1, "fc_2", R"({"command":"./depl)");
  (void)decode_stream(done_first, 9, dec.get());
  CHECK_FALSE(dec->repaired_open_call(""));
  // A delta frame cut in the middle adds nothing: only complete fragments count.
  (void)decode_stream(open + "event: response.function_call_arguments.delta\ndata: {\"type\":\"resp", 4, dec.get());
  const auto call = dec->repaired_open_call("{\"type\":\"resp");
  REQUIRE(call);
  CHECK(call->name == "shell");
  CHECK(call->id == "call_2");
  CHECK(call->args == json{{"command", "./depl"}});
  // A call added with no fragment yet repairs to empty arguments.
  auto fresh = codec().stream_decoder();
  (void)decode_stream(call_start(0, "fc_9", "call_9", "read"), 50, fresh.get());
  REQUIRE(fresh->repaired_open_call(""));
  CHECK(fresh->repaired_open_call("")->args == json::object());
}

TEST_CASE("responses codec: a non-streaming body decodes into parts and a finish") {
  const std::string body = R"({"id":"resp_1","object":"response","status":"completed","output":[
      {"type":"reasoning","id":"rs_1","summary":[]},
      {"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"Tagging.","annotations":[]}]},
      {"id":"fc_1","type":"function_call","call_id":"call_1","name":"shell","arguments":"{\"command\":\"git tag\"}"},
      {"id":"fc_2","type":"function_call","call_id":"call_2","name":"read","arguments":"{}"}],
      "usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}})";
  const DecodedChunk c = codec().decode_body(body);
  REQUIRE(c.parts.size() == 3);
  CHECK(c.parts[0].text == "Tagging.");
  CHECK(*c.parts[1].call == FunctionCall{"shell", json{{"command", "git tag"}}, "call_1"});
  CHECK(c.parts[1].position_in_frame == 0);
  CHECK(c.parts[2].position_in_frame == 1);
  CHECK(c.finish == FinishClass::kStop);
  CHECK(codec().decode_body(R"({"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[]})").finish ==
        FinishClass::kMaxTokens);
  CHECK_FALSE(codec().decode_body(R"({"status":"in_progress","output":[]})").finish);
  CHECK(codec().decode_body("{\"status\":").undecodable);
}

TEST_CASE("responses codec: an error answer gives type and message, Retry-After from retry-after-ms first") {
  const std::string body =
      R"({"error":{"message":"Rate limit reached for requests. Please try again later.","type":"requests","param":null,"code":"rate_limit_exceeded"}})";
  ProviderError e = codec().parse_error(body, {{"retry-after", "2"}, {"retry-after-ms", "1500"}});
  CHECK(e.message == "requests: Rate limit reached for requests. Please try again later.");
  CHECK(e.retry_after_s == 1.5);
  CHECK(codec().parse_error(body, {{"Retry-After", "30"}}).retry_after_s == 30);
  CHECK(codec().parse_error(body, {{"retry-after-ms", "soon"}, {"retry-after", "7"}}).retry_after_s == 7);
  CHECK(codec().parse_error(body, {}).retry_after_s == 0);
  CHECK(codec().parse_error("<html>bad gateway</html>", {}).message.empty());
}

TEST_CASE("responses codec: names its provider and default model") {
  CHECK(codec().provider() == "openai-responses");
  CHECK(codec_for("openai-responses") == &codec());
  CHECK(codec().default_model() == "gpt-4.1-mini");
}

}  // namespace rut
