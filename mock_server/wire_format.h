// The wire-format interface of the mock server: one implementation per provider (gemini,
// openai-chat, openai-responses, anthropic). A format decodes a request into the neutral history
// view the script engine matches on, validates it with the provider's exact 400 messages, and
// encodes the script's events, errors and non-streaming answers the provider's way. The script
// engine and the journal know only this interface (WIRE-FORMATS.md has the facts per provider).
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "mock_server/journal.h"
#include "mock_server/script.h"

namespace mock {

/// Why a request is rejected before any script is played: the HTTP status (400) and the exact
/// message the provider sends; `pairing` marks call/response pairing rejections (journaled as
/// "rejected"; other rejections are "bad-request").
struct Rejection {
  int status = 400;
  std::string message;
  bool pairing = false;
  bool operator==(const Rejection&) const = default;
};

/// A request decoded into the neutral history view ("contents") every format decodes into:
/// `[{"role":"user"|"model","parts":[PART…]}, …]` where PART is one of
///   `{"text":"…"}`,
///   `{"functionCall":{"name":"…","args":{…},"id"?:"…"}}` (args parsed from the provider's JSON
///   string where it sends one; a string that does not parse is kept as a JSON string),
///   `{"functionResponse":{"name":"…","id"?:"…"}}` (name looked up from the call when the
///   provider sends only the id; "" when no call has that id).
/// The tool results that follow one assistant message (one Anthropic user message, consecutive
/// Chat `tool` messages, consecutive Responses `function_call_output` items) form one user content;
/// system/developer instructions are left out. Gemini's own `contents` already have this shape.
/// The turn index of a request is the number of `"model"` contents.
struct DecodedRequest {
  std::string model;           ///< from the path (Gemini) or the body's `model`; "" when absent
  bool streaming = false;      ///< streamGenerateContent, or `"stream": true` in the body
  /// The request asked for a usage report at the end of the stream (Chat Completions
  /// `stream_options.include_usage`).
  bool include_usage = false;
  /// The stream's deltas carry `obfuscation` padding (both OpenAI formats, on unless the request
  /// says `stream_options.include_obfuscation: false`, as the API documents it:
  /// platform.openai.com/docs/api-reference/chat/create, `stream_options`).
  bool include_obfuscation = true;
  /// The request's `metadata` object as compact JSON text (Responses echoes it in the response
  /// object); "" when it sent none.
  std::string metadata;
  /// The neutral history view; null when the body is not decodable at all.
  nlohmann::json contents = nlohmann::json();
  /// Set when the provider would answer 400; `contents` then holds what could be decoded.
  std::optional<Rejection> rejection;
};

/// A function call found in a neutral history view.
struct HistoryCall {
  std::string name;
  std::string id;  ///< "" when absent
  nlohmann::json args = nlohmann::json::object();
};
/// A function response found in a neutral history view.
struct HistoryResponse {
  std::string name;
  std::string id;  ///< "" when absent
};
/// One content of a neutral history view reduced to what matching and pairing need. A missing
/// role counts as user.
struct HistoryContent {
  std::string role;
  std::vector<HistoryCall> calls;
  std::vector<HistoryResponse> responses;
};

/// Summaries of a neutral `contents` array (non-object entries and parts are skipped).
std::vector<HistoryContent> summarize_history(const nlohmann::json& contents);

/// The turn index of a neutral history view: the number of `"model"` contents. A history that ends
/// in the model's own content (a client that keeps a cut turn and asks for more of it) is the next
/// turn: the black-box judge reads such a request as keeping the cut turn (the `continue` design),
/// and codex's content-filter row relies on it (stop 48 tried counting it as the same turn, and
/// codex's matrix changed). The script engine first splits a later history's model content that
/// joins such a kept content with the next answer (ScriptEngine::split_kept_ends).
int turn_index(const nlohmann::json& contents);

/// An HTTP error answer: the body in the provider's error envelope and extra response headers
/// (e.g. `retry-after`, `retry-after-ms`, `x-should-retry`).
struct ErrorAnswer {
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

/// Per-response values: the requested model and the journal index ids derive from.
struct ResponseContext {
  std::string model;
  std::size_t journal_index = 0;
  bool include_usage = false;  ///< DecodedRequest::include_usage
  /// DecodedRequest::include_obfuscation; off in a context made without a request (encoder tests).
  bool include_obfuscation = false;
  std::string metadata;  ///< DecodedRequest::metadata ("" for none: an empty object)
};

/// Encodes one streamed response, event by event. Stateful: providers number content blocks,
/// output items, tool-call indexes and sequence numbers across a response.
class StreamEncoder {
 public:
  virtual ~StreamEncoder() = default;

