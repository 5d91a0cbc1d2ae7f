// Tests of the runtime's Anthropic Messages codec: the request it builds, the stream decoder under
// any chunking, finish classes, in-stream errors, the open-call repair, bodies and error answers.
#include "runtime_under_test/anthropic_codec.h"
#include "runtime_under_test/codec_test_util.h"

#include <catch2/catch.hpp>

#include "runtime_under_test/sse_decoder.h"

namespace rut::anthropic_codec_test {
namespace {

using nlohmann::json;

const ICodec& codec() { return anthropic_codec(); }

std::string ev(const std::string& name, const std::string& data) {
  return "event: " + name + "\ndata: " + data + "\n\n";
}

using rut::testing::Decoded;

/// Decodes `bytes` in pieces of `step` with a fresh decoder, handed back through `keep`.
Decoded decode_stream(const std::string& bytes, std::size_t step = 0,
                      std::unique_ptr<IStreamDecoder>* keep = nullptr) {
  auto decoder = codec().stream_decoder();
  Decoded out = rut::testing::decode_with(*decoder, bytes, step);
  if (keep) *keep = std::move(decoder);
  return out;
}

std::string text_of(const std::vector<ModelPart>& parts) {
  std::string s;
  for (const auto& p : parts) s += p.text.value_or("");
  return s;
}

std::vector<FunctionCall> calls_of(const std::vector<ModelPart>& parts) {
  std::vector<FunctionCall> out;
  for (const auto& p : parts) {
    if (p.call) out.push_back(*p.call);
  }
  return out;
}

/// A stream as the mock writes it: text in two deltas, a call in three fragments, a second call,
/// stop_reason tool_use (with a ping in the middle).
const std::string kStream =
    ev("message_start", R"({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":8,"output_tokens":1}}})") +
    ev("ping", R"({"type":"ping"})") +
    ev("content_block_start", R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})") +
    ev("content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Deploying "}})") +
    ev("content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"now ✓."}})") +
    ev("content_block_stop", R"({"type":"content_block_stop","index":0})") +
    ev("content_block_start", R"({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_a","name":"deploy","input":{}}})") +
    ev("content_block_delta", R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"target\":\"sta"}})") +
    ev("ping", R"({"type":"ping"})") +
    ev("content_block_delta", R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ging\",\"n\":"}})") +
    ev("content_block_delta", R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"2}"}})") +
    ev("content_block_stop", R"({"type":"content_block_stop","index":1})") +
    ev("content_block_start", R"({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_b","name":"shell","input":{}}})") +
    ev("content_block_delta", R"({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}})") +
    ev("content_block_stop", R"({"type":"content_block_stop","index":2})") +
    ev("message_delta", R"({"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":3}})") +
    ev("message_stop", R"({"type":"message_stop"})");

std::string finish_stream(const std::string& stop_reason) {
  return ev("message_start", R"({"type":"message_start","message":{}})") +
         ev("message_delta", R"({"type":"message_delta","delta":{"stop_reason":)" + stop_reason +
                                 R"(,"stop_sequence":null},"usage":{"output_tokens":1}})") +
         ev("message_stop", R"({"type":"message_stop"})");
}

}  // namespace

