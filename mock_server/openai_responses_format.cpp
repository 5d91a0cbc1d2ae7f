// The OpenAI Responses wire format (see openai_responses_format.h). Facts and their sources:
// - pairing 400s, `invalid_request_error`, `param: "input"`, `code: null`: microsoft/vscode#320060,
//   continuedev/continue#10092 (`No tool call found for function call output with call_id …`),
//   smallmain/vscode-unify-chat-provider#40 (`No tool output found for function call …`),
//   openai/openai-agents-python#1789 (`Duplicate item found with id …. Remove duplicate items …`);
// - the invalid-JSON 400 and the 500/503 messages: OpenAI's error-codes guide;
// - event and object shapes: openai-node src/resources/responses/responses.ts and the stream
//   accumulator (src/internal/responses/response-accumulator.ts), which insists that
//   `output_index` appends, `item_id` names the item at that index, and content indexes append.
#include "mock_server/openai_responses_format.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <map>
#include <set>

#include "mock_server/json_text.h"
#include "mock_server/openai_chat_format.h"

namespace mock::openai_responses {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

/// Fixed `created_at` (Unix seconds) of every response: output is byte-for-byte deterministic.
constexpr long long kCreatedAt = 1700000000;

/// OpenAI's message for a model output it cannot parse (Chat Completions sends it as a 500
/// `model_error`, e.g. OpenHands/OpenHands#5876); the Responses stream's nearest equivalent of
/// Gemini's MALFORMED_FUNCTION_CALL.
constexpr std::string_view kInvalidContentMessage =
    "The model produced invalid content. Consider modifying your prompt if you are seeing this "
    "error persistently.";

constexpr std::string_view kBadJsonMessage =
    "We could not parse the JSON body of your request. (HINT: This likely means you aren't using "
    "your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not "
    "valid JSON. If you have trouble figuring out how to fix this, please contact us through our "
    "help center at help.openai.com.)";

std::string response_id(std::size_t journal_index) {
  return "resp_hiccup_" + std::to_string(journal_index);
}
std::string message_id(std::size_t journal_index, int output_index) {
  return "msg_hiccup_" + std::to_string(journal_index) + "_" + std::to_string(output_index);
}
std::string item_id_for_call(std::size_t journal_index, int call_index) {
  return "fc_hiccup_" + std::to_string(journal_index) + "_" + std::to_string(call_index);
}
std::string item_id_for_reasoning(std::size_t journal_index, int reasoning_index) {
  return "rs_hiccup_" + std::to_string(journal_index) + "_" + std::to_string(reasoning_index);
}

/// A reasoning output item: `summary` one summary_text part with `text` (none when empty, as the
/// API sends a reasoning item without a summary), `encrypted_content` when completed (the request
/// asked for `reasoning.encrypted_content`; openai-python ResponseReasoningItem).
void write_reasoning_item(json_text::Writer& w, std::string_view id, const ReasoningEvent* completed) {
  w.begin_object().member("id", id).member("type", "reasoning").key("summary").begin_array();
  if (completed != nullptr && !completed->text.empty()) {
    w.begin_object().member("type", "summary_text").member("text", completed->text).end_object();
  }
  w.end_array();
  if (completed != nullptr) w.member("encrypted_content", completed->signature);
  w.end_object();
}

/// The usage object as live (platform.openai.com/docs/api-reference/responses/object, `usage`):
/// input_tokens 8, input_tokens_details {cached_tokens 0}, output_tokens 1 + R,
/// output_tokens_details {reasoning_tokens R}, total_tokens 9 + R; R the reasoning items in
/// `output` (output tokens include reasoning tokens).
void write_usage(json_text::Writer& w, int reasoning) {
  w.begin_object()
      .member("input_tokens", 8)
      .key("input_tokens_details").begin_object().member("cached_tokens", 0).end_object()
      .member("output_tokens", 1 + reasoning)
      .key("output_tokens_details").begin_object().member("reasoning_tokens", reasoning).end_object()
      .member("total_tokens", 9 + reasoning)
      .end_object();
}

/// Whether an output item's JSON text (as write_reasoning_item and the others write it: `id`
/// first, then `type`) is a reasoning item.
bool is_reasoning_item(std::string_view item) {
  const std::size_t type = item.find("\"type\":");
  return type != std::string_view::npos && item.compare(type + 7, 11, "\"reasoning\"") == 0;
}

/// How a finish ends the response: its status, event and `incomplete_details` / `error`.
struct Ending {
  std::string_view status;
  std::string_view event;
  ojson incomplete_details;  // null unless incomplete
  ojson error;               // null unless failed
};

ojson error_object(std::string_view code, std::string_view message) {
  ojson e = ojson::object();
  e["code"] = std::string(code);
  e["message"] = std::string(message);
  return e;
}

Ending ending_for(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return {"completed", "response.completed", nullptr, nullptr};
    case FinishReason::kMaxTokens:
      return {"incomplete", "response.incomplete", ojson{{"reason", "max_output_tokens"}}, nullptr};
    case FinishReason::kContentFilter:
      return {"incomplete", "response.incomplete", ojson{{"reason", "content_filter"}}, nullptr};
    case FinishReason::kMalformedCall:
      return {"failed", "response.failed", nullptr, error_object("server_error", kInvalidContentMessage)};
  }
  return {"completed", "response.completed", nullptr, nullptr};
}

// The objects below are written as JSON text directly (json_text.h), member for member in the
// order the API sends them; mock_server/testdata/encoder_bytes.txt pins the bytes.

/// The response object, its `output` being the items' JSON texts. `usage` is null while in
/// progress, as the API sends it.
void write_response(json_text::Writer& w, const ResponseContext& ctx, std::string_view status,
                    const std::vector<std::string>& output, const ojson& error = nullptr,
                    const ojson& incomplete_details = nullptr) {
  w.begin_object()
      .member("id", response_id(ctx.journal_index))
      .member("object", "response")
      .member("created_at", kCreatedAt)
      .member("status", status)
      .member_raw("background", "false")
      .key("completed_at");
  if (status == "completed") w.integer(kCreatedAt + 1);
  else w.null();
  w.member_raw("error", error.dump())
      .member_raw("incomplete_details", incomplete_details.dump())
      .member("model", ctx.model)
      .key("output").begin_array();
  for (const std::string& item : output) w.raw(item);
  w.end_array().key("parallel_tool_calls").boolean(true).key("usage");
  if (status == "in_progress") {
    w.null();
  } else {
    const auto reasoning = std::count_if(output.begin(), output.end(), [](const std::string& item) { return is_reasoning_item(item); });
    write_usage(w, static_cast<int>(reasoning));
  }
  w.member_raw("metadata", ctx.metadata.empty() ? std::string_view("{}") : std::string_view(ctx.metadata));
  w.end_object();
}

