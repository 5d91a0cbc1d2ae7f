// The Anthropic Messages codec (see anthropic_codec.h).
#include "runtime_under_test/anthropic_codec.h"

#include <map>

namespace rut {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

const json* array_of(const json& o, const char* key) {
  if (!o.is_object()) return nullptr;
  auto it = o.find(key);
  return it != o.end() && it->is_array() ? &*it : nullptr;
}

/// "type: message" of an error envelope `{"type":"error","error":{type,message}}` (also a bare
/// `{"error":{…}}`); nullopt when `body` is not one.
std::optional<std::string> error_text(const json& body) {
  if (!body.is_object()) return std::nullopt;
  auto e = body.find("error");
  if (e == body.end() || !e->is_object()) return std::nullopt;
  const std::string type = string_member(*e, "type");
  const std::string message = string_member(*e, "message");
  if (type.empty()) return message;
  return message.empty() ? type : type + ": " + message;
}

/// The streamed response's decoder: content blocks by `index`; text deltas go out as they arrive,
/// a tool_use goes out whole at its content_block_stop; the finish at message_stop carries the
/// stop_reason of the last message_delta.
class AnthropicDecoder final : public IStreamDecoder {
 public:
  DecodedChunk on_frame(const SseFrame& frame) override {
    DecodedChunk out;
    // message_start's message object and message_delta's usage are never read: checked, not built.
    const json data = parse_json(frame.data, {"message", "usage"});
    if (frame.kind == SseFrame::Kind::kErrorObject) {
      out.stream_error = error_text(data).value_or(frame.data);
      return out;
    }
    if (!data.is_object()) {
      out.undecodable = true;
      return out;
    }
    std::string type = string_member(data, "type");
    if (type.empty()) type = frame.event;
    if (frame.event == "error" || type == "error") {
      out.stream_error = error_text(data).value_or(frame.data);
      return out;
    }
    const int index = data.contains("index") && data["index"].is_number_integer()
                          ? data["index"].get<int>() : -1;
    if (cut_ && (type == "content_block_start" || type == "message_stop" ||
                 (type == "message_delta" && !delta_stop_reason(data, "max_tokens")))) {
      // A tool_use input that does not parse is the token limit's cut only when the message ends
      // there with stop_reason max_tokens; anything else makes it malformed (the SDK throws).
      if (type != "message_stop" || stop_reason_ != "max_tokens") return malformed();
    }
    if (type == "content_block_start") {
      static const json kNone;
      const auto cb_it = data.find("content_block");
      const json& cb = cb_it != data.end() ? *cb_it : kNone;
      const std::string kind = string_member(cb, "type");
      Block b;
      if (kind == "text") {
        b.kind = Block::kText;
        const std::string text = string_member(cb, "text");
        if (!text.empty()) out.parts.push_back({text, std::nullopt});
      } else if (kind == "tool_use") {
        b.kind = Block::kToolUse;
        b.id = string_member(cb, "id");
        b.name = string_member(cb, "name");
        if (cb.contains("input") && cb["input"].is_object()) b.input = cb["input"];
        out.open_call_fragments = 0;
      } else if (kind == "thinking") {
        b.kind = Block::kThinking;
        b.partial_json = string_member(cb, "thinking");  // the thinking text so far
      } else if (kind == "redacted_thinking" && !string_member(cb, "data").empty()) {
        // Redacted thinking is whole in its content_block_start (its `data`, no deltas): it goes
        // out as reasoning at once, and goes back as the block it came as.
        ModelPart part;
        part.reasoning = Reasoning{"", string_member(cb, "data"), "", true, true};
        out.parts.push_back(std::move(part));
      }
      blocks_[index] = std::move(b);
    } else if (type == "content_block_delta") {
      auto it = blocks_.find(index);
      static const json kNone;
      const auto delta_it = data.find("delta");
      const json& delta = delta_it != data.end() ? *delta_it : kNone;
      const std::string kind = string_member(delta, "type");
      if (it == blocks_.end()) return out;
      if (kind == "text_delta" && it->second.kind == Block::kText) {
        const std::string text = string_member(delta, "text");
        if (!text.empty()) out.parts.push_back({text, std::nullopt});
      } else if (kind == "input_json_delta" && it->second.kind == Block::kToolUse) {
        const std::string piece = string_member(delta, "partial_json");
        it->second.partial_json += piece;
        it->second.streamed = true;
        it->second.fragments += piece.empty() ? 0 : 1;  // an empty delta adds no argument text
        out.open_call_fragments = it->second.fragments;
      } else if (kind == "thinking_delta" && it->second.kind == Block::kThinking) {
        it->second.partial_json += string_member(delta, "thinking");
      } else if (kind == "signature_delta" && it->second.kind == Block::kThinking && !it->second.streamed) {
        // Extended thinking ends a thinking block with one signature_delta: the block is whole
        // from here (its content_block_stop adds nothing), and goes out as reasoning. A block cut
        // before its signature is not whole and never goes out.
        it->second.streamed = true;
        ModelPart part;
        part.reasoning = Reasoning{it->second.partial_json, string_member(delta, "signature"), "", true};
        out.parts.push_back(std::move(part));
      }
    } else if (type == "content_block_stop") {
      auto it = blocks_.find(index);
      if (it == blocks_.end()) return out;
      Block b = std::move(it->second);
      blocks_.erase(it);
      if (b.kind != Block::kToolUse) return out;
      FunctionCall call;
      call.name = b.name;
      if (!b.id.empty()) call.id = b.id;
      if (!b.streamed || b.partial_json.empty()) {
        call.args = b.input;
      } else {
        json args = parse_json(b.partial_json);
        if (!args.is_object()) {
          // The input does not parse: cut by a max_tokens finish (stop_reason max_tokens follows,
          // and the call is never whole), else a malformed call; decided by what comes next.
          cut_ = std::move(b);
          return out;
        }
        call.args = std::move(args);
      }
      out.parts.push_back({std::nullopt, std::move(call), 0});
    } else if (type == "message_delta") {
      if (data.contains("delta") && data["delta"].is_object() && data["delta"].contains("stop_reason")) {
        const json& r = data["delta"]["stop_reason"];
        stop_reason_ = r.is_string() ? r.get<std::string>() : std::string();
      }
    } else if (type == "message_stop") {
      out.finish = anthropic_finish_class(stop_reason_);
      out.finish_reason = stop_reason_.empty() ? "null" : stop_reason_;
    }
    // message_start, ping and unknown events carry nothing the runtime needs.
    return out;
  }

