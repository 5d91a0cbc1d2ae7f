// Tests of the runtime's OpenAI Chat Completions codec: the request it builds from the neutral
// history, the stream decoder (calls by index, finish only at [DONE], any chunking), the
// non-streaming body, error envelopes and Retry-After headers.
#include "runtime_under_test/openai_chat_codec.h"
#include "runtime_under_test/codec_test_util.h"

#include <catch2/catch.hpp>

#include "runtime_under_test/model_client.h"
#include "runtime_under_test/sse_decoder.h"

namespace {

using nlohmann::json;
using rut::DecodedChunk;
using rut::FinishClass;

const rut::ICodec& codec() { return rut::openai_chat_codec(); }

std::string chunk(const json& delta, const json& finish_reason = nullptr) {
  json c = {{"id", "chatcmpl-1"},
            {"object", "chat.completion.chunk"},
            {"created", 1},
            {"model", "gpt-4.1-mini"},
            {"choices", json::array({{{"index", 0}, {"delta", delta}, {"finish_reason", finish_reason}}})}};
  return "data: " + c.dump() + "\n\n";
}
std::string call_start(int index, const std::string& id, const std::string& name) {
  return chunk({{"tool_calls", json::array({{{"index", index}, {"id", id}, {"type", "function"},
                                             {"function", {{"name", name}, {"arguments", ""}}}}})}});
}
std::string call_piece(int index, const std::string& piece) {
  return chunk({{"tool_calls", json::array({{{"index", index}, {"function", {{"arguments", piece}}}}})}});
}
const std::string kDone = "data: [DONE]\n\n";

using rut::testing::Decoded;

/// Decodes `bytes` in pieces of `step`, flushing an unterminated last line at the end.
Decoded decode_stream(const std::string& bytes, std::size_t step = 0) {
  auto decoder = codec().stream_decoder();
  return rut::testing::decode_with(*decoder, bytes, step, /*finish_at_end=*/true);
}

/// A transport that answers once with fixed bytes.
class OneShot final : public rut::ITransport {
 public:
  OneShot(int status, std::string body, std::vector<std::pair<std::string, std::string>> headers = {})
      : status_(status), body_(std::move(body)), headers_(std::move(headers)) {}
  rut::TransportResult post(const rut::HttpRequest&, const std::function<bool(std::string_view)>& on_body) override {
    on_body(body_);
    return {status_, rut::TransportEnd::kComplete, headers_};
  }

 private:
  int status_;
  std::string body_;
  std::vector<std::pair<std::string, std::string>> headers_;
};

rut::AttemptResult run_once(OneShot transport, bool stream = true) {
  rut::VirtualClock clock;
  rut::DefectSet defects;
  rut::ModelClient client(transport, clock, defects, 60, {"shell"}, &codec(), stream);
  const json contents = json::array({{{"role", "user"}, {"parts", json::array({{{"text", "go"}}})}}});
  return client.run(client.make_request(contents, "gpt-4.1-mini"), [](const rut::ModelPart&) {});
}

}  // namespace

TEST_CASE("chat codec: the request targets /v1/chat/completions with a bearer key") {
  const json contents = json::array({{{"role", "user"}, {"parts", json::array({{{"text", "hi"}}})}}});
  const auto req = codec().make_request(contents, "gpt-4.1-mini", {"shell", "read"}, true);
  CHECK(req.target == "/v1/chat/completions");
  CHECK(req.headers == std::vector<std::pair<std::string, std::string>>{
                           {"Content-Type", "application/json"}, {"Authorization", "Bearer hiccup"}});
  const json body = json::parse(req.body);
  CHECK(body["model"] == "gpt-4.1-mini");
  CHECK(body["stream"] == true);
  CHECK(body["stream_options"] == json{{"include_usage", true}});
  CHECK(body["messages"] == json::parse(R"([{"role":"user","content":"hi"}])"));
  CHECK(body["tools"] == json::parse(R"([
    {"type":"function","function":{"name":"shell","parameters":{"type":"object"}}},
    {"type":"function","function":{"name":"read","parameters":{"type":"object"}}}])"));

  const json unary = json::parse(codec().make_request(contents, "m", {}, false).body);
  CHECK(unary["stream"] == false);
  CHECK_FALSE(unary.contains("stream_options"));
  CHECK_FALSE(unary.contains("tools"));
}

