// The cloud paths over a real ScriptEngine: the request each path stands for, the Bedrock answer
// (event-stream messages per SSE frame, exception events, Bedrock's HTTP errors), slicing and cuts.
#include "mock_server/eventstream/cloud_paths.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "mock_server/eventstream/eventstream.h"
#include "mock_server/format_test_util.h"

namespace cloud_paths_test {

using nlohmann::json;
namespace cloud = mock::cloud;

std::uint32_t u32(std::string_view s, std::size_t at) {
  return (static_cast<std::uint32_t>(static_cast<unsigned char>(s[at])) << 24) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 1])) << 16) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 2])) << 8) |
         static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 3]));
}

struct Message {
  std::map<std::string, std::string> headers;
  std::string payload;
};

/// Splits complete messages (string headers only, CRCs checked); `rest` = bytes of an incomplete one.
std::vector<Message> messages(std::string_view bytes, std::string* rest = nullptr) {
  std::vector<Message> out;
  while (bytes.size() >= 12 && u32(bytes, 0) <= bytes.size()) {
    const std::size_t total = u32(bytes, 0), hlen = u32(bytes, 4);
    REQUIRE(u32(bytes, 8) == mock::eventstream::crc32(bytes.substr(0, 8)));
    REQUIRE(u32(bytes, total - 4) == mock::eventstream::crc32(bytes.substr(0, total - 4)));
    Message m;
    std::size_t at = 12;
    while (at < 12 + hlen) {
      const std::size_t n = static_cast<unsigned char>(bytes[at]);
      std::string name(bytes.substr(at + 1, n));
      at += 1 + n;
      REQUIRE(bytes[at] == 7);
      const std::size_t v = (static_cast<unsigned char>(bytes[at + 1]) << 8) | static_cast<unsigned char>(bytes[at + 2]);
      m.headers[name] = std::string(bytes.substr(at + 3, v));
      at += 3 + v;
    }
    m.payload = std::string(bytes.substr(12 + hlen, total - 16 - hlen));
    out.push_back(std::move(m));
    bytes.remove_prefix(total);
  }
  if (rest) *rest = std::string(bytes);
  return out;
}

std::string unbase64(const std::string& s) {
  static const std::string a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int val = 0, bits = -8;
  for (char c : s) {
    if (c == '=') break;
    val = (val << 6) + static_cast<int>(a.find(c));
    bits += 6;
    if (bits >= 0) {
      out += static_cast<char>((val >> bits) & 0xff);
      bits -= 8;
    }
  }
  return out;
}

const std::string kBedrockBody =
    R"({"anthropic_version":"bedrock-2023-05-31","max_tokens":100,"messages":[{"role":"user","content":"go"}]})";
const std::string kBedrockPath = "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream";

mock::Script script_of(std::vector<mock::Attempt> attempts) {
  mock::Script s;
  s.provider = "anthropic";
  s.turns.push_back({std::move(attempts)});
  return s;
}

mock::Attempt text_attempt(std::optional<mock::Fault> fault = std::nullopt) {
  mock::Attempt a;
  a.events = {mock::TextEvent{"Hello there"}, mock::FinishEvent{mock::FinishReason::kStop}};
  a.fault = std::move(fault);
  return a;
}

mock::Plan play(mock::Script script, const std::string& target, const std::string& body,
                std::shared_ptr<mock::ScriptEngine>* keep = nullptr) {
  auto engine = std::make_shared<mock::ScriptEngine>(std::move(script));
  auto responder = cloud::make_cloud_responder(engine, target);
  REQUIRE(responder);
  mock::Plan plan = responder->respond({"POST", target, body});
  if (keep) *keep = engine;
  return plan;
}

