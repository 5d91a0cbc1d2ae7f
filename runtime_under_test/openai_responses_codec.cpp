// The OpenAI Responses codec (see openai_responses_codec.h). Stream events are routed by their
// `output_index` (falling back to `item_id`), as openai-node's stream accumulator does; a call is
// handed out whole at its `response.output_item.done`, the event codex acts on
// (codex-rs/codex-api/src/sse/responses.rs).
#include "runtime_under_test/openai_responses_codec.h"

#include <map>

namespace rut {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

/// A model content holding reasoning, as items in delivered order: `items` are its reasoning and
/// function_call items in part order, `message` (its text, when it has any) goes where its first
/// text part was. A reasoning item so precedes the item it came before, as the API requires.
void input_in_order(const json& parts, json& items, json* message, json& input) {
  std::size_t next = 0;
  for (const json& p : parts) {
    if (!p.is_object()) continue;
    const bool reasoning = (p.contains("thought") || p.contains("thoughtSignature")) && !p.contains("functionCall");
    if (reasoning || p.contains("functionCall")) {
      if (next < items.size()) input.push_back(std::move(items[next++]));
    } else if (message != nullptr && p.contains("text")) {
      input.push_back(std::move(*message));
      message = nullptr;
    }
  }
  while (next < items.size()) input.push_back(std::move(items[next++]));
  if (message != nullptr) input.push_back(std::move(*message));
}

}  // namespace

json responses_input(const json& contents) {
  json input = json::array();
  if (!contents.is_array()) return input;
  for (const json& c : contents) {
    if (!c.is_object()) continue;
    static const json kNoParts = json::array();
    const auto parts_it = c.find("parts");
    const json& parts = parts_it != c.end() && parts_it->is_array() ? *parts_it : kNoParts;
    if (c.value("role", "user") == "model") {
      std::string text;
      bool has_text = false;
      bool reasoning = false;
      json calls = json::array();
      for (const json& p : parts) {
        if (!p.is_object()) continue;
        if ((p.contains("thought") || p.contains("thoughtSignature")) && !p.contains("functionCall")) {
          // A reasoning item goes back as delivered, before the item it preceded (the API rejects a
          // function_call without its reasoning item), its encrypted_content unchanged.
          reasoning = true;
          const std::string id = string_member(p, "reasoningId");
          const std::string summary = string_member(p, "text");
          ojson item = ojson::object();
          item["type"] = "reasoning";
          if (!id.empty()) item["id"] = id;
          item["summary"] = summary.empty() ? ojson::array()
                                            : ojson::array({ojson{{"type", "summary_text"}, {"text", summary}}});
          item["encrypted_content"] = string_member(p, "thoughtSignature");
          calls.push_back(json(item));
          continue;
        }
        if (p.contains("text") && p["text"].is_string()) {
          text += p["text"].get<std::string>();
          has_text = true;
        }
        if (p.contains("functionCall") && p["functionCall"].is_object()) {
          const json& fc = p["functionCall"];
          ojson item = ojson::object();
          item["type"] = "function_call";
          item["call_id"] = fc.value("id", "");
          item["name"] = fc.value("name", "");
          item["arguments"] = fc.contains("args") ? fc["args"].dump() : std::string("{}");
          calls.push_back(json(item));
        }
      }
      json message = {{"type", "message"},
                      {"role", "assistant"},
                      {"content", json::array({{{"type", "output_text"}, {"text", text}}})}};
      if (reasoning) {
        // Items in delivered order, the text as one message item where the first text part was.
        input_in_order(parts, calls, has_text ? &message : nullptr, input);
        continue;
      }
      if (has_text || calls.empty()) input.push_back(std::move(message));
      for (json& call : calls) input.push_back(std::move(call));
      continue;
    }
    json texts = json::array();
    auto flush = [&] {
      if (texts.empty()) return;
      input.push_back({{"type", "message"}, {"role", "user"}, {"content", std::move(texts)}});
      texts = json::array();
    };
    for (const json& p : parts) {
      if (!p.is_object()) continue;
      if (p.contains("text") && p["text"].is_string()) {
        texts.push_back({{"type", "input_text"}, {"text", p["text"]}});
      }
      if (p.contains("functionResponse") && p["functionResponse"].is_object()) {
        flush();
        const json& fr = p["functionResponse"];
        input.push_back({{"type", "function_call_output"},
                         {"call_id", fr.value("id", "")},
                         {"output", fr.contains("response") ? fr["response"].dump() : std::string("{}")}});
      }
    }
    flush();
  }
  return input;
}