TEST_CASE("chat codec: the neutral history becomes user, assistant and tool messages") {
  // The shape the mock decodes back into the same roles, texts, calls and ids.
  const json contents = json::parse(R"([
    {"role":"user","parts":[{"text":"Compare a and b."}]},
    {"role":"model","parts":[{"text":"Reading."},
      {"functionCall":{"name":"read","args":{"path":"a"},"id":"call_1_0"}},
      {"functionCall":{"name":"read","args":{"path":"b"},"id":"call_1_1"}}]},
    {"role":"user","parts":[
      {"functionResponse":{"name":"read","id":"call_1_0","response":{"output":"A"}}},
      {"functionResponse":{"name":"read","id":"call_1_1","response":{"output":"B"}}}]},
    {"role":"model","parts":[{"functionCall":{"name":"diff","args":{},"id":"call_2_0"}}]},
    {"role":"user","parts":[{"functionResponse":{"name":"diff","id":"call_2_0","response":{"output":""}}}]},
    {"role":"model","parts":[{"text":"Same."}]},
    {"role":"user","parts":[{"text":"Thanks"}]}
  ])");
  const json messages = json::parse(codec().make_request(contents, "m", {}, true).body)["messages"];
  CHECK(messages == json::parse(R"([
    {"role":"user","content":"Compare a and b."},
    {"role":"assistant","content":"Reading.","tool_calls":[
      {"id":"call_1_0","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}},
      {"id":"call_1_1","type":"function","function":{"name":"read","arguments":"{\"path\":\"b\"}"}}]},
    {"role":"tool","tool_call_id":"call_1_0","content":"{\"output\":\"A\"}"},
    {"role":"tool","tool_call_id":"call_1_1","content":"{\"output\":\"B\"}"},
    {"role":"assistant","content":null,"tool_calls":[
      {"id":"call_2_0","type":"function","function":{"name":"diff","arguments":"{}"}}]},
    {"role":"tool","tool_call_id":"call_2_0","content":"{\"output\":\"\"}"},
    {"role":"assistant","content":"Same."},
    {"role":"user","content":"Thanks"}
  ])"));
}

TEST_CASE("chat codec: calls without ids get one, and their responses follow by position") {
  const json contents = json::parse(R"([
    {"role":"user","parts":[{"text":"go"}]},
    {"role":"model","parts":[{"functionCall":{"name":"a","args":{}}},{"functionCall":{"name":"b","args":{}}}]},
    {"role":"user","parts":[{"functionResponse":{"name":"a","response":{}}},{"functionResponse":{"name":"b","response":{}}}]}
  ])");
  const json m = json::parse(codec().make_request(contents, "m", {}, true).body)["messages"];
  REQUIRE(m.size() == 4);
  CHECK(m[1]["tool_calls"][0]["id"] == "call_h0_0");
  CHECK(m[1]["tool_calls"][1]["id"] == "call_h0_1");
  CHECK(m[2]["tool_call_id"] == "call_h0_0");
  CHECK(m[3]["tool_call_id"] == "call_h0_1");
}

TEST_CASE("chat decoder: text at once, a call once its arguments are whole, the finish only at [DONE]") {
  const std::string bytes = chunk({{"role", "assistant"}, {"content", ""}}) + chunk({{"content", "Hi"}}) +
                            call_start(0, "call_0_0", "shell") + call_piece(0, R"({"comm)") +
                            call_piece(0, R"(and":"ls"})") + chunk(json::object(), "tool_calls") + kDone;
  auto decoder = codec().stream_decoder();
  rut::SseDecoder sse;
  std::vector<rut::SseFrame> frames;
  sse.feed(bytes, frames);
  REQUIRE(frames.size() == 7);
  CHECK(decoder->on_frame(frames[0]).parts.empty());
  const DecodedChunk text = decoder->on_frame(frames[1]);
  REQUIRE(text.parts.size() == 1);
  CHECK(*text.parts[0].text == "Hi");
  CHECK_FALSE(text.open_call_fragments);
  for (int i = 2; i <= 3; ++i) {  // the start (arguments "") and a piece that is not JSON yet
    const DecodedChunk c = decoder->on_frame(frames[static_cast<std::size_t>(i)]);
    CHECK(c.parts.empty());
    CHECK_FALSE(c.finish);
    CHECK(c.open_call_fragments == i - 2);  // the open call's argument fragments so far
  }
  const DecodedChunk whole = decoder->on_frame(frames[4]);
  CHECK_FALSE(whole.finish);
  CHECK_FALSE(whole.open_call_fragments);  // the call is whole: no longer open
  REQUIRE(whole.parts.size() == 1);
  CHECK(*whole.parts[0].call == rut::FunctionCall{"shell", json{{"command", "ls"}}, "call_0_0"});
  const DecodedChunk fin = decoder->on_frame(frames[5]);
  CHECK_FALSE(fin.finish);  // not before [DONE]
  CHECK(fin.parts.empty());  // the call was handed out once
  const DecodedChunk done = decoder->on_frame(frames[6]);
  CHECK(done.finish == FinishClass::kStop);
  CHECK(done.finish_reason == "tool_calls");
}

