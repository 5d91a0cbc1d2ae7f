#include "mock_server/eventstream/cloud_paths.h"

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

#include "json_reader/json_reader.h"
#include "mock_server/eventstream/eventstream.h"
#include "mock_server/json_text.h"
#include "mock_server/wire_format.h"

namespace mock::cloud {

namespace {

using ojson = nlohmann::ordered_json;
using json = nlohmann::json;

std::string percent_decode(std::string_view s) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

/// The HTTP status an Anthropic error type stands for (anthropic_format.cpp error_type, reversed;
/// overloaded_error is 529).
int anthropic_status(std::string_view type) {
  if (type == "invalid_request_error") return 400;
  if (type == "authentication_error") return 401;
  if (type == "billing_error") return 402;
  if (type == "permission_error") return 403;
  if (type == "not_found_error") return 404;
  if (type == "conflict_error") return 409;
  if (type == "request_too_large") return 413;
  if (type == "rate_limit_error") return 429;
  if (type == "timeout_error") return 504;
  if (type == "overloaded_error") return 529;
  return 500;
}

std::string dump(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

/// `body` (JSON text of an object with at least one member) with `"model":MODEL,"stream":BOOL,`
/// inserted after its opening brace (a leading byte-order mark and whitespace dropped).
std::string messages_body(std::string_view body, std::string_view model, bool streaming) {
  if (body.substr(0, 3) == "\xEF\xBB\xBF") body.remove_prefix(3);
  const std::size_t open = body.find('{');
  std::string out;
  out.reserve(body.size() + model.size() + 32);
  out.append("{\"model\":");
  json_text::append_string(out, model);
  out.append(streaming ? ",\"stream\":true," : ",\"stream\":false,");
  out.append(body.substr(open == std::string_view::npos ? body.size() : open + 1));
  return out;
}

/// One SSE frame (its text without the blank line that ends it) as an event-stream message,
/// appended to `out`.
void append_frame_message(std::string& out, std::string_view frame) {
  std::string_view event, data;
  std::string joined;  // the data of a frame with more than one data line, joined by "\n"
  bool has_data = false;
  std::size_t at = 0;
  while (at <= frame.size()) {
    std::size_t nl = frame.find('\n', at);
    if (nl == std::string_view::npos) nl = frame.size();
    std::string_view line = frame.substr(at, nl - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    auto value = [&](std::size_t colon) {
      std::string_view v = line.substr(colon + 1);
      if (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      return v;
    };
    if (starts_with(line, "event:")) {
      event = value(5);
    } else if (starts_with(line, "data:")) {
      if (has_data) {
        if (joined.empty()) joined = data;
        joined += '\n';
        joined += value(4);
        data = joined;
      } else {
        data = value(4);
      }
      has_data = true;
    }
    at = nl + 1;
  }
  if (event == "error") {
    const ojson j = ojson::parse(data, nullptr, false);
    std::string type = "api_error", message = "Internal server error";
    if (j.is_object() && j.contains("error") && j["error"].is_object()) {
      const ojson& e = j["error"];
      if (e.contains("type") && e["type"].is_string()) type = e["type"].get<std::string>();
      if (e.contains("message") && e["message"].is_string()) message = e["message"].get<std::string>();
    }
    const std::string_view exception = bedrock_exception(type);
    ojson payload = ojson::object();
    payload["message"] = message;
    if (exception == "modelStreamErrorException") {
      payload["originalStatusCode"] = anthropic_status(type);
      payload["originalMessage"] = std::string(data);
    }
    eventstream::append_exception_message(out, exception, dump(payload));
    return;
  }
  eventstream::append_chunk_message(out, data);
}

std::string bedrock_request_id(std::size_t journal_index) {
  return "hiccup-bedrock-" + std::to_string(journal_index);
}

/// A 400 the cloud answers itself, before the model sees the request.
Plan cloud_rejection(Cloud cloud, const std::string& message) {
  Plan plan;
  plan.status = 400;
  plan.content_type = "application/json";
  if (cloud == Cloud::kBedrock) {
    ojson b = ojson::object();
    b["message"] = message;
    plan.body = dump(b);
    plan.headers.emplace_back("x-amzn-ErrorType", "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/");
  } else {
    ojson e = ojson::object();
    e["type"] = "invalid_request_error";
    e["message"] = message;
    ojson b = ojson::object();
    b["type"] = "error";
    b["error"] = std::move(e);
    plan.body = dump(b);
  }
  return plan;
}

}  // namespace

std::string_view cloud_name(Cloud cloud) {
  switch (cloud) {
    case Cloud::kBedrock: return "bedrock";
    case Cloud::kVertex: return "vertex";
    case Cloud::kFoundry: return "foundry";
  }
  return "bedrock";
}

std::optional<CloudTarget> cloud_target(std::string_view target) {
  const std::string_view path = target.substr(0, target.find('?'));
  if (starts_with(path, "/model/")) {
    std::string_view rest = path.substr(7);
    for (const auto& [suffix, streaming] : {std::pair<std::string_view, bool>{"/invoke-with-response-stream", true},
                                           std::pair<std::string_view, bool>{"/invoke", false}}) {
      if (ends_with(rest, suffix) && rest.size() > suffix.size()) {
        return CloudTarget{Cloud::kBedrock, percent_decode(rest.substr(0, rest.size() - suffix.size())), streaming};
      }
    }
    return std::nullopt;
  }
  if (starts_with(path, "/v1/projects/") || starts_with(path, "/v1beta1/projects/")) {
    static constexpr std::string_view kModels = "/publishers/anthropic/models/";
    const std::size_t at = path.find(kModels);
    if (at == std::string_view::npos) return std::nullopt;
    std::string_view rest = path.substr(at + kModels.size());
    for (const auto& [suffix, streaming] : {std::pair<std::string_view, bool>{":streamRawPredict", true},
                                           std::pair<std::string_view, bool>{":rawPredict", false}}) {
      if (ends_with(rest, suffix) && rest.size() > suffix.size()) {
        return CloudTarget{Cloud::kVertex, percent_decode(rest.substr(0, rest.size() - suffix.size())), streaming};
      }
    }
    return std::nullopt;
  }
  if (path == "/anthropic/v1/messages") return CloudTarget{Cloud::kFoundry, "", true};
  return std::nullopt;
}

const std::vector<std::string>& cloud_paths() {
  static const std::vector<std::string> paths = {
      "POST /model/{modelId}/invoke-with-response-stream (Bedrock, application/vnd.amazon.eventstream)",
      "POST /model/{modelId}/invoke (Bedrock)",
      "POST /v1/projects/{p}/locations/{l}/publishers/anthropic/models/{m}:streamRawPredict (Vertex; /v1beta1/ too)",
      "POST /v1/projects/{p}/locations/{l}/publishers/anthropic/models/{m}:rawPredict (Vertex; /v1beta1/ too)",
      "POST /anthropic/v1/messages (Foundry)"};
  return paths;
}

BedrockError bedrock_error(int status) {
  // docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModelWithResponseStream.html
  // "Errors": ValidationException 400, AccessDeniedException 403, ResourceNotFoundException 404,
  // ModelTimeoutException 408, ModelErrorException 424, ThrottlingException 429,
  // InternalServerException 500, ServiceUnavailableException 503 (Bedrock sends no 529).
  switch (status) {
    case 400: return {"ValidationException", 400};
    case 401:
    case 403: return {"AccessDeniedException", 403};
    case 404: return {"ResourceNotFoundException", 404};
    case 408:
    case 504: return {"ModelTimeoutException", 408};
    case 424: return {"ModelErrorException", 424};
    case 429: return {"ThrottlingException", 429};
    case 503:
    case 529: return {"ServiceUnavailableException", 503};
    default: break;
  }
  // A status outside the table keeps its number (a scenario's 501 stays non-retryable).
  if (status >= 400 && status < 500) return {"ValidationException", status};
  return {"InternalServerException", status};
}

std::string_view bedrock_exception(std::string_view type) {
  // docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ResponseStream.html
  if (type == "rate_limit_error") return "throttlingException";
  if (type == "overloaded_error") return "serviceUnavailableException";
  if (type == "api_error") return "internalServerException";
  if (type == "invalid_request_error") return "validationException";
  if (type == "timeout_error") return "modelTimeoutException";
  return "modelStreamErrorException";
}

std::vector<std::string> sse_writes_to_eventstream(const std::vector<std::string_view>& writes) {
  // The writes' bytes as one text: the one write itself when there is one (a plan's usual shape).
  std::string joined;
  std::string_view sse;
  std::vector<std::size_t> ends;
  ends.reserve(writes.size());
  if (writes.size() == 1) {
    sse = writes.front();
    ends.push_back(sse.size());
  } else {
    std::size_t size = 0;
    for (std::string_view w : writes) size += w.size();
    joined.reserve(size);
    for (std::string_view w : writes) {
      joined += w;
      ends.push_back(joined.size());
    }
    sse = joined;
  }
  struct Frame {
    std::size_t start, end;          // in sse
    std::size_t out_start, out_len;  // in out
    bool complete;
  };
  std::vector<Frame> frames;
  std::string out;
  // About what the messages take: base64 (4/3) and about 90 bytes of framing and headers a frame.
  out.reserve(sse.size() / 3 * 4 + sse.size() / 8 + 128);
  std::size_t at = 0;
  while (at < sse.size()) {
    const std::size_t blank = sse.find("\n\n", at);
    const bool complete = blank != std::string_view::npos;
    const std::size_t end = complete ? blank + 2 : sse.size();
    const std::size_t before = out.size();
    append_frame_message(out, sse.substr(at, (complete ? blank : end) - at));
    frames.push_back(Frame{at, end, before, out.size() - before, complete});
    at = end;
  }
  // Where SSE offset p lands in `out`.
  auto map = [&](std::size_t p) -> std::size_t {
    if (frames.empty()) return 0;
    auto it = std::upper_bound(frames.begin(), frames.end(), p, [](std::size_t v, const Frame& f) { return v < f.start; });
    if (it == frames.begin()) return 0;
    const Frame& f = *(it - 1);
    if (f.complete && p >= f.end) return f.out_start + f.out_len;  // past the last frame
    const std::size_t o = p - f.start;
    if (o == 0) return f.out_start;
    std::size_t in;
    if (f.complete) {
      const std::size_t len = f.end - f.start;
      in = (o * f.out_len + len / 2) / len;
    } else {
      in = o;  // a cut: the exact byte count
    }
    return f.out_start + std::clamp<std::size_t>(in, 1, f.out_len - 1);
  };
  std::vector<std::string> result;
  result.reserve(writes.size());
  const std::size_t total = out.size();
  std::size_t from = 0;
  for (std::size_t end : ends) {
    const std::size_t to = std::max(map(end), from);
    if (from == 0 && to == total) {
      result.push_back(std::move(out));  // all of it in one write: no copy (later writes are empty)
    } else if (to == from) {
      result.emplace_back();
    } else {
      result.push_back(out.substr(from, to - from));
    }
    from = to;
  }
  return result;
}

CloudResponder::CloudResponder(std::shared_ptr<Responder> inner, CloudTarget target)
    : inner_(std::move(inner)), target_(std::move(target)) {}

Plan CloudResponder::respond(const Request& request) {
  Request anthropic{request.method, "/v1/messages", {}, request.arrived_ms, request.headers};
  bool rewritten = false;
  if (target_.cloud != Cloud::kFoundry && request.method == "POST" &&
      json_nesting_depth(request.body, kMaxJsonDepth) <= kMaxJsonDepth) {
    // Only the top-level keys are read here: the conversation's members are checked as JSON, not
    // built (the Anthropic format decodes them next).
    const json top = json_reader::parse(request.body, kMaxJsonDepth, {"messages", "system", "tools"});
    if (top.is_object()) {
      if (!top.contains("anthropic_version")) {
        answered_here_ = true;
        return cloud_rejection(target_.cloud, target_.cloud == Cloud::kBedrock
            ? "Malformed input request: #: required key [anthropic_version] not found, please reformat your input and try again."
            : "anthropic_version: Field required");
      }
      if (target_.cloud == Cloud::kBedrock) {
        for (const char* key : {"model", "stream"}) {
          if (top.contains(key)) {
            answered_here_ = true;
            return cloud_rejection(Cloud::kBedrock, std::string("Malformed input request: #: extraneous key [") + key +
                                                        "] is not permitted, please reformat your input and try again.");
          }
        }
      }
      if (!top.contains("model") && !top.contains("stream")) {
        // The Messages body is the cloud body with `model` and `stream` put first, as text: the
        // object has at least its anthropic_version member, which the Anthropic format ignores.
        anthropic.body = messages_body(request.body, target_.model, target_.streaming);
      } else {
        // Vertex's body may carry `stream` (or a model): the URL's model and method win.
        ojson body = ojson::parse(request.body, nullptr, false);
        body.erase("anthropic_version");
        body["model"] = target_.model;
        body["stream"] = target_.streaming;
        anthropic.body = dump(body);
      }
      rewritten = true;
    }
  }
  if (!rewritten) anthropic.body = request.body;
  Plan plan = inner_->respond(anthropic);
  if (target_.cloud != Cloud::kBedrock) return plan;

  plan.headers.emplace_back("x-amzn-RequestId", bedrock_request_id(plan.journal_index));
  if (plan.streaming) {
    std::vector<std::string_view> writes;
    for (const Action& a : plan.actions) {
      if (const auto* w = std::get_if<WriteAction>(&a)) writes.push_back(w->bytes);
    }
    std::vector<std::string> converted = sse_writes_to_eventstream(writes);
    std::size_t k = 0;
    for (Action& a : plan.actions) {
      if (auto* w = std::get_if<WriteAction>(&a)) w->bytes = std::move(converted[k++]);
    }
    plan.content_type = "application/vnd.amazon.eventstream";
    plan.headers.emplace_back("X-Amzn-Bedrock-Content-Type", "application/json");
  } else if (plan.status >= 400) {
    const ojson anthropic_body = ojson::parse(plan.body, nullptr, false);
    std::string message = "Internal server error";
    if (anthropic_body.is_object() && anthropic_body.contains("error") && anthropic_body["error"].is_object() &&
        anthropic_body["error"].contains("message") && anthropic_body["error"]["message"].is_string()) {
      message = anthropic_body["error"]["message"].get<std::string>();
    }
    const BedrockError error = bedrock_error(plan.status);
    ojson b = ojson::object();
    b["message"] = message;
    plan.body = dump(b);
    // A body cut by FIN or RST: at most all but its last byte goes out, as before.
    if (plan.ending != Ending::kTerminator) plan.body_bytes = std::min(plan.body_bytes, plan.body.size() - 1);
    plan.status = error.status;
    plan.content_type = "application/json";
    plan.headers.emplace_back("x-amzn-ErrorType",
                              std::string(error.type) + ":http://internal.amazon.com/coral/com.amazon.bedrock/");
  } else {
    plan.headers.emplace_back("X-Amzn-Bedrock-Content-Type", "application/json");
  }
  return plan;
}

void CloudResponder::settle(std::size_t journal_index, const Delivery& delivery) {
  if (!answered_here_) inner_->settle(journal_index, delivery);
}

void CloudResponder::refuse(std::size_t journal_index, int status, const std::string& reason) {
  if (!answered_here_) inner_->refuse(journal_index, status, reason);
}

std::shared_ptr<Responder> make_cloud_responder(const std::shared_ptr<Responder>& inner, std::string_view target) {
  if (!inner) return nullptr;
  std::optional<CloudTarget> cloud = cloud_target(target);
  if (!cloud) return nullptr;
  return std::make_shared<CloudResponder>(inner, std::move(*cloud));
}

}  // namespace mock::cloud
