// Tests of the OpenAI Responses wire format (mock side): golden stream bytes, item indexes and
// sequence numbers, every finish, in-stream errors, error envelopes, request decoding into the
// neutral view and the provider's exact 400 messages.
#include <catch2/catch.hpp>

#include "mock_server/openai_responses_format.h"
#include "mock_server/format_test_util.h"
#include "mock_server/script_engine.h"

namespace openai_responses_format_test {

using nlohmann::json;

using mock::testing::parsed_frames;
using mock::testing::played_bytes;

using mock::testing::call;
using mock::testing::join;

namespace {

const mock::WireFormat& fmt() { return mock::openai_responses::format(); }

const mock::ResponseContext kCtx{"gpt-4.1-mini", 3};

/// One SSE pair of a stream: its `event:` name and parsed `data:`.
struct Pair {
  std::string event;
  json data;
};

/// Splits stream bytes into `event:`/`data:` pairs; a data line that does not parse stays a
/// discarded json.
std::vector<Pair> pairs(const std::string& bytes) {
  std::vector<Pair> out;
  std::size_t at = 0;
  while (at < bytes.size()) {
    const std::size_t end = bytes.find("\n\n", at);
    REQUIRE(end != std::string::npos);
    const std::string frame = bytes.substr(at, end - at);
    at = end + 2;
    const std::size_t nl = frame.find('\n');
    REQUIRE(nl != std::string::npos);
    REQUIRE(frame.rfind("event: ", 0) == 0);
    REQUIRE(frame.compare(nl + 1, 6, "data: ") == 0);
    out.push_back({frame.substr(7, nl - 7), json::parse(frame.substr(nl + 7), nullptr, false)});
  }
  return out;
}

/// A whole stream: open, then every event's units.
std::string stream(const std::vector<mock::Event>& events) {
  auto enc = fmt().stream_encoder(kCtx);
  std::string s = enc->open();
  int calls = 0;
  for (const auto& e : events) {
    const bool is_call = std::holds_alternative<mock::CallEvent>(e);
    s += join(enc->event_units(e, is_call ? calls++ : 0));
  }
  return s;
}

/// Decodes `body`, with `"model": "m"` added when it names none (the API requires a model).
mock::DecodedRequest decode(json body) {
  if (body.is_object() && !body.contains("model")) body["model"] = "m";
  return fmt().decode_request("/v1/responses", body.dump());
}

json user_msg(const std::string& text) {
  return {{"type", "message"}, {"role", "user"}, {"content", json::array({{{"type", "input_text"}, {"text", text}}})}};
}
json fc(const std::string& call_id, const std::string& name, const std::string& arguments = "{}") {
  return {{"type", "function_call"}, {"call_id", call_id}, {"name", name}, {"arguments", arguments}};
}
json fco(const std::string& call_id, const std::string& output = "ok") {
  return {{"type", "function_call_output"}, {"call_id", call_id}, {"output", output}};
}

}  // namespace

TEST_CASE("responses: a text, call and stop stream has these exact bytes") {
  const std::string got = stream({mock::TextEvent{"Hi"}, call("shell", {{"command", "ls"}}, "call_hiccup_3_0"),
                                  mock::FinishEvent{mock::FinishReason::kStop}});
  const std::string resp_in_progress =
      R"({"id":"resp_hiccup_3","object":"response","created_at":1700000000,"status":"in_progress","background":false,"completed_at":null,"error":null,"incomplete_details":null,"model":"gpt-4.1-mini","output":[],"parallel_tool_calls":true,"usage":null,"metadata":{}})";
  const std::string msg_done =
      R"({"id":"msg_hiccup_3_0","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Hi"}],"role":"assistant"})";
  const std::string fc_done =
      R"({"id":"fc_hiccup_3_0","type":"function_call","status":"completed","arguments":"{\"command\":\"ls\"}","call_id":"call_hiccup_3_0","name":"shell"})";
  const std::string expected =
      "event: response.created\n"
      R"(data: {"type":"response.created","sequence_number":0,"response":)" + resp_in_progress + "}\n\n"
      "event: response.in_progress\n"
      R"(data: {"type":"response.in_progress","sequence_number":1,"response":)" + resp_in_progress + "}\n\n"
      "event: response.output_item.added\n"
      R"(data: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_hiccup_3_0","type":"message","status":"in_progress","content":[],"role":"assistant"}})" "\n\n"
      "event: response.content_part.added\n"
      R"(data: {"type":"response.content_part.added","sequence_number":3,"item_id":"msg_hiccup_3_0","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}})" "\n\n"
      "event: response.output_text.delta\n"
      R"(data: {"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_hiccup_3_0","output_index":0,"content_index":0,"delta":"Hi","logprobs":[]})" "\n\n"
      "event: response.output_text.done\n"
      R"(data: {"type":"response.output_text.done","sequence_number":5,"item_id":"msg_hiccup_3_0","output_index":0,"content_index":0,"text":"Hi","logprobs":[]})" "\n\n"
      "event: response.content_part.done\n"
      R"(data: {"type":"response.content_part.done","sequence_number":6,"item_id":"msg_hiccup_3_0","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":"Hi"}})" "\n\n"
      "event: response.output_item.done\n"
      R"(data: {"type":"response.output_item.done","sequence_number":7,"output_index":0,"item":)" + msg_done + "}\n\n"
      "event: response.output_item.added\n"
      R"(data: {"type":"response.output_item.added","sequence_number":8,"output_index":1,"item":{"id":"fc_hiccup_3_0","type":"function_call","status":"in_progress","arguments":"","call_id":"call_hiccup_3_0","name":"shell"}})" "\n\n"
      "event: response.function_call_arguments.delta\n"
      R"(data: {"type":"response.function_call_arguments.delta","sequence_number":9,"item_id":"fc_hiccup_3_0","output_index":1,"delta":"{\"command\":\"ls\"}"})" "\n\n"
      "event: response.function_call_arguments.done\n"
      R"(data: {"type":"response.function_call_arguments.done","sequence_number":10,"item_id":"fc_hiccup_3_0","output_index":1,"name":"shell","arguments":"{\"command\":\"ls\"}"})" "\n\n"
      "event: response.output_item.done\n"
      R"(data: {"type":"response.output_item.done","sequence_number":11,"output_index":1,"item":)" + fc_done + "}\n\n"
      "event: response.completed\n"
      R"(data: {"type":"response.completed","sequence_number":12,"response":{"id":"resp_hiccup_3","object":"response","created_at":1700000000,"status":"completed","background":false,"completed_at":1700000001,"error":null,"incomplete_details":null,"model":"gpt-4.1-mini","output":[)" +
      msg_done + "," + fc_done +
      R"(],"parallel_tool_calls":true,"usage":{"input_tokens":8,"input_tokens_details":{"cached_tokens":0},"output_tokens":1,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":9},"metadata":{}}})" "\n\n";
  CHECK(got == expected);
}