namespace {

/// `s` from `o[key]` when it is a string, else "" (json::value would throw on another type).
const std::string& string_at(const json& o, const char* key) {
  static const std::string kNone;
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get_ref<const std::string&>() : kNone;
}

/// responses_input(contents).dump(), written as text without building the items as trees (the
/// items' members in json's sorted key order, as the tree's dump gives them): the request body's
/// input. openai_responses_codec_test holds the two byte for byte.
void append_responses_input(std::string& out, const json& contents) {
  out += '[';
  bool first = true;
  auto item = [&](const std::string& text) {
    if (!first) out += ',';
    out += text;
    first = false;
  };
  static const json kNoParts = json::array();
  for (const json& c : contents.is_array() ? contents : kNoParts) {
    if (!c.is_object()) continue;
    const auto parts_it = c.find("parts");
    const json& parts = parts_it != c.end() && parts_it->is_array() ? *parts_it : kNoParts;
    if (string_at(c, "role") == "model") {
      std::string text;
      bool has_text = false;
      bool reasoning = false;
      std::vector<std::string> calls;
      for (const json& p : parts) {
        if (!p.is_object()) continue;
        const bool call = p.contains("functionCall");
        if ((p.contains("thought") || p.contains("thoughtSignature")) && !call) {
          reasoning = true;
          std::string r = "{\"encrypted_content\":";
          append_json_string(r, string_at(p, "thoughtSignature"));
          if (const std::string& id = string_at(p, "reasoningId"); !id.empty()) {
            r += ",\"id\":";
            append_json_string(r, id);
          }
          r += ",\"summary\":[";
          if (const std::string& summary = string_at(p, "text"); !summary.empty()) {
            r += "{\"text\":";
            append_json_string(r, summary);
            r += ",\"type\":\"summary_text\"}";
          }
          r += "],\"type\":\"reasoning\"}";
          calls.push_back(std::move(r));
          continue;
        }
        if (const auto t = p.find("text"); t != p.end() && t->is_string()) {
          text += t->get_ref<const std::string&>();
          has_text = true;
        }
        if (const auto f = p.find("functionCall"); f != p.end() && f->is_object()) {
          const json& fc = *f;
          std::string args;
          if (const auto a = fc.find("args"); a != fc.end()) append_json(args, *a);
          else args = "{}";
          std::string r = "{\"arguments\":";
          append_json_string(r, args);
          r += ",\"call_id\":";
          append_json_string(r, string_at(fc, "id"));
          r += ",\"name\":";
          append_json_string(r, string_at(fc, "name"));
          r += ",\"type\":\"function_call\"}";
          calls.push_back(std::move(r));
        }
      }
      std::string message = "{\"content\":[{\"text\":";
      append_json_string(message, text);
      message += ",\"type\":\"output_text\"}],\"role\":\"assistant\",\"type\":\"message\"}";
      if (reasoning) {
        // Items in delivered order, the text as one message item where the first text part was
        // (input_in_order).
        std::size_t next = 0;
        bool message_left = has_text;
        for (const json& p : parts) {
          if (!p.is_object()) continue;
          const bool is_reasoning = (p.contains("thought") || p.contains("thoughtSignature")) && !p.contains("functionCall");
          if (is_reasoning || p.contains("functionCall")) {
            if (next < calls.size()) item(calls[next++]);
          } else if (message_left && p.contains("text")) {
            item(message);
            message_left = false;
          }
        }
        while (next < calls.size()) item(calls[next++]);
        if (message_left) item(message);
        continue;
      }
      if (has_text || calls.empty()) item(message);
      for (const std::string& call : calls) item(call);
      continue;
    }
    std::string texts;  // the input_text parts of the user message being gathered
    auto flush = [&] {
      if (texts.empty()) return;
      item("{\"content\":[" + texts + "],\"role\":\"user\",\"type\":\"message\"}");
      texts.clear();
    };
    for (const json& p : parts) {
      if (!p.is_object()) continue;
      if (const auto t = p.find("text"); t != p.end() && t->is_string()) {
        if (!texts.empty()) texts += ',';
        texts += "{\"text\":";
        append_json_string(texts, t->get_ref<const std::string&>());
        texts += ",\"type\":\"input_text\"}";
      }
      if (const auto f = p.find("functionResponse"); f != p.end() && f->is_object()) {
        flush();
        const json& fr = *f;
        std::string output;
        if (const auto r = fr.find("response"); r != fr.end()) append_json(output, *r);
        else output = "{}";
        std::string r = "{\"call_id\":";
        append_json_string(r, string_at(fr, "id"));
        r += ",\"output\":";
        append_json_string(r, output);
        r += ",\"type\":\"function_call_output\"}";
        item(r);
      }
    }
    flush();
  }
  out += ']';
}

std::string responses_tools(const std::vector<std::string>& tool_names) {
  ojson tools = ojson::array();
  for (const auto& name : tool_names) {
    ojson t = ojson::object();
    t["type"] = "function";
    t["name"] = name;
    t["description"] = "simulated tool " + name;
    t["parameters"] = ojson{{"type", "object"}};
    t["strict"] = false;
    tools.push_back(std::move(t));
  }
  return tools.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

}  // namespace

std::string responses_request_body(const json& contents, std::string_view model,
                                   const std::vector<std::string>& tool_names, bool stream) {
  // The text of ojson{model, input, stream, store, tools}.dump(), written without copying the
  // input into a second tree (its items keep json's sorted key order either way).
  std::string body = "{\"model\":";
  append_json_string(body, model);
  body += ",\"input\":";
  append_responses_input(body, contents);
  body += std::string(",\"stream\":") + (stream ? "true" : "false") + ",\"store\":false";
  if (!tool_names.empty()) body += ",\"tools\":" + tools_text(tool_names, &responses_tools);
  body += '}';
  return body;
}

namespace {

constexpr std::string_view kInvalidContentPrefix = "The model produced invalid content";

const json* object_at(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_object() ? &*it : nullptr;
}

/// Parsed `arguments`: the JSON value it holds, or the text itself when it does not parse.
json parse_arguments(const std::string& text) {
  if (text.empty()) return json::object();
  json parsed = parse_json(text);
  return parsed.is_discarded() ? json(text) : std::move(parsed);
}

/// The texts of a message item's `output_text` parts.
std::vector<std::string> message_texts(const json& item) {
  std::vector<std::string> out;
  auto content = item.find("content");
  if (content == item.end() || !content->is_array()) return out;
  for (const json& p : *content) {
    if (p.is_object() && string_member(p, "type") == "output_text" && p.contains("text") && p["text"].is_string()) {
      out.push_back(p["text"].get<std::string>());
    }
  }
  return out;
}

/// A reasoning output item as the runtime keeps it: its summary texts, its encrypted_content and
/// its id.
Reasoning reasoning_of(const json& item) {
  Reasoning r;
  r.id = string_member(item, "id");
  r.signature = string_member(item, "encrypted_content");
  if (auto summary = item.find("summary"); summary != item.end() && summary->is_array()) {
    for (const json& s : *summary) {
      if (s.is_object()) r.text += string_member(s, "text");
    }
  }
  return r;
}

/// A response's ending as a finish or a stream error: `completed`, `incomplete` (by reason) and
/// `failed` (by error); nothing for any other status (in_progress, queued). `status` is the
/// response's `status`, or in a stream the ending event's name without "response." (the event
/// names the ending; its response object holds the reason or the error).
void read_status(const json& response, std::string_view status, DecodedChunk& out) {
  if (status == "completed") {
    out.finish = FinishClass::kStop;
    out.finish_reason = "completed";
  } else if (status == "incomplete") {
    const json* details = object_at(response, "incomplete_details");
    const std::string reason = details ? string_member(*details, "reason") : std::string();
    out.finish = reason == "max_output_tokens" ? FinishClass::kMaxTokens
                 : reason == "content_filter"  ? FinishClass::kContentFilter
                                               : FinishClass::kOther;
    out.finish_reason = "incomplete: " + (reason.empty() ? std::string("unknown") : reason);
  } else if (status == "failed") {
    const json* error = object_at(response, "error");
    const std::string code = error ? string_member(*error, "code") : std::string();
    const std::string message = error ? string_member(*error, "message") : std::string();
    if (message.rfind(kInvalidContentPrefix, 0) == 0) {
      out.finish = FinishClass::kMalformedCall;
      out.finish_reason = "failed: " + (code.empty() ? std::string("invalid content") : code) +
                          " (model produced invalid content)";
    } else {
      out.stream_error = "response.failed: " + (code.empty() ? std::string("error") : code) + ": " + message;
    }
  }
}

/// An `error` event's message: `{type:"error", code, message, param}` as the API documents it,
/// or with the fields nested in `error` as some gateways send it.
std::string error_event_message(const json& d) {
  const json* e = object_at(d, "error");
  const json& src = e ? *e : d;
  std::string code = string_member(src, "code");
  if (code.empty()) code = string_member(src, "type");
  const std::string message = string_member(src, "message");
  return (code.empty() ? std::string("error") : code) + ": " + message;
}

class ResponsesDecoder final : public IStreamDecoder {
 public:
  DecodedChunk on_frame(const SseFrame& frame) override {
    DecodedChunk out;
    if (frame.kind == SseFrame::Kind::kErrorObject) {
      json d = parse_json(frame.data);
      out.stream_error = d.is_object() ? error_event_message(d) : frame.data;
      return out;
    }
    // response.created and response.in_progress carry the whole response object, which only the
    // ending events' is read for: it is checked, not built, and the frame read again whole when
    // it ends the response. Nor are the members no event here is read for built (the
    // content_part events' `part`, output_text.done's `text`, sequence numbers, logprobs and
    // obfuscation padding): checked as parse checks them, so an undecodable frame stays one.
    // A frame whose `event:` names an ending is read whole at once (its data's type decides, as
    // for any frame; the whole read serves either way).
    auto ending = [](std::string_view t) {
      return t == "response.completed" || t == "response.incomplete" || t == "response.failed";
    };
    const bool read_whole = ending(frame.event);
    json d = read_whole ? parse_json(frame.data)
                        : parse_json(frame.data, {"response", "sequence_number", "content_index", "part", "text",
                                                  "logprobs", "obfuscation"});
    if (!d.is_object()) {
      out.undecodable = true;
      return out;
    }
    std::string type = string_member(d, "type");
    if (type.empty()) type = frame.event;
    if (!read_whole && ending(type)) d = parse_json(frame.data);
    if (type == "response.output_item.added") {
      const json* item = object_at(d, "item");
      if (!item) return out;
      Item it;
      it.type = string_member(*item, "type");
      it.id = string_member(*item, "id");
      it.call_id = string_member(*item, "call_id");
      it.name = string_member(*item, "name");
      it.arguments = string_member(*item, "arguments");
      const int index = index_of(d);
      if (!it.id.empty()) by_id_[it.id] = index;
      if (it.type == "function_call") out.open_call_fragments = 0;
      items_[index] = std::move(it);
    } else if (type == "response.output_text.delta") {
      const std::string delta = string_member(d, "delta");
      if (Item* it = find(d)) it->text_seen = true;
      if (!delta.empty()) out.parts.push_back({delta, std::nullopt, 0});
    } else if (type == "response.function_call_arguments.delta") {
      if (Item* it = find(d)) {
        const std::string piece = string_member(d, "delta");
        it->arguments += piece;
        it->fragments += piece.empty() ? 0 : 1;  // an empty delta adds no argument text
        out.open_call_fragments = it->fragments;
      }
    } else if (type == "response.function_call_arguments.done") {
      if (Item* it = find(d); it && d.contains("arguments") && d["arguments"].is_string()) {
        it->arguments = d["arguments"].get<std::string>();
      }
    } else if (type == "response.output_item.done") {
      const json* item = object_at(d, "item");
      if (!item) return out;
      Item* it = find(d);
      const std::string item_type = string_member(*item, "type");
      if (item_type == "function_call") {
        FunctionCall call;
        call.name = string_member(*item, "name");
        if (call.name.empty() && it) call.name = it->name;
        std::string call_id = string_member(*item, "call_id");
        if (call_id.empty() && it) call_id = it->call_id;
        if (!call_id.empty()) call.id = call_id;
        std::string arguments = item->contains("arguments") && (*item)["arguments"].is_string()
                                    ? (*item)["arguments"].get<std::string>()
                                    : (it ? it->arguments : std::string());
        call.args = parse_arguments(arguments);
        if (it) it->done = true;
        // Each call completes in its own event, so it is always first in its frame.
        out.parts.push_back({std::nullopt, std::move(call), 0});
      } else if (item_type == "reasoning" && !string_member(*item, "encrypted_content").empty()) {
        // Whole at its output_item.done, which carries the encrypted_content to send back (the
        // runtime asks with store false: an item without it could not go back).
        ModelPart part;
        part.reasoning = reasoning_of(*item);
        out.parts.push_back(std::move(part));
        if (it) it->done = true;
      } else if (item_type == "message") {
        // Text normally arrives as deltas; a message item seen whole counts once.
        if (!(it && it->text_seen)) {
          for (std::string& t : message_texts(*item)) {
            if (!t.empty()) out.parts.push_back({std::move(t), std::nullopt, 0});
          }
        }
        if (it) it->done = true;
      }
    } else if (type == "response.completed" || type == "response.incomplete" ||
               type == "response.failed") {
      // The event names the ending; its response object holds the reason or the error.
      static const json kNoResponse = json::object();
      const json* response = object_at(d, "response");
      read_status(response ? *response : kNoResponse, std::string_view(type).substr(std::string_view("response.").size()),
                  out);
    } else if (type == "error") {
      out.stream_error = error_event_message(d);
    }
    return out;
  }