TEST_CASE("cloud: each path names its cloud, model and streaming") {
  auto b = cloud::cloud_target(kBedrockPath);
  REQUIRE(b);
  CHECK(b->cloud == cloud::Cloud::kBedrock);
  CHECK(b->model == "anthropic.claude-sonnet-4-5-20250929-v1:0");
  CHECK(b->streaming);
  CHECK_FALSE(cloud::cloud_target("/model/m/invoke")->streaming);
  auto v = cloud::cloud_target("/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict");
  REQUIRE(v);
  CHECK(v->cloud == cloud::Cloud::kVertex);
  CHECK(v->model == "claude-sonnet-4-5@20250929");
  CHECK_FALSE(cloud::cloud_target("/v1/projects/p/locations/l/publishers/anthropic/models/m:rawPredict")->streaming);
  CHECK(cloud::cloud_target("/anthropic/v1/messages?x=1")->cloud == cloud::Cloud::kFoundry);
  CHECK_FALSE(cloud::cloud_target("/v1/messages"));
  CHECK_FALSE(cloud::cloud_target("/model//invoke"));
  CHECK_FALSE(cloud::cloud_target("/model/m/converse-stream"));
  CHECK_FALSE(cloud::cloud_target("/v1/projects/p/locations/l/publishers/google/models/g:streamGenerateContent"));
}

TEST_CASE("cloud: Bedrock streams one chunk event per Anthropic SSE frame, journaled as /v1/messages") {
  std::shared_ptr<mock::ScriptEngine> engine;
  const mock::Plan plan = play(script_of({text_attempt()}), kBedrockPath, kBedrockBody, &engine);
  CHECK(plan.status == 200);
  CHECK(plan.content_type == "application/vnd.amazon.eventstream");
  std::string rest;
  const auto ms = messages(mock::testing::played_bytes(plan), &rest);
  CHECK(rest.empty());
  REQUIRE(ms.size() >= 5);
  std::vector<std::string> types;
  for (const Message& m : ms) {
    CHECK(m.headers.at(":event-type") == "chunk");
    CHECK(m.headers.at(":message-type") == "event");
    CHECK(m.headers.at(":content-type") == "application/json");
    const json p = json::parse(m.payload);
    types.push_back(json::parse(unbase64(p.at("bytes").get<std::string>())).at("type").get<std::string>());
  }
  CHECK(types.front() == "message_start");
  CHECK(types.back() == "message_stop");
  const mock::Journal j = engine->journal();
  REQUIRE(j.size() == 1);
  CHECK(j[0].target == "/v1/messages");
  CHECK(j[0].model == "anthropic.claude-sonnet-4-5-20250929-v1:0");
}

TEST_CASE("cloud: an in-stream error becomes Bedrock's exception event") {
  struct Row {
    int status;
    std::string exception;
  };
  for (const Row& row : {Row{429, "throttlingException"}, Row{529, "serviceUnavailableException"},
                         Row{503, "serviceUnavailableException"}, Row{500, "internalServerException"},
                         Row{400, "validationException"}, Row{403, "modelStreamErrorException"}}) {
    CAPTURE(row.status);
    const mock::Plan plan = play(script_of({text_attempt(mock::ErrorEventFault{1, row.status})}), kBedrockPath, kBedrockBody);
    const auto ms = messages(mock::testing::played_bytes(plan));
    REQUIRE(!ms.empty());
    const Message& last = ms.back();
    CHECK(last.headers.at(":message-type") == "exception");
    CHECK(last.headers.at(":exception-type") == row.exception);
    const json p = json::parse(last.payload);
    CHECK(p.at("message").is_string());
    if (row.exception == "modelStreamErrorException") {
      CHECK(p.at("originalStatusCode") == 403);
      CHECK(json::parse(p.at("originalMessage").get<std::string>()).at("error").at("type") == "permission_error");
    }
    for (std::size_t i = 0; i + 1 < ms.size(); ++i) CHECK(ms[i].headers.at(":message-type") == "event");
  }
}

TEST_CASE("cloud: a status attempt is Bedrock's HTTP error with x-amzn-ErrorType") {
  struct Row {
    int status, bedrock;
    std::string type;
  };
  for (const Row& row : {Row{429, 429, "ThrottlingException"}, Row{529, 503, "ServiceUnavailableException"},
                         Row{500, 500, "InternalServerException"}, Row{400, 400, "ValidationException"},
                         Row{403, 403, "AccessDeniedException"}, Row{504, 408, "ModelTimeoutException"}}) {
    CAPTURE(row.status);
    mock::Attempt a;
    a.status = row.status;
    a.retry_after_s = 2;
    const mock::Plan plan = play(script_of({a}), kBedrockPath, kBedrockBody);
    CHECK(plan.status == row.bedrock);
    CHECK_FALSE(plan.streaming);
    const json body = json::parse(plan.body);
    CHECK(body.at("message").is_string());
    CHECK_FALSE(body.contains("error"));
    bool typed = false, retry_after = false;
    for (const auto& [k, v] : plan.headers) {
      if (k == "x-amzn-ErrorType") typed = v.rfind(row.type + ":", 0) == 0;
      if (k == "retry-after") retry_after = true;
    }
    CHECK(typed);
    CHECK(retry_after);  // kept so a scenario judges the same on every path
  }
}

