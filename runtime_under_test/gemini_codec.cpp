// Gemini wire codec (see gemini_codec.h).
#include "runtime_under_test/gemini_codec.h"

#include <charconv>

namespace rut {

using nlohmann::json;

std::string stream_target(std::string_view model) {
  return "/v1beta/models/" + std::string(model) + ":streamGenerateContent?alt=sse";
}

namespace {

std::string gemini_tools(const std::vector<std::string>& tool_names) {
  json decls = json::array();
  for (const auto& name : tool_names) {
    decls.push_back({{"name", name}, {"description", "simulated tool " + name}, {"parameters", {{"type", "object"}}}});
  }
  return json::array({{{"functionDeclarations", decls}}}).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string build_request_body(const json& contents, const std::vector<std::string>& tool_names) {
  // The text json{{"contents", contents}, {"tools", …}}.dump() gives ("contents" sorts before
  // "tools"), written without copying the history into a second tree.
  std::string body = "{\"contents\":" + contents.dump();
  if (!tool_names.empty()) body += ",\"tools\":" + tools_text(tool_names, &gemini_tools);
  body += '}';
  return body;
}

std::optional<double> parse_duration_s(std::string_view text) {
  if (text.size() < 2 || text.back() != 's') return std::nullopt;
  text.remove_suffix(1);
  try {
    std::size_t used = 0;
    std::string s(text);
    double value = std::stod(s, &used);
    if (used != s.size() || value < 0) return std::nullopt;
    return value;
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<GeminiError> parse_error(std::string_view body) {
  json parsed = parse_json(body);
  if (!parsed.is_object() || !parsed.contains("error") || !parsed["error"].is_object()) {
    return std::nullopt;
  }
  const json& e = parsed["error"];
  GeminiError out;
  if (e.contains("code") && e["code"].is_number_integer()) out.code = e["code"].get<int>();
  if (e.contains("message") && e["message"].is_string()) out.message = e["message"];
  if (e.contains("status") && e["status"].is_string()) out.status = e["status"];
  if (e.contains("details") && e["details"].is_array()) {
    for (const json& d : e["details"]) {
      if (d.is_object() && string_member(d, "@type") == "type.googleapis.com/google.rpc.RetryInfo" &&
          d.contains("retryDelay") && d["retryDelay"].is_string()) {
        if (auto s = parse_duration_s(d["retryDelay"].get<std::string>())) out.retry_after_s = *s;
      }
      // googleQuotaErrors.ts (gemini-cli) reads the same: "PerDay" in a quota id is terminal.
      if (d.is_object() && string_member(d, "@type") == "type.googleapis.com/google.rpc.QuotaFailure" &&
          d.contains("violations") && d["violations"].is_array()) {
        for (const json& v : d["violations"]) {
          if (v.is_object() && string_member(v, "quotaId").find("PerDay") != std::string::npos) out.daily_quota = true;
        }
      }
    }
  }
  return out;
}

std::optional<GeminiFrame> parse_frame(std::string_view data) {
  // Every streamed chunk carries usageMetadata, modelVersion and responseId, which nothing here
  // reads: checked, not built.
  json parsed = parse_json(data, {"usageMetadata", "modelVersion", "responseId"});
  if (!parsed.is_object()) return std::nullopt;
  GeminiFrame frame;
  if (parsed.contains("error")) {
    frame.is_error = true;
    if (auto e = parse_error(data)) frame.error_message = e->message;
    return frame;
  }
  if (!parsed.contains("candidates") || !parsed["candidates"].is_array() ||
      parsed["candidates"].empty()) {
    return frame;  // e.g. a usage-only frame
  }
  const json& cand = parsed["candidates"][0];
  if (!cand.is_object()) return std::nullopt;
  if (cand.contains("content") && cand["content"].is_object() &&
      cand["content"].contains("parts") && cand["content"]["parts"].is_array()) {
    for (const json& p : cand["content"]["parts"]) {
      if (!p.is_object()) continue;
      // Gemini 3 (ai.google.dev "Thought signatures"): a thoughtSignature on any part, to be sent
      // back on that part; a thought part (`thought: true`) is reasoning, not text.
      const std::string signature = string_member(p, "thoughtSignature");
      const bool thought = p.contains("thought") && p["thought"].is_boolean() && p["thought"].get<bool>();
      if (p.contains("functionCall") && p["functionCall"].is_object()) {
        const json& fc = p["functionCall"];
        FunctionCall call;
        call.name = string_member(fc, "name");
        if (fc.contains("args") && fc["args"].is_object()) call.args = fc["args"];
        if (fc.contains("id") && fc["id"].is_string()) call.id = fc["id"].get<std::string>();
        ModelPart part{std::nullopt, std::move(call)};
        part.thought_signature = signature;
        frame.parts.push_back(std::move(part));
      } else if (thought) {
        // A thought summary is for display; only a signature must go back (on the call part that
        // carried it, or on this part when it carries one).
        if (!signature.empty()) {
          ModelPart part;
          part.reasoning = Reasoning{string_member(p, "text"), signature, "", true};
          frame.parts.push_back(std::move(part));
        }
      } else if (p.contains("text") && p["text"].is_string()) {
        std::string text = p["text"].get<std::string>();
        // The finish frame's empty text part (gemini-3 streams its finish with one) carries
        // nothing: kept out of the turn unless it carries a signature.
        const bool finish_filler = text.empty() && cand.contains("finishReason");
        if ((!text.empty() || signature.empty()) && !finish_filler) {
          frame.parts.push_back({std::move(text), std::nullopt});
        }
        if (!signature.empty()) {
          // A step's signature without a call, on its last part: kept as a part of its own.
          ModelPart part;
          part.reasoning = Reasoning{"", signature, "", false};
          frame.parts.push_back(std::move(part));
        }
      }
    }
  }
  if (cand.contains("finishReason") && cand["finishReason"].is_string()) {
    frame.finish_reason = cand["finishReason"].get<std::string>();
  }
  return frame;
}

json part_to_json(const ModelPart& part) {
  if (part.call) {
    json fc = {{"name", part.call->name}, {"args", part.call->args}};
    if (part.call->id) fc["id"] = *part.call->id;
    json out = {{"functionCall", fc}};
    if (!part.thought_signature.empty()) out["thoughtSignature"] = part.thought_signature;
    return out;
  }
  if (part.reasoning) {
    // The neutral history's reasoning part: Gemini's own shape (a thought part, or a part carrying
    // only a signature), plus the Responses item id where there is one; each codec sends it back
    // its provider's way.
    const Reasoning& r = *part.reasoning;
    json out = {{"text", r.text}};
    if (r.thought) out["thought"] = true;
    if (!r.signature.empty()) out["thoughtSignature"] = r.signature;
    if (!r.id.empty()) out["reasoningId"] = r.id;
    if (r.redacted) out["redacted"] = true;
    return out;
  }
  return {{"text", part.text.value_or("")}};
}

json function_response_json(const FunctionCall& call, const json& response) {
  json fr = {{"name", call.name}};
  if (call.id) fr["id"] = *call.id;
  fr["response"] = response;
  return {{"functionResponse", fr}};
}


// ---- The ICodec ------------------------------------------------------------------------------

namespace {

FinishClass finish_class(const std::string& reason) {
  if (reason == "STOP") return FinishClass::kStop;
  if (reason == "MAX_TOKENS") return FinishClass::kMaxTokens;
  if (reason == "SAFETY" || reason == "RECITATION") return FinishClass::kContentFilter;
  if (reason == "MALFORMED_FUNCTION_CALL") return FinishClass::kMalformedCall;
  return FinishClass::kOther;
}

DecodedChunk chunk_from_frame(std::optional<GeminiFrame> frame) {
  DecodedChunk out;
  if (!frame) {
    out.undecodable = true;
    return out;
  }
  if (frame->is_error) {
    out.stream_error = frame->error_message;
    return out;
  }
  int position = 0;
  for (ModelPart& p : frame->parts) {
    if (p.call) p.position_in_frame = position++;
    out.parts.push_back(std::move(p));
  }
  if (frame->finish_reason) {
    out.finish = finish_class(*frame->finish_reason);
    out.finish_reason = *frame->finish_reason;
  }
  return out;
}

class GeminiDecoder final : public IStreamDecoder {
 public:
  DecodedChunk on_frame(const SseFrame& frame) override {
    if (frame.kind == SseFrame::Kind::kErrorObject) {
      DecodedChunk out;
      auto e = parse_error(frame.data);
      out.stream_error = e ? std::to_string(e->code) + " " + e->message : frame.data;
      return out;
    }
    return chunk_from_frame(parse_frame(frame.data));
  }
  std::optional<FunctionCall> repaired_open_call(std::string_view unterminated) const override {
    // A call travels whole in one frame, so an open call is a call frame cut in the middle.
    if (unterminated.find("\"functionCall\"") == std::string_view::npos) return std::nullopt;
    auto repaired = repair_json(unterminated);
    if (!repaired) return std::nullopt;
    auto frame = parse_frame(repaired->dump());
    if (!frame) return std::nullopt;
    for (ModelPart& p : frame->parts) {
      if (p.call) return std::move(*p.call);
    }
    return std::nullopt;
  }
};

class GeminiCodec final : public ICodec {
 public:
  std::string_view provider() const override { return "gemini"; }
  std::string default_model() const override { return "gemini-2.5-flash"; }
  HttpRequest make_request(const json& contents, std::string_view model,
                           const std::vector<std::string>& tool_names, bool stream) const override {
    HttpRequest req;
    req.target = stream ? stream_target(model)
                        : "/v1beta/models/" + std::string(model) + ":generateContent";
    req.body = build_request_body(contents, tool_names);
    req.headers = {{"Content-Type", "application/json"}, {"x-goog-api-key", "hiccup"}};
    return req;
  }
  std::unique_ptr<IStreamDecoder> stream_decoder() const override {
    return std::make_unique<GeminiDecoder>();
  }
  DecodedChunk decode_body(std::string_view body) const override {
    return chunk_from_frame(parse_frame(body));
  }
  ProviderError parse_error(std::string_view body, const Headers&) const override {
    ProviderError out;
    if (auto e = rut::parse_error(body)) {
      out.message = e->status + ": " + e->message;
      out.retry_after_s = e->retry_after_s;
      out.daily_quota = e->daily_quota;
    }
    return out;
  }
};

}  // namespace

const ICodec& gemini_codec() {
  static const GeminiCodec instance;
  return instance;
}

}  // namespace rut
