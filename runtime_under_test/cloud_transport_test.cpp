// The runtime's cloud paths: the request each sends, and the Bedrock answer (chunks, exception
// events, HTTP errors, corrupt and truncated frames) handed to the Anthropic codec as its own stream.
#include "runtime_under_test/cloud_transport.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "runtime_under_test/eventstream_decoder.h"

namespace cloud_transport_test {

using nlohmann::json;

void put_u32(std::string& out, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out += static_cast<char>((v >> s) & 0xff);
}

std::string message(const std::vector<std::pair<std::string, std::string>>& headers, const std::string& payload) {
  std::string h;
  for (const auto& [k, v] : headers) {
    h += static_cast<char>(k.size());
    h += k;
    h += static_cast<char>(7);
    h += static_cast<char>(v.size() >> 8);
    h += static_cast<char>(v.size() & 0xff);
    h += v;
  }
  std::string m;
  put_u32(m, static_cast<std::uint32_t>(16 + h.size() + payload.size()));
  put_u32(m, static_cast<std::uint32_t>(h.size()));
  put_u32(m, rut::eventstream_crc32(m));
  m += h + payload;
  put_u32(m, rut::eventstream_crc32(m));
  return m;
}

std::string b64(const std::string& s) {
  static const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int val = 0, bits = -6;
  for (unsigned char c : s) {
    val = (val << 8) + c;
    bits += 8;
    while (bits >= 0) {
      out += a[(val >> bits) & 0x3f];
      bits -= 6;
    }
  }
  if (bits > -6) out += a[((val << 8) >> (bits + 8)) & 0x3f];
  while (out.size() % 4) out += '=';
  return out;
}

std::string chunk(const std::string& data) {
  return message({{":event-type", "chunk"}, {":content-type", "application/json"}, {":message-type", "event"}},
                 json{{"bytes", b64(data)}}.dump());
}

/// Answers every request with one canned response, recording the request.
class Canned final : public rut::ITransport {
 public:
  rut::TransportResult answer;
  std::vector<std::string> chunks;
  rut::HttpRequest seen;
  rut::TransportResult post(const rut::HttpRequest& request, const std::function<bool(std::string_view)>& on_body) override {
    seen = request;
    for (const std::string& c : chunks) {
      if (!on_body(c)) {
        rut::TransportResult r = answer;
        r.end = rut::TransportEnd::kCancelled;
        return r;
      }
    }
    return answer;
  }
};

const std::string kRequestBody = R"({"model":"claude-x:1","max_tokens":5,"messages":[],"stream":true})";

std::string collect(rut::CloudTransport& t, rut::TransportResult* result = nullptr) {
  std::string got;
  rut::HttpRequest r{"/v1/messages", kRequestBody, {}, 60};
  rut::TransportResult res = t.post(r, [&](std::string_view b) {
    got += b;
    return true;
  });
  if (result) *result = res;
  return got;
}

TEST_CASE("cloud transport: each path's request") {
  Canned inner;
  inner.answer = {200, rut::TransportEnd::kComplete, {}};
  {
    rut::CloudTransport t(inner, rut::CloudPath::kBedrock);
    collect(t);
    CHECK(inner.seen.target == "/model/claude-x%3A1/invoke-with-response-stream");
    const json b = json::parse(inner.seen.body);
    CHECK(b.at("anthropic_version") == "bedrock-2023-05-31");
    CHECK_FALSE(b.contains("model"));
    CHECK_FALSE(b.contains("stream"));
    CHECK(b.at("max_tokens") == 5);
  }
  {
    rut::CloudTransport t(inner, rut::CloudPath::kVertex);
    collect(t);
    CHECK(inner.seen.target == "/v1/projects/hiccup/locations/us-east5/publishers/anthropic/models/claude-x%3A1:streamRawPredict");
    const json b = json::parse(inner.seen.body);
    CHECK(b.at("anthropic_version") == "vertex-2023-10-16");
    CHECK_FALSE(b.contains("model"));
    CHECK(b.at("stream") == true);
  }
  {
    rut::CloudTransport t(inner, rut::CloudPath::kFoundry);
    collect(t);
    CHECK(inner.seen.target == "/anthropic/v1/messages");
    CHECK(inner.seen.body == kRequestBody);
  }
}

TEST_CASE("cloud transport: Bedrock chunks and exceptions reach the codec as Anthropic SSE") {
  Canned inner;
  inner.answer = {200, rut::TransportEnd::kComplete, {}};
  const std::string all = chunk(R"({"type":"message_start"})") +
                          message({{":exception-type", "throttlingException"}, {":message-type", "exception"}},
                                  R"({"message":"slow"})");
  inner.chunks = {all.substr(0, 7), all.substr(7, 50), all.substr(57)};
  rut::CloudTransport t(inner, rut::CloudPath::kBedrock);
  rut::TransportResult res;
  const std::string sse = collect(t, &res);
  CHECK(res.end == rut::TransportEnd::kComplete);
  CHECK(sse == "data: {\"type\":\"message_start\"}\n\nevent: error\ndata: "
               "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow\"}}\n\n");
}

TEST_CASE("cloud transport: each exception type maps to the Anthropic error it stands for") {
  CHECK(rut::anthropic_error_for("throttlingException")->status == 429);
  CHECK(rut::anthropic_error_for("ServiceUnavailableException")->type == "overloaded_error");
  CHECK(rut::anthropic_error_for("internalServerException")->status == 500);
  CHECK(rut::anthropic_error_for("modelStreamErrorException")->status == 500);
  CHECK(rut::anthropic_error_for("validationException")->status == 400);
  CHECK(rut::anthropic_error_for("ModelTimeoutException")->status == 504);
  CHECK_FALSE(rut::anthropic_error_for("NoSuchThing"));
}

TEST_CASE("cloud transport: a Bedrock HTTP error becomes the Anthropic envelope and status") {
  Canned inner;
  inner.answer = {429, rut::TransportEnd::kComplete,
                  {{"x-amzn-errortype", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"},
                   {"retry-after", "2"}}};
  inner.chunks = {R"({"message":"Too many requests"})"};
  rut::CloudTransport t(inner, rut::CloudPath::kBedrock);
  rut::TransportResult res;
  const std::string body = collect(t, &res);
  CHECK(res.status == 429);
  const json b = json::parse(body);
  CHECK(b.at("error").at("type") == "rate_limit_error");
  CHECK(b.at("error").at("message") == "Too many requests");
  inner.answer.status = 408;
  inner.answer.headers = {{"x-amzn-errortype", "ModelTimeoutException:x"}};
  collect(t, &res);
  CHECK(res.status == 504);  // retryable, as Anthropic's timeout_error
}

TEST_CASE("cloud transport: a corrupt or truncated message ends the attempt as a lost connection") {
  Canned inner;
  inner.answer = {200, rut::TransportEnd::kComplete, {}};
  std::string bad = chunk(R"({"type":"ping"})");
  bad[bad.size() - 1] = static_cast<char>(bad[bad.size() - 1] ^ 1);
  inner.chunks = {chunk(R"({"type":"message_start"})") + bad, chunk(R"({"type":"message_stop"})")};
  rut::CloudTransport t(inner, rut::CloudPath::kBedrock);
  rut::TransportResult res;
  std::string sse = collect(t, &res);
  CHECK(res.end == rut::TransportEnd::kConnectionLost);
  CHECK(sse == "data: {\"type\":\"message_start\"}\n\n");  // nothing of or after the corrupt message
  const std::string whole = chunk(R"({"type":"message_start"})");
  inner.chunks = {whole, whole.substr(0, 20)};
  sse = collect(t, &res);
  CHECK(res.end == rut::TransportEnd::kConnectionLost);
  CHECK(sse == "data: {\"type\":\"message_start\"}\n\n");
}

TEST_CASE("cloud transport: a chunk whose bytes are not JSON reaches the codec undecodable") {
  Canned inner;
  inner.answer = {200, rut::TransportEnd::kComplete, {}};
  inner.chunks = {chunk("{\"type\":\"content_block_delta\",\"index\":")};
  rut::CloudTransport t(inner, rut::CloudPath::kBedrock);
  CHECK(collect(t) == "data: {\"type\":\"content_block_delta\",\"index\":\n\n");
}

}  // namespace cloud_transport_test
