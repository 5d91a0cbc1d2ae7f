// The OpenAI Chat Completions wire format (see openai_chat_format.h).
//
// Facts (WIRE-FORMATS.md "OpenAI Chat Completions", the API reference, and the `openai` npm SDK's
// Stream.fromSSEResponse, which stops at `data: [DONE]` and throws on a data frame holding an
// `error` member):
//   - frames are `data: <one-line JSON>\n\n`, no `event:` lines; the stream ends `data: [DONE]`;
//   - a chunk is {id, object:"chat.completion.chunk", created, model, system_fingerprint,
//     choices:[{index:0, delta, logprobs:null, finish_reason}]} (+ `usage: null` on every chunk and
//     a final `choices: []` usage chunk when the request asked `stream_options.include_usage`);
//   - a tool call starts with {index, id, type:"function", function:{name, arguments:""}}, then its
//     arguments stream as {index, function:{arguments:"<piece>"}}; no per-call done frame;
//   - errors: {"error":{message, type, param, code}}, in the body or as an in-stream data frame.
#include "mock_server/openai_chat_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "mock_server/json_text.h"

namespace mock::openai_chat {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

constexpr std::string_view kPath = "/v1/chat/completions";

// ---- Messages (sources in the comments; clients match on some of them) ------------------------

// WIRE-FORMATS.md; the API's own spelling ("preceeding", sic).
constexpr std::string_view kToolWithoutCalls =
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
    "'tool_calls'.";
// WIRE-FORMATS.md; the ids are joined with ", " (as quoted in bug reports of real answers).
constexpr std::string_view kMissingToolMessages =
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
    "'tool_call_id'. The following tool_call_ids did not have response messages: ";
// The API's answer to two tool messages with one tool_call_id (agno-agi/agno#5116,
// fatwang2/search2ai#30): "Invalid parameter: Duplicate value for 'tool_call_id' of 'call_…' in
// messages[7] and messages[8]."
std::string duplicate_tool_message(const std::string& id, std::size_t first, std::size_t second) {
  return "Invalid parameter: Duplicate value for 'tool_call_id' of '" + id + "' in messages[" +
         std::to_string(first) + "] and messages[" + std::to_string(second) + "].";
}
// NOT verified: no real answer to repeated ids inside one assistant message's `tool_calls` was
// found; this one is written in the style of the verified duplicate-tool_call_id message above.
std::string duplicate_call_id(const std::string& id, std::size_t message, std::size_t first,
                              std::size_t second) {
  const std::string m = "messages[" + std::to_string(message) + "].tool_calls[";
  return "Invalid parameter: Duplicate value for 'id' of '" + id + "' in " + m +
         std::to_string(first) + "] and " + m + std::to_string(second) + "].";
}

std::string_view json_type_name(const json& j) {
  switch (j.type()) {
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a number";
    default: return "null";
  }
}
std::string invalid_type(const std::string& param, std::string_view expected, const json& got) {
  return "Invalid type for '" + param + "': expected " + std::string(expected) + ", but got " +
         std::string(json_type_name(got)) + " instead.";
}
std::string missing(const std::string& param) {
  return "Missing required parameter: '" + param + "'.";
}

// ---- JSON helpers that never throw --------------------------------------------------------------

const json* member(const json& o, const char* key) {
  if (!o.is_object()) return nullptr;
  auto it = o.find(key);
  return it == o.end() ? nullptr : &*it;
}
std::string string_member(const json& o, const char* key) {
  const json* v = member(o, key);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

/// Checks a message's `content` (at `where`.content): a string, or an array of content parts, each
/// an object with a `type`; absent or null only when not `required`. The API's answers:
/// "Invalid type for 'messages[1].content': expected one of a string or array of objects, but got
/// an object instead." (pydantic/pydantic-ai#2653) and "Missing required parameter:
/// 'messages[2].content[0].type'." (neuron-core/neuron-ai#292); a part that is not an object is
/// answered in the style of the first (not verified).
std::optional<std::string> content_problem(const json* content, const std::string& where, bool required) {
  if (content == nullptr || content->is_null()) {
    return required ? std::optional<std::string>(missing(where + ".content")) : std::nullopt;
  }
  if (content->is_string()) return std::nullopt;
  if (!content->is_array()) {
    return invalid_type(where + ".content", "one of a string or array of objects", *content);
  }
  for (std::size_t k = 0; k < content->size(); ++k) {
    const json& part = (*content)[k];
    const std::string at = where + ".content[" + std::to_string(k) + "]";
    if (!part.is_object()) return invalid_type(at, "an object", part);
    const json* type = member(part, "type");
    if (type == nullptr || type->is_null()) return missing(at + ".type");
    if (!type->is_string()) return invalid_type(at + ".type", "a string", *type);
  }
  return std::nullopt;
}

/// The text of a message `content`: a string, or an array of parts whose `text` members join.
std::string content_text(const json* content) {
  if (content == nullptr) return "";
  if (content->is_string()) return content->get<std::string>();
  std::string out;
  if (content->is_array()) {
    for (const json& p : *content) {
      if (const json* t = member(p, "text"); t && t->is_string()) out += t->get<std::string>();
    }
  }
  return out;
}

/// Arguments as sent (a JSON text) parsed; a text that does not parse stays a JSON string.
json parse_arguments(const json* arguments) {
  if (arguments == nullptr || arguments->is_null()) return json::object();
  if (!arguments->is_string()) return *arguments;
  const std::string& text = arguments->get_ref<const std::string&>();
  if (text.empty()) return json::object();
  json parsed = parse_json(text);
  return parsed.is_discarded() ? json(text) : std::move(parsed);
}

// ---- Request decoding ---------------------------------------------------------------------------

struct ToolCallRef {
  std::string id;
  std::string name;
};

/// Decodes `messages` into the neutral view (into `contents`) and returns the first problem the
/// API would reject, shape problems before pairing problems of the same message.
std::optional<Rejection> decode_messages(const json& messages, json& contents) {
  std::optional<Rejection> rejection;
  auto reject = [&](std::string message, bool pairing) {
    if (!rejection) rejection = Rejection{400, std::move(message), pairing};
  };
  static const std::set<std::string> kRoles = {"system", "assistant", "user", "function", "tool",
                                               "developer"};
  // Pairing state: the tool calls of the assistant message the current run of tool messages
  // answers (none when the previous message was not such an assistant or a tool message of it).
  std::vector<ToolCallRef> open_calls;
  bool in_tool_run = false;                       // previous message: assistant with calls / tool
  std::vector<std::pair<std::string, std::size_t>> answered;  // id → message index
  std::vector<ToolCallRef> all_calls;             // every call so far, for name look-up
  bool last_is_tool_group = false;                // contents.back() holds tool results

  auto close_run = [&]() {
    if (!in_tool_run) return;
    std::string ids;
    for (const auto& c : open_calls) {
      bool done = false;
      for (const auto& [id, at] : answered) done = done || id == c.id;
      if (!done) ids += (ids.empty() ? "" : ", ") + c.id;
    }
    if (!ids.empty()) reject(std::string(kMissingToolMessages) + ids, true);
    in_tool_run = false;
    open_calls.clear();
    answered.clear();
  };

  for (std::size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) {
      reject(invalid_type(where, "an object", m), false);
      close_run();
      continue;
    }
    const json* role_j = member(m, "role");
    if (role_j == nullptr) {
      reject(missing(where + ".role"), false);
      close_run();
      continue;
    }
    const std::string role = role_j->is_string() ? role_j->get<std::string>() : std::string();
    if (!kRoles.contains(role)) {
      reject("Invalid value: '" + (role_j->is_string() ? role : role_j->dump()) +
                 "'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and "
                 "'developer'.",
             false);
      close_run();
      continue;
    }

    if (role == "tool") {
      const json* id_j = member(m, "tool_call_id");
      if (id_j == nullptr || !id_j->is_string()) {
        reject(id_j == nullptr ? missing(where + ".tool_call_id")
                               : invalid_type(where + ".tool_call_id", "a string", *id_j),
               false);
      }
      if (auto problem = content_problem(member(m, "content"), where, true)) reject(*problem, false);
      const std::string id = id_j && id_j->is_string() ? id_j->get<std::string>() : std::string();
      // Pairing: a tool message answers one call of the assistant message right before its run.
      bool known = false;
      for (const auto& c : open_calls) known = known || c.id == id;
      if (!in_tool_run || !known) {
        reject(std::string(kToolWithoutCalls), true);
      } else {
        for (const auto& [seen, at] : answered) {
          if (seen == id) reject(duplicate_tool_message(id, at, i), true);
        }
        answered.emplace_back(id, i);
      }
      // Neutral view: consecutive tool messages form one user content of function responses.
      std::string name;
      for (auto it = all_calls.rbegin(); it != all_calls.rend(); ++it) {
        if (it->id == id) {
          name = it->name;
          break;
        }
      }
      json fr = {{"name", name}};
      if (!id.empty()) fr["id"] = id;
      const json* content = member(m, "content");
      const std::string text = content_text(content);
      json response = parse_json(text);
      fr["response"] = response.is_discarded() ? json(text) : std::move(response);
      if (!last_is_tool_group) {
        contents.push_back({{"role", "user"}, {"parts", json::array()}});
        last_is_tool_group = true;
      }
      contents.back()["parts"].push_back({{"functionResponse", std::move(fr)}});
      continue;
    }

    close_run();
    last_is_tool_group = false;
    // Every role but the assistant's (whose content may be left out beside tool_calls) must send
    // content; the deprecated `function` role is not checked.
    if (role != "function") {
      if (auto problem = content_problem(member(m, "content"), where, role != "assistant")) {
        reject(*problem, false);
      }
    }
    if (role == "system" || role == "developer" || role == "function") continue;

    json parts = json::array();
    const std::string text = content_text(member(m, "content"));
    if (role == "user") {
      if (!text.empty()) parts.push_back({{"text", text}});
      contents.push_back({{"role", "user"}, {"parts", std::move(parts)}});
      continue;
    }

    // An assistant message: its text, then one functionCall per tool call.
    if (!text.empty()) parts.push_back({{"text", text}});
    const json* calls = member(m, "tool_calls");
    if (calls != nullptr && !calls->is_null() && !calls->is_array()) {
      reject(invalid_type(where + ".tool_calls", "an array", *calls), false);
    } else if (calls != nullptr && calls->is_array() && calls->empty()) {
      reject("Invalid '" + where + ".tool_calls': empty array. Expected an array with minimum "
             "length 1, but got an empty array instead.",
             false);
    }
    std::vector<ToolCallRef> these;
    if (calls != nullptr && calls->is_array()) {
      for (std::size_t k = 0; k < calls->size(); ++k) {
        const json& c = (*calls)[k];
        const std::string at = where + ".tool_calls[" + std::to_string(k) + "]";
        if (!c.is_object()) {
          reject(invalid_type(at, "an object", c), false);
          continue;
        }
        const json* id_j = member(c, "id");
        const json* fn = member(c, "function");
        if (id_j == nullptr) reject(missing(at + ".id"), false);
        else if (!id_j->is_string()) reject(invalid_type(at + ".id", "a string", *id_j), false);
        if (fn == nullptr) reject(missing(at + ".function"), false);
        else if (!fn->is_object()) reject(invalid_type(at + ".function", "an object", *fn), false);
        else if (member(*fn, "name") == nullptr) reject(missing(at + ".function.name"), false);
        const std::string id = id_j && id_j->is_string() ? id_j->get<std::string>() : std::string();
        const std::string name = fn ? string_member(*fn, "name") : std::string();
        for (std::size_t q = 0; q < these.size(); ++q) {
          if (these[q].id == id) reject(duplicate_call_id(id, i, q, k), true);
        }
        these.push_back({id, name});
        json call = {{"name", name}, {"args", parse_arguments(fn ? member(*fn, "arguments") : nullptr)}};
        if (!id.empty()) call["id"] = id;
        parts.push_back({{"functionCall", std::move(call)}});
      }
    }
    contents.push_back({{"role", "model"}, {"parts", std::move(parts)}});
    if (!these.empty()) {
      all_calls.insert(all_calls.end(), these.begin(), these.end());
      open_calls = std::move(these);
      in_tool_run = true;
    }
  }
  close_run();
  return rejection;
}

// ---- Chunks ---------------------------------------------------------------------------------------

struct ChunkContext {
  std::string model;
  std::string id;
  bool include_usage = false;
  std::size_t journal_index = 0;
  bool include_obfuscation = false;
};

/// The usage object as live, its details included (a recorded live answer of January 2026:
/// newrelic/newrelic-python-agent tests/mlmodel_langchain/_mock_external_openai_server.py):
/// {prompt_tokens 8, completion_tokens 1 + R, total_tokens 9 + R, prompt_tokens_details
/// {cached_tokens 0, audio_tokens 0}, completion_tokens_details {reasoning_tokens R, audio_tokens 0,
/// accepted_prediction_tokens 0, rejected_prediction_tokens 0}}, R the answer's reasoning events
/// (a reasoning model reasons on Chat Completions too; it only keeps the reasoning server-side).
void write_usage(std::string& out, int reasoning) {
  json_text::Writer(out).begin_object()
      .member("prompt_tokens", 8)
      .member("completion_tokens", 1 + reasoning)
      .member("total_tokens", 9 + reasoning)
      .key("prompt_tokens_details").begin_object().member("cached_tokens", 0).member("audio_tokens", 0).end_object()
      .key("completion_tokens_details").begin_object()
      .member("reasoning_tokens", reasoning)
      .member("audio_tokens", 0)
      .member("accepted_prediction_tokens", 0)
      .member("rejected_prediction_tokens", 0)
      .end_object()
      .end_object();
}

std::string frame(const ojson& j) { return "data: " + j.dump() + "\n\n"; }

std::string arguments_text(const CallEvent& c) {
  return c.args.is_null() ? std::string("{}") : c.args.dump();
}

const char* finish_reason_name(FinishReason reason, bool had_calls) {
  switch (reason) {
    case FinishReason::kStop: return had_calls ? "tool_calls" : "stop";
    case FinishReason::kMaxTokens: return "length";
    case FinishReason::kContentFilter: return "content_filter";
    case FinishReason::kMalformedCall: return nullptr;  // no finish reason: an error (model_error)
  }
  return "stop";
}

ojson model_error_envelope() {
  ojson e = ojson::object();
  e["message"] = std::string(kModelErrorMessage);
  e["type"] = "model_error";
  e["param"] = nullptr;
  e["code"] = nullptr;
  return ojson{{"error", std::move(e)}};
}

std::string_view default_message_for(int status) {
  switch (status) {
    case 400: return "Invalid request: the request was rejected as invalid.";
    case 401: return "Incorrect API key provided: hiccup. You can find your API key at https://platform.openai.com/account/api-keys.";
    case 403: return "Country, region, or territory not supported";
    case 404: return "The model does not exist or you do not have access to it.";
    case 429: return "Rate limit reached for requests. Visit https://platform.openai.com/account/rate-limits to learn more.";
    case 500: return "The server had an error while processing your request. Sorry about that!";
    case 502: return "Bad gateway.";
    case 503:
    case 529: return "That model is currently overloaded with other requests. You can retry your request, or contact us through our help center at help.openai.com if the error persists.";
    case 504: return "Gateway timeout.";
    default: return status >= 500 ? "The server had an error while processing your request. Sorry about that!"
                                  : "The request failed.";
  }
}

/// Writes each chunk's JSON text directly (json_text.h): the same bytes as the nlohmann tree
/// {id, object, created, model, system_fingerprint, choices, usage?} dumped, which the encoders
/// built before (mock_server/testdata/encoder_bytes.txt pins them).
class Encoder final : public StreamEncoder {
 public:
  explicit Encoder(ChunkContext ctx) : ctx_(std::move(ctx)) {
    prefix_ = "data: ";
    json_text::Writer(prefix_)
        .begin_object()
        .member("id", ctx_.id)
        .member("object", "chat.completion.chunk")
        .member("created", kCreated)
        .member("model", ctx_.model)
        .member("service_tier", "default")
        .member("system_fingerprint", kSystemFingerprint)
        .key("choices");
  }

