// The Gemini wire format: frames, envelopes and request summaries (see gemini_format.h).
#include "mock_server/gemini_format.h"

#include <cmath>

#include "mock_server/json_text.h"
#include "mock_server/request_validator.h"

namespace mock::gemini {
namespace {

using ojson = nlohmann::ordered_json;

constexpr std::string_view kModelsPrefix = "/v1beta/models/";

ojson usage_metadata() {
  ojson u = ojson::object();
  u["promptTokenCount"] = 8;
  u["candidatesTokenCount"] = 1;
  u["totalTokenCount"] = 9;
  return u;
}

ojson response_shell(ojson candidate, const FrameContext& ctx) {
  ojson r = ojson::object();
  r["candidates"] = ojson::array({std::move(candidate)});
  r["usageMetadata"] = usage_metadata();
  r["modelVersion"] = ctx.model;
  r["responseId"] = ctx.response_id;
  return r;
}

ojson model_content(ojson parts) {
  ojson c = ojson::object();
  c["role"] = "model";
  c["parts"] = std::move(parts);
  return c;
}

ojson part_for(const Event& event) {
  if (auto* t = std::get_if<TextEvent>(&event)) return ojson{{"text", t->text}};
  const auto& c = std::get<CallEvent>(event);
  ojson call = ojson::object();
  call["name"] = c.name;
  call["args"] = c.args.is_null() ? ojson::object() : ojson(c.args);
  if (!c.id.empty()) call["id"] = c.id;
  return ojson{{"functionCall", std::move(call)}};
}

bool finish_has_content(FinishReason r) {
  return r == FinishReason::kStop || r == FinishReason::kMaxTokens;
}

}  // namespace

std::optional<Target> parse_target(std::string_view target) {
  const auto q = target.find('?');
  std::string_view path = target.substr(0, q);
  if (path.substr(0, kModelsPrefix.size()) != kModelsPrefix) return std::nullopt;
  path.remove_prefix(kModelsPrefix.size());
  const auto colon = path.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  const std::string_view model = path.substr(0, colon);
  const std::string_view method = path.substr(colon + 1);
  if (model.find('/') != std::string_view::npos) return std::nullopt;
  if (method == "streamGenerateContent") return Target{std::string(model), true};
  if (method == "generateContent") return Target{std::string(model), false};
  return std::nullopt;
}

std::string_view status_name(int status) {
  switch (status) {
    case 400: return "INVALID_ARGUMENT";
    case 401: return "UNAUTHENTICATED";
    case 403: return "PERMISSION_DENIED";
    case 404: return "NOT_FOUND";
    case 409: return "ABORTED";
    case 429: return "RESOURCE_EXHAUSTED";
    case 499: return "CANCELLED";
    case 500: return "INTERNAL";
    case 501: return "UNIMPLEMENTED";
    case 502:
    case 503:
    case 529: return "UNAVAILABLE";
    case 504: return "DEADLINE_EXCEEDED";
    default: return "UNKNOWN";
  }
}

std::string_view default_message(int status) {
  switch (status) {
    case 400: return "Request contains an invalid argument.";
    case 401: return "API key not valid. Please pass a valid API key.";
    case 403: return "The caller does not have permission";
    case 404: return "Requested entity was not found.";
    case 429: return "Resource has been exhausted (e.g. check quota).";
    case 500: return "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting";
    case 502: return "The service is currently unavailable.";
    case 503:
    case 529: return "The model is overloaded. Please try again later.";
    case 504: return "Deadline expired before operation could complete.";
    default: return "The request failed.";
  }
}

std::string retry_delay(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) seconds = 0;
  if (seconds == std::floor(seconds) && seconds < 1e15) {
    return std::to_string(static_cast<long long>(seconds)) + "s";
  }
  return nlohmann::json(seconds).dump() + "s";
}

ojson error_envelope(int status, std::string_view message, std::optional<double> retry_after_s) {
  ojson e = ojson::object();
  e["code"] = status;
  e["message"] = std::string(message);
  e["status"] = std::string(status_name(status));
  if (retry_after_s) {
    ojson info = ojson::object();
    info["@type"] = "type.googleapis.com/google.rpc.RetryInfo";
    info["retryDelay"] = retry_delay(*retry_after_s);
    e["details"] = ojson::array({std::move(info)});
  }
  return ojson{{"error", std::move(e)}};
}