TEST_CASE("responses: deltas carry obfuscation padding to 16 code points unless the request turns it off") {
  // As live (pydantic-ai's gpt-5.5 cassette, WIRE-FORMATS.md "Checked against recordings"): "I"
  // came with 15 characters of padding, "\u2019ll" with 13, an argument delta "{\"" with 14.
  mock::ResponseContext ctx = kCtx;
  ctx.include_obfuscation = true;
  auto enc = fmt().stream_encoder(ctx);
  std::string s = enc->open();
  s += join(enc->event_units(mock::TextEvent{"I"}, 0));
  s += join(enc->event_units(mock::TextEvent{"\xe2\x80\x99ll"}, 0));
  s += join(enc->event_units(mock::TextEvent{"a text of twenty chars"}, 0));
  s += join(enc->event_units(call("shell", {{"command", "ls"}}, "call_1", 2), 0));
  std::vector<std::string> pads;
  for (const Pair& p : pairs(s)) {
    if (p.event != "response.output_text.delta" && p.event != "response.function_call_arguments.delta") {
      CHECK_FALSE(p.data.contains("obfuscation"));
      continue;
    }
    REQUIRE(p.data.contains("obfuscation"));
    const std::string pad = p.data["obfuscation"].get<std::string>();
    CHECK(pad.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") == std::string::npos);
    pads.push_back(pad);
  }
  REQUIRE(pads.size() == 5);  // three text deltas, two argument fragments
  CHECK(pads[0].size() == 15);
  CHECK(pads[1].size() == 13);
  CHECK(pads[2].size() == 10);  // 22 code points: padded to 32
  CHECK(pads[0] != pads[1].substr(0, 15));
  // The same context gives the same bytes: deterministic.
  auto again = fmt().stream_encoder(ctx);
  std::string t = again->open();
  t += join(again->event_units(mock::TextEvent{"I"}, 0));
  CHECK(s.rfind(t, 0) == 0);
  // Without the request's say-so (a context made without one) there is none.
  CHECK(stream({mock::TextEvent{"I"}}).find("obfuscation") == std::string::npos);
  CHECK(decode({{"input", "hi"}, {"stream", true}}).include_obfuscation);
  CHECK_FALSE(decode({{"input", "hi"}, {"stream", true}, {"stream_options", {{"include_obfuscation", false}}}}).include_obfuscation);
  CHECK(decode({{"input", "hi"}, {"stream", true}, {"stream_options", nullptr}}).include_obfuscation);
  CHECK(decode({{"input", "hi"}, {"stream", true}, {"stream_options", {{"include_obfuscation", nullptr}}}}).include_obfuscation);
}

TEST_CASE("responses: stream_options and metadata of the wrong shape are 400s naming the parameter") {
  auto rejected = [](json body) {
    const auto d = decode(std::move(body));
    REQUIRE(d.rejection);
    CHECK(d.rejection->status == 400);
    CHECK_FALSE(d.rejection->pairing);
    return json::parse(fmt().error_answer(400, d.rejection->message, std::nullopt).body)["error"];
  };
  const json so = rejected({{"input", "hi"}, {"stream", true}, {"stream_options", "x"}});
  CHECK(so["message"] == "Invalid type for 'stream_options': expected an object, but got a string instead.");
  CHECK(so["type"] == "invalid_request_error");
  CHECK(so["param"] == "stream_options");
  CHECK(so["code"] == "invalid_type");
  const json ob = rejected({{"input", "hi"}, {"stream", true}, {"stream_options", {{"include_obfuscation", "false"}}}});
  CHECK(ob["message"] ==
        "Invalid type for 'stream_options.include_obfuscation': expected a boolean, but got a string instead.");
  CHECK(ob["param"] == "stream_options.include_obfuscation");
  // metadata: an object of at most 16 string values, keys up to 64 characters, values up to 512.
  const json md = rejected({{"input", "hi"}, {"metadata", {{"run", 7}}}});
  CHECK(md["message"] == "Invalid type for 'metadata.run': expected a string, but got an integer instead.");
  CHECK(md["param"] == "metadata.run");
  CHECK(md["code"] == "invalid_type");
  CHECK(rejected({{"input", "hi"}, {"metadata", json::array()}})["param"] == "metadata");
  json many = json::object();
  for (int i = 0; i < 17; ++i) many["k" + std::to_string(i)] = "v";
  const json too_many = rejected({{"input", "hi"}, {"metadata", many}});
  CHECK(too_many["message"] ==
        "Invalid 'metadata': too many properties. Expected an object with at most 16 properties, but got "
        "an object with 17 properties instead.");
  CHECK(too_many["param"] == "metadata");
  const json long_key = rejected({{"input", "hi"}, {"metadata", {{std::string(65, 'k'), "v"}}}});
  CHECK(long_key["param"] == "metadata");
  CHECK(long_key["message"] ==
        "Invalid 'metadata': key too long. Expected a key with maximum length 64, but got a key with "
        "length 65 instead.");
  const json long_value = rejected({{"input", "hi"}, {"metadata", {{"note", std::string(513, 'v')}}}});
  CHECK(long_value["message"] ==
        "Invalid 'metadata.note': string too long. Expected a string with maximum length 512, but got a "
        "string with length 513 instead.");
  CHECK(long_value["param"] == "metadata.note");
  CHECK(long_value["code"] == "string_above_max_length");
  // At the limits, counted in characters (not bytes), it is accepted and echoed.
  many.erase("k16");
  CHECK_FALSE(decode({{"input", "hi"}, {"metadata", many}}).rejection);
  std::string e_acute_512;
  for (int i = 0; i < 512; ++i) e_acute_512 += "\xc3\xa9";
  const auto at_limit = decode({{"input", "hi"}, {"metadata", {{std::string(64, 'k'), e_acute_512}}}});
  CHECK_FALSE(at_limit.rejection);
  CHECK_FALSE(at_limit.metadata.empty());
  CHECK_FALSE(decode({{"input", "hi"}, {"metadata", nullptr}}).rejection);
}

TEST_CASE("responses: the response object says background false, completed_at once completed, and echoes metadata") {
  const auto d = decode({{"input", "hi"}, {"metadata", {{"ticket", "T-1"}}}});
  REQUIRE_FALSE(d.rejection);
  CHECK(d.metadata == R"({"ticket":"T-1"})");
  CHECK(decode({{"input", "hi"}, {"metadata", "x"}}).metadata.empty());
  mock::ResponseContext ctx = kCtx;
  ctx.metadata = d.metadata;
  auto enc = fmt().stream_encoder(ctx);
  std::string s = enc->open();
  s += join(enc->event_units(mock::FinishEvent{mock::FinishReason::kStop}, 0));
  const auto ps = pairs(s);
  REQUIRE(ps.size() == 3);
  for (const Pair& p : ps) {
    CHECK(p.data["response"]["background"] == false);
    CHECK(p.data["response"]["metadata"] == json{{"ticket", "T-1"}});
  }
  CHECK(ps[0].data["response"]["completed_at"].is_null());
  CHECK(ps[2].data["response"]["completed_at"] == 1700000001);
  const json unary = json::parse(fmt().unary_body({mock::TextEvent{"ok"}, mock::FinishEvent{mock::FinishReason::kMaxTokens}}, kCtx));
  CHECK(unary["background"] == false);
  CHECK(unary["completed_at"].is_null());  // incomplete
  CHECK(unary["metadata"] == json::object());
}

TEST_CASE("responses: a run of text events is one message item, closed at a call or the finish") {
  // The live API streams a run of text as output_text deltas of one message item (issue 41): an
  // item per text event made openai-agents and codex, which read the last message item, report
  // only the last fragment.
  const auto p = pairs(stream({mock::TextEvent{"Look"}, mock::TextEvent{"ing."}, call("shell", json::object(), "c1"),
                               mock::TextEvent{"Do"}, mock::TextEvent{"ne."}, mock::FinishEvent{mock::FinishReason::kStop}}));
  std::vector<std::string> seen;
  for (const Pair& f : p) {
    std::string what = f.event;
    if (f.data.contains("output_index")) what += " " + std::to_string(f.data["output_index"].get<int>());
    if (f.data.contains("delta")) what += " " + f.data["delta"].get<std::string>();
    if (f.data.contains("text")) what += " = " + f.data["text"].get<std::string>();
    seen.push_back(what);
  }
  CHECK(seen == std::vector<std::string>{
                    "response.created", "response.in_progress",
                    "response.output_item.added 0", "response.content_part.added 0",
                    "response.output_text.delta 0 Look", "response.output_text.delta 0 ing.",
                    "response.output_text.done 0 = Looking.", "response.content_part.done 0",
                    "response.output_item.done 0",
                    "response.output_item.added 1", "response.function_call_arguments.delta 1 {}",
                    "response.function_call_arguments.done 1", "response.output_item.done 1",
                    "response.output_item.added 2", "response.content_part.added 2",
                    "response.output_text.delta 2 Do", "response.output_text.delta 2 ne.",
                    "response.output_text.done 2 = Done.", "response.content_part.done 2",
                    "response.output_item.done 2", "response.completed"});
  for (std::size_t i = 0; i < p.size(); ++i) CHECK(p[i].data["sequence_number"] == i);
  CHECK(p[8].data["item"]["content"][0]["text"] == "Looking.");
  CHECK(p[8].data["item"]["id"] == "msg_hiccup_3_0");
  const json& output = p.back().data["response"]["output"];
  REQUIRE(output.size() == 3);
  CHECK(output[0]["content"][0]["text"] == "Looking.");
  CHECK(output[1]["type"] == "function_call");
  CHECK(output[2]["content"][0]["text"] == "Done.");
  CHECK(output[2]["id"] == "msg_hiccup_3_2");
}

TEST_CASE("responses: a fault after a text event falls inside its open message item") {
  const std::vector<mock::Event> events = {mock::TextEvent{"Hel"}, mock::TextEvent{"lo"},
                                           mock::FinishEvent{mock::FinishReason::kStop}};
  for (int kind : {0, 1, 2, 4}) {  // disconnect, reset, end, error_event
    INFO("fault kind " << kind);
    const auto plan = mock::testing::play_attempt("openai-responses", "/v1/responses",
                                                  R"({"model":"m","input":"go","stream":true})", events,
                                                  mock::testing::fault_of(kind, 2, std::nullopt));
    const auto frames = parsed_frames(played_bytes(plan));
    std::string text;
    int added = 0;
    for (const json& f : frames) {
      CHECK(f["type"] != "response.output_text.done");
      CHECK(f["type"] != "response.content_part.done");
      CHECK(f["type"] != "response.output_item.done");
      added += f["type"] == "response.output_item.added";
      if (f["type"] == "response.output_text.delta") text += f["delta"].get<std::string>();
      if (f["type"] == "response.failed") CHECK(f["response"]["output"] == json::array());
    }
    CHECK(added == 1);
    CHECK(text == "Hello");
  }
}

TEST_CASE("responses: a call is start, F argument fragments and done, and output_index counts items") {
  auto enc = fmt().stream_encoder(kCtx);
  (void)enc->open();
  CHECK(enc->event_units(mock::TextEvent{"a"}, 0).size() == 1);
  const json args = {{"command", "./deploy.sh staging"}, {"force", true}};
  const auto units = enc->event_units(call("shell", args, "c1", 3), 0);
  REQUIRE(units.size() == 5);
  // The call's start unit first completes the message item the text left open.
  const auto start = pairs(units[0]);
  REQUIRE(start.size() == 4);
  CHECK(start[0].event == "response.output_text.done");
  CHECK(start[1].event == "response.content_part.done");
  CHECK(start[2].event == "response.output_item.done");
  CHECK(start[2].data["output_index"] == 0);
  CHECK(start[3].event == "response.output_item.added");
  CHECK(start[3].data["output_index"] == 1);
  CHECK(start[3].data["item"]["arguments"] == "");
  CHECK(start[3].data["item"]["status"] == "in_progress");
  std::string streamed;
  for (int f = 1; f <= 3; ++f) {
    const auto p = pairs(units[static_cast<std::size_t>(f)]);
    REQUIRE(p.size() == 1);
    CHECK(p[0].event == "response.function_call_arguments.delta");
    CHECK(p[0].data["item_id"] == "fc_hiccup_3_0");
    CHECK(p[0].data["output_index"] == 1);
    CHECK_FALSE(p[0].data["delta"].get<std::string>().empty());
    streamed += p[0].data["delta"].get<std::string>();
  }
  CHECK(streamed == args.dump());
  const auto done = pairs(units[4]);
  REQUIRE(done.size() == 2);
  CHECK(done[0].event == "response.function_call_arguments.done");
  CHECK(done[0].data["arguments"] == args.dump());
  CHECK(done[1].event == "response.output_item.done");
  CHECK(done[1].data["item"]["status"] == "completed");
  CHECK(done[1].data["item"]["call_id"] == "c1");
  CHECK(done[1].data["item"]["arguments"] == args.dump());
  // The next call is the third item.
  const auto next = enc->event_units(call("read", json::object(), "c2"), 1);
  REQUIRE(next.size() == 3);  // default: one fragment
  CHECK(pairs(next[0]).at(0).data["output_index"] == 2);
  CHECK(pairs(next[0]).at(0).data["item"]["id"] == "fc_hiccup_3_1");
  CHECK(pairs(next[1]).at(0).data["delta"] == "{}");
}

TEST_CASE("responses: sequence numbers count every frame from 0 and data type matches the event line") {
  const auto p = pairs(stream({mock::TextEvent{"x"}, call("a", {{"k", 1}}, "c1", 2), mock::TextEvent{"y"},
                               mock::FinishEvent{mock::FinishReason::kStop}}));
  REQUIRE(p.size() == 2 + 6 + (1 + 2 + 2) + 6 + 1);
  for (std::size_t i = 0; i < p.size(); ++i) {
    INFO("frame " << i);
    CHECK(p[i].data["sequence_number"] == i);
    CHECK(p[i].data["type"] == p[i].event);
  }
}

TEST_CASE("responses: each finish ends the response its own way, output holding every item") {
  auto last = [](mock::FinishReason r) {
    return pairs(stream({mock::TextEvent{"t"}, mock::FinishEvent{r}})).back();
  };
  const Pair stop = last(mock::FinishReason::kStop);
  CHECK(stop.event == "response.completed");
  CHECK(stop.data["response"]["status"] == "completed");
  CHECK(stop.data["response"]["output"].size() == 1);
  CHECK(stop.data["response"]["incomplete_details"].is_null());

  const Pair max = last(mock::FinishReason::kMaxTokens);
  CHECK(max.event == "response.incomplete");
  CHECK(max.data["response"]["status"] == "incomplete");
  CHECK(max.data["response"]["incomplete_details"] == json{{"reason", "max_output_tokens"}});
  CHECK(max.data["response"]["output"].size() == 1);

  const Pair filter = last(mock::FinishReason::kContentFilter);
  CHECK(filter.event == "response.incomplete");
  CHECK(filter.data["response"]["incomplete_details"] == json{{"reason", "content_filter"}});

  const Pair malformed = last(mock::FinishReason::kMalformedCall);
  CHECK(malformed.event == "response.failed");
  CHECK(malformed.data["response"]["status"] == "failed");
  CHECK(malformed.data["response"]["error"] ==
        json{{"code", "server_error"},
             {"message", "The model produced invalid content. Consider modifying your prompt if you are "
                         "seeing this error persistently."}});
}

TEST_CASE("responses: the in-stream error is an error event, then response.failed, numbered in turn") {
  // As live: `event: error` with the error nested under `error` (type, code, message, param), then
  // `response.failed`, each with the next sequence number. A recorded live stream
  // (SwiftedMind/SwiftAgent Tests/SwiftAgentTests/OpenAI/OpenAIStreamingErrorHandling.swift,
  // gpt-5-2025-08-07) shows `{"type":"error","sequence_number":2,"error":{"type":"insufficient_quota",
  // "code":"insufficient_quota","message":…,"param":null}}` then `response.failed` number 3; a
  // server_error one is in Soju06/codex-lb#429. openai-node throws on the first (its stream
  // iterator throws APIError for any event whose data has `error`), codex acts on the second.
  // The engine encodes only what goes out: the error follows every event encoded before it.
  auto enc = fmt().stream_encoder(kCtx);
  std::string s = enc->open() + join(enc->event_units(mock::TextEvent{"a"}, 0));
  const std::string bytes = enc->error_event(503);
  const std::string message =
      "An error occurred while processing your request. You can retry your request, or contact us "
      "through our help center at help.openai.com if the error persists. Please include the request "
      "ID req_hiccup_3 in your message.";
  CHECK(bytes.substr(0, bytes.find("\n\n") + 2) ==
        "event: error\n"
        R"(data: {"type":"error","sequence_number":5,"error":{"type":"server_error","code":"server_error","message":")" +
            message + R"(","param":null}})" "\n\n");
  const auto after_text = pairs(bytes);
  REQUIRE(after_text.size() == 2);
  CHECK(after_text[0].event == "error");
  CHECK(after_text[1].event == "response.failed");
  CHECK(after_text[1].data["sequence_number"] == 6);  // 0-1 open, 2-4 the text's open item, 5 error
  const json& r = after_text[1].data["response"];
  CHECK(r["status"] == "failed");
  CHECK(r["error"] == json{{"code", "server_error"}, {"message", message}});
  CHECK(r["output"] == json::array());  // the text's message item was never completed

  // After a delivered call: the next numbers, and the call's item with the text's, which the call
  // completed; 429 is rate_limit_exceeded in both events.
  auto enc2 = fmt().stream_encoder(kCtx);
  (void)enc2->open();
  (void)enc2->event_units(mock::TextEvent{"a"}, 0);
  (void)enc2->event_units(call("shell", json::object(), "c1"), 0);
  const auto q = pairs(enc2->error_event(429));
  REQUIRE(q.size() == 2);
  CHECK(q[0].data == json::parse(R"({"type":"error","sequence_number":12,"error":{"type":"rate_limit_exceeded",
      "code":"rate_limit_exceeded","message":"Rate limit reached for requests. Please try again later.","param":null}})"));
  CHECK(q[1].data["sequence_number"] == 13);  // 0-1 open, 2-4 text, 5-11 its completion and the call, 12 error
  REQUIRE(q[1].data["response"]["output"].size() == 2);
  CHECK(q[1].data["response"]["output"][1]["type"] == "function_call");
  CHECK(q[1].data["response"]["output"][1]["call_id"] == "c1");
  CHECK(q[1].data["response"]["error"]["code"] == "rate_limit_exceeded");

  // Before any event.
  auto enc3 = fmt().stream_encoder(kCtx);
  (void)enc3->open();
  const auto r3 = pairs(enc3->error_event(529));
  REQUIRE(r3.size() == 2);
  CHECK(r3[0].data["sequence_number"] == 2);
  CHECK(r3[0].data["error"]["code"] == "server_error");
  CHECK(r3[1].data["sequence_number"] == 3);
  CHECK(r3[1].data["response"]["output"] == json::array());
  CHECK(r3[1].data["response"]["error"]["code"] == "server_error");
}