  std::optional<FunctionCall> repaired_open_call(std::string_view /*unterminated*/) const override {
    // The tool_use block the token limit cut, else the last one started and not stopped, its
    // arguments so far closed by repair_json (a frame the stream cut is not read: SSE drops an
    // unterminated event).
    std::vector<const Block*> open;
    if (cut_) open.push_back(&*cut_);
    for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) open.push_back(&it->second);
    for (const Block* bp : open) {
      const Block& b = *bp;
      if (b.kind != Block::kToolUse) continue;
      auto args = b.streamed ? repair_json(b.partial_json) : std::optional<json>(b.input);
      if (!args || !args->is_object()) return std::nullopt;
      FunctionCall call;
      call.name = b.name;
      if (!b.id.empty()) call.id = b.id;
      call.args = std::move(*args);
      return call;
    }
    return std::nullopt;
  }

 private:
  struct Block {
    enum Kind { kOther, kText, kToolUse, kThinking } kind = kOther;
    std::string id;
    std::string name;
    json input = json::object();  // content_block_start's input (used when no delta streams)
    std::string partial_json;     // input_json_delta pieces so far (a thinking block: its text)
    bool streamed = false;        // a thinking block: its signature arrived
    int fragments = 0;            // a tool_use block: its non-empty input_json_delta frames so far
  };
  /// Whether `data` (a message_delta) sets stop_reason `reason`.
  static bool delta_stop_reason(const json& data, std::string_view reason) {
    auto d = data.find("delta");
    if (d == data.end() || !d->is_object()) return false;
    auto r = d->find("stop_reason");
    return r != d->end() && r->is_string() && r->get_ref<const std::string&>() == reason;
  }
  DecodedChunk malformed() const {
    DecodedChunk out;
    out.finish = FinishClass::kMalformedCall;
    out.finish_reason = "tool_use input is not a JSON object";
    return out;
  }

