#include "runtime_under_test/cloud_transport.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime_under_test/eventstream_decoder.h"

namespace rut {

namespace {

using ojson = nlohmann::ordered_json;

std::string dump(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

/// encodeURIComponent: what the SDKs do to a model id in the path (ARNs hold ':' and '/').
std::string encode_component(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '!' || c == '~' || c == '*' || c == '\'' ||
        c == '(' || c == ')') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string anthropic_envelope(std::string_view type, std::string_view message) {
  ojson e = ojson::object();
  e["type"] = std::string(type);
  e["message"] = std::string(message);
  ojson b = ojson::object();
  b["type"] = "error";
  b["error"] = std::move(e);
  return dump(b);
}

// Not named string_member: in a unity batch this file precedes the codecs, and a helper of that
// name in this anonymous namespace hid codec.h's rut::string_member from their anonymous
// namespaces, so every string_member(json, key) there copied the whole object into an ojson
// first (1.4% of an in-memory exploration case's instructions in the Responses decoder alone).
std::string ojson_string_member(const ojson& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

std::optional<CloudPath> cloud_path_from_name(std::string_view name) {
  if (name == "bedrock") return CloudPath::kBedrock;
  if (name == "vertex") return CloudPath::kVertex;
  if (name == "foundry") return CloudPath::kFoundry;
  return std::nullopt;
}

std::optional<AnthropicError> anthropic_error_for(std::string_view bedrock_type) {
  const std::string t = lower(bedrock_type);
  if (t == "throttlingexception") return AnthropicError{429, "rate_limit_error"};
  if (t == "serviceunavailableexception") return AnthropicError{503, "overloaded_error"};
  if (t == "modeltimeoutexception") return AnthropicError{504, "timeout_error"};
  if (t == "internalserverexception" || t == "modelstreamerrorexception" || t == "modelerrorexception") {
    return AnthropicError{500, "api_error"};
  }
  if (t == "validationexception" || t == "servicequotaexceededexception") return AnthropicError{400, "invalid_request_error"};
  if (t == "accessdeniedexception") return AnthropicError{403, "permission_error"};
  if (t == "resourcenotfoundexception") return AnthropicError{404, "not_found_error"};
  return std::nullopt;
}

TransportResult CloudTransport::post(const HttpRequest& request,
                                     const std::function<bool(std::string_view)>& on_body) {
  HttpRequest cloud = request;
  ojson body = ojson::parse(request.body, nullptr, false);
  if (path_ != CloudPath::kFoundry && body.is_object()) {
    const std::string model = ojson_string_member(body, "model");
    const bool stream = body.contains("stream") && body["stream"].is_boolean() && body["stream"].get<bool>();
    body.erase("model");
    if (path_ == CloudPath::kBedrock) {
      body.erase("stream");
      ojson b = ojson::object();
      b["anthropic_version"] = "bedrock-2023-05-31";
      for (auto& [k, v] : body.items()) b[k] = v;
      cloud.body = dump(b);
      cloud.target = "/model/" + encode_component(model) + (stream ? "/invoke-with-response-stream" : "/invoke");
    } else {
      ojson b = ojson::object();
      b["anthropic_version"] = "vertex-2023-10-16";
      for (auto& [k, v] : body.items()) b[k] = v;
      cloud.body = dump(b);
      cloud.target = "/v1/projects/hiccup/locations/us-east5/publishers/anthropic/models/" + encode_component(model) +
                     (stream ? ":streamRawPredict" : ":rawPredict");
    }
  } else if (path_ == CloudPath::kFoundry) {
    cloud.target = "/anthropic" + request.target;
  }
  if (path_ != CloudPath::kBedrock) return inner_.post(cloud, on_body);

  // Bedrock: the body is an event stream on a 200 and a {"message"} JSON otherwise; which one is
  // known only from the status at the end, so both are followed until then.
  EventStreamDecoder decoder;
  std::vector<EventStreamMessage> messages;
  std::string raw;        // the bytes as they came, for an error body
  bool broken = false;    // a message failed its CRC or framing
  bool stopped = false;   // on_body returned false
  bool streaming = true;  // no error body seen yet
  auto forward = [&](std::string_view bytes) {
    if (!streaming) {
      raw.append(bytes);
      return true;
    }
    messages.clear();
    if (!decoder.feed(bytes, messages)) broken = true;
    for (const EventStreamMessage& m : messages) {
      std::string sse;
      if (m.header(":message-type") == "exception") {
        const std::string_view type = m.header(":exception-type");
        const ojson payload = ojson::parse(m.payload, nullptr, false);
        const auto mapped = anthropic_error_for(type).value_or(AnthropicError{500, "api_error"});
        sse = "event: error\ndata: " + anthropic_envelope(mapped.type, ojson_string_member(payload, "message")) + "\n\n";
      } else if (m.header(":event-type") == "chunk") {
        const ojson payload = ojson::parse(m.payload, nullptr, false);
        const std::optional<std::string> data = decode_base64(ojson_string_member(payload, "bytes"));
        // A chunk whose bytes do not decode reaches the codec as an undecodable frame.
        std::string text = data.value_or(ojson_string_member(payload, "bytes"));
        std::replace(text.begin(), text.end(), '\n', ' ');
        sse = "data: " + text + "\n\n";
      } else {
        continue;  // an event type Bedrock does not send to InvokeModelWithResponseStream
      }
      if (!on_body(sse)) {
        stopped = true;
        return false;
      }
    }
    return !broken;
  };
  // A JSON error body is not an event stream: its first bytes ("{") fail the prelude CRC. Hold the
  // first bytes until the status is known; the transport reports the status only at the end, so
  // guess from the first byte: an event stream starts with a length's high byte (0 for < 16 MiB).
  bool decided = false;
  TransportResult result = inner_.post(cloud, [&](std::string_view bytes) {
    if (!decided && !bytes.empty()) {
      decided = true;
      streaming = bytes.front() != '{';
    }
    return forward(bytes);
  });
  const bool ok = result.status >= 200 && result.status < 300;
  if (!streaming && ok) {  // InvokeModel's answer: the Anthropic message as is
    on_body(raw);
    return result;
  }
  if (!streaming || (result.status != 0 && !ok)) {
    std::string type;
    for (const auto& [k, v] : result.headers) {
      if (lower(k) == "x-amzn-errortype") type = v.substr(0, v.find(':'));
    }
    const ojson err = ojson::parse(raw, nullptr, false);
    const auto mapped = anthropic_error_for(type);
    // The status as sent, but a ModelTimeoutException's 408 is the retryable timeout it stands for.
    if (mapped && mapped->status == 504) result.status = 504;
    const std::string envelope =
        anthropic_envelope(mapped ? mapped->type : "api_error", err.is_object() ? ojson_string_member(err, "message") : raw);
    on_body(envelope);
    return result;
  }
  if (broken && !stopped) {
    // A corrupt frame: the stream cannot be trusted past it (the SDK throws); as a lost connection.
    result.end = TransportEnd::kConnectionLost;
  } else if (result.end == TransportEnd::kComplete && decoder.pending_bytes() > 0) {
    result.end = TransportEnd::kConnectionLost;  // a message begun and never completed
  }
  return result;
}

}  // namespace rut