TEST_CASE("responses: the malformed frame has valid SSE framing and unparsable JSON") {
  const std::string m = fmt().stream_encoder(kCtx)->malformed_frame();
  const auto p = pairs(m);
  REQUIRE(p.size() == 1);
  CHECK(p[0].data.is_discarded());
}

TEST_CASE("responses: the error envelope has message, type, param, code and Retry-After headers") {
  const auto a = fmt().error_answer(429, fmt().default_message(429), 1.5);
  CHECK(a.body ==
        R"({"error":{"message":"Rate limit reached for requests. Please try again later.","type":"requests","param":null,"code":"rate_limit_exceeded"}})");
  CHECK(a.headers == std::vector<std::pair<std::string, std::string>>{{"retry-after", "2"}, {"retry-after-ms", "1500"}});
  const auto b = fmt().error_answer(503, fmt().default_message(503), 30.0);
  CHECK(b.body ==
        R"({"error":{"message":"The engine is currently overloaded, please try again later.","type":"service_unavailable_error","param":null,"code":"server_is_overloaded"}})");
  CHECK(b.headers == std::vector<std::pair<std::string, std::string>>{{"retry-after", "30"}, {"retry-after-ms", "30000"}});
  // Both round up, so they agree: a positive wait is never "0" ms.
  using Headers = std::vector<std::pair<std::string, std::string>>;
  CHECK(fmt().error_answer(429, "x", 0.0001).headers == Headers{{"retry-after", "1"}, {"retry-after-ms", "1"}});
  CHECK(fmt().error_answer(429, "x", 1.0004).headers == Headers{{"retry-after", "2"}, {"retry-after-ms", "1001"}});
  CHECK(fmt().error_answer(429, "x", 0.1).headers == Headers{{"retry-after", "1"}, {"retry-after-ms", "100"}});
  CHECK(fmt().error_answer(429, "x", 0.0).headers == Headers{{"retry-after", "0"}, {"retry-after-ms", "0"}});
  const auto c = fmt().error_answer(500, fmt().default_message(500), std::nullopt);
  CHECK(c.body ==
        R"({"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}})");
  CHECK(c.headers.empty());
  CHECK(json::parse(fmt().error_answer(401, fmt().default_message(401), std::nullopt).body)["error"]["code"] ==
        "invalid_api_key");
  const auto pairing = fmt().error_answer(400, "No tool output found for function call call_1.", std::nullopt);
  CHECK(pairing.body ==
        R"({"error":{"message":"No tool output found for function call call_1.","type":"invalid_request_error","param":"input","code":null}})");
  CHECK(json::parse(fmt().error_answer(400, "Missing required parameter: 'input[2].call_id'.", std::nullopt).body)["error"] ==
        json{{"message", "Missing required parameter: 'input[2].call_id'."},
             {"type", "invalid_request_error"},
             {"param", "input[2].call_id"},
             {"code", "missing_required_parameter"}});
}