std::string error_body(int status, std::string_view message, std::optional<double> retry_after_s) {
  return error_envelope(status, message, retry_after_s).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

std::string_view error_content_type(std::string_view target) {
  const auto t = parse_target(target);
  return t && t->streaming ? "text/event-stream" : "application/json; charset=UTF-8";
}

std::string response_id(std::size_t journal_index) {
  return "hiccup-" + std::to_string(journal_index);
}

std::string_view finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "STOP";
    case FinishReason::kMaxTokens: return "MAX_TOKENS";
    case FinishReason::kContentFilter: return "SAFETY";
    case FinishReason::kMalformedCall: return "MALFORMED_FUNCTION_CALL";
  }
  return "STOP";
}

ojson event_response(const Event& event, const FrameContext& ctx) {
  ojson cand = ojson::object();
  if (auto* f = std::get_if<FinishEvent>(&event)) {
    if (finish_has_content(f->reason)) cand["content"] = model_content(ojson::array());
    cand["finishReason"] = std::string(finish_reason_name(f->reason));
  } else {
    cand["content"] = model_content(ojson::array({part_for(event)}));
  }
  cand["index"] = 0;
  return response_shell(std::move(cand), ctx);
}

std::string sse_frame(const ojson& response) { return "data: " + response.dump() + "\r\n\r\n"; }

namespace {

/// event_frame without building a JSON tree, for text and finish events: the same bytes as
/// sse_frame(event_response(event, ctx)) (gemini_format_test compares them). False when the event
/// needs the general path (a call).
bool direct_event_frame(std::string& out, const Event& event, const FrameContext& ctx) {
  const auto* text = std::get_if<TextEvent>(&event);
  const auto* finish = std::get_if<FinishEvent>(&event);
  if (text == nullptr && finish == nullptr) return false;
  out.reserve(230 + (text ? text->text.size() : 0) + ctx.model.size() + ctx.response_id.size());
  out += "data: {\"candidates\":[{";
  if (text) {
    out += "\"content\":{\"role\":\"model\",\"parts\":[{\"text\":";
    json_text::append_string(out, text->text);
    out += "}]},";
  } else {
    if (finish_has_content(finish->reason)) out += "\"content\":{\"role\":\"model\",\"parts\":[]},";
    out += "\"finishReason\":\"";
    out += finish_reason_name(finish->reason);
    out += "\",";
  }
  out += "\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":8,\"candidatesTokenCount\":1,"
         "\"totalTokenCount\":9},\"modelVersion\":";
  json_text::append_string(out, ctx.model);
  out += ",\"responseId\":";
  json_text::append_string(out, ctx.response_id);
  out += "}\r\n\r\n";
  return true;
}

}  // namespace

std::string event_frame(const Event& event, const FrameContext& ctx) {
  // The mock server encodes every frame of every answer: the direct path spares the JSON tree
  // (its allocations and nlohmann's serializer) for the common events.
  std::string out;
  if (direct_event_frame(out, event, ctx)) return out;
  return sse_frame(event_response(event, ctx));
}

std::string malformed_frame() { return "data: {\"candidates\":[{\r\n\r\n"; }

std::string stream_error_chunk(int status) {
  return error_envelope(status, default_message(status), std::nullopt).dump() + "\n";
}

ojson merged_response(const std::vector<Event>& events, const FrameContext& ctx) {
  ojson parts = ojson::array();
  std::optional<FinishReason> finish;
  bool text_run = false;  // the last part is the text part of the current run of text
  for (const auto& e : events) {
    if (auto* f = std::get_if<FinishEvent>(&e)) {
      if (!finish) finish = f->reason;
    } else if (auto* t = std::get_if<TextEvent>(&e); t && text_run) {
      // One text part per run of text (a stream sends each in a chunk of its own, as live).
      parts.back()["text"].get_ref<std::string&>() += t->text;
    } else {
      parts.push_back(part_for(e));
      text_run = t != nullptr;
    }
  }
  ojson cand = ojson::object();
  // A content filter blocks the whole answer: the candidate has no content, whatever was
  // generated before (WIRE-FORMATS.md "Gemini": a blocked output).
  // So does a malformed call: the candidate carries the finish and a finishMessage, no content
  // (the call as the model wrote it is not a valid functionCall).
  const bool malformed_call = finish && *finish == FinishReason::kMalformedCall;
  const bool blocked = finish && !finish_has_content(*finish) &&
                       (parts.empty() || *finish == FinishReason::kContentFilter || malformed_call);
  if (!blocked) cand["content"] = model_content(std::move(parts));
  if (finish) cand["finishReason"] = std::string(finish_reason_name(*finish));
  if (malformed_call) cand["finishMessage"] = "Malformed function call.";
  cand["index"] = 0;
  return response_shell(std::move(cand), ctx);
}