  std::string open() override {
    return delta_frame([](json_text::Writer& d) { d.member("role", "assistant").member("content", ""); });
  }

  std::vector<std::string> event_units(const Event& event, int call_index) override {
    if (auto* t = std::get_if<TextEvent>(&event)) {
      return {delta_frame([t](json_text::Writer& d) { d.member("content", t->text); })};
    }
    // Chat Completions has no reasoning round trip (OpenAI's reasoning models keep it server-side
    // here): a reasoning event sends nothing.
    if (std::holds_alternative<ReasoningEvent>(event)) {
      ++reasoning_;  // counted in the usage's reasoning_tokens
      return {std::string()};
    }
    if (auto* c = std::get_if<CallEvent>(&event)) {
      had_calls_ = true;
      std::vector<std::string> units;
      units.push_back(delta_frame([c, call_index](json_text::Writer& d) {
        d.key("tool_calls").begin_array().begin_object()
            .member("index", call_index)
            .member("id", c->id)
            .member("type", "function")
            .key("function").begin_object().member("name", c->name).member("arguments", "").end_object()
            .end_object().end_array();
      }));
      for (const std::string& piece : split_fragments(arguments_text(*c), std::max(c->fragments, 1))) {
        units.push_back(delta_frame([&piece, call_index](json_text::Writer& d) {
          d.key("tool_calls").begin_array().begin_object()
              .member("index", call_index)
              .key("function").begin_object().member("arguments", piece).end_object()
              .end_object().end_array();
        }));
      }
      units.emplace_back();  // no per-call done frame
      return units;
    }
    const auto& f = std::get<FinishEvent>(event);
    const char* reason = finish_reason_name(f.reason, had_calls_);
    if (reason == nullptr) return {frame(model_error_envelope())};  // malformed_call
    std::string out = delta_frame([](json_text::Writer&) {}, reason);
    if (ctx_.include_usage) {
      // A chunk with no choices and the usage (OpenAI's `stream_options.include_usage`).
      out += prefix_;
      json_text::Writer(out)
          .begin_array().end_array()
          .key("usage");
      write_usage(out, reasoning_);
      end_chunk(out);
    }
    out += "data: [DONE]\n\n";
    return {out};
  }