TEST_CASE("responses: a function call without its output is rejected with OpenAI's message") {
  const auto d = decode({{"model", "m"},
                         {"input", json::array({user_msg("go"), fc("call_a", "shell"), fco("call_a"),
                                                fc("call_b", "shell")})}});
  REQUIRE(d.rejection);
  CHECK(d.rejection->status == 400);
  CHECK(d.rejection->message == "No tool output found for function call call_b.");
  CHECK(d.rejection->pairing);
  CHECK(d.contents.is_array());  // what could be decoded is kept for the journal
  // An output placed before its call does not answer it.
  const auto e = decode({{"input", json::array({user_msg("go"), fco("call_a"), fc("call_a", "shell")})}});
  REQUIRE(e.rejection);
  CHECK(e.rejection->message == "No tool call found for function call output with call_id call_a.");
}

TEST_CASE("responses: an output for an unknown call id is rejected with OpenAI's message") {
  const auto d = decode({{"input", json::array({user_msg("go"), fc("call_a", "shell"), fco("call_a"),
                                                fco("call_zz")})}});
  REQUIRE(d.rejection);
  CHECK(d.rejection->message == "No tool call found for function call output with call_id call_zz.");
  CHECK(d.rejection->pairing);
}

TEST_CASE("responses: duplicate call ids in one turn and duplicate item ids are rejected") {
  const auto d = decode({{"input", json::array({user_msg("go"), fc("call_a", "shell"), fc("call_a", "read"),
                                                fco("call_a"), fco("call_a")})}});
  REQUIRE(d.rejection);
  CHECK(d.rejection->message ==
        "Duplicate item found with id call_a. Remove duplicate items from your input and try again.");
  CHECK(d.rejection->pairing);
  json a = fc("call_a", "shell");
  a["id"] = "fc_1";
  json b = fc("call_b", "shell");
  b["id"] = "fc_1";
  const auto e = decode({{"input", json::array({user_msg("go"), a, b, fco("call_a"), fco("call_b")})}});
  REQUIRE(e.rejection);
  CHECK(e.rejection->message ==
        "Duplicate item found with id fc_1. Remove duplicate items from your input and try again.");
  // The same call id in two different turns is not a duplicate within a turn.
  const auto ok = decode({{"input", json::array({user_msg("go"), fc("call_a", "shell"), fco("call_a"),
                                                 fc("call_a", "shell"), fco("call_a")})}});
  CHECK_FALSE(ok.rejection);
}