TEST_CASE("chat decoder: a call with empty arguments is handed out at the finish chunk") {
  const Decoded d = decode_stream(call_start(0, "c", "now") + chunk(json::object(), "tool_calls") + kDone);
  REQUIRE(d.parts.size() == 1);
  CHECK(*d.parts[0].call == rut::FunctionCall{"now", json::object(), "c"});
  CHECK(d.finish == FinishClass::kStop);
}

TEST_CASE("chat decoder: argument text after a call looked whole makes the attempt a malformed call") {
  const Decoded d = decode_stream(call_start(0, "c", "f") + call_piece(0, R"({"a":1})") + call_piece(0, R"({"b":2})") +
                                  chunk(json::object(), "tool_calls") + kDone);
  CHECK(d.finish == FinishClass::kMalformedCall);
  const Decoded ws = decode_stream(call_start(0, "c", "f") + call_piece(0, R"({"a":1})") + call_piece(0, " \n") +
                                   chunk(json::object(), "tool_calls") + kDone);
  CHECK(ws.finish == FinishClass::kStop);
}

TEST_CASE("chat decoder: a call whole before a cut is delivered, the attempt stays incomplete") {
  const Decoded d = decode_stream(call_start(0, "c", "shell") + call_piece(0, R"({"command":"ls"})"));
  REQUIRE(d.parts.size() == 1);
  CHECK(d.parts[0].call->name == "shell");
  CHECK_FALSE(d.finish);
}

TEST_CASE("chat decoder: parallel calls accumulate by index, whatever the interleaving") {
  const std::string bytes = call_start(0, "call_a", "read") + call_start(1, "call_b", "read") +
                            call_piece(1, R"({"path":)") + call_piece(0, R"({"path":"a"})") +
                            call_piece(1, R"("b"})") + chunk(json::object(), "tool_calls") + kDone;
  const Decoded d = decode_stream(bytes);
  REQUIRE(d.parts.size() == 2);
  CHECK(*d.parts[0].call == rut::FunctionCall{"read", json{{"path", "a"}}, "call_a"});
  CHECK(*d.parts[1].call == rut::FunctionCall{"read", json{{"path", "b"}}, "call_b"});
  // Each started alone in its chunk: position 0 (what the collapse-parallel-calls defect keys on).
  CHECK(d.parts[0].position_in_frame == 0);
  CHECK(d.parts[1].position_in_frame == 0);
  CHECK(d.finish == FinishClass::kStop);

  // Two calls started in one chunk keep their positions in it.
  const std::string both =
      chunk({{"tool_calls", json::array({{{"index", 0}, {"id", "c0"}, {"function", {{"name", "x"}, {"arguments", "{}"}}}},
                                         {{"index", 1}, {"id", "c1"}, {"function", {{"name", "y"}, {"arguments", "{}"}}}}})}}) +
      chunk(json::object(), "tool_calls") + kDone;
  const Decoded b = decode_stream(both);
  REQUIRE(b.parts.size() == 2);
  CHECK(b.parts[1].position_in_frame == 1);
}

TEST_CASE("chat decoder: any chunking of the bytes gives the same parts and finish") {
  const std::string bytes = chunk({{"role", "assistant"}, {"content", ""}}) + chunk({{"content", "Héllo "}}) +
                            chunk({{"content", "wörld"}}) + call_start(0, "call_0_0", "shell") +
                            call_piece(0, R"({"command":)") + call_piece(0, R"("./deploy.sh"})") +
                            chunk(json::object(), "tool_calls") + kDone;
  const Decoded whole = decode_stream(bytes);
  REQUIRE(whole.parts.size() == 3);
  REQUIRE(whole.finish);
  for (std::size_t step = 1; step <= 64; ++step) {
    const Decoded d = decode_stream(bytes, step);
    REQUIRE(d.parts.size() == whole.parts.size());
    CHECK(*d.parts[0].text == "Héllo ");
    CHECK(*d.parts[1].text == "wörld");
    CHECK(*d.parts[2].call == *whole.parts[2].call);
    CHECK(d.finish == whole.finish);
  }
}