TEST_CASE("anthropic request: target, headers and the body for a multi-turn history") {
  const json contents = json::parse(R"([
    {"role":"user","parts":[{"text":"Deploy it."}]},
    {"role":"model","parts":[{"text":"Running."},
      {"functionCall":{"name":"shell","args":{"command":"./deploy.sh"},"id":"toolu_a"}},
      {"functionCall":{"name":"read_file","args":{"path":"x"},"id":"toolu_b"}}]},
    {"role":"user","parts":[
      {"functionResponse":{"name":"shell","id":"toolu_a","response":{"output":"ok"}}},
      {"functionResponse":{"name":"read_file","id":"toolu_b","response":{"output":"x"}}}]},
    {"role":"model","parts":[{"text":"Done."}]},
    {"role":"user","parts":[{"text":"Thanks"}]}
  ])");
  const HttpRequest req = codec().make_request(contents, "claude-sonnet-4-5", {"shell", "read_file"}, true);
  CHECK(req.target == "/v1/messages");
  CHECK(req.headers == std::vector<std::pair<std::string, std::string>>{
                           {"Content-Type", "application/json"},
                           {"x-api-key", "hiccup"},
                           {"anthropic-version", "2023-06-01"}});
  CHECK(json::parse(req.body) == json::parse(R"({
    "model":"claude-sonnet-4-5","max_tokens":4096,"stream":true,
    "messages":[
      {"role":"user","content":[{"type":"text","text":"Deploy it."}]},
      {"role":"assistant","content":[{"type":"text","text":"Running."},
        {"type":"tool_use","id":"toolu_a","name":"shell","input":{"command":"./deploy.sh"}},
        {"type":"tool_use","id":"toolu_b","name":"read_file","input":{"path":"x"}}]},
      {"role":"user","content":[
        {"type":"tool_result","tool_use_id":"toolu_a","content":"{\"output\":\"ok\"}"},
        {"type":"tool_result","tool_use_id":"toolu_b","content":"{\"output\":\"x\"}"}]},
      {"role":"assistant","content":[{"type":"text","text":"Done."}]},
      {"role":"user","content":[{"type":"text","text":"Thanks"}]}],
    "tools":[{"name":"shell","input_schema":{"type":"object"}},
             {"name":"read_file","input_schema":{"type":"object"}}]})"));
  // The body keeps the API's field order on the wire, model first.
  CHECK(req.body.rfind(R"({"model":"claude-sonnet-4-5","max_tokens":4096,"messages":)", 0) == 0);
  // Byte for byte the dump of the ordered tree (the body is written as text around the messages),
  // with and without tools, and for a model name that needs escaping.
  for (const bool with_tools : {true, false}) {
    using ojson = nlohmann::ordered_json;
    const std::string model = "m\"\u00e9\n";
    ojson tree = ojson::object();
    tree["model"] = model;
    tree["max_tokens"] = 4096;
    tree["messages"] = ojson(anthropic_messages(contents));
    tree["stream"] = with_tools;
    if (with_tools) {
      tree["tools"] = ojson::array({ojson{{"name", "shell"}, {"input_schema", ojson{{"type", "object"}}}},
                                    ojson{{"name", "read_file"}, {"input_schema", ojson{{"type", "object"}}}}});
    }
    const std::vector<std::string> tools =
        with_tools ? std::vector<std::string>{"shell", "read_file"} : std::vector<std::string>{};
    CHECK(codec().make_request(contents, model, tools, with_tools).body == tree.dump());
  }

  const json unary = json::parse(codec().make_request(contents, "m", {}, false).body);
  CHECK(unary["stream"] == false);
  CHECK_FALSE(unary.contains("tools"));
  CHECK(codec().provider() == "anthropic");
  CHECK(codec_for("anthropic") == &codec());
}

TEST_CASE("anthropic encoding: the messages are written as text, byte for byte the tree dumped") {
  // make_request writes the messages without building them (append_anthropic_messages);
  // anthropic_messages builds the same as a tree. Thinking and redacted thinking first, missing
  // ids filled in, results matched by name, empty text dropped, escaping, non-ASCII text.
  const std::vector<json> histories = {
      json::array(),
      json::parse(R"([{"role":"user","parts":[{"text":"Deploy \"it\"\n\u00e9 \u0001"}]}])"),
      json::parse(R"([
        {"role":"user","parts":[{"text":"go"}]},
        {"role":"model","parts":[{"text":"Plan","thought":true,"thoughtSignature":"sig1"},{"thoughtSignature":"EmwK","redacted":true},
                                 {"text":"x","thought":true},
                                 {"functionCall":{"name":"shell","args":{"command":"ls \"x\""}}},{"text":""},{"text":"then"},
                                 {"functionCall":{"name":"read","args":"not an object","id":"c2"}}]},
        {"role":"user","parts":[{"text":"also this"},{"functionResponse":{"name":"read","response":{"o":"\u00e9"}}},
                                {"functionResponse":{"name":"shell"}}]},
        {"role":"model","parts":[]},
        {"role":"user"}
      ])"),
  };
  for (const json& contents : histories) {
    INFO(contents.dump());
    const std::string body = codec().make_request(contents, "m", {}, true).body;
    CHECK(body == "{\"model\":\"m\",\"max_tokens\":4096,\"messages\":" + anthropic_messages(contents).dump() + ",\"stream\":true}");
  }
}

