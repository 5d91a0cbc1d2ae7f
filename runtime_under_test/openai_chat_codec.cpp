// The OpenAI Chat Completions codec (see openai_chat_codec.h).
#include "runtime_under_test/openai_chat_codec.h"

#include <algorithm>
#include <cstdlib>

namespace rut {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

// ---- JSON helpers that never throw --------------------------------------------------------------

const json* member(const json& o, const char* key) {
  if (!o.is_object()) return nullptr;
  auto it = o.find(key);
  return it == o.end() ? nullptr : &*it;
}

// ---- Request -------------------------------------------------------------------------------------

std::string joined_text(const json& parts) {
  std::string text;
  if (!parts.is_array()) return text;
  for (const json& p : parts) {
    // Reasoning (a thought part of the neutral history) has no place in Chat Completions.
    if (member(p, "thought") != nullptr || member(p, "thoughtSignature") != nullptr) continue;
    if (const json* t = member(p, "text"); t && t->is_string()) text += t->get<std::string>();
  }
  return text;
}

/// The `tools` array of a Chat request: one function per name, parameters any object.
std::string chat_tools(const std::vector<std::string>& tool_names) {
  ojson tools = ojson::array();
  for (const std::string& name : tool_names) {
    ojson fn = ojson::object();
    fn["name"] = name;
    fn["parameters"] = ojson{{"type", "object"}};
    ojson tool = ojson::object();
    tool["type"] = "function";
    tool["function"] = std::move(fn);
    tools.push_back(std::move(tool));
  }
  return tools.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

/// The neutral history as Chat `messages`, written as JSON text (each message's members in the
/// API's order: role, content, tool_calls / tool_call_id), without building the messages as trees
/// first (which was most of a request's encoding cost). Text that is not UTF-8 is replaced (U+FFFD).
/// A call without an id (history from a provider that sends none) gets `call_h<model content>_<k>`,
/// and the responses after it take those ids by position, so the pairing the API checks by id
/// still holds.
void append_messages(std::string& out, const json& contents) {
  out += '[';
  bool first = true;
  auto open_message = [&] {
    if (!first) out += ',';
    first = false;
  };
  std::vector<std::string> previous_ids;  // the ids of the last model content's calls
  int model_count = 0;
  static const json kNoParts = json::array();
  for (const json& content : contents.is_array() ? contents : kNoParts) {
    const std::string role = content.is_object() ? string_member(content, "role") : std::string();
    const json* parts_j = member(content, "parts");
    const json& parts = parts_j && parts_j->is_array() ? *parts_j : kNoParts;
    const std::string text = joined_text(parts);
    if (role == "model") {
      std::string calls;
      previous_ids.clear();
      for (const json& p : parts) {
        const json* fc = member(p, "functionCall");
        if (fc == nullptr || !fc->is_object()) continue;
        std::string id = string_member(*fc, "id");
        if (id.empty()) id = "call_h" + std::to_string(model_count) + "_" + std::to_string(previous_ids.size());
        std::string arguments;
        if (const json* args = member(*fc, "args")) append_json(arguments, *args);
        else arguments = "{}";
        if (!calls.empty()) calls += ',';
        calls += "{\"id\":";
        append_json_string(calls, id);
        calls += ",\"type\":\"function\",\"function\":{\"name\":";
        append_json_string(calls, string_member(*fc, "name"));
        calls += ",\"arguments\":";
        append_json_string(calls, arguments);
        calls += "}}";
        previous_ids.push_back(std::move(id));
      }
      open_message();
      out += "{\"role\":\"assistant\",\"content\":";
      // content may be null only beside tool_calls
      if (text.empty() && !calls.empty()) out += "null";
      else append_json_string(out, text);
      if (!calls.empty()) out += ",\"tool_calls\":[" + calls + "]";
      out += '}';
      ++model_count;
      continue;
    }
    std::size_t k = 0;
    for (const json& p : parts) {
      const json* fr = member(p, "functionResponse");
      if (fr == nullptr || !fr->is_object()) continue;
      std::string id = string_member(*fr, "id");
      if (id.empty() && k < previous_ids.size()) id = previous_ids[k];
      std::string response;
      if (const json* r = member(*fr, "response")) append_json(response, *r);
      else response = "{}";
      open_message();
      out += "{\"role\":\"tool\",\"tool_call_id\":";
      append_json_string(out, id);
      out += ",\"content\":";
      append_json_string(out, response);
      out += '}';
      ++k;
    }
    if (k == 0 || !text.empty()) {
      open_message();
      out += "{\"role\":\"user\",\"content\":";
      append_json_string(out, text);
      out += '}';
    }
  }
  out += ']';
}

// ---- Responses -----------------------------------------------------------------------------------

/// An `{"error":{…}}` object (a stream frame or a non-streaming body) as a chunk: `model_error`
/// (the API's answer to model output it cannot parse) is the malformed-call finish, anything
/// else an in-stream error "type: message".
DecodedChunk error_chunk(const json& error) {
  DecodedChunk out;
  const std::string type = string_member(error, "type");
  const std::string message = error.is_string() ? error.get<std::string>() : string_member(error, "message");
  if (type == "model_error") {
    out.finish = FinishClass::kMalformedCall;
    out.finish_reason = "model_error";
    return out;
  }
  out.stream_error = type.empty() ? message : type + ": " + message;
  return out;
}

/// Arguments text → a JSON object; nullopt when it does not parse as one ("" is `{}`).
std::optional<json> complete_arguments(const std::string& text) {
  if (text.empty()) return json::object();
  json parsed = parse_json(text);
  if (parsed.is_discarded() || !parsed.is_object()) return std::nullopt;
  return parsed;
}

/// One tool call being accumulated from its `delta.tool_calls` entries.
struct OpenCall {
  int index = 0;
  std::string id;
  std::string name;
  std::string arguments;
  int position = 0;       ///< position of its entry in the chunk that started it
  bool handed_out = false;  ///< already delivered as a part (its arguments were complete)
  int fragments = 0;        ///< entries that added argument text
};

/// Applies one chunk's `delta.tool_calls` entries to `calls` (keyed by `index`, in start order).
void apply_tool_call_deltas(const json& entries, std::vector<OpenCall>& calls) {
  if (!entries.is_array()) return;
  for (std::size_t p = 0; p < entries.size(); ++p) {
    const json& e = entries[p];
    if (!e.is_object()) continue;
    const json* index_j = member(e, "index");
    const int index = index_j && index_j->is_number_integer() ? index_j->get<int>() : static_cast<int>(p);
    auto it = std::find_if(calls.begin(), calls.end(), [&](const OpenCall& c) { return c.index == index; });
    if (it == calls.end()) {
      calls.push_back({index, "", "", "", static_cast<int>(p)});
      it = calls.end() - 1;
    }
    if (std::string id = string_member(e, "id"); !id.empty()) it->id = id;
    if (const json* fn = member(e, "function"); fn && fn->is_object()) {
      if (std::string name = string_member(*fn, "name"); !name.empty()) it->name = name;
      const std::string piece = string_member(*fn, "arguments");
      it->arguments += piece;
      it->fragments += piece.empty() ? 0 : 1;
    }
  }
}

/// Whether `text` is a complete JSON object. A prefix of a compact JSON object text never is, so
/// this is the moment a streamed call's arguments are whole.
bool is_complete_object(const std::string& text) {
  if (text.empty()) return false;
  const json parsed = parse_json(text);
  return !parsed.is_discarded() && parsed.is_object();
}

ModelPart call_part(const OpenCall& c, json args) {
  ModelPart part;
  part.call = FunctionCall{c.name, std::move(args), c.id.empty() ? std::nullopt : std::optional(c.id)};
  part.position_in_frame = c.position;
  return part;
}

class ChatDecoder final : public IStreamDecoder {
 public:
  DecodedChunk on_frame(const SseFrame& frame) override {
    if (frame.kind == SseFrame::Kind::kErrorObject) {
      const json parsed = parse_json(frame.data);
      const json* e = member(parsed, "error");
      return error_chunk(e ? *e : json());
    }
    DecodedChunk out;
    if (frame.data == "[DONE]") {
      if (!finish_reason_) {
        out.finish = FinishClass::kOther;
        out.finish_reason = "[DONE] without a finish_reason";
      } else if (invalid_arguments_) {
        out.finish = FinishClass::kMalformedCall;
        out.finish_reason = *finish_reason_ + " (tool call arguments are not a JSON object)";
      } else {
        out.finish = openai_chat_finish_class(*finish_reason_);
        out.finish_reason = *finish_reason_;
      }
      return out;
    }
    // Only `error` and `choices` are read: the chunk's ids, model and usage are checked, not built.
    const json chunk = parse_json(frame.data, {"id", "object", "created", "model", "system_fingerprint",
                                               "service_tier", "usage", "obfuscation"});
    if (chunk.is_discarded() || !chunk.is_object()) {
      out.undecodable = true;
      return out;
    }
    if (const json* e = member(chunk, "error"); e && !e->is_null()) return error_chunk(*e);
    if (finish_reason_) return out;  // after the finish only the usage chunk and [DONE] remain
    const json* choices = member(chunk, "choices");
    if (choices == nullptr || !choices->is_array() || choices->empty()) return out;  // usage chunk
    const json& choice = (*choices)[0];
    if (const json* delta = member(choice, "delta"); delta && delta->is_object()) {
      if (const json* c = member(*delta, "content"); c && c->is_string() && !c->get_ref<const std::string&>().empty()) {
        ModelPart part;
        part.text = c->get<std::string>();
        out.parts.push_back(std::move(part));
      }
      if (const json* tc = member(*delta, "tool_calls")) {
        std::vector<std::string> before;
        for (const OpenCall& c : calls_) before.push_back(c.arguments);
        apply_tool_call_deltas(*tc, calls_);
        // The call this frame opened or added to, if it stays open (checked after the hand-out).
        for (std::size_t i = 0; i < calls_.size(); ++i) {
          if (i >= before.size() || calls_[i].arguments.size() > before[i].size()) touched_ = static_cast<int>(i);
        }
        // More argument text for a call already handed out: what was handed out was not the
        // whole call after all (only whitespace may follow a complete object).
        for (std::size_t i = 0; i < before.size(); ++i) {
          if (!calls_[i].handed_out) continue;
          const std::string added = calls_[i].arguments.substr(before[i].size());
          if (added.find_first_not_of(" \t\r\n") != std::string::npos) invalid_arguments_ = true;
        }
      }
    }
    const json* reason = member(choice, "finish_reason");
    const bool finished = reason && reason->is_string();
    if (finished) finish_reason_ = reason->get<std::string>();
    // A call is handed out once its arguments are a complete JSON object, as the AI SDK's
    // Chat Completions parser does; at the finish every call left is complete (or malformed).
    std::vector<OpenCall*> ready;
    for (OpenCall& c : calls_) {
      if (!c.handed_out && (finished || is_complete_object(c.arguments))) ready.push_back(&c);
    }
    std::stable_sort(ready.begin(), ready.end(),
                     [](const OpenCall* a, const OpenCall* b) { return a->index < b->index; });
    for (OpenCall* c : ready) {
      c->handed_out = true;
      if (auto args = complete_arguments(c->arguments)) out.parts.push_back(call_part(*c, std::move(*args)));
      else if (finish_reason_ && *finish_reason_ == "length") cut_ = *c;  // the token limit cut it: never whole
      else invalid_arguments_ = true;
    }
    if (touched_ >= 0 && !calls_[static_cast<std::size_t>(touched_)].handed_out) {
      out.open_call_fragments = calls_[static_cast<std::size_t>(touched_)].fragments;
    }
    touched_ = -1;
    return out;
  }

  std::optional<FunctionCall> repaired_open_call(std::string_view unterminated) const override {
    if (finish_reason_) {
      // Every call was complete and handed out, but one the token limit cut (`length`).
      if (!cut_) return std::nullopt;
      auto args = repair_json(cut_->arguments);
      if (!args || !args->is_object()) return std::nullopt;
      return call_part(*cut_, std::move(*args)).call;
    }
    std::vector<OpenCall> calls = calls_;
    if (!unterminated.empty()) {
      // A chunk cut mid-frame may still carry the next argument piece: close it and read it.
      if (auto frame = repair_json(unterminated)) {
        if (const json* choices = member(*frame, "choices"); choices && choices->is_array() && !choices->empty()) {
          if (const json* delta = member((*choices)[0], "delta")) {
            if (const json* tc = member(*delta, "tool_calls")) apply_tool_call_deltas(*tc, calls);
          }
        }
      }
    }
    if (calls.empty() || calls.back().handed_out) return std::nullopt;  // the last call is whole
    const OpenCall& last = calls.back();
    auto args = repair_json(last.arguments);
    if (!args || !args->is_object()) return std::nullopt;
    return call_part(last, std::move(*args)).call;
  }

 private:
  std::vector<OpenCall> calls_;  // in start order
  std::optional<std::string> finish_reason_;
  std::optional<OpenCall> cut_;  // a call whose arguments the `length` finish cut
  bool invalid_arguments_ = false;
  int touched_ = -1;  // the call the frame being decoded opened or added to
};

class ChatCodec final : public ICodec {
 public:
  std::string_view provider() const override { return "openai-chat"; }
  std::string default_model() const override { return "gpt-4.1-mini"; }

  HttpRequest make_request(const json& contents, std::string_view model,
                           const std::vector<std::string>& tool_names, bool stream) const override {
    // The text of ojson{model, messages, stream, stream_options, tools}.dump(), the tools' text
    // remembered from the last request (tools_text).
    // Text that is not UTF-8 is replaced (U+FFFD), never thrown on.
    std::string body = "{\"model\":";
    append_json_string(body, model);
    body += ",\"messages\":";
    append_messages(body, contents);
    body += std::string(",\"stream\":") + (stream ? "true" : "false");
    if (stream) body += ",\"stream_options\":{\"include_usage\":true}";
    if (!tool_names.empty()) body += ",\"tools\":" + tools_text(tool_names, &chat_tools);
    body += '}';
    HttpRequest req;
    req.target = "/v1/chat/completions";
    req.body = std::move(body);
    req.headers = {{"Content-Type", "application/json"}, {"Authorization", "Bearer hiccup"}};
    return req;
  }

  std::unique_ptr<IStreamDecoder> stream_decoder() const override { return std::make_unique<ChatDecoder>(); }

  DecodedChunk decode_body(std::string_view body) const override {
    DecodedChunk out;
    const json parsed = parse_json(body);
    if (parsed.is_discarded() || !parsed.is_object()) {
      out.undecodable = true;
      return out;
    }
    if (const json* e = member(parsed, "error"); e && !e->is_null()) return error_chunk(*e);
    const json* choices = member(parsed, "choices");
    if (choices == nullptr || !choices->is_array() || choices->empty()) return out;
    const json& choice = (*choices)[0];
    bool invalid_arguments = false;
    if (const json* message = member(choice, "message"); message && message->is_object()) {
      if (const json* c = member(*message, "content"); c && c->is_string() && !c->get_ref<const std::string&>().empty()) {
        ModelPart part;
        part.text = c->get<std::string>();
        out.parts.push_back(std::move(part));
      }
      if (const json* tc = member(*message, "tool_calls"); tc && tc->is_array()) {
        for (std::size_t p = 0; p < tc->size(); ++p) {
          const json& e = (*tc)[p];
          const json* fn = member(e, "function");
          OpenCall c{static_cast<int>(p), string_member(e, "id"), fn ? string_member(*fn, "name") : "",
                     fn ? string_member(*fn, "arguments") : "", static_cast<int>(p)};
          if (auto args = complete_arguments(c.arguments)) out.parts.push_back(call_part(c, std::move(*args)));
          else invalid_arguments = true;
        }
      }
    }
    if (const json* reason = member(choice, "finish_reason"); reason && reason->is_string()) {
      out.finish_reason = reason->get<std::string>();
      out.finish = invalid_arguments ? FinishClass::kMalformedCall : openai_chat_finish_class(out.finish_reason);
    }
    return out;
  }

  ProviderError parse_error(std::string_view body, const Headers& headers) const override {
    ProviderError out;
    const json parsed = parse_json(body);
    if (const json* e = member(parsed, "error"); e && e->is_object()) {
      const std::string type = string_member(*e, "type");
      const std::string message = string_member(*e, "message");
      out.message = type.empty() ? message : type + ": " + message;
      out.daily_quota = says_daily_quota(message);
    }
    out.retry_after_s = retry_after_from_headers(headers).value_or(0);
    return out;
  }
};

}  // namespace

FinishClass openai_chat_finish_class(std::string_view finish_reason) {
  if (finish_reason == "stop" || finish_reason == "tool_calls" || finish_reason == "function_call") {
    return FinishClass::kStop;
  }
  if (finish_reason == "length") return FinishClass::kMaxTokens;
  if (finish_reason == "content_filter") return FinishClass::kContentFilter;
  return FinishClass::kOther;
}

const ICodec& openai_chat_codec() {
  static const ChatCodec instance;
  return instance;
}

}  // namespace rut