  std::map<int, Block> blocks_;
  std::optional<Block> cut_;  // a stopped tool_use block whose input does not parse
  std::string stop_reason_;  // of the last message_delta; "" for none or null
};

std::string anthropic_tools(const std::vector<std::string>& tool_names) {
  ojson tools = ojson::array();
  for (const auto& name : tool_names) {
    ojson t = ojson::object();
    t["name"] = name;
    t["input_schema"] = ojson{{"type", "object"}};
    tools.push_back(std::move(t));
  }
  return tools.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

void append_anthropic_messages(std::string& out, const json& contents);  // below, beside anthropic_messages

/// The tool_use id a function response `fr` answers: its own id, else (a history from a provider
/// that sends none) the id of the previous model content's call at its position (`position`, the
/// responses before it in its content) when that call has its name, else of the first call with its
/// name; "" when none. `previous_calls`: (name, id) of the previous model content's calls.
std::string tool_use_id_of(const json& fr, const std::vector<std::pair<std::string, std::string>>& previous_calls,
                           std::size_t position) {
  std::string id = string_member(fr, "id");
  if (!id.empty()) return id;
  const std::string name = string_member(fr, "name");
  if (position < previous_calls.size() && previous_calls[position].first == name) return previous_calls[position].second;
  for (const auto& [n, cid] : previous_calls) {
    if (n == name) return cid;
  }
  return id;
}

class AnthropicCodec final : public ICodec {
 public:
  std::string_view provider() const override { return "anthropic"; }
  std::string default_model() const override { return "claude-sonnet-4-5"; }

  HttpRequest make_request(const json& contents, std::string_view model,
                           const std::vector<std::string>& tool_names, bool stream) const override {
    // The text of ojson{model, max_tokens, messages, stream, tools}.dump(), written without
    // copying the messages into a second tree (they keep json's sorted key order either way).
    std::string body = "{\"model\":";
    append_json_string(body, model);
    body += ",\"max_tokens\":" + std::to_string(kAnthropicMaxTokens) + ",\"messages\":";
    append_anthropic_messages(body, contents);
    body += std::string(",\"stream\":") + (stream ? "true" : "false");
    if (!tool_names.empty()) body += ",\"tools\":" + tools_text(tool_names, &anthropic_tools);
    body += '}';
    HttpRequest req;
    req.target = std::string(kAnthropicTarget);
    req.body = std::move(body);
    req.headers = {{"Content-Type", "application/json"},
                   {"x-api-key", "hiccup"},
                   {"anthropic-version", std::string(kAnthropicVersion)}};
    return req;
  }

  std::unique_ptr<IStreamDecoder> stream_decoder() const override {
    return std::make_unique<AnthropicDecoder>();
  }

  DecodedChunk decode_body(std::string_view body) const override {
    DecodedChunk out;
    const json m = parse_json(body);
    if (!m.is_object()) {
      out.undecodable = true;
      return out;
    }
    if (string_member(m, "type") == "error" || (m.contains("error") && !m.contains("content"))) {
      out.stream_error = error_text(m).value_or(std::string(body));
      return out;
    }
    int position = 0;
    if (const json* content = array_of(m, "content")) {
      for (const json& b : *content) {
        const std::string type = string_member(b, "type");
        if (type == "text") {
          out.parts.push_back({string_member(b, "text"), std::nullopt});
        } else if (type == "redacted_thinking" && !string_member(b, "data").empty()) {
          ModelPart part;
          part.reasoning = Reasoning{"", string_member(b, "data"), "", true, true};
          out.parts.push_back(std::move(part));
        } else if (type == "thinking" && !string_member(b, "signature").empty()) {
          // Whole only with its signature, which the API checks when it comes back.
          ModelPart part;
          part.reasoning = Reasoning{string_member(b, "thinking"), string_member(b, "signature"), "", true};
          out.parts.push_back(std::move(part));
        } else if (type == "tool_use") {
          FunctionCall call;
          call.name = string_member(b, "name");
          const std::string id = string_member(b, "id");
          if (!id.empty()) call.id = id;
          if (b.contains("input") && b["input"].is_object()) call.args = b["input"];
          out.parts.push_back({std::nullopt, std::move(call), position++});
        }
      }
    }
    if (m.contains("stop_reason") && m["stop_reason"].is_string()) {
      out.finish_reason = m["stop_reason"].get<std::string>();
      out.finish = anthropic_finish_class(out.finish_reason);
    }
    return out;
  }

  ProviderError parse_error(std::string_view body, const Headers& headers) const override {
    ProviderError out;
    out.message = error_text(parse_json(body)).value_or("");
    out.retry_after_s = retry_after_from_headers(headers).value_or(0);
    return out;
  }
};

}  // namespace