  /// Bytes sent before the first event (Anthropic `message_start`, Responses `response.created`
  /// and `response.in_progress`, …); "" when the format sends none (Gemini).
  virtual std::string open() = 0;

  /// The SSE bytes of one event, in units the engine may stop between. A text or finish event is
  /// one unit (which may hold several SSE frames). A call event (its `id` already resolved by the
  /// engine) is `2 + F` units: [start, fragment 1 … fragment F, done], where F is the number of
  /// argument fragments this format streams (`call.fragments`, at least 1, for formats that stream
  /// arguments; 0 for Gemini, whose call travels whole in its `done` unit). `start` or `done` may
  /// be "" when the format has no such frame (Chat Completions has no per-call done frame).
  /// `call_index` = the call's position among the attempt's calls.
  virtual std::vector<std::string> event_units(const Event& event, int call_index) = 0;

  /// The engine sends only the first `units_sent` units of the call last encoded and then ends the
  /// stream (a stream-ending fault with `after_fragment`): forget what the withheld units counted
  /// (sequence numbers, completed items) so a later error_event numbers and reports only what
  /// went out. Default: nothing to forget.
  virtual void withhold_last_units(std::size_t units_sent) { (void)units_sent; }

  /// The provider's in-stream error for an HTTP-like `status` (e.g. 503, 529), written as its own
  /// chunk after which the response ends cleanly.
  virtual std::string error_event(int status) = 0;

  /// One undecodable frame with valid SSE framing (the JSON does not parse).
  virtual std::string malformed_frame() = 0;
};

/// What the server must find again in a request whose history holds a model content of a turn
/// for which it delivered reasoning (ScriptEngine builds these from its journal; each format
/// checks them against the request in its own shape, WireFormat::check_reasoning).
struct ReasoningCheck {
  /// One delivery of a call: the request that delivered it, its position among that attempt's
  /// calls, and the reasoning delivered right before it (mock::DeliveredReasoning::before_call).
  struct Delivery {
    std::size_t journal_index = 0;
    int call_index = 0;
    std::vector<DeliveredReasoning> reasoning;
  };
  /// A call of the model content the server delivered after reasoning: its position among the
  /// content's calls, its name, and each attempt of the turn that delivered it so (a call that
  /// some attempt delivered without reasoning needs none and is not listed).
  struct Call {
    int position = 0;
    std::string name;
    std::vector<Delivery> deliveries;
  };
  /// Index of the model content in the neutral view; -1 for the one check that lists every
  /// reasoning event delivered in the run (no content of its own, no calls).
  int content = 0;
  /// Every reasoning event any attempt of its turn delivered, with the request that delivered it.
  std::vector<std::pair<std::size_t, DeliveredReasoning>> delivered;
  std::vector<Call> calls;
};

/// One provider's wire format. Implementations are stateless and thread-safe.
class WireFormat {
 public:
  virtual ~WireFormat() = default;

  /// "gemini", "openai-chat", "openai-responses" or "anthropic" (the scenario's `provider`).
  virtual std::string_view name() const = 0;

  /// Request targets served, for `hiccup serve --help` (e.g. "POST /v1/messages[?beta=true]").
  virtual std::vector<std::string> paths() const = 0;

  /// Whether a POST to `path` (no query) is one of this format's model endpoints.
  virtual bool matches(std::string_view path) const = 0;

  /// Decodes and validates a request to `target` (path and query) with `body`: JSON shape, then
  /// call/response pairing with the provider's exact 400 messages (WIRE-FORMATS.md). Never throws.
  virtual DecodedRequest decode_request(std::string_view target, std::string_view body) const = 0;

  /// What a provider usually says with `status` (e.g. Gemini 503 "The model is overloaded. …").
  virtual std::string default_message(int status) const = 0;

  /// An HTTP error answer for `status` with `message`; `retry_after_s` is conveyed the provider's
  /// way (Gemini: RetryInfo in the body; OpenAI: `retry-after` and `retry-after-ms` headers;
  /// Anthropic: `retry-after` header).
  virtual ErrorAnswer error_answer(int status, std::string_view message,
                                   std::optional<double> retry_after_s) const = 0;

  /// The 429 answer for a request quota that ran out (Attempt::quota), for `model` (the
  /// request's, "" when it named none), with `retry_after_s` conveyed as error_answer does. By
  /// default error_answer(429, default_message(429), retry_after_s): the provider says nothing of
  /// which quota. Gemini names it in a `QuotaFailure` detail, OpenAI in its message (RPM/RPD).
  virtual ErrorAnswer quota_answer(Quota quota, std::string_view model, std::optional<double> retry_after_s) const {
    (void)quota;
    (void)model;
    return error_answer(429, default_message(429), retry_after_s);
  }