TEST_CASE("responses: unparsable JSON and a missing input are bad requests, not pairing rejections") {
  const auto bad = fmt().decode_request("/v1/responses", "{\"model\":");
  REQUIRE(bad.rejection);
  CHECK(bad.rejection->message.rfind("We could not parse the JSON body of your request.", 0) == 0);
  CHECK_FALSE(bad.rejection->pairing);
  CHECK(bad.contents.is_null());
  const auto missing = decode({{"model", "m"}, {"stream", true}});
  REQUIRE(missing.rejection);
  CHECK(missing.rejection->message == "Missing required parameter: 'input'.");
  CHECK_FALSE(missing.rejection->pairing);
  CHECK(missing.model == "m");
  CHECK(missing.streaming);
  const auto no_call_id = decode({{"input", json::array({user_msg("go"), json{{"type", "function_call_output"}, {"output", "x"}}})}});
  REQUIRE(no_call_id.rejection);
  CHECK(no_call_id.rejection->message == "Missing required parameter: 'input[1].call_id'.");
  CHECK_FALSE(no_call_id.rejection->pairing);
}

TEST_CASE("responses: wrongly typed requests are 400s naming the field") {
  auto shape = [](const json& body) {
    const auto d = fmt().decode_request("/v1/responses", body.dump());
    REQUIRE(d.rejection);
    CHECK(d.rejection->status == 400);
    CHECK_FALSE(d.rejection->pairing);
    return d.rejection->message;
  };
  // The model is required: no more 200 with "model":"".
  CHECK(shape({{"input", "go"}}) == "Missing required parameter: 'model'.");
  CHECK(shape({{"model", 5}, {"input", "go"}}) == "Invalid type for 'model': expected a string, but got an integer instead.");
  // stream must be a boolean, as in Chat Completions.
  CHECK(shape({{"model", "m"}, {"input", "go"}, {"stream", "yes"}}) ==
        "Invalid type for 'stream': expected a boolean, but got a string instead.");
  CHECK_FALSE(decode({{"input", "go"}, {"stream", nullptr}}).rejection);
  // An empty input.
  CHECK(shape({{"model", "m"}, {"input", json::array()}}) ==
        "Invalid 'input': empty array. Expected an array with minimum length 1, but got an empty array "
        "instead.");
  // Items: no type and no role, an unknown type, a type that is not a string.
  const std::string supported =
      "Supported values are: 'additional_tools', 'apply_patch_call', 'apply_patch_call_output', "
      "'code_interpreter_call', 'compaction', 'compaction_trigger', 'computer_call', "
      "'computer_call_output', 'custom_tool_call', 'custom_tool_call_output', 'file_search_call', "
      "'function_call', 'function_call_output', 'image_generation_call', 'item_reference', "
      "'local_shell_call', 'local_shell_call_output', 'mcp_approval_request', 'mcp_approval_response', "
      "'mcp_call', 'mcp_list_tools', 'message', 'program', 'program_output', 'reasoning', 'shell_call', "
      "'shell_call_output', 'tool_search_call', 'tool_search_output', and 'web_search_call'.";
  CHECK(shape({{"model", "m"}, {"input", json::array({user_msg("go"), {{"content", "hi"}}})}}) ==
        "Invalid value: ''. " + supported);
  CHECK(shape({{"model", "m"}, {"input", json::array({user_msg("go"), {{"type", "wizard"}}})}}) ==
        "Invalid value: 'wizard'. " + supported);
  CHECK(shape({{"model", "m"}, {"input", json::array({{{"type", 3}, {"role", "user"}, {"content", "x"}}})}}) ==
        "Invalid type for 'input[0].type': expected a string, but got an integer instead.");
  // Message content.
  CHECK(shape({{"model", "m"}, {"input", json::array({{{"role", "user"}, {"content", 5}}})}}) ==
        "Invalid type for 'input[0].content': expected one of a string or array of objects, but got an "
        "integer instead.");
  CHECK(shape({{"model", "m"}, {"input", json::array({{{"role", "user"}, {"content", json::array({5})}}})}}) ==
        "Invalid type for 'input[0].content[0]': expected an object, but got an integer instead.");
  CHECK(shape({{"model", "m"}, {"input", json::array({{{"role", "user"}, {"content", json::array({{{"text", "x"}}})}}})}}) ==
        "Missing required parameter: 'input[0].content[0].type'.");
  // What stays accepted: a message without type, an item reference, other known items.
  CHECK_FALSE(decode({{"input", json::array({{{"role", "user"}, {"content", "hi"}},
                                             {{"id", "msg_1"}},
                                             {{"type", "item_reference"}, {"id", "msg_2"}},
                                             {{"type", "reasoning"}, {"id", "rs_1"}, {"summary", json::array()}}})}})
                  .rejection);
  // The envelope names the parameter.
  CHECK(json::parse(fmt().error_answer(400, shape({{"model", "m"}, {"input", json::array()}}), std::nullopt).body)["error"]["param"] ==
        "input");
  CHECK(json::parse(fmt().error_answer(400, shape({{"input", "go"}}), std::nullopt).body)["error"]["param"] == "model");
}