namespace {

/// anthropic_messages(contents).dump(), written as text without building the messages as trees
/// (members in json's sorted key order, as the tree's dump gives them); anthropic_codec_test holds
/// the two byte for byte.
void append_anthropic_messages(std::string& out, const json& contents) {
  out += '[';
  bool first_message = true;
  std::vector<std::pair<std::string, std::string>> previous_calls;  // (name, id) of the last model content
  for (std::size_t i = 0; contents.is_array() && i < contents.size(); ++i) {
    const json& c = contents[i];
    if (!c.is_object()) continue;
    const bool model = string_member(c, "role") == "model";
    std::vector<std::string> thinking_blocks, text_blocks, other_blocks;
    std::vector<std::pair<std::string, std::string>> calls;
    std::size_t responses = 0;
    if (const json* parts = array_of(c, "parts")) {
      for (std::size_t k = 0; k < parts->size(); ++k) {
        const json& p = (*parts)[k];
        if (!p.is_object()) continue;
        if ((p.contains("thought") || p.contains("thoughtSignature")) && !p.contains("functionCall")) {
          const std::string signature = string_member(p, "thoughtSignature");
          if (model && !signature.empty()) {
            const auto redacted = p.find("redacted");
            std::string b;
            if (redacted != p.end() && redacted->is_boolean() && redacted->get<bool>()) {
              b = "{\"data\":";
              append_json_string(b, signature);
              b += ",\"type\":\"redacted_thinking\"}";
            } else {
              b = "{\"signature\":";
              append_json_string(b, signature);
              b += ",\"thinking\":";
              append_json_string(b, string_member(p, "text"));
              b += ",\"type\":\"thinking\"}";
            }
            thinking_blocks.push_back(std::move(b));
          }
        } else if (const auto text = p.find("text"); text != p.end() && text->is_string()) {
          if (!text->get_ref<const std::string&>().empty()) {
            std::string b = "{\"text\":";
            append_json_string(b, text->get_ref<const std::string&>());
            b += ",\"type\":\"text\"}";
            text_blocks.push_back(std::move(b));
          }
        } else if (const auto f = p.find("functionCall"); model && f != p.end() && f->is_object()) {
          const json& fc = *f;
          std::string id = string_member(fc, "id");
          if (id.empty()) id = "toolu_rut_" + std::to_string(i) + "_" + std::to_string(k);
          std::string b = "{\"id\":";
          append_json_string(b, id);
          b += ",\"input\":";
          if (const auto a = fc.find("args"); a != fc.end() && a->is_object()) append_json(b, *a);
          else b += "{}";
          b += ",\"name\":";
          append_json_string(b, string_member(fc, "name"));
          b += ",\"type\":\"tool_use\"}";
          other_blocks.push_back(std::move(b));
          calls.emplace_back(string_member(fc, "name"), id);
        } else if (const auto r = p.find("functionResponse"); !model && r != p.end() && r->is_object()) {
          const json& fr = *r;
          const std::string id = tool_use_id_of(fr, previous_calls, responses++);
          std::string content;
          if (const auto response = fr.find("response"); response != fr.end()) append_json(content, *response);
          else content = "{}";
          std::string b = "{\"content\":";
          append_json_string(b, content);
          b += ",\"tool_use_id\":";
          append_json_string(b, id);
          b += ",\"type\":\"tool_result\"}";
          other_blocks.push_back(std::move(b));
        }
      }
    }
    // The order anthropic_messages gives: thinking, then text and tool_use (assistant) or
    // tool_result and text (user).
    if (!first_message) out += ',';
    first_message = false;
    out += "{\"content\":[";
    bool first_block = true;
    for (const auto* blocks : {&thinking_blocks, model ? &text_blocks : &other_blocks, model ? &other_blocks : &text_blocks}) {
      for (const std::string& b : *blocks) {
        if (!first_block) out += ',';
        out += b;
        first_block = false;
      }
    }
    out += model ? "],\"role\":\"assistant\"}" : "],\"role\":\"user\"}";
    if (model) previous_calls = std::move(calls);
  }
  out += ']';
}

}  // namespace