// ---- The WireFormat ---------------------------------------------------------------------------


namespace {

class GeminiEncoder final : public StreamEncoder {
 public:
  explicit GeminiEncoder(FrameContext ctx) : ctx_(std::move(ctx)) {}
  std::string open() override { return ""; }
  std::vector<std::string> event_units(const Event& event, int /*call_index*/) override {
    // A call travels whole in one frame: no start, no fragments, the frame is its done unit.
    // (Built by moves: a braced list would copy each frame once more.)
    std::vector<std::string> units;
    units.reserve(2);
    if (std::holds_alternative<CallEvent>(event)) units.emplace_back();
    units.push_back(event_frame(event, ctx_));
    return units;
  }
  std::string error_event(int status) override { return stream_error_chunk(status); }
  std::string malformed_frame() override { return gemini::malformed_frame(); }

 private:
  FrameContext ctx_;
};

class GeminiFormat final : public WireFormat {
 public:
  std::string_view name() const override { return "gemini"; }
  std::vector<std::string> paths() const override {
    return {"POST /v1beta/models/{model}:streamGenerateContent?alt=sse",
            "POST /v1beta/models/{model}:generateContent"};
  }
  bool matches(std::string_view path) const override { return parse_target(path).has_value(); }

  DecodedRequest decode_request(std::string_view target, std::string_view body) const override {
    DecodedRequest out;
    if (auto t = parse_target(target)) {
      out.model = t->model;
      out.streaming = t->streaming;
    }
    nlohmann::json parsed;
    if (auto rejection = validate_request(body, &parsed)) {
      out.rejection = std::move(*rejection);
      // Keep what we can parse for the record.
      auto j = parse_json(body);
      if (j.is_object() && j.contains("contents") && j["contents"].is_array()) out.contents = j["contents"];
      return out;
    }
    out.contents = std::move(parsed["contents"]);
    return out;
  }

  std::string default_message(int status) const override {
    return std::string(gemini::default_message(status));
  }

  ErrorAnswer error_answer(int status, std::string_view message,
                           std::optional<double> retry_after_s) const override {
    return {error_body(status, message, retry_after_s), {}};
  }

  std::string error_content_type(std::string_view target) const override {
    return std::string(gemini::error_content_type(target));
  }

  std::string call_id(std::size_t, int) const override { return ""; }

  std::unique_ptr<StreamEncoder> stream_encoder(const ResponseContext& ctx) const override {
    return std::make_unique<GeminiEncoder>(FrameContext{ctx.model, response_id(ctx.journal_index)});
  }

  std::string unary_body(const std::vector<Event>& events, const ResponseContext& ctx) const override {
    return merged_response(events, FrameContext{ctx.model, response_id(ctx.journal_index)}).dump();
  }

  bool filtered_answer_keeps_parts() const override { return false; }
  bool malformed_call_answer_keeps_parts() const override { return false; }

  std::optional<std::string> status_note(int status) const override {
    // The HTTP statuses of google.rpc codes as the Gemini API answers them (ai.google.dev
    // "Troubleshooting": 400, 403, 404, 429, 500, 503, 504; google.rpc.Code's HTTP mapping adds
    // 401 UNAUTHENTICATED, 409 ABORTED, 499 CANCELLED, 501 UNIMPLEMENTED), plus 502 from Google's
    // front end. No 529: that is Anthropic's overloaded_error (WIRE-FORMATS.md).
    static const StatusTable table{"gemini", {400, 401, 403, 404, 409, 429, 499, 500, 501, 502, 503, 504},
                                   "503 UNAVAILABLE"};
    return table.note(status);
  }
};

}  // namespace

const WireFormat& format() {
  static const GeminiFormat instance;
  return instance;
}

}  // namespace mock::gemini