/// The number of Unicode code points in UTF-8 `s` (its bytes that do not continue a sequence).
std::size_t code_points(std::string_view s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

/// The `obfuscation` member of a delta frame, when the request wants it: padding that brings the
/// delta to a multiple of 16 code points (a delta of 16 or more, which no recording shows, to the
/// next multiple), as live: every text and argument delta of a recorded gpt-5.5 stream
/// (pydantic/pydantic-ai tests/models/cassettes/test_openai_responses/
/// test_openai_responses_phase_streamed_on_part_start.yaml, 2026-07-28) is padded to 16.
void write_obfuscation(json_text::Writer& w, const ResponseContext& ctx, int sequence_number, std::string_view delta) {
  if (!ctx.include_obfuscation) return;
  w.member("obfuscation", openai_chat::obfuscation_padding(ctx.journal_index, static_cast<std::uint64_t>(sequence_number),
                                                           16 - code_points(delta) % 16));
}

std::string response_text(const ResponseContext& ctx, std::string_view status, const std::vector<std::string>& output,
                          const ojson& error = nullptr, const ojson& incomplete_details = nullptr) {
  std::string out;
  json_text::Writer w(out);
  write_response(w, ctx, status, output, error, incomplete_details);
  return out;
}

void write_output_text_part(json_text::Writer& w, std::string_view text) {
  w.begin_object()
      .member("type", "output_text")
      .key("annotations").begin_array().end_array()
      .key("logprobs").begin_array().end_array()
      .member("text", text)
      .end_object();
}

/// A message item: no content while in progress, one output_text part with `text` once completed.
void write_message_item(json_text::Writer& w, std::string_view id, std::string_view status,
                        const std::string* text) {
  w.begin_object().member("id", id).member("type", "message").member("status", status).key("content").begin_array();
  if (text) write_output_text_part(w, *text);
  w.end_array().member("role", "assistant").end_object();
}

void write_function_call_item(json_text::Writer& w, std::string_view id, std::string_view status,
                              std::string_view arguments, const CallEvent& call) {
  w.begin_object()
      .member("id", id)
      .member("type", "function_call")
      .member("status", status)
      .member("arguments", arguments)
      .member("call_id", call.id)
      .member("name", call.name)
      .end_object();
}

/// The compact JSON text of a call's arguments, as `arguments` carries it.
std::string arguments_text(const CallEvent& call) {
  return call.args.is_null() ? std::string("{}") : call.args.dump();
}

/// The JSON text of the completed output item of one script event (none for a finish).
std::optional<std::string> completed_item(const Event& event, std::size_t journal_index, int output_index,
                                          int call_index) {
  std::string out;
  json_text::Writer w(out);
  if (auto* t = std::get_if<TextEvent>(&event)) {
    write_message_item(w, message_id(journal_index, output_index), "completed", &t->text);
    return out;
  }
  if (auto* c = std::get_if<CallEvent>(&event)) {
    write_function_call_item(w, item_id_for_call(journal_index, call_index), "completed", arguments_text(*c), *c);
    return out;
  }
  return std::nullopt;
}

class Encoder final : public StreamEncoder {
 public:
  explicit Encoder(ResponseContext ctx) : ctx_(std::move(ctx)) {}

  std::string open() override {
    const std::string response = response_text(ctx_, "in_progress", {});
    std::string s = frame("response.created", [&](json_text::Writer& w) { w.member_raw("response", response); });
    s += frame("response.in_progress", [&](json_text::Writer& w) { w.member_raw("response", response); });
    return s;
  }

  std::vector<std::string> event_units(const Event& event, int call_index) override {
    last_call_unit_frames_.clear();
    if (auto* f = std::get_if<FinishEvent>(&event)) {
      const Ending e = ending_for(f->reason);
      // A finish completes the open message item first; a failed response (malformed_call) ends
      // with it open, as a live failure does.
      std::string s = f->reason == FinishReason::kMalformedCall ? std::string() : close_text();
      s += frame(e.event, [&](json_text::Writer& w) {
        w.key("response");
        write_response(w, ctx_, e.status, output_, e.error, e.incomplete_details);
      });
      return {s};
    }
    if (auto* t = std::get_if<TextEvent>(&event)) return {text_unit(*t)};
    if (auto* r = std::get_if<ReasoningEvent>(&event)) return {reasoning_unit(*r)};
    int closed_frames = 0;
    std::string start = close_text(&closed_frames);  // numbered before the call's frames
    const int oi = next_output_index_++;
    const auto& call = std::get<CallEvent>(event);
    const std::string id = item_id_for_call(ctx_.journal_index, call_index);
    const std::string args = arguments_text(call);
    std::vector<std::string> units;
    units.push_back(start + frame("response.output_item.added", [&](json_text::Writer& w) {
      w.member("output_index", oi).key("item");
      write_function_call_item(w, id, "in_progress", "", call);
    }));
    last_call_unit_frames_.push_back(1 + closed_frames);
    for (const std::string& piece : split_fragments(args, std::max(call.fragments, 1))) {
      units.push_back(frame("response.function_call_arguments.delta", [&](json_text::Writer& w) {
        w.member("item_id", id).member("output_index", oi).member("delta", piece);
        write_obfuscation(w, ctx_, seq_ - 1, piece);
      }));
      last_call_unit_frames_.push_back(1);
    }
    std::string item;
    {
      json_text::Writer w(item);
      write_function_call_item(w, id, "completed", args, call);
    }
    std::string done = frame("response.function_call_arguments.done", [&](json_text::Writer& w) {
      w.member("item_id", id).member("output_index", oi).member("name", call.name).member("arguments", args);
    });
    done += frame("response.output_item.done",
                  [&](json_text::Writer& w) { w.member("output_index", oi).member_raw("item", item); });
    units.push_back(std::move(done));
    last_call_unit_frames_.push_back(2);
    output_.push_back(std::move(item));
    return units;
  }

  void withhold_last_units(std::size_t units_sent) override {
    // The withheld frames were numbered last: give their numbers back. The done unit completes
    // the item; withheld, the call never completed.
    for (std::size_t u = units_sent; u < last_call_unit_frames_.size(); ++u) seq_ -= last_call_unit_frames_[u];
    if (units_sent < last_call_unit_frames_.size() && !output_.empty()) output_.pop_back();
    last_call_unit_frames_.clear();
  }

  std::string error_event(int status) override {
    // The engine encodes only events something of which goes out: an event a stream-ending fault
    // replaces is never encoded, and a call cut inside its fragments is trimmed back by
    // withhold_last_units. So the error takes the next sequence number and reports every output
    // item completed so far (a message item the fault left open is not).
    // As live: `event: error` with the error nested under `error` (`type`, `code`, `message`,
    // `param`), then `response.failed`, each numbered in turn. A recorded live stream
    // (SwiftedMind/SwiftAgent, Tests/SwiftAgentTests/OpenAI/OpenAIStreamingErrorHandling.swift,
    // gpt-5-2025-08-07): `{"type":"error","sequence_number":2,"error":{"type":"insufficient_quota",
    // "code":"insufficient_quota","message":…,"param":null}}` then `response.failed` number 3; the
    // same shape with server_error in Soju06/codex-lb#429. The openai SDKs throw on the first
    // (openai-node's stream iterator throws APIError for any event whose data has `error`); codex
    // ignores it and acts on `response.failed`, mapping `rate_limit_exceeded` to a retry (parsing
    // "try again in …") and anything else to a retryable stream error
    // (codex-rs/codex-api/src/sse/responses.rs).
    const std::string_view code = status == 429 ? "rate_limit_exceeded" : "server_error";
    const std::string message =
        status == 429 ? std::string("Rate limit reached for requests. Please try again later.")
                      : "An error occurred while processing your request. You can retry your request, "
                        "or contact us through our help center at help.openai.com if the error "
                        "persists. Please include the request ID req_hiccup_" +
                            std::to_string(ctx_.journal_index) + " in your message.";
    std::string s = frame("error", [&](json_text::Writer& w) {
      w.key("error").begin_object()
          .member("type", code)
          .member("code", code)
          .member("message", message)
          .member_null("param")
          .end_object();
    });
    s += frame("response.failed", [&](json_text::Writer& w) {
      w.key("response");
      write_response(w, ctx_, "failed", output_, error_object(code, message));
    });
    return s;
  }

  std::string malformed_frame() override {
    return "event: response.output_text.delta\n"
           "data: {\"type\":\"response.output_text.delta\",\"sequence_number\":\n\n";
  }

 private:
  /// One SSE pair: `event: TYPE` and `data: {"type":TYPE,"sequence_number":N,…}`, the members
  /// after these two written by `write_fields`.
  template <typename WriteFields>
  std::string frame(std::string_view type, const WriteFields& write_fields) {
    std::string out;
    out.reserve(type.size() * 2 + 256);
    out.append("event: ").append(type).append("\ndata: ");
    json_text::Writer w(out);
    w.begin_object().member("type", type).member("sequence_number", seq_++);
    write_fields(w);
    w.end_object();
    out.append("\n\n");
    return out;
  }

  /// One text event: a delta of the open message item, opening it (output_item.added,
  /// content_part.added) when none is: a run of text events is one message item with one
  /// output_text part, as the API streams a run of text. A call or a finish completes it
  /// (close_text); a fault ends the stream inside it, with no output_item.done, as a live overload
  /// does.
  std::string text_unit(const TextEvent& t) {
    std::string s;
    if (open_text_index_ < 0) {
      open_text_index_ = next_output_index_++;
      open_text_id_ = message_id(ctx_.journal_index, open_text_index_);
      open_text_.clear();
      s += frame("response.output_item.added", [&](json_text::Writer& w) {
        w.member("output_index", open_text_index_).key("item");
        write_message_item(w, open_text_id_, "in_progress", nullptr);
      });
      s += frame("response.content_part.added", [&](json_text::Writer& w) {
        w.member("item_id", open_text_id_).member("output_index", open_text_index_).member("content_index", 0).key("part");
        write_output_text_part(w, "");
      });
    }
    s += frame("response.output_text.delta", [&](json_text::Writer& w) {
      w.member("item_id", open_text_id_).member("output_index", open_text_index_).member("content_index", 0)
          .member("delta", t.text).key("logprobs").begin_array().end_array();
      write_obfuscation(w, ctx_, seq_ - 1, t.text);
    });
    open_text_ += t.text;
    return s;
  }

  /// One reasoning event: a whole `reasoning` output item, as the API streams one
  /// (openai-node responses.ts; the platform's "Streaming events" reference): output_item.added
  /// with an empty summary, the summary as one summary part (reasoning_summary_part.added,
  /// reasoning_summary_text.delta and .done, reasoning_summary_part.done; none when the text is
  /// empty), then output_item.done with the summary and `encrypted_content`, the signature the
  /// client must send back. It completes any open message item first.
  std::string reasoning_unit(const ReasoningEvent& r) {
    std::string s = close_text();
    const int oi = next_output_index_++;
    const std::string id = item_id_for_reasoning(ctx_.journal_index, reasoning_index_++);
    s += frame("response.output_item.added", [&](json_text::Writer& w) {
      w.member("output_index", oi).key("item");
      write_reasoning_item(w, id, nullptr);
    });
    if (!r.text.empty()) {
      auto summary_part = [&](json_text::Writer& w, std::string_view text) {
        w.key("part").begin_object().member("type", "summary_text").member("text", text).end_object();
      };
      s += frame("response.reasoning_summary_part.added", [&](json_text::Writer& w) {
        w.member("item_id", id).member("output_index", oi).member("summary_index", 0);
        summary_part(w, "");
      });
      s += frame("response.reasoning_summary_text.delta", [&](json_text::Writer& w) {
        w.member("item_id", id).member("output_index", oi).member("summary_index", 0).member("delta", r.text);
      });
      s += frame("response.reasoning_summary_text.done", [&](json_text::Writer& w) {
        w.member("item_id", id).member("output_index", oi).member("summary_index", 0).member("text", r.text);
      });
      s += frame("response.reasoning_summary_part.done", [&](json_text::Writer& w) {
        w.member("item_id", id).member("output_index", oi).member("summary_index", 0);
        summary_part(w, r.text);
      });
    }
    std::string item;
    {
      json_text::Writer w(item);
      write_reasoning_item(w, id, &r);
    }
    s += frame("response.output_item.done", [&](json_text::Writer& w) { w.member("output_index", oi).member_raw("item", item); });
    output_.push_back(std::move(item));
    return s;
  }

  /// The frames that complete the open message item with the run's whole text
  /// (output_text.done, content_part.done, output_item.done; their count in `*frames`), which
  /// joins the output; "" when no item is open.
  std::string close_text(int* frames = nullptr) {
    if (frames) *frames = 0;
    if (open_text_index_ < 0) return "";
    const int oi = open_text_index_;
    const std::string& id = open_text_id_;
    std::string s;
    s += frame("response.output_text.done", [&](json_text::Writer& w) {
      w.member("item_id", id).member("output_index", oi).member("content_index", 0).member("text", open_text_)
          .key("logprobs").begin_array().end_array();
    });
    s += frame("response.content_part.done", [&](json_text::Writer& w) {
      w.member("item_id", id).member("output_index", oi).member("content_index", 0).key("part");
      write_output_text_part(w, open_text_);
    });
    std::string item;
    {
      json_text::Writer w(item);
      write_message_item(w, id, "completed", &open_text_);
    }
    s += frame("response.output_item.done",
               [&](json_text::Writer& w) { w.member("output_index", oi).member_raw("item", item); });
    output_.push_back(std::move(item));
    open_text_index_ = -1;
    if (frames) *frames = 3;
    return s;
  }

  ResponseContext ctx_;
  int seq_ = 0;
  int next_output_index_ = 0;
  int reasoning_index_ = 0;      // position of the next reasoning event among the response's
  int open_text_index_ = -1;     // output_index of the message item a run of text keeps open, -1 for none
  std::string open_text_id_;     // its item id
  std::string open_text_;        // its text so far
  std::vector<std::string> output_;  // JSON texts of the items completed so far
  std::vector<int> last_call_unit_frames_;  // frames per unit of the call last encoded
};

// ---- Request decoding ---------------------------------------------------------------------------

Rejection reject(std::string message, bool pairing = false) {
  return Rejection{400, std::move(message), pairing};
}

std::string type_name(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_float: return "a decimal";
    default: return "an integer";
  }
}