TEST_CASE("responses: two outputs for one call are rejected") {
  const auto d = decode({{"input", json::array({user_msg("go"), fc("call_a", "shell"), fco("call_a"), fco("call_a")})}});
  REQUIRE(d.rejection);
  CHECK(d.rejection->status == 400);
  CHECK(d.rejection->message ==
        "Duplicate function_call_output for call_id 'call_a'. Each function_call must have exactly one "
        "matching function_call_output");
  CHECK(d.rejection->pairing);  // a call/output pairing problem, like Chat's duplicate tool_call_id
  CHECK(json::parse(fmt().error_answer(400, d.rejection->message, std::nullopt).body)["error"]["param"] == "input");
  // In two turns, one output each.
  CHECK_FALSE(decode({{"input", json::array({user_msg("go"), fc("call_a", "shell"), fco("call_a"),
                                             fc("call_a", "shell"), fco("call_a")})}})
                  .rejection);
}

TEST_CASE("responses: a string input is one user content") {
  const auto d = decode({{"model", "gpt-4.1-mini"}, {"input", "Deploy."}, {"stream", false}});
  CHECK_FALSE(d.rejection);
  CHECK(d.model == "gpt-4.1-mini");
  CHECK_FALSE(d.streaming);
  CHECK(d.contents == json::parse(R"([{"role":"user","parts":[{"text":"Deploy."}]}])"));
  CHECK(mock::turn_index(d.contents) == 0);
}