  std::string error_event(int status) override {
    return frame(error_envelope(status, default_message_for(status)));
  }

  std::string malformed_frame() override {
    return "data: {\"id\":\"" + ctx_.id + "\",\"object\":\"chat.completion.chunk\",\"choices\":[{\n\n";
  }

 private:
  /// One chunk frame whose only choice has the delta `write_delta` writes (an object's members)
  /// and `finish_reason` (null when none).
  template <typename WriteDelta>
  std::string delta_frame(const WriteDelta& write_delta, const char* finish_reason = nullptr) {
    std::string out;
    out.reserve(prefix_.size() + 160);
    out += prefix_;
    json_text::Writer w(out);
    w.begin_array().begin_object().member("index", 0).key("delta").begin_object();
    write_delta(w);
    w.end_object().member_null("logprobs");
    if (finish_reason) w.member("finish_reason", finish_reason);
    else w.member_null("finish_reason");
    w.end_object().end_array();
    if (ctx_.include_usage) w.member_null("usage");
    end_chunk(out);
    return out;
  }

  /// Closes a chunk object and its frame, after its `obfuscation` padding when the request wants
  /// it. Live chunks carry it last, every chunk its own (the role, delta, finish and usage chunks
  /// of pydantic/pydantic-ai tests/models/cassettes/test_openai/
  /// test_run_stream_sync_streams_real_model.yaml, gpt-4o-mini recorded 2026-07-02: 3 to 15
  /// characters, no length rule visible); hiccup draws 3 to 15 from the chunk's number.
  void end_chunk(std::string& out) {
    if (ctx_.include_obfuscation) {
      const std::uint64_t n = chunks_++;
      out += ",\"obfuscation\":\"";
      out += obfuscation_padding(ctx_.journal_index, n, 3 + (ctx_.journal_index * 7 + n * 5) % 13);
      out += '"';
    }
    out += "}\n\n";
  }