std::string invalid_type(const std::string& param, std::string_view expected, const json& got) {
  return "Invalid type for '" + param + "': expected " + std::string(expected) + ", but got " +
         type_name(got) + " instead.";
}

/// `stream_options` (nullable) is an object whose `include_obfuscation` is a nullable boolean
/// (documented: platform.openai.com/docs/api-reference/responses/create); nullopt when it is.
std::optional<std::string> stream_options_problem(const json& body) {
  auto options = body.find("stream_options");
  if (options == body.end() || options->is_null()) return std::nullopt;
  if (!options->is_object()) return invalid_type("stream_options", "an object", *options);
  auto obfuscation = options->find("include_obfuscation");
  if (obfuscation != options->end() && !obfuscation->is_null() && !obfuscation->is_boolean()) {
    return invalid_type("stream_options.include_obfuscation", "a boolean", *obfuscation);
  }
  return std::nullopt;
}

/// `metadata` (nullable): "Set of 16 key-value pairs … Keys are strings with a maximum length of
/// 64 characters. Values are strings with a maximum length of 512 characters." (documented:
/// platform.openai.com/docs/api-reference/responses/create). A wrong type is answered like any
/// mistyped parameter, a long value with the API's `string_above_max_length` wording; the
/// too-many and long-key messages are written in the same style (NOT verified against a live
/// answer). nullopt when valid.
std::optional<std::string> metadata_problem(const json& body) {
  auto metadata = body.find("metadata");
  if (metadata == body.end() || metadata->is_null()) return std::nullopt;
  if (!metadata->is_object()) return invalid_type("metadata", "an object", *metadata);
  if (metadata->size() > 16) {
    return "Invalid 'metadata': too many properties. Expected an object with at most 16 properties, "
           "but got an object with " + std::to_string(metadata->size()) + " properties instead.";
  }
  for (const auto& [key, value] : metadata->items()) {
    if (const std::size_t n = code_points(key); n > 64) {
      return "Invalid 'metadata': key too long. Expected a key with maximum length 64, but got a key "
             "with length " + std::to_string(n) + " instead.";
    }
    if (!value.is_string()) return invalid_type("metadata." + key, "a string", value);
    if (const std::size_t n = code_points(value.get_ref<const std::string&>()); n > 512) {
      return "Invalid 'metadata." + key + "': string too long. Expected a string with maximum length "
             "512, but got a string with length " + std::to_string(n) + " instead.";
    }
  }
  return std::nullopt;
}