  /// Headers the provider sends with every answer of its model endpoint, success or error, appended
  /// to `headers` for the request journaled as `journal_index`, answered with `status`: the request
  /// id and the rate-limit state clients read (OpenAI `x-request-id` and `x-ratelimit-*`, Anthropic
  /// `request-id`, `anthropic-organization-id` and `anthropic-ratelimit-*`; WIRE-FORMATS.md
  /// "Response headers"). Deterministic: ids derive from `journal_index`, remaining counts fall by
  /// one per request and are 0 on a 429. By default none (Gemini's API sends neither).
  virtual void add_answer_headers(std::size_t journal_index, int status,
                                  std::vector<std::pair<std::string, std::string>>& headers) const {
    (void)journal_index;
    (void)status;
    (void)headers;
  }

  /// The `Content-Type` of an error answer (error_answer's body) to a request for `target` (path
  /// and query): "application/json" unless the provider sends another (Gemini: "text/event-stream"
  /// on its streaming method, "application/json; charset=UTF-8" otherwise; gemini_format.h).
  virtual std::string error_content_type(std::string_view target) const {
    (void)target;
    return "application/json";
  }

  /// The `Content-Type` of a streamed answer: "text/event-stream" unless the provider sends a
  /// charset with it (OpenAI's both formats: "text/event-stream; charset=utf-8", as recorded live;
  /// docs/WIRE-FORMATS.md "Checked against recordings").
  virtual std::string_view stream_content_type() const { return "text/event-stream"; }

  /// The deterministic provider id of call `call_index` in the response to `journal_index`
  /// (`call_…`, `toolu_…`); "" when the provider sends none by default (Gemini).
  virtual std::string call_id(std::size_t journal_index, int call_index) const = 0;

  /// A fresh encoder for one streamed response.
  virtual std::unique_ptr<StreamEncoder> stream_encoder(const ResponseContext& ctx) const = 0;

  /// The non-streaming answer (HTTP 200 JSON body) holding `events` (ids resolved, up to and
  /// including the first finish when there is one); a content-filter finish gives the provider's
  /// blocked or refused answer, which holds the parts before the finish only when
  /// filtered_answer_keeps_parts() says so. Events without a finish give the provider's answer
  /// with no finish reason (the `end` fault's non-streaming form).
  virtual std::string unary_body(const std::vector<Event>& events,
                                 const ResponseContext& ctx) const = 0;

  /// The HTTP status of the non-streaming answer to a malformed-call finish: 200 where the
  /// provider answers with a finish of its own (Gemini MALFORMED_FUNCTION_CALL, Responses
  /// `status: failed`), 500 where it answers with an error envelope (OpenAI Chat `model_error`,
  /// Anthropic `api_error`; WIRE-FORMATS.md), which unary_body then holds.
  virtual int malformed_call_unary_status() const { return 200; }

  /// Whether a 200 non-streaming answer with a malformed-call finish holds the parts before it
  /// (Gemini's does not: a candidate with `finishReason: MALFORMED_FUNCTION_CALL`, a
  /// `finishMessage` and no content). The journal counts them as delivered only then.
  virtual bool malformed_call_answer_keeps_parts() const { return true; }

  /// Whether the provider's non-streaming content-filter answer keeps what was generated before
  /// the filter (Anthropic's `refusal` does; Gemini's blocked candidate, Chat's `content: null` and
  /// Responses' `incomplete` answer do not). The journal counts those parts as delivered only then.
  virtual bool filtered_answer_keeps_parts() const = 0;

  /// Whether the format streams reasoning events at all (Chat Completions has no reasoning round
  /// trip: it sends nothing for one, and the journal records none).
  virtual bool sends_reasoning() const { return true; }

  /// The provider's 400 for a request (`body`, already decoded without rejection) that does not
  /// send back the reasoning `checks` name, in its place and unchanged (WIRE-FORMATS.md
  /// "Reasoning"); nullopt when it does. Called only when `checks` is not empty. Never throws.
  virtual std::optional<Rejection> check_reasoning(std::string_view body,
                                                   const std::vector<ReasoningCheck>& checks) const {
    (void)body;
    (void)checks;
    return std::nullopt;
  }

  /// Server-side conversation state: the responses a provider keeps for a later request to
  /// continue (the Responses API's `previous_response_id` with `store`, over HTTP and its
  /// WebSocket mode; WIRE-FORMATS.md "Conversation state"). No other format keeps any.
  virtual bool stores_responses() const { return false; }