TEST_CASE("chat decoder: every finish reason maps to its class") {
  auto finish_of = [](const char* reason) {
    const Decoded d = decode_stream(chunk({{"content", "x"}}) + chunk(json::object(), reason) + kDone);
    REQUIRE(d.finish);
    return *d.finish;
  };
  CHECK(finish_of("stop") == FinishClass::kStop);
  CHECK(finish_of("tool_calls") == FinishClass::kStop);
  CHECK(finish_of("length") == FinishClass::kMaxTokens);
  CHECK(finish_of("content_filter") == FinishClass::kContentFilter);
  CHECK(finish_of("something_new") == FinishClass::kOther);
  CHECK(rut::openai_chat_finish_class("function_call") == FinishClass::kStop);
}

TEST_CASE("chat decoder: a usage chunk between the finish and [DONE] changes nothing") {
  const std::string usage =
      R"(data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}})"
      "\n\n";
  const Decoded d = decode_stream(chunk({{"content", "x"}}) + chunk(json::object(), "stop") + usage + kDone);
  CHECK(d.finish == FinishClass::kStop);
  CHECK(d.parts.size() == 1);
  CHECK(d.finish_frame == 4);
}

TEST_CASE("chat decoder: in-stream errors, model_error and undecodable frames") {
  const Decoded err = decode_stream(
      chunk({{"content", "x"}}) +
      R"(data: {"error":{"message":"That model is currently overloaded","type":"server_error","param":null,"code":null}})"
      "\n\n");
  REQUIRE(err.stream_error);
  CHECK(*err.stream_error == "server_error: That model is currently overloaded");
  CHECK_FALSE(err.finish);

  const Decoded model_error = decode_stream(
      R"(data: {"error":{"message":"The model produced invalid content.","type":"model_error","param":null,"code":null}})"
      "\n\n");
  CHECK(model_error.finish == FinishClass::kMalformedCall);
  CHECK_FALSE(model_error.stream_error);

  const Decoded bad = decode_stream(chunk({{"content", "x"}}) + "data: {\"choices\":[{\n\n");
  CHECK(bad.undecodable);

  // Arguments that are no JSON object make the attempt a malformed call at [DONE].
  const Decoded args = decode_stream(call_start(0, "c", "f") + call_piece(0, "{\"a\":") +
                                     chunk(json::object(), "tool_calls") + kDone);
  CHECK(args.finish == FinishClass::kMalformedCall);
  CHECK(args.parts.empty());
}

TEST_CASE("chat decoder: a stream that ends after finish_reason without [DONE] is incomplete") {
  const Decoded d = decode_stream(chunk({{"content", "x"}}) + chunk(json::object(), "stop"));
  CHECK_FALSE(d.finish);
  // Through the model client: a clean end without [DONE] fails the attempt as incomplete.
  const auto r = run_once(OneShot(200, chunk({{"content", "x"}}) + chunk(json::object(), "stop")));
  CHECK_FALSE(r.ok);
  CHECK(r.error == rut::ErrorCode::kIncompleteStream);
  const auto ok = run_once(OneShot(200, chunk({{"content", "x"}}) + chunk(json::object(), "stop") + kDone));
  CHECK(ok.ok);
  CHECK(ok.finish_reason == "stop");
}

TEST_CASE("chat decoder: [DONE] without a finish_reason is an unknown finish") {
  const Decoded d = decode_stream(chunk({{"content", "x"}}) + kDone);
  CHECK(d.finish == FinishClass::kOther);
}

TEST_CASE("chat decoder: repaired_open_call returns the last started call with repaired arguments") {
  auto decoder = codec().stream_decoder();
  CHECK_FALSE(decoder->repaired_open_call(""));
  rut::SseDecoder sse;
  std::vector<rut::SseFrame> frames;
  frames.clear();
  sse.feed(call_start(0, "call_a", "shell") + call_piece(0, R"({"command":"ls"})"), frames);
  for (const auto& f : frames) (void)decoder->on_frame(f);
  CHECK_FALSE(decoder->repaired_open_call(""));  // call_a is whole: nothing is open
  frames.clear();
  sse.feed(call_start(1, "call_b", "shell") + call_piece(1, R"({"command":"./depl)"), frames);
  for (const auto& f : frames) (void)decoder->on_frame(f);
  auto open = decoder->repaired_open_call("");
  REQUIRE(open);
  CHECK(*open == rut::FunctionCall{"shell", json{{"command", "./depl"}}, "call_b"});

  // A chunk cut mid-frame still carries its argument piece.
  const std::string next = call_piece(1, R"(oy.sh","env":"prod"})");
  auto cut = decoder->repaired_open_call(next.substr(6, 120));
  REQUIRE(cut);
  CHECK(cut->args["command"] == "./deploy.sh");

  // After the finish every call is complete: nothing is open.
  frames.clear();
  sse.feed(chunk(json::object(), "tool_calls"), frames);
  for (const auto& f : frames) (void)decoder->on_frame(f);
  CHECK_FALSE(decoder->repaired_open_call(""));
}