TEST_CASE("cloud: Bedrock refuses a body without anthropic_version or with model/stream, unjournaled") {
  for (const std::string& body :
       {std::string(R"({"max_tokens":1,"messages":[]})"),
        std::string(R"({"anthropic_version":"bedrock-2023-05-31","model":"x","messages":[]})"),
        std::string(R"({"anthropic_version":"bedrock-2023-05-31","stream":true,"messages":[]})")}) {
    CAPTURE(body);
    std::shared_ptr<mock::ScriptEngine> engine;
    const mock::Plan plan = play(script_of({text_attempt()}), kBedrockPath, body, &engine);
    CHECK(plan.status == 400);
    CHECK(json::parse(plan.body).at("message").get<std::string>().rfind("Malformed input request: #: ", 0) == 0);
    CHECK(engine->journal_size() == 0);
  }
}

TEST_CASE("cloud: Vertex and Foundry stream Anthropic's SSE unchanged") {
  const std::string vbody = R"({"anthropic_version":"vertex-2023-10-16","stream":true,"max_tokens":9,"messages":[{"role":"user","content":"go"}]})";
  std::shared_ptr<mock::ScriptEngine> engine;
  const mock::Plan v = play(script_of({text_attempt()}), "/v1/projects/p/locations/l/publishers/anthropic/models/claude-x:streamRawPredict",
                            vbody, &engine);
  CHECK(v.content_type == "text/event-stream");
  CHECK(mock::testing::played_bytes(v).rfind("event: message_start\n", 0) == 0);
  CHECK(engine->journal()[0].model == "claude-x");
  const mock::Plan f = play(script_of({text_attempt()}), "/anthropic/v1/messages",
                            R"({"model":"claude-y","stream":true,"max_tokens":9,"messages":[{"role":"user","content":"go"}]})");
  CHECK(mock::testing::played_bytes(f).rfind("event: message_start\n", 0) == 0);
  const mock::Plan missing = play(script_of({text_attempt()}), "/v1/projects/p/locations/l/publishers/anthropic/models/m:streamRawPredict",
                                  R"({"stream":true,"messages":[]})");
  CHECK(missing.status == 400);
}

TEST_CASE("cloud: a cut sends the exact number of bytes of the next event-stream message") {
  const std::vector<std::string_view> writes = {"event: a\ndata: {\"type\":\"a\"}\n\n", "event: b\ndata: {\"type\":\"b\",\"x\":"};
  const auto out = cloud::sse_writes_to_eventstream(writes);
  REQUIRE(out.size() == 2);
  CHECK(messages(out[0]).size() == 1);
  CHECK(out[1].size() == writes[1].size());  // the cut's byte count, inside the message
  CHECK(u32(out[1], 0) > out[1].size());     // the prelude announces more than arrives
}

TEST_CASE("cloud: a sliced stream stays sliced and joins to whole messages") {
  std::string sse;
  for (int i = 0; i < 3; ++i) sse += "event: e\ndata: {\"type\":\"t" + std::to_string(i) + "\"}\n\n";
  std::vector<std::string_view> writes;
  for (std::size_t at = 0; at < sse.size(); at += 7) writes.push_back(std::string_view(sse).substr(at, 7));
  const auto out = cloud::sse_writes_to_eventstream(writes);
  REQUIRE(out.size() == writes.size());
  std::string joined;
  for (const std::string& w : out) {
    CHECK_FALSE(w.empty());
    joined += w;
  }
  std::string rest;
  CHECK(messages(joined, &rest).size() == 3);
  CHECK(rest.empty());
}

TEST_CASE("cloud: a scripted cut fault plays as a cut inside a message, then FIN") {
  const mock::Plan plan = play(script_of({text_attempt(mock::CutFault{1, 10})}), kBedrockPath, kBedrockBody);
  CHECK(plan.ending == mock::Ending::kFin);
  std::string rest;
  messages(mock::testing::played_bytes(plan), &rest);
  CHECK(rest.size() == 10);
}

}  // namespace cloud_paths_test