TEST_CASE("anthropic encoding: tool_results lead a user message, missing ids are filled in") {
  const json contents = json::parse(R"([
    {"role":"user","parts":[{"text":"go"}]},
    {"role":"model","parts":[{"functionCall":{"name":"shell","args":{}}},{"text":""},{"text":"then"}]},
    {"role":"user","parts":[{"text":"also this"},{"functionResponse":{"name":"shell","response":{"o":1}}}]}
  ])");
  CHECK(anthropic_messages(contents) == json::parse(R"([
    {"role":"user","content":[{"type":"text","text":"go"}]},
    {"role":"assistant","content":[{"type":"text","text":"then"},
      {"type":"tool_use","id":"toolu_rut_1_0","name":"shell","input":{}}]},
    {"role":"user","content":[
      {"type":"tool_result","tool_use_id":"toolu_rut_1_0","content":"{\"o\":1}"},
      {"type":"text","text":"also this"}]}
  ])"));
}

TEST_CASE("anthropic stream: text as it arrives, each tool_use whole at its block stop, finish at message_stop") {
  std::unique_ptr<IStreamDecoder> d;
  const Decoded out = decode_stream(kStream, 0, &d);
  REQUIRE(out.parts.size() == 4);
  CHECK(*out.parts[0].text == "Deploying ");
  CHECK(*out.parts[1].text == "now ✓.");
  REQUIRE(out.parts[2].call);
  CHECK(*out.parts[2].call == FunctionCall{"deploy", {{"target", "staging"}, {"n", 2}}, "toolu_a"});
  CHECK(out.parts[2].position_in_frame == 0);
  CHECK(*out.parts[3].call == FunctionCall{"shell", json::object(), "toolu_b"});
  CHECK(out.parts[3].position_in_frame == 0);
  CHECK(out.finish == FinishClass::kStop);
  CHECK(out.finish_reason == "tool_use");
  CHECK_FALSE(out.stream_error);
  CHECK_FALSE(out.undecodable);
  CHECK_FALSE(d->repaired_open_call(""));
}

TEST_CASE("anthropic stream: each frame that opens a tool_use or adds to its input says how many fragments it has") {
  auto decoder = codec().stream_decoder();
  rut::SseDecoder sse;
  std::vector<rut::SseFrame> frames;
  sse.feed(kStream, frames);
  std::vector<int> seen;  // open_call_fragments per frame, -1 for none
  for (const auto& f : frames) seen.push_back(decoder->on_frame(f).open_call_fragments.value_or(-1));
  // message_start, ping, the text block (start, two deltas, stop), deploy (start, 2 fragments, a
  // ping, its third, stop), shell (start, an empty delta, stop), message_delta, message_stop.
  CHECK(seen == std::vector<int>{-1, -1, -1, -1, -1, -1, 0, 1, -1, 2, 3, -1, 0, 0, -1, -1, -1});
}

TEST_CASE("anthropic stream: the same parts and finish under any chunking") {
  const Decoded whole = decode_stream(kStream);
  for (std::size_t step : {1, 2, 3, 5, 7, 13, 64, 200}) {
    INFO("step " << step);
    const Decoded d = decode_stream(kStream, step);
    CHECK(text_of(d.parts) == text_of(whole.parts));
    CHECK(calls_of(d.parts) == calls_of(whole.parts));
    CHECK(d.finish == whole.finish);
    CHECK(d.finish_reason == whole.finish_reason);
  }
  // Every split into two writes.
  for (std::size_t cut = 1; cut < kStream.size(); ++cut) {
    auto decoder = codec().stream_decoder();
    SseDecoder sse;
    std::vector<SseFrame> frames;
    sse.feed(std::string_view(kStream).substr(0, cut), frames);
    sse.feed(std::string_view(kStream).substr(cut), frames);
    std::vector<ModelPart> parts;
    std::optional<FinishClass> finish;
    for (const auto& f : frames) {
      DecodedChunk c = decoder->on_frame(f);
      for (auto& p : c.parts) parts.push_back(std::move(p));
      if (c.finish) finish = c.finish;
    }
    if (text_of(parts) != text_of(whole.parts) || calls_of(parts) != calls_of(whole.parts) ||
        finish != whole.finish) {
      FAIL("split at byte " << cut << " decodes differently");
    }
  }
}