  ChunkContext ctx_;
  std::string prefix_;  // `data: {"id":…,"choices":` — every chunk's bytes up to its choices
  std::uint64_t chunks_ = 0;  // chunks padded so far
  bool had_calls_ = false;
  int reasoning_ = 0;  // reasoning events so far
};

class Format final : public WireFormat {
 public:
  std::string_view name() const override { return "openai-chat"; }
  std::vector<std::string> paths() const override { return {"POST /v1/chat/completions"}; }
  bool matches(std::string_view path) const override { return path == kPath; }

  DecodedRequest decode_request(std::string_view, std::string_view body) const override {
    DecodedRequest out;
    auto reject = [&](std::string message) {
      if (!out.rejection) out.rejection = Rejection{400, std::move(message), false};
    };
    const json parsed = parse_json(body);
    if (parsed.is_discarded()) {
      // The API's answer to a body that is not JSON.
      reject("We could not parse the JSON body of your request. (HINT: This likely means you "
             "aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but "
             "what was sent was not valid JSON. If you have trouble figuring out how to fix this, "
             "please contact us through our help center at help.openai.com.)");
      return out;
    }
    if (!parsed.is_object()) {
      // Valid JSON that is not an object (`[]`, `null`, `"str"`). NOT verified: no real answer was
      // found; the openai-responses format answers the same way.
      reject(invalid_type("body", "an object", parsed));
      return out;
    }
    const json* model = member(parsed, "model");
    if (model != nullptr && model->is_string()) out.model = model->get<std::string>();
    const json* stream = member(parsed, "stream");
    out.streaming = stream != nullptr && stream->is_boolean() && stream->get<bool>();
    if (stream != nullptr && !stream->is_boolean() && !stream->is_null()) {
      reject(invalid_type("stream", "a boolean", *stream));
    }
    // `stream_options` is an object of booleans, each nullable (documented:
    // platform.openai.com/docs/api-reference/chat/create); another type is answered like any
    // mistyped parameter.
    if (const json* options = member(parsed, "stream_options"); options != nullptr && options->is_object()) {
      const json* usage = member(*options, "include_usage");
      out.include_usage = usage != nullptr && usage->is_boolean() && usage->get<bool>();
      const json* obfuscation = member(*options, "include_obfuscation");
      out.include_obfuscation = obfuscation == nullptr || !obfuscation->is_boolean() || obfuscation->get<bool>();
      for (const char* key : {"include_usage", "include_obfuscation"}) {
        const json* v = member(*options, key);
        if (v != nullptr && !v->is_null() && !v->is_boolean()) {
          reject(invalid_type(std::string("stream_options.") + key, "a boolean", *v));
        }
      }
    } else if (options != nullptr && !options->is_null()) {
      reject(invalid_type("stream_options", "an object", *options));
    }

    const json* messages = member(parsed, "messages");
    std::optional<Rejection> shape;
    if (messages == nullptr) {
      shape = Rejection{400, missing("messages"), false};
    } else if (!messages->is_array()) {
      shape = Rejection{400, invalid_type("messages", "an array", *messages), false};
    } else {
      out.contents = json::array();
      if (messages->empty()) {
        shape = Rejection{400,
                          "Invalid 'messages': empty array. Expected an array with minimum length 1, "
                          "but got an empty array instead.",
                          false};
      } else {
        shape = decode_messages(*messages, out.contents);
      }
    }
    // The API checks `model` before the messages.
    if (model == nullptr || !model->is_string() || model->get<std::string>().empty()) {
      reject("you must provide a model parameter");
    }
    if (!out.rejection && shape) out.rejection = std::move(shape);
    return out;
  }