TEST_CASE("chat codec: the non-streaming body decodes into parts and a finish") {
  const DecodedChunk c = codec().decode_body(
      R"({"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hi",)"
      R"("tool_calls":[{"id":"call_1","type":"function","function":{"name":"shell","arguments":"{\"command\":\"ls\"}"}}]},)"
      R"("finish_reason":"tool_calls"}]})");
  REQUIRE(c.parts.size() == 2);
  CHECK(*c.parts[0].text == "Hi");
  CHECK(*c.parts[1].call == rut::FunctionCall{"shell", json{{"command", "ls"}}, "call_1"});
  CHECK(c.finish == FinishClass::kStop);
  CHECK_FALSE(codec().decode_body(R"({"choices":[{"index":0,"message":{"content":"Hal"},"finish_reason":null}]})").finish);
  CHECK(codec().decode_body(R"({"choices":[{"message":{"content":null},"finish_reason":"content_filter"}]})").finish ==
        FinishClass::kContentFilter);
  CHECK(codec().decode_body("{oops").undecodable);
  CHECK(codec().decode_body(R"({"error":{"message":"m","type":"model_error"}})").finish == FinishClass::kMalformedCall);
}

TEST_CASE("chat codec: error envelopes and Retry-After, retry-after-ms first") {
  const std::string body =
      R"({"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}})";
  auto e = codec().parse_error(body, {{"retry-after", "30"}, {"retry-after-ms", "1500"}});
  CHECK(e.message == "requests: Rate limit reached for requests");
  CHECK(e.retry_after_s == 1.5);
  CHECK(codec().parse_error(body, {{"retry-after", "30"}}).retry_after_s == 30);
  CHECK(codec().parse_error(body, {{"retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"}}).retry_after_s == 0);
  CHECK(codec().parse_error(body, {}).retry_after_s == 0);
  CHECK(codec().parse_error("<html>", {}).message.empty());

  const auto r = run_once(OneShot(429, body, {{"retry-after", "12"}}));
  CHECK(r.error == rut::ErrorCode::kHttp429);
  CHECK(r.retry_after_s == 12);
  CHECK(r.message == "HTTP 429 requests: Rate limit reached for requests");
}

TEST_CASE("chat: a call the length finish cut is dropped, the attempt completes truncated, and only the defect runs it") {
  // POLICY.md "Truncation". A call whose arguments do not parse at a `stop` finish stays malformed.
  const std::string cut = chunk({{"content", "Deploying."}}) + call_start(0, "c0", "read") + call_piece(0, R"({"p":1})") +
                          call_start(1, "c1", "deploy") + call_piece(1, R"({"target":"pro)");
  const Decoded d = decode_stream(cut + chunk(json::object(), "length") + kDone);
  CHECK(d.finish == FinishClass::kMaxTokens);
  REQUIRE(d.parts.size() == 2);  // the text and the whole call, not the cut one
  CHECK(d.parts[1].call->name == "read");
  CHECK(decode_stream(cut + chunk(json::object(), "tool_calls") + kDone).finish == FinishClass::kMalformedCall);

  const rut::AttemptResult r = run_once(OneShot(200, cut + chunk(json::object(), "length") + kDone));
  CHECK(r.ok);
  CHECK(r.truncated);
  REQUIRE(r.open_call);
  CHECK(r.open_call->args == json{{"target", "pro"}});
  CHECK(r.parts.size() == 2);

  rut::VirtualClock clock;
  rut::DefectSet defects{rut::Defect::kTruncationAsComplete};
  OneShot transport(200, cut + chunk(json::object(), "length") + kDone);
  rut::ModelClient client(transport, clock, defects, 60, {"shell"}, &codec(), true);
  const json contents = json::array({{{"role", "user"}, {"parts", json::array({{{"text", "go"}}})}}});
  const rut::AttemptResult bad = client.run(client.make_request(contents, "gpt-4.1-mini"), [](const rut::ModelPart&) {});
  CHECK(bad.ok);
  CHECK_FALSE(bad.truncated);
  REQUIRE(bad.parts.size() == 3);
  CHECK(bad.parts[2].call->name == "deploy");
}