  /// What continue_stored found: both empty when `body` continues nothing.
  struct Continuation {
    std::optional<std::string> body;       ///< the full request to decode instead of `body`
    std::optional<Rejection> rejection;    ///< the provider's 400
    /// The 400 says the server no longer holds the response named (`previous_response_not_found`):
    /// the server's loss, which a correct client recovers from by sending the full input, not an
    /// invalid request of the client's (journaled "context-lost", not "bad-request").
    bool lost = false;
  };
  /// Reads a stored value by key (ScriptEngine: its SessionMemory); nullopt when none is kept.
  using StoredLookup = std::function<std::optional<std::string>(const std::string& key)>;
  /// Called before decode_request, only when stores_responses(): a request that names a stored
  /// response (`previous_response_id`) becomes the full request it stands for, as the provider
  /// reads it: the stored request's input, the stored response's output items, then the
  /// request's own input, with `previous_response_id` gone; an id `lookup` has nothing under is
  /// the provider's 400 (`previous_response_not_found`). Never throws.
  virtual Continuation continue_stored(std::string_view body, const StoredLookup& lookup) const {
    (void)body;
    (void)lookup;
    return {};
  }

  /// Called after an answer is planned, only when stores_responses(): the (key, value) to keep
  /// for a later continuation when `answer` completes a response and `body` (the full request,
  /// after continue_stored) does not say `store: false`; nullopt otherwise. `answer` is the
  /// unary body, or the streamed bytes (`streaming`). Never throws.
  virtual std::optional<std::pair<std::string, std::string>> stored_answer(std::string_view body, bool streaming,
                                                                           std::string_view answer) const {
    (void)body;
    (void)streaming;
    (void)answer;
    return std::nullopt;
  }

  /// nullopt when the provider sends HTTP `status` (as an error answer or, for error_event, its
  /// in-stream error); else why not, naming the provider's own alternative, lower-case, e.g.
  /// "gemini does not send 529 (Anthropic's overloaded_error); its overload is 503 UNAVAILABLE".
  /// Each format cites the source of its table (WIRE-FORMATS.md, the provider's error docs).
  virtual std::optional<std::string> status_note(int status) const = 0;
};

/// A provider's table of HTTP statuses, for WireFormat::status_note: `sent` lists every status
/// it sends (error answers and in-stream errors); `overload` names its own overload answer (e.g.
/// "503 UNAVAILABLE"). The note for a status outside the table reads
/// "PROVIDER does not send 529 (Anthropic's overloaded_error); its overload is OVERLOAD",
/// "PROVIDER does not send S; its server errors are 500, 503, 504 and its overload is OVERLOAD" or
/// "PROVIDER does not send S; its client errors are 400, 401, …".
struct StatusTable {
  std::string_view provider;
  std::vector<int> sent;
  std::string_view overload;
  std::optional<std::string> note(int status) const;
};

/// Every format, in the fixed order gemini, openai-chat, openai-responses, anthropic.
const std::vector<const WireFormat*>& wire_formats();

/// The format named `name`; nullptr when unknown.
const WireFormat* wire_format(std::string_view name);

/// The format serving a POST to `path` (no query); nullptr when none does.
const WireFormat* format_for_path(std::string_view path);

/// The deepest nesting of arrays and objects in a JSON text (brackets inside strings do not
/// count), found by one linear scan without parsing; stops counting at `cap` + 1. The engine
/// rejects bodies deeper than kMaxJsonDepth before any parser sees them: recursive JSON code
/// (nlohmann's copies and destructor) overflows a worker thread's stack near 100,000 levels.
std::size_t json_nesting_depth(std::string_view text, std::size_t cap);

/// The deepest request body the server decodes; deeper ones get a 400 in the provider's envelope.
inline constexpr std::size_t kMaxJsonDepth = 512;

/// Request text, also JSON held in a string (OpenAI's `arguments`, a tool result's content), as
/// nlohmann::json::parse reads it (json_reader::parse): a discarded value (is_discarded()) when
/// `text` is not JSON or nests deeper than kMaxJsonDepth, refused as the reader descends (the
/// verdict of json_nesting_depth on `text`). Never throws. (A 100,000-deep `arguments` string
/// overflowed the stack of `hiccup serve` before the limit; found with fuzz/mock_request_fuzz.)
nlohmann::json parse_json(std::string_view text);

/// parse_json(text), except that when the text is an object, its members named in `unread` are
/// checked as parse_json checks them (the verdict is the same) and left out of the result: for a
/// caller that reads a few top-level members of a large body (json_reader::parse with `unread`).
nlohmann::json parse_json(std::string_view text, std::initializer_list<std::string_view> unread);

/// Splits `text` into `n` (>= 1) consecutive non-empty pieces of near-equal byte length that never
/// split a UTF-8 sequence (fewer pieces when `text` has fewer characters; one "" piece for "").
std::vector<std::string> split_fragments(const std::string& text, int n);

}  // namespace mock