  std::optional<FunctionCall> repaired_open_call(std::string_view) const override {
    // The latest call item added but not done; its arguments are the complete fragments read.
    for (auto it = items_.rbegin(); it != items_.rend(); ++it) {
      const Item& item = it->second;
      if (item.type != "function_call" || item.done) continue;
      auto args = repair_json(item.arguments);
      if (!args || !args->is_object()) return std::nullopt;
      FunctionCall call;
      call.name = item.name;
      call.args = std::move(*args);
      if (!item.call_id.empty()) call.id = item.call_id;
      return call;
    }
    return std::nullopt;
  }

 private:
  struct Item {
    std::string type;
    std::string id;
    std::string call_id;
    std::string name;
    std::string arguments;  // concatenated argument fragments so far
    bool text_seen = false;
    bool done = false;
    int fragments = 0;  // non-empty function_call_arguments.delta events so far
  };

  /// The event's `output_index`, or the index its `item_id` was added at; -1 when neither.
  int index_of(const json& d) const {
    if (auto oi = d.find("output_index"); oi != d.end() && oi->is_number_integer()) return oi->get<int>();
    if (auto id = by_id_.find(string_member(d, "item_id")); id != by_id_.end()) return id->second;
    return -1;
  }
  Item* find(const json& d) {
    auto it = items_.find(index_of(d));
    return it == items_.end() ? nullptr : &it->second;
  }