  void add_answer_headers(std::size_t journal_index, int status,
                          std::vector<std::pair<std::string, std::string>>& headers) const override {
    openai_chat::add_answer_headers(journal_index, status, headers);
  }

  std::string default_message(int status) const override {
    return std::string(default_message_for(status));
  }

  ErrorAnswer error_answer(int status, std::string_view message,
                           std::optional<double> retry_after_s) const override {
    ErrorAnswer out{error_envelope(status, message).dump(), {}};
    if (retry_after_s) out.headers = retry_after_headers(*retry_after_s);
    return out;
  }

  ErrorAnswer quota_answer(Quota quota, std::string_view model, std::optional<double> retry_after_s) const override {
    return error_answer(429, rate_limit_message(quota, model, retry_after_s), retry_after_s);
  }

  /// Streams as the API sends them: `text/event-stream; charset=utf-8` (recorded live: pydantic/pydantic-ai
  /// tests/models/cassettes/test_openai/test_run_stream_sync_streams_real_model.yaml, 2026-07-02);
  /// JSON answers stay `application/json`, as recorded.
  std::string_view stream_content_type() const override { return "text/event-stream; charset=utf-8"; }

  std::string call_id(std::size_t journal_index, int call_index) const override {
    return "call_" + std::to_string(journal_index) + "_" + std::to_string(call_index);
  }