/// The `type`s an input item may have (openai-node ResponseInputItem; `message` may be left out
/// when the item has a `role`, `item_reference` when it has only an `id`). The API answers an
/// unknown or missing type "Invalid value: ''. Supported values are: 'apply_patch_call',
/// 'apply_patch_call_output', …, 'message', …, and 'web_search_call'." with `param: input[N]`
/// (langchain-ai/langchain#35702, lobehub/lobehub#14031: an item without `type` and `role` sent to a
/// strict Responses endpoint); the full list is the SDK's, sorted like the quoted one.
constexpr std::string_view kItemTypes[] = {
    "additional_tools", "apply_patch_call", "apply_patch_call_output", "code_interpreter_call",
    "compaction", "compaction_trigger", "computer_call", "computer_call_output", "custom_tool_call",
    "custom_tool_call_output", "file_search_call", "function_call", "function_call_output",
    "image_generation_call", "item_reference", "local_shell_call", "local_shell_call_output",
    "mcp_approval_request", "mcp_approval_response", "mcp_call", "mcp_list_tools", "message",
    "program", "program_output", "reasoning", "shell_call", "shell_call_output", "tool_search_call",
    "tool_search_output", "web_search_call"};

bool known_item_type(std::string_view type) {
  return std::find(std::begin(kItemTypes), std::end(kItemTypes), type) != std::end(kItemTypes);
}

std::string invalid_item_type(const std::string& type) {
  std::string list;
  const std::size_t n = std::size(kItemTypes);
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) list += i + 1 == n ? ", and " : ", ";
    list += "'" + std::string(kItemTypes[i]) + "'";
  }
  return "Invalid value: '" + type + "'. Supported values are: " + list + ".";
}

/// Checks a message item's `content` (at `at`.content): a string or an array of content parts, each
/// an object with a `type` (Chat Completions' verified answers for the same shapes, mirrored).
std::optional<std::string> content_problem(const json& content, const std::string& at) {
  if (content.is_string()) return std::nullopt;
  if (!content.is_array()) {
    return invalid_type(at + ".content", "one of a string or array of objects", content);
  }
  for (std::size_t k = 0; k < content.size(); ++k) {
    const json& part = content[k];
    const std::string p = at + ".content[" + std::to_string(k) + "]";
    if (!part.is_object()) return invalid_type(p, "an object", part);
    auto type = part.find("type");
    if (type == part.end() || type->is_null()) return "Missing required parameter: '" + p + ".type'.";
    if (!type->is_string()) return invalid_type(p + ".type", "a string", *type);
  }
  return std::nullopt;
}