json anthropic_messages(const json& contents) {
  json messages = json::array();
  if (!contents.is_array()) return messages;
  std::vector<std::pair<std::string, std::string>> previous_calls;  // (name, id) of the last model content
  for (std::size_t i = 0; i < contents.size(); ++i) {
    const json& c = contents[i];
    if (!c.is_object()) continue;
    const bool model = string_member(c, "role") == "model";
    json thinking_blocks = json::array();
    json text_blocks = json::array();
    json other_blocks = json::array();
    std::vector<std::pair<std::string, std::string>> calls;
    std::size_t responses = 0;
    if (const json* parts = array_of(c, "parts")) {
      for (std::size_t k = 0; k < parts->size(); ++k) {
        const json& p = (*parts)[k];
        if (!p.is_object()) continue;
        if ((p.contains("thought") || p.contains("thoughtSignature")) && !p.contains("functionCall")) {
          // Reasoning goes back as the thinking block it came as, unchanged (extended thinking:
          // the API checks its signature; a thought without one was never a thinking block).
          const std::string signature = string_member(p, "thoughtSignature");
          if (model && !signature.empty()) {
            if (p.value("redacted", false)) {
              thinking_blocks.push_back({{"type", "redacted_thinking"}, {"data", signature}});
            } else {
              thinking_blocks.push_back({{"type", "thinking"}, {"thinking", string_member(p, "text")}, {"signature", signature}});
            }
          }
        } else if (p.contains("text") && p["text"].is_string()) {
          if (!p["text"].get_ref<const std::string&>().empty()) {
            text_blocks.push_back({{"type", "text"}, {"text", p["text"]}});
          }
        } else if (model && p.contains("functionCall") && p["functionCall"].is_object()) {
          const json& fc = p["functionCall"];
          std::string id = string_member(fc, "id");
          if (id.empty()) id = "toolu_rut_" + std::to_string(i) + "_" + std::to_string(k);
          // Built member by member: an initializer list would copy the arguments twice more.
          json block = json::object();
          block["type"] = "tool_use";
          block["id"] = id;
          block["name"] = string_member(fc, "name");
          block["input"] = fc.contains("args") && fc["args"].is_object() ? fc["args"] : json::object();
          other_blocks.push_back(std::move(block));
          calls.emplace_back(string_member(fc, "name"), id);
        } else if (!model && p.contains("functionResponse") && p["functionResponse"].is_object()) {
          const json& fr = p["functionResponse"];
          const std::string id = tool_use_id_of(fr, previous_calls, responses++);
          other_blocks.push_back({{"type", "tool_result"}, {"tool_use_id", id},
                                  {"content", fr.contains("response") ? fr["response"].dump() : std::string("{}")}});
        }
      }
    }
    // Assistant: text, then tool_use. User: tool_result first (the API wants them at the start of
    // the message that follows the tool_use), then text.
    // Thinking blocks first: the API wants the assistant message to start with one (docs.claude.com
    // "Extended thinking", "Preserving thinking blocks").
    json content = std::move(thinking_blocks);
    json& first = model ? text_blocks : other_blocks;
    json& second = model ? other_blocks : text_blocks;
    for (json& b : first) content.push_back(std::move(b));
    for (json& b : second) content.push_back(std::move(b));
    messages.push_back({{"role", model ? "assistant" : "user"}, {"content", std::move(content)}});
    if (model) previous_calls = std::move(calls);
  }
  return messages;
}

FinishClass anthropic_finish_class(std::string_view stop_reason) {
  if (stop_reason == "end_turn" || stop_reason == "tool_use" || stop_reason == "stop_sequence") {
    return FinishClass::kStop;
  }
  if (stop_reason == "max_tokens" || stop_reason == "model_context_window_exceeded") {
    return FinishClass::kMaxTokens;
  }
  if (stop_reason == "refusal") return FinishClass::kContentFilter;
  return FinishClass::kOther;
}

const ICodec& anthropic_codec() {
  static const AnthropicCodec instance;
  return instance;
}

}  // namespace rut