  std::unique_ptr<StreamEncoder> stream_encoder(const ResponseContext& ctx) const override {
    return make_encoder(ctx, ctx.include_usage);
  }

  std::string unary_body(const std::vector<Event>& events, const ResponseContext& ctx) const override {
    std::string text;
    bool has_text = false;
    ojson tool_calls = ojson::array();
    std::optional<FinishReason> finish;
    int reasoning = 0;
    for (const Event& e : events) {
      if (auto* f = std::get_if<FinishEvent>(&e)) {
        finish = f->reason;
        break;
      }
      if (std::holds_alternative<ReasoningEvent>(e)) ++reasoning;
      if (auto* t = std::get_if<TextEvent>(&e)) {
        text += t->text;
        has_text = true;
      } else if (auto* call_event = std::get_if<CallEvent>(&e)) {
        const auto& c = *call_event;
        ojson fn = ojson::object();
        fn["name"] = c.name;
        fn["arguments"] = arguments_text(c);
        ojson call = ojson::object();
        call["id"] = c.id;
        call["type"] = "function";
        call["function"] = std::move(fn);
        tool_calls.push_back(std::move(call));
      }
    }
    // The non-streaming answer to unparsable model output is HTTP 500 model_error
    // (malformed_call_unary_status); the body is that error envelope.
    if (finish == FinishReason::kMalformedCall) return model_error_envelope().dump();
    const bool filtered = finish == FinishReason::kContentFilter;
    ojson message = ojson::object();
    message["role"] = "assistant";
    if (has_text && !filtered) message["content"] = text;
    else message["content"] = nullptr;
    message["refusal"] = nullptr;
    if (!tool_calls.empty() && !filtered) message["tool_calls"] = std::move(tool_calls);
    ojson choice = ojson::object();
    choice["index"] = 0;
    choice["message"] = std::move(message);
    choice["logprobs"] = nullptr;
    if (finish) choice["finish_reason"] = finish_reason_name(*finish, message_had_calls(events));
    else choice["finish_reason"] = nullptr;
    ojson body = ojson::object();
    body["id"] = completion_id(ctx.journal_index);
    body["object"] = "chat.completion";
    body["created"] = kCreated;
    body["model"] = ctx.model;
    body["choices"] = ojson::array({std::move(choice)});
    std::string usage;
    write_usage(usage, reasoning);
    body["usage"] = ojson::parse(usage);
    body["service_tier"] = "default";
    body["system_fingerprint"] = std::string(kSystemFingerprint);
    return body.dump();
  }