std::string str(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

/// The text parts of a message's `content`: a string, or an array of parts with a `text`
/// (`input_text`, `output_text`); other parts (images, files, refusals) carry no text.
json text_parts(const json& content) {
  json parts = json::array();
  if (content.is_string()) {
    parts.push_back({{"text", content.get<std::string>()}});
  } else if (content.is_array()) {
    for (const json& p : content) {
      if (p.is_object() && p.contains("text") && p["text"].is_string()) {
        parts.push_back({{"text", p["text"].get<std::string>()}});
      }
    }
  }
  return parts;
}

/// Builds the neutral view: user messages are user contents; assistant messages and function
/// calls between them form one model content; consecutive function call outputs one user content.
class HistoryBuilder {
 public:
  void user(json parts) {
    flush();
    contents_.push_back(content("user", std::move(parts)));
  }
  void model_parts(json parts) {
    open(Group::kModel);
    for (json& p : parts) parts_.push_back(std::move(p));
  }
  void output(json part) {
    open(Group::kOutputs);
    parts_.push_back(std::move(part));
  }
  /// The index of the model content calls now go to (for duplicate checks).
  int model_group() const { return model_groups_; }
  json take() {
    flush();
    return std::move(contents_);
  }

 private:
  enum class Group { kNone, kModel, kOutputs };
  void open(Group g) {
    if (group_ == g) return;
    flush();
    group_ = g;
    if (g == Group::kModel) ++model_groups_;
  }
  /// {"role": role, "parts": parts}, the parts moved in, not copied.
  static json content(const char* role, json parts) {
    json c = json::object();
    c["parts"] = std::move(parts);
    c["role"] = role;
    return c;
  }
  void flush() {
    if (group_ == Group::kModel) contents_.push_back(content("model", std::move(parts_)));
    if (group_ == Group::kOutputs) contents_.push_back(content("user", std::move(parts_)));
    parts_ = json::array();
    group_ = Group::kNone;
  }
  json contents_ = json::array();
  json parts_ = json::array();
  Group group_ = Group::kNone;
  int model_groups_ = 0;
};

/// Two outputs for one call. The answer a strict Responses endpoint gives (quoted from it through
/// gateways in NousResearch/hermes-agent#102629 and mnfst/llm-gateway#2858; not confirmed to be
/// api.openai.com's own wording, and quoted there without a final period).
std::string duplicate_output_message(const std::string& call_id) {
  return "Duplicate function_call_output for call_id '" + call_id +
         "'. Each function_call must have exactly one matching function_call_output";
}

/// Decodes `input` (an array of items) into the neutral view and returns the first problem: a
/// malformed item, then call/output pairing in input order.
std::optional<Rejection> decode_items(const json& input, json& contents) {
  // Where each call id is answered, for "No tool output found" (an output must follow its call).
  std::map<std::string, std::vector<std::size_t>> output_at;
  for (std::size_t i = 0; i < input.size(); ++i) {
    const json& item = input[i];
    if (item.is_object() && str(item, "type") == "function_call_output") {
      output_at[str(item, "call_id")].push_back(i);
    }
  }
  HistoryBuilder history;
  std::optional<Rejection> problem;
  auto note = [&](Rejection r) {
    if (!problem) problem = std::move(r);
  };
  std::map<std::string, std::string> call_names;         // call_id → name of the latest call
  std::map<std::string, int> call_group;                  // call_id → model content it is in
  std::set<std::string> item_ids;                          // item `id`s seen
  std::set<std::string> answered;  // call_ids whose latest call already has an output
  for (std::size_t i = 0; i < input.size(); ++i) {
    const json& item = input[i];
    const std::string at = "input[" + std::to_string(i) + "]";
    if (!item.is_object()) {
      note(reject("Invalid type for '" + at + "': expected an input item, but got " +
                  type_name(item) + " instead."));
      continue;
    }
    if (auto id = item.find("id"); id != item.end() && id->is_string()) {
      if (!item_ids.insert(id->get<std::string>()).second) {
        note(reject("Duplicate item found with id " + id->get<std::string>() +
                        ". Remove duplicate items from your input and try again.",
                    true));
      }
    }
    auto type_j = item.find("type");
    if (type_j != item.end() && !type_j->is_null() && !type_j->is_string()) {
      note(reject(invalid_type(at + ".type", "a string", *type_j)));
      continue;
    }
    std::string type = str(item, "type");
    if (type.empty() && (type_j == item.end() || type_j->is_null())) {
      // An item without a type is a message when it has a role, an item reference when it has
      // only an id.
      if (item.contains("role")) {
        type = "message";
      } else if (item.contains("id") && item.size() == 1) {
        type = "item_reference";
      }
    }
    if (!known_item_type(type)) {
      note(reject(invalid_item_type(type)));
      continue;
    }
    if (type == "message") {
      const std::string role = str(item, "role");
      if (!item.contains("content") || item["content"].is_null()) {
        note(reject("Missing required parameter: '" + at + ".content'."));
        continue;
      }
      if (auto p = content_problem(item["content"], at)) {
        note(reject(*p));
        continue;
      }
      if (role == "user") {
        history.user(text_parts(item["content"]));
      } else if (role == "assistant") {
        history.model_parts(text_parts(item["content"]));
      } else if (role != "system" && role != "developer") {
        note(reject("Invalid value: '" + role +
                    "'. Supported values are: 'assistant', 'system', 'developer', and 'user'."));
      }
    } else if (type == "function_call") {
      for (const char* key : {"call_id", "name", "arguments"}) {
        if (!item.contains(key)) note(reject("Missing required parameter: '" + at + "." + key + "'."));
      }
      const std::string call_id = str(item, "call_id");
      const std::string name = str(item, "name");
      json call = {{"name", name}, {"args", json::object()}, {"id", call_id}};
      if (auto a = item.find("arguments"); a != item.end() && a->is_string()) {
        json parsed = parse_json(a->get_ref<const std::string&>());
        call["args"] = parsed.is_discarded() ? *a : std::move(parsed);
      }
      history.model_parts(json::array({{{"functionCall", std::move(call)}}}));
      const int group = history.model_group();
      if (auto g = call_group.find(call_id); g != call_group.end() && g->second == group) {
        note(reject("Duplicate item found with id " + call_id +
                        ". Remove duplicate items from your input and try again.",
                    true));
      }
      call_group[call_id] = group;
      call_names[call_id] = name;
      answered.erase(call_id);
      const auto& outs = output_at[call_id];
      if (std::none_of(outs.begin(), outs.end(), [&](std::size_t o) { return o > i; })) {
        note(reject("No tool output found for function call " + call_id + ".", true));
      }
    } else if (type == "function_call_output") {
      for (const char* key : {"call_id", "output"}) {
        if (!item.contains(key)) note(reject("Missing required parameter: '" + at + "." + key + "'."));
      }
      const std::string call_id = str(item, "call_id");
      auto name = call_names.find(call_id);
      if (name == call_names.end()) {
        note(reject("No tool call found for function call output with call_id " + call_id + ".", true));
      } else if (!answered.insert(call_id).second) {
        note(reject(duplicate_output_message(call_id), true));
      }
      // The output as the other formats' neutral views give it: a string holding a JSON object
      // is that object (the reference runtime sends `response.dump()`), anything else as it is.
      json response = item.contains("output") ? item["output"] : json();
      if (response.is_string()) {
        json parsed = parse_json(response.get_ref<const std::string&>());
        if (parsed.is_object()) response = std::move(parsed);
      }
      history.output({{"functionResponse",
                       {{"name", name == call_names.end() ? std::string() : name->second},
                        {"id", call_id},
                        {"response", std::move(response)}}}});
    }
    // Other items (reasoning, item_reference, built-in tool calls) carry no turn structure here:
    // reasoning is checked on the request itself (check_reasoning_items).
  }
  contents = history.take();
  return problem;
}

// ---- Reasoning ----------------------------------------------------------------------------------

/// "gAAA...DQ==": how the API names encrypted content in its 400, by its first and last four
/// characters (openai/codex#8145, #8132, #8126). Characters, not bytes: a client's text is UTF-8,
/// and the error body must stay valid UTF-8.
std::string abbreviated(const std::string& content) {
  std::vector<std::size_t> starts;  // where each character begins
  for (std::size_t i = 0; i < content.size(); ++i) {
    if ((static_cast<unsigned char>(content[i]) & 0xC0) != 0x80) starts.push_back(i);
  }
  if (starts.size() <= 8) return content;
  return content.substr(0, starts[4]) + "..." + content.substr(starts[starts.size() - 4]);
}

/// The Responses API's reasoning rules (WireFormat::check_reasoning): a function_call item the
/// server delivered after a reasoning item is sent back after that reasoning item, in its model
/// content, with its encrypted_content unchanged; a reasoning item the server delivered is followed
/// by an item of the answer (a message or a function_call), never left last; reasoning items in a
/// row, as delivered, count as followed by the item after the last of them.
std::optional<Rejection> check_reasoning_items(std::string_view body, const std::vector<ReasoningCheck>& checks) {
  const json parsed = parse_json(body);
  if (!parsed.is_object() || !parsed.contains("input") || !parsed["input"].is_array()) return std::nullopt;
  const json& input = parsed["input"];
  // Each item's model content in the neutral view, as decode_items groups items (-1: none), and a
  // function_call's position among its content's calls.
  std::vector<int> content_of(input.size(), -1);
  std::vector<int> position_of(input.size(), -1);
  enum class Group { kNone, kModel, kOutputs };
  Group group = Group::kNone;
  int content = -1;
  int calls = 0;
  std::vector<std::size_t> waiting;  // reasoning items not yet in a model content
  auto open = [&](Group g) {
    if (group != g) {
      group = g;
      ++content;
      calls = 0;
    }
    // A reasoning item belongs to the model content of the assistant item after it.
    for (std::size_t k : waiting) content_of[k] = g == Group::kModel ? content : -1;
    waiting.clear();
  };
  for (std::size_t i = 0; i < input.size(); ++i) {
    const json& item = input[i];
    if (!item.is_object()) continue;
    std::string type = str(item, "type");
    if (type.empty() && item.contains("role")) type = "message";
    if (type == "message") {
      const std::string role = str(item, "role");
      if (role == "user") {
        group = Group::kNone;
        ++content;
        waiting.clear();
      } else if (role == "assistant") {
        open(Group::kModel);
        content_of[i] = content;
      }
    } else if (type == "function_call") {
      open(Group::kModel);
      content_of[i] = content;
      position_of[i] = calls++;
    } else if (type == "reasoning") {
      // Reasoning opens no content of its own (decode_items leaves it out); it joins the model
      // content of the assistant item it precedes.
      if (group == Group::kModel) content_of[i] = content;
      else waiting.push_back(i);
    } else if (type == "function_call_output") {
      open(Group::kOutputs);
    }
  }
  auto reasoning_item = [&](std::size_t before, int in_content, const std::string& id) -> const json* {
    for (std::size_t k = 0; k < before; ++k) {
      if (content_of[k] == in_content && str(input[k], "type") == "reasoning" && str(input[k], "id") == id) return &input[k];
    }
    return nullptr;
  };
  std::set<std::string> delivered_ids;
  for (const ReasoningCheck& check : checks) {
    for (const auto& [journal_index, r] : check.delivered) delivered_ids.insert(item_id_for_reasoning(journal_index, r.reasoning_index));
    for (const ReasoningCheck::Call& call : check.calls) {
      std::size_t at = input.size();
      for (std::size_t i = 0; i < input.size(); ++i) {
        if (content_of[i] == check.content && position_of[i] == call.position) at = i;
      }
      if (at == input.size() || call.deliveries.empty()) continue;
      std::optional<Rejection> problem;
      bool satisfied = false;
      for (const ReasoningCheck::Delivery& d : call.deliveries) {
        const DeliveredReasoning& r = d.reasoning.back();
        const std::string rs = item_id_for_reasoning(d.journal_index, r.reasoning_index);
        const json* found = reasoning_item(at, check.content, rs);
        if (found != nullptr) {
          const auto ec = found->find("encrypted_content");
          if (ec == found->end() || ec->is_null() || (ec->is_string() && ec->get<std::string>() == r.signature)) {
            satisfied = true;
            break;
          }
          problem = reject("The encrypted content " + abbreviated(ec->is_string() ? ec->get<std::string>() : ec->dump()) +
                               " could not be verified.",
                           true);
        } else if (!problem) {
          const std::string fc = str(input[at], "id");
          problem = reject("Item '" + (fc.empty() ? item_id_for_call(d.journal_index, d.call_index) : fc) +
                               "' of type 'function_call' was provided without its required 'reasoning' item: '" + rs + "'.",
                           true);
        }
      }
      if (!satisfied && problem) return problem;
    }
  }
  for (std::size_t i = 0; i < input.size(); ++i) {
    if (!input[i].is_object() || str(input[i], "type") != "reasoning" || !delivered_ids.contains(str(input[i], "id"))) continue;
    // Reasoning items in a row (as this server delivers consecutive reasoning events, e.g. an
    // Anthropic scenario's thinking then redacted_thinking played as Responses) are sent back as
    // delivered: the run of them is followed by the item it led to.
    std::size_t next = i + 1;
    while (next < input.size() && input[next].is_object() && str(input[next], "type") == "reasoning") ++next;
    const bool followed = next < input.size() && content_of[i] >= 0 && content_of[next] == content_of[i];
    if (!followed) {
      return reject("Item '" + str(input[i], "id") + "' of type 'reasoning' was provided without its required following item.",
                    true);
    }
  }
  return std::nullopt;
}

// ---- Errors -------------------------------------------------------------------------------------

/// `type` and `code` of the error envelope for `status` (OpenAI's error-codes guide).
std::pair<std::string_view, std::string_view> error_kind(int status) {
  switch (status) {
    case 401: return {"invalid_request_error", "invalid_api_key"};
    case 403: return {"invalid_request_error", "unsupported_country_region_territory"};
    case 404: return {"invalid_request_error", "model_not_found"};
    case 429: return {"requests", "rate_limit_exceeded"};
    case 503:
    case 529: return {"service_unavailable_error", "server_is_overloaded"};
    default: return {status >= 500 ? "server_error" : "invalid_request_error", ""};
  }
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

/// The `param` of a 400 this format produced: `input` for pairing, the quoted parameter of a
/// missing or mistyped one; null otherwise.
ojson param_for(std::string_view message) {
  if (starts_with(message, "Previous response with id ")) return "previous_response_id";
  if (starts_with(message, "No tool ") || starts_with(message, "Duplicate item ") ||
      starts_with(message, "Duplicate function_call_output ") || starts_with(message, "Item '")) {
    return "input";
  }
  for (std::string_view prefix : {"Missing required parameter: '", "Invalid type for '", "Invalid '"}) {
    if (starts_with(message, prefix)) {
      const std::string_view rest = message.substr(prefix.size());
      return std::string(rest.substr(0, rest.find('\'')));
    }
  }
  return nullptr;
}

ojson code_for_400(std::string_view message) {
  if (starts_with(message, "Previous response with id ")) return "previous_response_not_found";
  if (starts_with(message, "Missing required parameter")) return "missing_required_parameter";
  if (starts_with(message, "The encrypted content ")) return "invalid_encrypted_content";
  if (starts_with(message, "Invalid type for")) return "invalid_type";
  if (starts_with(message, "Invalid value")) return "invalid_value";
  if (starts_with(message, "Invalid '") && message.find("': string too long.") != std::string_view::npos) {
    return "string_above_max_length";
  }
  if (starts_with(message, "Invalid '") && message.find("empty array") != std::string_view::npos) {
    return "empty_array";
  }
  return nullptr;
}

class Format final : public WireFormat {
 public:
  std::string_view name() const override { return "openai-responses"; }
  std::vector<std::string> paths() const override { return {"POST /v1/responses"}; }
  bool matches(std::string_view path) const override { return path == "/v1/responses"; }

  DecodedRequest decode_request(std::string_view, std::string_view body) const override {
    DecodedRequest out;
    json j = parse_json(body);
    if (j.is_discarded()) {
      out.rejection = reject(std::string(kBadJsonMessage));
      return out;
    }
    if (!j.is_object()) {
      out.rejection = reject("Invalid type for 'body': expected an object, but got " + type_name(j) +
                             " instead.");
      return out;
    }
    out.model = str(j, "model");
    out.streaming = j.value("stream", json(false)) == json(true);
    if (auto options = j.find("stream_options"); options != j.end() && options->is_object()) {
      auto obfuscation = options->find("include_obfuscation");
      out.include_obfuscation = obfuscation == options->end() || !obfuscation->is_boolean() || obfuscation->get<bool>();
    }
    // Echoed in the response object, as live.
    if (auto metadata = j.find("metadata"); metadata != j.end() && metadata->is_object()) {
      out.metadata = metadata->dump(-1, ' ', false, json::error_handler_t::replace);
    }
    // Problems of the top-level parameters come before those of the input items; the first is
    // answered. `model` is required and its absence is answered like any missing parameter
    // (Chat Completions words it "you must provide a model parameter").
    std::optional<Rejection> top;
    auto note = [&](Rejection r) {
      if (!top) top = std::move(r);
    };
    if (auto model = j.find("model"); model == j.end() || model->is_null()) {
      note(reject("Missing required parameter: 'model'."));
    } else if (!model->is_string()) {
      note(reject(invalid_type("model", "a string", *model)));
    }
    if (auto stream = j.find("stream"); stream != j.end() && !stream->is_null() && !stream->is_boolean()) {
      note(reject(invalid_type("stream", "a boolean", *stream)));
    }
    if (auto store = j.find("store"); store != j.end() && !store->is_null() && !store->is_boolean()) {
      note(reject(invalid_type("store", "a boolean", *store)));
    }
    if (auto problem = stream_options_problem(j)) note(reject(std::move(*problem)));
    if (auto problem = metadata_problem(j)) note(reject(std::move(*problem)));
    auto input = j.find("input");
    if (input == j.end() || input->is_null()) {
      note(reject("Missing required parameter: 'input'."));
      out.rejection = std::move(top);
      return out;
    }
    if (input->is_string()) {
      out.contents = json::array({{{"role", "user"}, {"parts", json::array({{{"text", *input}}})}}});
      out.rejection = std::move(top);
      return out;
    }
    if (!input->is_array()) {
      note(reject("Invalid type for 'input': expected one of a string or an array of input items, but "
                  "got " + type_name(*input) + " instead."));
      out.rejection = std::move(top);
      return out;
    }
    if (input->empty()) {
      // Mirrors Chat Completions' answer to an empty `messages` (not verified for `input`).
      note(reject("Invalid 'input': empty array. Expected an array with minimum length 1, but got an "
                  "empty array instead."));
    }
    auto items = decode_items(*input, out.contents);
    out.rejection = top ? std::move(top) : std::move(items);
    return out;
  }

  void add_answer_headers(std::size_t journal_index, int status,
                          std::vector<std::pair<std::string, std::string>>& headers) const override {
    openai_chat::add_answer_headers(journal_index, status, headers);
  }

  std::string default_message(int status) const override {
    switch (status) {
      case 400: return "Invalid request.";
      case 401:
        return "Incorrect API key provided: hiccup. You can find your API key at "
               "https://platform.openai.com/account/api-keys.";
      case 403: return "Country, region, or territory not supported";
      case 404: return "The model does not exist or you do not have access to it.";
      case 429: return "Rate limit reached for requests. Please try again later.";
      case 500: return "The server had an error while processing your request. Sorry about that!";
      case 502: return "Bad gateway.";
      case 503:
      case 529: return "The engine is currently overloaded, please try again later.";
      case 504: return "Gateway timeout.";
      default:
        return status >= 500 ? "The server had an error while processing your request."
                             : "Invalid request.";
    }
  }

  ErrorAnswer error_answer(int status, std::string_view message,
                           std::optional<double> retry_after_s) const override {
    const auto [type, code] = error_kind(status);
    ojson e = ojson::object();
    e["message"] = std::string(message);
    e["type"] = std::string(type);
    e["param"] = status == 400 ? param_for(message) : ojson(nullptr);
    e["code"] = !code.empty() ? ojson(std::string(code))
                              : status == 400 ? code_for_400(message) : ojson(nullptr);
    ErrorAnswer answer{ojson{{"error", std::move(e)}}.dump(), {}};
    if (retry_after_s) answer.headers = openai_chat::retry_after_headers(*retry_after_s);
    return answer;
  }

  ErrorAnswer quota_answer(Quota quota, std::string_view model, std::optional<double> retry_after_s) const override {
    return error_answer(429, openai_chat::rate_limit_message(quota, model, retry_after_s), retry_after_s);
  }

  /// Streams as the API sends them: `text/event-stream; charset=utf-8` (recorded live: the Responses
  /// recordings of docs/WIRE-FORMATS.md "Checked against recordings"); JSON answers stay
  /// `application/json`, as recorded.
  std::string_view stream_content_type() const override { return "text/event-stream; charset=utf-8"; }

  std::string call_id(std::size_t journal_index, int call_index) const override {
    return "call_hiccup_" + std::to_string(journal_index) + "_" + std::to_string(call_index);
  }

  std::unique_ptr<StreamEncoder> stream_encoder(const ResponseContext& ctx) const override {
    return std::make_unique<Encoder>(ctx);
  }

  std::optional<Rejection> check_reasoning(std::string_view body,
                                           const std::vector<ReasoningCheck>& checks) const override {
    return check_reasoning_items(body, checks);
  }

  std::string unary_body(const std::vector<Event>& events, const ResponseContext& ctx) const override {
    std::vector<std::string> output;
    std::optional<FinishReason> finish;
    int call_index = 0;
    int reasoning_index = 0;
    // One message item per run of text, as the streamed answer has.
    std::optional<std::string> run;
    auto end_run = [&] {
      if (!run) return;
      output.push_back(*completed_item(TextEvent{std::move(*run)}, ctx.journal_index, static_cast<int>(output.size()), 0));
      run.reset();
    };
    for (const Event& e : events) {
      if (auto* f = std::get_if<FinishEvent>(&e)) {
        finish = f->reason;
        break;
      }
      if (auto* t = std::get_if<TextEvent>(&e)) {
        if (!run) run.emplace();
        *run += t->text;
        continue;
      }
      end_run();
      if (auto* r = std::get_if<ReasoningEvent>(&e)) {
        std::string item;
        {
          json_text::Writer w(item);
          write_reasoning_item(w, item_id_for_reasoning(ctx.journal_index, reasoning_index++), r);
        }
        output.push_back(std::move(item));
        continue;
      }
      if (auto item = completed_item(e, ctx.journal_index, static_cast<int>(output.size()), call_index)) {
        output.push_back(std::move(*item));
      }
      ++call_index;
    }
    end_run();
    if (!finish) {
      // No finish was scripted: the response never got past in_progress.
      return response_text(ctx, "in_progress", output);
    }
    const Ending end = ending_for(*finish);
    // A content filter withholds the answer: `incomplete` with reason content_filter and no output.
    if (*finish == FinishReason::kContentFilter) output.clear();
    return response_text(ctx, end.status, output, end.error, end.incomplete_details);
  }

  bool filtered_answer_keeps_parts() const override { return false; }

  bool stores_responses() const override { return true; }

  Continuation continue_stored(std::string_view body, const StoredLookup& lookup) const override {
    // Most requests name no stored response: found without parsing (a key may also be written
    // with \u escapes: such a body is parsed).
    if (body.find("\"previous_response_id\"") == std::string_view::npos && body.find("\\u") == std::string_view::npos) {
      return {};
    }
    json j = parse_json(body);
    if (!j.is_object()) return {};  // decode_request answers it
    const auto prev = j.find("previous_response_id");
    if (prev == j.end() || prev->is_null()) return {};
    Continuation c;
    if (!prev->is_string()) {
      c.rejection = reject(invalid_type("previous_response_id", "a string", *prev));
      return c;
    }
    const json own = j.contains("input") ? j["input"] : json();
    if (std::optional<Rejection> r = continuation_input_problem(own)) {
      c.rejection = std::move(r);
      return c;
    }
    const std::string id = prev->get<std::string>();
    const std::optional<std::string> stored = lookup(stored_key(id));
    std::optional<json> input = stored ? continued_input(*stored, own) : std::nullopt;
    if (!input) {
      c.rejection = reject(not_found_message(id));
      c.lost = true;
      return c;
    }
    j.erase("previous_response_id");
    j["input"] = std::move(*input);
    c.body = j.dump(-1, ' ', false, json::error_handler_t::replace);
    return c;
  }

  std::optional<std::pair<std::string, std::string>> stored_answer(std::string_view body, bool streaming,
                                                                   std::string_view answer) const override {
    // `store` defaults to true; only a literal false keeps nothing (a key written with \u
    // escapes is found by parsing).
    if (body.find("\"store\"") != std::string_view::npos || body.find("\\u") != std::string_view::npos) {
      // Only `store` is read: the input items and tool declarations are checked, not built.
      const json j = parse_json(body, {"input", "tools", "instructions", "metadata"});
      if (j.is_object() && j.value("store", json(true)) == json(false)) return std::nullopt;
    }
    std::string payload;
    if (streaming) {
      // The response.completed frame's data line (memmem and memchr: a string_view's find
      // compares at every position, which cost 10 % of a WebSocket answer's CPU).
      static constexpr std::string_view kFrame = "event: response.completed\ndata: ";
      const void* at = memmem(answer.data(), answer.size(), kFrame.data(), kFrame.size());
      if (at == nullptr) return std::nullopt;
      const std::size_t from = static_cast<std::size_t>(static_cast<const char*>(at) - answer.data()) + kFrame.size();
      const void* nl = std::memchr(answer.data() + from, '\n', answer.size() - from);
      if (nl == nullptr) return std::nullopt;
      payload.assign(answer.substr(from, static_cast<std::size_t>(static_cast<const char*>(nl) - answer.data()) - from));
    } else {
      const json r = parse_json(answer);
      if (!r.is_object() || r.value("status", json()) != json("completed")) return std::nullopt;
      payload.append("{\"response\":").append(answer).append("}");
    }
    const std::optional<std::string_view> id = payload_response_id(payload);
    if (!id) return std::nullopt;
    std::string key = stored_key(*id);
    return std::make_pair(std::move(key), stored_value(body, payload));
  }

  std::optional<std::string> status_note(int status) const override {
    // OpenAI's API error codes (platform.openai.com/docs/guides/error-codes: 401, 403, 429, 500,
    // 503) plus what its endpoints answer in practice and its SDKs classify: 400 invalid request,
    // 404 unknown model, 409 conflict, 422 unprocessable, 502/504 from its edge. No 529: that is
    // Anthropic's overloaded_error (WIRE-FORMATS.md); OpenAI's overload is a 503.
    static const StatusTable table{"openai-responses", {400, 401, 403, 404, 409, 422, 429, 500, 502, 503, 504},
                                   "503 (\"That model is currently overloaded with other requests.\")"};
    return table.note(status);
  }
};

}  // namespace

const WireFormat& format() {
  static const Format instance;
  return instance;
}

std::string stored_key(std::string_view id) { return "responses.stored:" + std::string(id); }

std::optional<std::string_view> payload_response_id(std::string_view payload) {
  static constexpr std::string_view kId = "\"response\":{\"id\":\"";
  const void* id = memmem(payload.data(), payload.size(), kId.data(), kId.size());
  if (id == nullptr) return std::nullopt;
  const std::size_t at = static_cast<std::size_t>(static_cast<const char*>(id) - payload.data()) + kId.size();
  const std::size_t end = payload.find('"', at);
  if (end == std::string_view::npos) return std::nullopt;
  return payload.substr(at, end - at);
}

std::optional<Rejection> continuation_input_problem(const json& input) {
  if (!input.is_null() && !input.is_string() && !input.is_array()) {
    return reject("Invalid type for 'input': expected one of a string or an array of input items, but got " +
                  type_name(input) + " instead.");
  }
  if (input.is_array()) {
    json scratch = json::array();
    if (std::optional<Rejection> r = decode_items(input, scratch); r && !r->pairing) return r;
  }
  return std::nullopt;
}

std::string stored_value(std::string_view request_body, std::string_view payload) {
  // The request's length first: its JSON text may hold newlines.
  std::string value = std::to_string(request_body.size());
  value.append("\n").append(request_body).append(payload);
  return value;
}

std::optional<json> continued_input(std::string_view stored, const json& input) {
  auto items = [](const json& in) {
    if (in.is_array()) return in;
    if (in.is_string()) {
      return json::array({{{"type", "message"}, {"role", "user"},
                           {"content", json::array({{{"type", "input_text"}, {"text", in}}})}}});
    }
    return json::array();
  };
  const std::size_t nl = stored.find('\n');
  if (nl == std::string_view::npos || nl == 0 || nl > 19) return std::nullopt;
  std::size_t length = 0;
  for (const char c : stored.substr(0, nl)) {
    if (c < '0' || c > '9') return std::nullopt;
    length = length * 10 + static_cast<std::size_t>(c - '0');
  }
  if (length > stored.size() - nl - 1) return std::nullopt;
  const json request = parse_json(stored.substr(nl + 1, length));
  const json payload = parse_json(stored.substr(nl + 1 + length));
  if (!request.is_object() || !payload.is_object()) return std::nullopt;
  const auto response = payload.find("response");
  if (response == payload.end() || !response->is_object()) return std::nullopt;
  json full = items(request.contains("input") ? request["input"] : json());
  if (const auto output = response->find("output"); output != response->end() && output->is_array()) {
    for (const json& item : *output) full.push_back(item);
  }
  for (const json& item : items(input)) full.push_back(item);
  return full;
}

std::string not_found_message(std::string_view id) {
  // An id is echoed whole up to 256 bytes, as ids are (a 2 MB id is not sent back 2 MB long).
  constexpr std::size_t kMax = 256;
  if (id.size() <= kMax) return "Previous response with id '" + std::string(id) + "' not found.";
  std::size_t cut = kMax;
  while (cut > 0 && (static_cast<unsigned char>(id[cut]) & 0xC0) == 0x80) --cut;  // a whole character
  return "Previous response with id '" + std::string(id.substr(0, cut)) + "…' not found.";
}

}  // namespace mock::openai_responses