TEST_CASE("responses: a multi-turn input decodes into the neutral view") {
  const json input = json::array({
      {{"role", "developer"}, {"content", "Be brief."}},
      {{"role", "user"}, {"content", "Deploy."}},  // no type: a message
      {{"type", "reasoning"}, {"id", "rs_1"}, {"summary", json::array()}},
      {{"type", "message"}, {"role", "assistant"}, {"content", json::array({{{"type", "output_text"}, {"text", "On it."}}})}},
      fc("call_1", "shell", R"({"command":"./deploy.sh"})"),
      fc("call_2", "read", "not json"),
      fco("call_2", "r2"),
      fco("call_1", "r1"),
      fc("call_3", "shell", "{}"),
      fco("call_3"),
      {{"type", "message"}, {"role", "assistant"}, {"content", "Done."}},
      user_msg("Thanks."),
  });
  const auto d = decode({{"model", "m"}, {"input", input}, {"stream", true}});
  CHECK_FALSE(d.rejection);
  CHECK(d.streaming);
  const json expected = json::parse(R"([
    {"role":"user","parts":[{"text":"Deploy."}]},
    {"role":"model","parts":[{"text":"On it."},
      {"functionCall":{"name":"shell","args":{"command":"./deploy.sh"},"id":"call_1"}},
      {"functionCall":{"name":"read","args":"not json","id":"call_2"}}]},
    {"role":"user","parts":[{"functionResponse":{"name":"read","id":"call_2","response":"r2"}},
                            {"functionResponse":{"name":"shell","id":"call_1","response":"r1"}}]},
    {"role":"model","parts":[{"functionCall":{"name":"shell","args":{},"id":"call_3"}}]},
    {"role":"user","parts":[{"functionResponse":{"name":"shell","id":"call_3","response":"ok"}}]},
    {"role":"model","parts":[{"text":"Done."}]},
    {"role":"user","parts":[{"text":"Thanks."}]}
  ])");
  CHECK(d.contents == expected);
  CHECK(mock::turn_index(d.contents) == 3);
}