  bool filtered_answer_keeps_parts() const override { return false; }
  /// No reasoning round trip in Chat Completions: a reasoning event sends nothing (WIRE-FORMATS.md).
  bool sends_reasoning() const override { return false; }
  int malformed_call_unary_status() const override { return 500; }

  std::optional<std::string> status_note(int status) const override {
    // OpenAI's API error codes (platform.openai.com/docs/guides/error-codes: 401, 403, 429, 500,
    // 503) plus what its endpoints answer in practice and its SDKs classify: 400 invalid request,
    // 404 unknown model, 409 conflict, 422 unprocessable, 502/504 from its edge. No 529: that is
    // Anthropic's overloaded_error (WIRE-FORMATS.md); OpenAI's overload is a 503.
    static const StatusTable table{"openai-chat", {400, 401, 403, 404, 409, 422, 429, 500, 502, 503, 504},
                                   "503 (\"That model is currently overloaded with other requests.\")"};
    return table.note(status);
  }

 private:
  static bool message_had_calls(const std::vector<Event>& events) {
    for (const Event& e : events) {
      if (std::holds_alternative<FinishEvent>(e)) return false;
      if (std::holds_alternative<CallEvent>(e)) return true;
    }
    return false;
  }
};

}  // namespace

namespace {

/// splitmix64 (Steele, Lea and Flood 2014): a different, well-mixed value for every seed.
std::uint64_t mix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

std::string obfuscation_padding(std::size_t journal_index, std::uint64_t frame, std::size_t length) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string out(length, 'x');
  std::uint64_t z = mix64(journal_index) ^ (frame * 0xd1b54a32d192ed03ULL);
  for (std::size_t i = 0; i < length; ++i) {
    z = mix64(z);
    out[i] = kAlphabet[z % 62];
  }
  return out;
}

void add_answer_headers(std::size_t journal_index, int status, std::vector<std::pair<std::string, std::string>>& headers) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = "req_";
  std::uint64_t z = journal_index;
  for (int word = 0; word < 2; ++word) {
    z = mix64(z);
    for (int i = 0; i < 16; ++i) id += kHex[(z >> (4 * i)) & 0xf];
  }
  headers.emplace_back("x-request-id", std::move(id));
  const bool limited = status == 429;
  constexpr std::uint64_t kRequests = 10000, kTokens = 30000000;
  headers.emplace_back("x-ratelimit-limit-requests", std::to_string(kRequests));
  headers.emplace_back("x-ratelimit-limit-tokens", std::to_string(kTokens));
  headers.emplace_back("x-ratelimit-remaining-requests",
                       limited ? "0" : std::to_string(kRequests - 1 - journal_index % kRequests));
  headers.emplace_back("x-ratelimit-remaining-tokens",
                       limited ? "0" : std::to_string(kTokens - 1000 * (1 + journal_index % (kTokens / 1000 - 1))));
  headers.emplace_back("x-ratelimit-reset-requests", "6ms");
  headers.emplace_back("x-ratelimit-reset-tokens", "0s");
}

