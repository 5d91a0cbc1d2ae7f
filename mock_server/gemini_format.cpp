// The Gemini wire format: frames, envelopes and request summaries (see gemini_format.h).
#include "mock_server/gemini_format.h"

#include <algorithm>
#include <cmath>

#include "mock_server/json_text.h"
#include "mock_server/request_validator.h"

namespace mock::gemini {
namespace {

using ojson = nlohmann::ordered_json;

constexpr std::string_view kModelsPrefix = "/v1beta/models/";

/// The usage as every recorded frame has it: the three counts, the prompt's count per modality
/// (`promptTokensDetails`), then `thoughtsTokenCount` when the answer reasoned (recorded live:
/// pydantic/pydantic-ai test_google cassettes, gemini-2.0 to gemini-3; docs/WIRE-FORMATS.md
/// "Checked against recordings").
ojson usage_metadata(int thoughts) {
  ojson u = ojson::object();
  u["promptTokenCount"] = 8;
  u["candidatesTokenCount"] = 1;
  u["totalTokenCount"] = 9 + thoughts;
  ojson detail = ojson::object();
  detail["modality"] = "TEXT";
  detail["tokenCount"] = 8;
  u["promptTokensDetails"] = ojson::array({std::move(detail)});
  if (thoughts > 0) u["thoughtsTokenCount"] = thoughts;
  return u;
}

/// The finish frame's one part, an empty text, as gemini-3 streams its finish (recorded live:
/// pydantic/pydantic-ai test_google_streaming_tool_call_thought_signature.yaml, 2025-12-31); a
/// signature of reasoning no call followed rides on it.
ojson finish_part() { return ojson{{"text", ""}}; }

ojson response_shell(ojson candidate, const FrameContext& ctx);

/// `{"text":"","thoughtSignature":S}`: the signature of reasoning no call followed, on a part of
/// its own, as the API sends a step's signature without a call in its last part.
ojson signature_part(const std::string& signature) {
  ojson p = ojson::object();
  p["text"] = "";
  p["thoughtSignature"] = signature;
  return p;
}

ojson response_shell(ojson candidate, const FrameContext& ctx) {
  ojson r = ojson::object();
  r["candidates"] = ojson::array({std::move(candidate)});
  r["usageMetadata"] = usage_metadata(ctx.thoughts);
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
  if (auto* r = std::get_if<ReasoningEvent>(&event)) {
    // A thought summary part (includeThoughts); its signature travels on the next call part.
    ojson p = ojson::object();
    p["text"] = r->text;
    p["thought"] = true;
    return p;
  }
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

std::string quota_error_body(Quota quota, std::string_view model, std::optional<double> retry_after_s) {
  const bool per_day = quota == Quota::kPerDay;
  const std::string shown_model = model.empty() ? std::string("gemini-2.5-pro") : std::string(model);
  const char* const metric = "generativelanguage.googleapis.com/generate_content_free_tier_requests";
  const char* const limit = per_day ? "20" : "5";
  std::string message =
      "You exceeded your current quota, please check your plan and billing details. For more information on this "
      "error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. To monitor your current usage, head to: "
      "https://ai.dev/usage?tab=rate-limit. \n* Quota exceeded for metric: ";
  message += metric;
  message += ", limit: ";
  message += limit;
  message += ", model: " + shown_model;
  if (retry_after_s) message += "\nPlease retry in " + retry_delay(*retry_after_s) + ".";
  ojson e = error_envelope(429, message, std::nullopt);
  ojson details = ojson::array();
  ojson violation = ojson::object();
  violation["quotaMetric"] = metric;
  violation["quotaId"] = per_day ? "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
                                 : "GenerateRequestsPerMinutePerProjectPerModel-FreeTier";
  violation["quotaDimensions"] = ojson{{"location", "global"}, {"model", shown_model}};
  violation["quotaValue"] = limit;
  ojson failure = ojson::object();
  failure["@type"] = "type.googleapis.com/google.rpc.QuotaFailure";
  failure["violations"] = ojson::array({std::move(violation)});
  details.push_back(std::move(failure));
  ojson help = ojson::object();
  help["@type"] = "type.googleapis.com/google.rpc.Help";
  help["links"] = ojson::array({ojson{{"description", "Learn more about Gemini API quotas"},
                                      {"url", "https://ai.google.dev/gemini-api/docs/rate-limits"}}});
  details.push_back(std::move(help));
  if (retry_after_s) {
    ojson info = ojson::object();
    info["@type"] = "type.googleapis.com/google.rpc.RetryInfo";
    info["retryDelay"] = retry_delay(*retry_after_s);
    details.push_back(std::move(info));
  }
  e["error"]["details"] = std::move(details);
  return e.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
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
    if (finish_has_content(f->reason)) cand["content"] = model_content(ojson::array({finish_part()}));
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
  out.reserve(290 + (text ? text->text.size() : 0) + ctx.model.size() + ctx.response_id.size());
  out += "data: {\"candidates\":[{";
  if (text) {
    out += "\"content\":{\"role\":\"model\",\"parts\":[{\"text\":";
    json_text::append_string(out, text->text);
    out += "}]},";
  } else {
    if (finish_has_content(finish->reason)) out += "\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"\"}]},";
    out += "\"finishReason\":\"";
    out += finish_reason_name(finish->reason);
    out += "\",";
  }
  out += "\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":8,\"candidatesTokenCount\":1,\"totalTokenCount\":";
  if (ctx.thoughts > 0) {
    out += std::to_string(9 + ctx.thoughts);
    out += ",\"promptTokensDetails\":[{\"modality\":\"TEXT\",\"tokenCount\":8}],\"thoughtsTokenCount\":";
    out += std::to_string(ctx.thoughts);
  } else {
    out += "9,\"promptTokensDetails\":[{\"modality\":\"TEXT\",\"tokenCount\":8}]";
  }
  out += "},\"modelVersion\":";
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
  std::string pending;    // the signature of reasoning waiting for its call part
  for (const auto& e : events) {
    if (auto* f = std::get_if<FinishEvent>(&e)) {
      if (!finish) finish = f->reason;
    } else if (auto* t = std::get_if<TextEvent>(&e); t && text_run) {
      // One text part per run of text (a stream sends each in a chunk of its own, as live).
      parts.back()["text"].get_ref<std::string&>() += t->text;
    } else if (auto* r = std::get_if<ReasoningEvent>(&e)) {
      if (!pending.empty()) parts.push_back(signature_part(pending));
      parts.push_back(part_for(e));
      pending = r->signature;
      text_run = false;
    } else {
      parts.push_back(part_for(e));
      if (std::holds_alternative<CallEvent>(e) && !pending.empty()) {
        parts.back()["thoughtSignature"] = pending;
        pending.clear();
      }
      text_run = t != nullptr;
    }
  }
  if (!pending.empty()) parts.push_back(signature_part(pending));
  FrameContext counted = ctx;
  counted.thoughts = static_cast<int>(std::count_if(events.begin(), events.end(), [](const Event& e) {
    return std::holds_alternative<ReasoningEvent>(e);
  }));
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
  return response_shell(std::move(cand), counted);
}


std::string missing_signature_message(std::string_view name, std::size_t position) {
  return "Function call is missing a thought_signature in functionCall parts. This is required for tools to work "
         "correctly, and missing thought_signature may lead to degraded model performance. Additional data, "
         "function call `default_api:" + std::string(name) + "` , position " + std::to_string(position) +
         ". Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.";
}

std::optional<Rejection> check_thought_signatures(std::string_view body, const std::vector<ReasoningCheck>& checks) {
  const nlohmann::json parsed = parse_json(body);
  if (!parsed.is_object() || !parsed.contains("contents") || !parsed["contents"].is_array()) return std::nullopt;
  const nlohmann::json& contents = parsed["contents"];
  // Only the current turn is validated: the model contents after the last user content with
  // standard content (text), i.e. not a function response (ai.google.dev "Thought signatures").
  int current = -1;
  for (std::size_t i = 0; i < contents.size(); ++i) {
    const nlohmann::json& c = contents[i];
    if (!c.is_object() || c.value("role", std::string("user")) == "model") continue;
    const auto parts = c.find("parts");
    if (parts == c.end() || !parts->is_array()) continue;
    for (const auto& p : *parts) {
      if (p.is_object() && p.contains("text")) current = static_cast<int>(i);
    }
  }
  for (const ReasoningCheck& check : checks) {
    if (check.content <= current || static_cast<std::size_t>(check.content) >= contents.size()) continue;
    const nlohmann::json& parts = contents[static_cast<std::size_t>(check.content)]["parts"];
    for (const ReasoningCheck::Call& call : check.calls) {
      // The call's part: the position-th functionCall part of the content.
      const nlohmann::json* part = nullptr;
      int k = 0;
      for (const auto& p : parts) {
        if (!p.is_object() || !p.contains("functionCall")) continue;
        if (k++ == call.position) {
          part = &p;
          break;
        }
      }
      if (part == nullptr) continue;
      const auto sig = part->find("thoughtSignature");
      const std::string signature = sig != part->end() && sig->is_string() ? sig->get<std::string>() : std::string();
      const bool valid = std::any_of(call.deliveries.begin(), call.deliveries.end(), [&](const auto& d) {
        return !d.reasoning.empty() && d.reasoning.back().signature == signature;
      });
      if (valid) continue;
      // The API numbers contents from 1 in this message ("position 2" for the first model turn).
      if (signature.empty()) return Rejection{400, missing_signature_message(call.name, static_cast<std::size_t>(check.content) + 1), true};
      return Rejection{400, std::string(kCorruptedSignatureMessage), true};
    }
  }
  return std::nullopt;
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
    const bool call = std::holds_alternative<CallEvent>(event);
    if (call) units.emplace_back();
    if (pending_.empty() && !std::holds_alternative<ReasoningEvent>(event)) {
      units.push_back(event_frame(event, ctx_));
      return units;
    }
    // Reasoning (Gemini 3, ai.google.dev "Thought signatures"): a thought part, and its signature
    // on the first functionCall part after it; when no call comes before the next reasoning or
    // the finish, on a part of its own (`{"text":"","thoughtSignature":…}`) there: the finish
    // frame's empty text part.
    if (std::holds_alternative<ReasoningEvent>(event)) ++ctx_.thoughts;
    ojson response = event_response(event, ctx_);
    ojson& cand = response["candidates"][0];
    if (auto* r = std::get_if<ReasoningEvent>(&event)) {
      if (!pending_.empty()) {
        cand["content"]["parts"].insert(cand["content"]["parts"].begin(), signature_part(pending_));
      }
      pending_ = r->signature;
    } else if (call) {
      cand["content"]["parts"][0]["thoughtSignature"] = pending_;
      pending_.clear();
    } else if (std::holds_alternative<FinishEvent>(event)) {
      if (cand.contains("content")) cand["content"]["parts"][0]["thoughtSignature"] = pending_;
      pending_.clear();
    }
    units.push_back(sse_frame(response));
    return units;
  }
  std::string error_event(int status) override { return stream_error_chunk(status); }
  std::string malformed_frame() override { return gemini::malformed_frame(); }

 private:
  FrameContext ctx_;
  std::string pending_;  // the signature of the last reasoning event, until a part carries it
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

  ErrorAnswer quota_answer(Quota quota, std::string_view model, std::optional<double> retry_after_s) const override {
    return {quota_error_body(quota, model, retry_after_s), {}};
  }

  std::string error_content_type(std::string_view target) const override {
    return std::string(gemini::error_content_type(target));
  }

  std::string call_id(std::size_t, int) const override { return ""; }

  std::optional<Rejection> check_reasoning(std::string_view body,
                                           const std::vector<ReasoningCheck>& checks) const override {
    return check_thought_signatures(body, checks);
  }

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