TEST_CASE("responses: the non-streaming body is the response object with its status") {
  const std::vector<mock::Event> events = {mock::TextEvent{"Tagging."}, call("shell", {{"c", 1}}, "call_hiccup_3_0"),
                                           mock::FinishEvent{mock::FinishReason::kStop}};
  const json body = json::parse(fmt().unary_body(events, kCtx));
  CHECK(body["object"] == "response");
  CHECK(body["id"] == "resp_hiccup_3");
  CHECK(body["status"] == "completed");
  CHECK_FALSE(body.contains("output_text"));  // an SDK convenience, not on the wire
  REQUIRE(body["output"].size() == 2);
  CHECK(body["output"][0] == json::parse(
      R"({"id":"msg_hiccup_3_0","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Tagging."}]})"));
  CHECK(body["output"][1] == json::parse(
      R"({"id":"fc_hiccup_3_0","type":"function_call","status":"completed","arguments":"{\"c\":1}","call_id":"call_hiccup_3_0","name":"shell"})"));
  CHECK(body["usage"]["total_tokens"] == 9);

  const json max = json::parse(fmt().unary_body({mock::FinishEvent{mock::FinishReason::kMaxTokens}}, kCtx));
  CHECK(max["status"] == "incomplete");
  CHECK(max["incomplete_details"]["reason"] == "max_output_tokens");
  const json none = json::parse(fmt().unary_body({mock::TextEvent{"a"}}, kCtx));
  CHECK(none["status"] == "in_progress");
  // A content filter withholds the answer: incomplete, reason content_filter, no output text.
  const json filtered = json::parse(fmt().unary_body(
      {mock::TextEvent{"a"}, call("shell", {{"c", 1}}, "call_1"), mock::FinishEvent{mock::FinishReason::kContentFilter}}, kCtx));
  CHECK(filtered["status"] == "incomplete");
  CHECK(filtered["incomplete_details"]["reason"] == "content_filter");
  CHECK(filtered["output"] == json::array());
}

TEST_CASE("responses: the non-streaming body holds one message item per run of text") {
  const json body = json::parse(fmt().unary_body({mock::TextEvent{"Run"}, mock::TextEvent{"ning."},
                                                  call("shell", {{"c", 1}}, "call_hiccup_3_0"), mock::TextEvent{"A"},
                                                  mock::TextEvent{"nd"}, mock::FinishEvent{}},
                                                 kCtx));
  REQUIRE(body["output"].size() == 3);
  CHECK(body["output"][0]["id"] == "msg_hiccup_3_0");
  CHECK(body["output"][0]["content"] ==
        json::parse(R"([{"type":"output_text","annotations":[],"logprobs":[],"text":"Running."}])"));
  CHECK(body["output"][1]["type"] == "function_call");
  CHECK(body["output"][2]["id"] == "msg_hiccup_3_2");
  CHECK(body["output"][2]["content"][0]["text"] == "And");
}

TEST_CASE("responses: the format serves POST /v1/responses and names calls call_…") {
  CHECK(fmt().name() == "openai-responses");
  CHECK(fmt().paths() == std::vector<std::string>{"POST /v1/responses"});
  CHECK(fmt().matches("/v1/responses"));
  CHECK_FALSE(fmt().matches("/v1/chat/completions"));
  CHECK(mock::format_for_path("/v1/responses") == &fmt());
  CHECK(fmt().call_id(7, 2) == "call_hiccup_7_2");
}

// ---- Streams played through the script engine, with every fault at every position -------------

namespace {

using mock::testing::fault_of;

/// Plays one attempt with `events` and `fault` through a fresh engine, streaming.
std::string play(const std::vector<mock::Event>& events, std::optional<mock::Fault> fault) {
  const auto plan = mock::testing::play_attempt(
      "openai-responses", "/v1/responses", json{{"model", "m"}, {"input", "go"}, {"stream", true}}.dump(),
      events, std::move(fault));
  REQUIRE(plan.streaming);
  return played_bytes(plan);
}

const std::vector<mock::Event> kFaultEvents = {
    mock::TextEvent{"Looking."}, call("shell", {{"command", "ls -la"}}, "", 3),
    call("read", {{"path", "/etc/hosts"}}, "", 2), mock::TextEvent{"Done."},
    mock::FinishEvent{mock::FinishReason::kStop}};

/// Checks one played stream: sequence numbers 0, 1, 2, … with no gap; a response.failed reports
/// exactly the items whose output_item.done went out, and comes last.
void check_stream(const std::string& bytes, bool allow_gap_before_failed) {
  const auto frames = parsed_frames(bytes);
  REQUIRE_FALSE(frames.empty());
  json done_items = json::array();
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const json& f = frames[i];
    if (f["type"] == "response.failed" && allow_gap_before_failed) {
      CHECK(f["sequence_number"].get<int>() > frames[i - 1]["sequence_number"].get<int>());
    } else {
      CHECK(f["sequence_number"] == static_cast<int>(i));
    }
    if (f["type"] == "response.output_item.done") done_items.push_back(f["item"]);
    if (f["type"] == "error") {
      // The in-stream error comes right before response.failed, the last frame.
      CHECK(i + 2 == frames.size());
      CHECK(frames.back()["type"] == "response.failed");
    }
    if (f["type"] == "response.failed") {
      CHECK(i + 1 == frames.size());
      if (!allow_gap_before_failed) CHECK(f["response"]["output"] == done_items);
    }
  }
}

}  // namespace

TEST_CASE("responses: an error event after a delivered text takes the next number and leaves the text's item open") {
  // The reviewer's case: `fault: {kind: error_event, after_event: 1}` after a text event.
  const auto frames = parsed_frames(play(kFaultEvents, mock::ErrorEventFault{1, 503, std::nullopt}));
  REQUIRE(frames.size() == 7);  // 2 open, 3 the text's open item, error, failed
  CHECK(frames[5]["type"] == "error");
  CHECK(frames[5]["sequence_number"] == 5);
  CHECK(frames[6]["type"] == "response.failed");
  CHECK(frames[6]["sequence_number"] == 6);
  CHECK(frames[6]["response"]["output"] == json::array());
  // After a call: the call's item is reported too.
  const auto after_call = parsed_frames(play(kFaultEvents, mock::ErrorEventFault{2, 503, std::nullopt}));
  const json& failed = after_call.back();
  CHECK(failed["type"] == "response.failed");
  CHECK(failed["sequence_number"] == static_cast<int>(after_call.size()) - 1);
  REQUIRE(failed["response"]["output"].size() == 2);
  CHECK(failed["response"]["output"][1]["type"] == "function_call");
  CHECK(failed["response"]["output"][1]["name"] == "shell");
}

TEST_CASE("responses: sequence numbers rise by one across the stream for every fault at every position") {
  const int n = static_cast<int>(kFaultEvents.size());
  for (int kind = 0; kind < 7; ++kind) {
    for (int at = 0; at <= n; ++at) {
      INFO("fault kind " << kind << " after_event " << at);
      check_stream(play(kFaultEvents, fault_of(kind, at, std::nullopt)), false);
    }
    check_stream(play(kFaultEvents, std::nullopt), false);
    // Inside each call, after its start and 0 … F fragments.
    for (int at : {1, 2}) {
      const int fragments = std::get<mock::CallEvent>(kFaultEvents[static_cast<std::size_t>(at)]).fragments;
      for (int frag = 0; frag <= fragments; ++frag) {
        INFO("fault kind " << kind << " after_event " << at << " after_fragment " << frag);
        // An error event inside a call: the engine withholds the call's done frames and the
        // encoder gives their numbers back, so there is no gap and the cut call is not reported.
        check_stream(play(kFaultEvents, fault_of(kind, at, frag)), false);
      }
    }
  }
}

}  // namespace openai_responses_format_test