std::string rate_limit_message(Quota quota, std::string_view model, std::optional<double> retry_after_s) {
  const bool per_day = quota == Quota::kPerDay;
  std::string m = "Rate limit reached for " + std::string(model.empty() ? std::string_view("gpt-5.5") : model) +
                  " in organization org-hiccup on requests per " + (per_day ? "day (RPD): Limit 200, Used 200" : "min (RPM): Limit 3, Used 3") +
                  ", Requested 1.";
  if (retry_after_s) {
    double s = std::isfinite(*retry_after_s) && *retry_after_s > 0 ? *retry_after_s : 0;
    std::string wait;
    if (s < 60) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%gs", std::round(s * 1000) / 1000);
      wait = buf;
    } else {
      const long long total = std::llround(s);
      const long long h = total / 3600, mi = total % 3600 / 60, sec = total % 60;
      if (h > 0) wait += std::to_string(h) + "h";
      if (h > 0 || mi > 0) wait += std::to_string(mi) + "m";
      wait += std::to_string(sec) + "s";
    }
    m += " Please try again in " + wait + ".";
  }
  return m + " Visit https://platform.openai.com/account/rate-limits to learn more.";
}

std::string completion_id(std::size_t journal_index) {
  return "chatcmpl-hiccup-" + std::to_string(journal_index);
}

ojson error_envelope(int status, std::string_view message) {
  ojson e = ojson::object();
  e["message"] = std::string(message);
  ojson code = nullptr;
  switch (status) {
    case 401:
      e["type"] = "invalid_request_error";
      code = "invalid_api_key";
      break;
    case 403:
      e["type"] = "request_forbidden";
      code = "unsupported_country_region_territory";
      break;
    case 404:
      e["type"] = "invalid_request_error";
      code = "model_not_found";
      break;
    case 429:
      e["type"] = "requests";
      code = "rate_limit_exceeded";
      break;
    case 502:
      e["type"] = "cf_bad_gateway";
      code = status;
      break;
    case 504:
      e["type"] = "cf_gateway_timeout";
      code = status;
      break;
    default:
      e["type"] = status >= 500 ? "server_error" : "invalid_request_error";
      break;
  }
  e["param"] = nullptr;
  if (status == 400) {
    // A parameter problem names the parameter and its kind, as live: "Invalid type for
    // 'messages[1].content': …" comes with "param": "messages[1].content", "code": "invalid_type"
    // (pydantic/pydantic-ai#2653); pairing rejections and the missing model keep null.
    const auto starts = [&](std::string_view prefix) { return message.substr(0, prefix.size()) == prefix; };
    for (std::string_view prefix : {"Missing required parameter: '", "Invalid type for '", "Invalid '"}) {
      if (!starts(prefix)) continue;
      const std::string_view rest = message.substr(prefix.size());
      if (const auto end = rest.find('\''); end != std::string_view::npos) e["param"] = std::string(rest.substr(0, end));
      break;
    }
    if (starts("Missing required parameter: '")) code = "missing_required_parameter";
    else if (starts("Invalid type for '")) code = "invalid_type";
    else if (starts("Invalid '") && message.find("': empty array.") != std::string_view::npos) code = "empty_array";
  }
  e["code"] = std::move(code);
  return ojson{{"error", std::move(e)}};
}

std::vector<std::pair<std::string, std::string>> retry_after_headers(double retry_after_s) {
  // Bounded so the millisecond count fits an int64 (a scenario's is at most 1e6 s).
  const double s = std::isfinite(retry_after_s) && retry_after_s > 0 ? std::min(retry_after_s, 1e12) : 0;
  // Up to the next millisecond; a product a rounding error above a whole number (0.1 * 1000 may
  // not be exactly 100) stays that number.
  const double scaled = s * 1000;
  long long ms = std::llround(scaled);
  if (scaled - static_cast<double>(ms) > 1e-6) ++ms;
  return {{"retry-after", std::to_string(static_cast<long long>(std::ceil(s)))},
          {"retry-after-ms", std::to_string(ms)}};
}

std::unique_ptr<StreamEncoder> make_encoder(const ResponseContext& ctx, bool include_usage) {
  return std::make_unique<Encoder>(
      ChunkContext{ctx.model, completion_id(ctx.journal_index), include_usage, ctx.journal_index, ctx.include_obfuscation});
}

const WireFormat& format() {
  static const Format instance;
  return instance;
}

}  // namespace mock::openai_chat