TEST_CASE("anthropic stream: blocks are keyed by index, so interleaved tool_use blocks keep their arguments") {
  const std::string s =
      ev("content_block_start", R"({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_a","name":"a","input":{}}})") +
      ev("content_block_start", R"({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_b","name":"b","input":{}}})") +
      ev("content_block_delta", R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"x\":"}})") +
      ev("content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"y\":"}})") +
      ev("content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"1}"}})") +
      ev("content_block_delta", R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"2}"}})") +
      ev("content_block_stop", R"({"type":"content_block_stop","index":1})") +
      ev("content_block_stop", R"({"type":"content_block_stop","index":0})");
  const auto calls = calls_of(decode_stream(s).parts);
  REQUIRE(calls.size() == 2);
  CHECK(calls[0] == FunctionCall{"b", {{"x", 2}}, "toolu_b"});
  CHECK(calls[1] == FunctionCall{"a", {{"y", 1}}, "toolu_a"});
}

TEST_CASE("anthropic finish classes for every stop_reason") {
  const std::vector<std::pair<std::string, FinishClass>> cases = {
      {R"("end_turn")", FinishClass::kStop},
      {R"("tool_use")", FinishClass::kStop},
      {R"("stop_sequence")", FinishClass::kStop},
      {R"("max_tokens")", FinishClass::kMaxTokens},
      {R"("model_context_window_exceeded")", FinishClass::kMaxTokens},
      {R"("refusal")", FinishClass::kContentFilter},
      {R"("pause_turn")", FinishClass::kOther},
      {R"("something_new")", FinishClass::kOther},
      {"null", FinishClass::kOther}};
  for (const auto& [reason, cls] : cases) {
    INFO("stop_reason " << reason);
    const Decoded d = decode_stream(finish_stream(reason));
    CHECK(d.finish == cls);
    CHECK(d.finish_reason == (reason == "null" ? "null" : json::parse(reason).get<std::string>()));
  }
  // No finish before message_stop, even after message_delta.
  CHECK_FALSE(decode_stream(ev("message_delta", R"({"type":"message_delta","delta":{"stop_reason":"end_turn"}})")).finish);
}

TEST_CASE("anthropic stream: an error event is an in-stream error, ping is ignored, bad JSON is undecodable") {
  Decoded d = decode_stream(
      ev("content_block_start", R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})") +
      ev("content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"partial "}})") +
      ev("error", R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})"));
  CHECK(text_of(d.parts) == "partial ");
  REQUIRE(d.stream_error);
  CHECK(*d.stream_error == "overloaded_error: Overloaded");
  CHECK_FALSE(d.finish);

  d = decode_stream(ev("ping", R"({"type":"ping"})"));
  CHECK(d.parts.empty());
  CHECK_FALSE(d.finish);
  CHECK_FALSE(d.stream_error);
  CHECK_FALSE(d.undecodable);

  d = decode_stream(ev("content_block_delta", R"({"type":"content_block_delta","index":)"));
  CHECK(d.undecodable);
}

TEST_CASE("anthropic stream: a tool_use whose input does not parse ends the attempt as a malformed call") {
  const std::string cut_block =
      ev("content_block_start", R"({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_a","name":"a","input":{}}})") +
      ev("content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"x\":"}})") +
      ev("content_block_stop", R"({"type":"content_block_stop","index":0})");
  // Decided by what follows the block: any stop_reason but max_tokens, or another block.
  for (const std::string& next :
       {ev("message_delta", R"({"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":3}})"),
        ev("content_block_start", R"({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}})"),
        ev("message_stop", R"({"type":"message_stop"})")}) {
    const Decoded d = decode_stream(cut_block + next);
    CHECK(calls_of(d.parts).empty());
    CHECK(d.finish == FinishClass::kMalformedCall);
  }
}

TEST_CASE("anthropic stream: a tool_use the max_tokens finish cut is dropped, the attempt ends as max tokens") {
  // POLICY.md "Truncation": fine-grained tool streaming sends the partial input, closes the block,
  // then stop_reason max_tokens.
  std::unique_ptr<IStreamDecoder> dec;
  const Decoded d = decode_stream(
      ev("content_block_start", R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})") +
      ev("content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Deploying."}})") +
      ev("content_block_stop", R"({"type":"content_block_stop","index":0})") +
      ev("content_block_start", R"({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_a","name":"deploy","input":{}}})") +
      ev("content_block_delta", R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"target\":\"pro"}})") +
      ev("content_block_stop", R"({"type":"content_block_stop","index":1})") +
      ev("message_delta", R"({"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":9}})") +
      ev("message_stop", R"({"type":"message_stop"})"), 0, &dec);
  CHECK(calls_of(d.parts).empty());
  CHECK(d.finish == FinishClass::kMaxTokens);
  // The defect truncation-as-complete (and nothing else) reads it, repaired.
  const auto cut = dec->repaired_open_call("");
  REQUIRE(cut);
  CHECK(*cut == FunctionCall{"deploy", {{"target", "pro"}}, "toolu_a"});
}