  std::map<int, Item> items_;          // by output_index
  std::map<std::string, int> by_id_;   // item id → output_index
};

class ResponsesCodec final : public ICodec {
 public:
  std::string_view provider() const override { return "openai-responses"; }
  std::string default_model() const override { return "gpt-4.1-mini"; }

  HttpRequest make_request(const json& contents, std::string_view model,
                           const std::vector<std::string>& tool_names, bool stream) const override {
    HttpRequest req;
    req.target = "/v1/responses";
    req.body = responses_request_body(contents, model, tool_names, stream);
    req.headers = {{"Content-Type", "application/json"}, {"Authorization", "Bearer hiccup"}};
    return req;
  }

  std::unique_ptr<IStreamDecoder> stream_decoder() const override { return std::make_unique<ResponsesDecoder>(); }

  DecodedChunk decode_body(std::string_view body) const override {
    DecodedChunk out;
    json r = parse_json(body);
    if (!r.is_object()) {
      out.undecodable = true;
      return out;
    }
    if (const json* e = object_at(r, "error"); e && !r.contains("status")) {
      out.stream_error = error_event_message(r);
      return out;
    }
    int position = 0;
    if (auto output = r.find("output"); output != r.end() && output->is_array()) {
      for (const json& item : *output) {
        if (!item.is_object()) continue;
        const std::string type = string_member(item, "type");
        if (type == "message") {
          for (std::string& t : message_texts(item)) out.parts.push_back({std::move(t), std::nullopt, 0});
        } else if (type == "reasoning" && !string_member(item, "encrypted_content").empty()) {
          ModelPart part;
          part.reasoning = reasoning_of(item);
          out.parts.push_back(std::move(part));
        } else if (type == "function_call") {
          FunctionCall call;
          call.name = string_member(item, "name");
          if (const std::string id = string_member(item, "call_id"); !id.empty()) call.id = id;
          call.args = parse_arguments(string_member(item, "arguments"));
          out.parts.push_back({std::nullopt, std::move(call), position++});
        }
      }
    }
    read_status(r, string_member(r, "status"), out);
    return out;
  }

  ProviderError parse_error(std::string_view body, const Headers& headers) const override {
    ProviderError out;
    json j = parse_json(body);
    if (const json* e = j.is_object() ? object_at(j, "error") : nullptr) {
      std::string kind = string_member(*e, "type");
      if (kind.empty()) kind = string_member(*e, "code");
      out.message = (kind.empty() ? std::string() : kind + ": ") + string_member(*e, "message");
      out.daily_quota = says_daily_quota(string_member(*e, "message"));
    }
    out.retry_after_s = retry_after_from_headers(headers).value_or(0);
    return out;
  }
};

}  // namespace

const ICodec& openai_responses_codec() {
  static const ResponsesCodec instance;
  return instance;
}

}  // namespace rut