TEST_CASE("anthropic repaired_open_call: the started, unstopped tool_use with its arguments closed") {
  std::unique_ptr<IStreamDecoder> d;
  const std::string head =
      ev("content_block_start", R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})") +
      ev("content_block_stop", R"({"type":"content_block_stop","index":0})") +
      ev("content_block_start", R"({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_a","name":"deploy","input":{}}})");
  decode_stream(head, 0, &d);
  auto call = d->repaired_open_call("");
  REQUIRE(call);
  CHECK(*call == FunctionCall{"deploy", json::object(), "toolu_a"});

  const std::string one_fragment =
      head + ev("content_block_delta", R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"target\":\"stag"}})");
  decode_stream(one_fragment, 0, &d);
  call = d->repaired_open_call(R"({"type":"content_block_delta","index":1,"delta":{"type":"input_js)");
  REQUIRE(call);
  CHECK(*call == FunctionCall{"deploy", {{"target", "stag"}}, "toolu_a"});

  decode_stream(one_fragment +
                    ev("content_block_delta", R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ing\"}"}})") +
                    ev("content_block_stop", R"({"type":"content_block_stop","index":1})"),
                0, &d);
  CHECK_FALSE(d->repaired_open_call(""));  // stopped whole: not open
  CHECK_FALSE(codec().stream_decoder()->repaired_open_call(""));
}

TEST_CASE("anthropic non-streaming body: blocks in order, calls numbered, stop_reason as finish") {
  DecodedChunk c = codec().decode_body(R"({"id":"msg_1","type":"message","role":"assistant","model":"m",
    "content":[{"type":"thinking","thinking":"t"},{"type":"text","text":"Running."},
               {"type":"tool_use","id":"toolu_a","name":"a","input":{"x":1}},
               {"type":"tool_use","id":"toolu_b","name":"b","input":{}}],
    "stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}})");
  REQUIRE(c.parts.size() == 3);
  CHECK(*c.parts[0].text == "Running.");
  CHECK(*c.parts[1].call == FunctionCall{"a", {{"x", 1}}, "toolu_a"});
  CHECK(c.parts[1].position_in_frame == 0);
  CHECK(c.parts[2].position_in_frame == 1);
  CHECK(c.finish == FinishClass::kStop);
  CHECK(c.finish_reason == "tool_use");

  c = codec().decode_body(R"({"type":"message","content":[{"type":"text","text":"x"}],"stop_reason":null})");
  CHECK_FALSE(c.finish);
  c = codec().decode_body(R"({"type":"message","content":[],"stop_reason":"refusal"})");
  CHECK(c.finish == FinishClass::kContentFilter);
  c = codec().decode_body(R"({"type":"error","error":{"type":"api_error","message":"Internal server error"}})");
  REQUIRE(c.stream_error);
  CHECK(*c.stream_error == "api_error: Internal server error");
  CHECK(codec().decode_body("{cut").undecodable);
}

TEST_CASE("anthropic error answers: type and message, Retry-After from retry-after-ms or retry-after") {
  const std::string body = R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})";
  ProviderError e = codec().parse_error(body, {});
  CHECK(e.message == "overloaded_error: Overloaded");
  CHECK(e.retry_after_s == 0);
  CHECK(codec().parse_error(body, {{"retry-after", "30"}, {"x-should-retry", "true"}}).retry_after_s == 30);
  CHECK(codec().parse_error(body, {{"retry-after", "1.5"}}).retry_after_s == 1.5);
  CHECK(codec().parse_error(body, {{"retry-after-ms", "2500"}, {"retry-after", "9"}}).retry_after_s == 2.5);
  CHECK(codec().parse_error(body, {{"retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"}}).retry_after_s == 0);
  CHECK(codec().parse_error("<html>bad gateway</html>", {}).message.empty());
}

}  // namespace rut::anthropic_codec_test
