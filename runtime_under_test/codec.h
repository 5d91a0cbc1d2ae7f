// The runtime's provider codec interface: one implementation per wire format (gemini,
// openai-chat, openai-responses, anthropic). A codec encodes the runtime's neutral history into
// the provider's request, decodes the provider's stream (or non-streaming body) into parts and a
// finish, and reads the provider's error envelope and Retry-After. The runtime shares no code with
// the mock server; facts per provider are in WIRE-FORMATS.md.
#pragma once

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime_under_test/env.h"
#include "runtime_under_test/sse_decoder.h"

namespace rut {

/// A function call as delivered: name, parsed arguments (a JSON object) and the provider's id
/// (Gemini sends none by default; `call_…`/`toolu_…` elsewhere).
struct FunctionCall {
  std::string name;
  nlohmann::json args = nlohmann::json::object();
  std::optional<std::string> id;
  bool operator==(const FunctionCall&) const = default;
};

/// Reasoning the provider attached to its answer, delivered whole, which the client must send back
/// unchanged in its place (docs/POLICY.md "Reasoning"): an Anthropic thinking block once its
/// signature_delta arrived, a Responses reasoning item at its output_item.done, a Gemini thought
/// part (`thought: true`, its signature on the next call part) or a part carrying only a
/// thoughtSignature.
struct Reasoning {
  std::string text;       ///< thinking text, summary text or thought text ("" for none)
  std::string signature;  ///< Anthropic `signature`, Responses `encrypted_content`, Gemini `thoughtSignature`
  std::string id;         ///< the Responses reasoning item's id (`rs_…`), else ""
  bool thought = true;    ///< Gemini: a thought part; false for a part that carries only a signature
  /// Anthropic `redacted_thinking`: `signature` is its `data`, `text` is ""; in the neutral
  /// history a reasoning part with `"redacted": true`, sent back as that block.
  bool redacted = false;
  bool operator==(const Reasoning&) const = default;
};

/// One delivered part: exactly one of `text` / `call` / `reasoning` is set. `position_in_frame` =
/// the call's position among the calls of the frame (chunk, event) that completed it: 0 for the
/// first. `thought_signature`: Gemini's thoughtSignature on a call part ("" for none), which goes
/// back on that part.
struct ModelPart {
  std::optional<std::string> text;
  std::optional<FunctionCall> call;
  int position_in_frame = 0;
  std::optional<Reasoning> reasoning;
  std::string thought_signature;
};

/// The finish classes the policy decides on (docs/POLICY.md "An attempt").
enum class FinishClass {
  kStop,           ///< Gemini STOP, Chat `stop`/`tool_calls`, Responses completed, Anthropic `end_turn`/`tool_use`
  kMaxTokens,      ///< MAX_TOKENS, `length`, incomplete (max_output_tokens), `max_tokens`
  kContentFilter,  ///< SAFETY/RECITATION, `content_filter`, incomplete (content_filter), `refusal`
  kMalformedCall,  ///< MALFORMED_FUNCTION_CALL or the provider's nearest equivalent
  kOther,          ///< any other reason: the stream is incomplete
};

/// What a decoder made of one frame, or a codec of a whole non-streaming body.
struct DecodedChunk {
  std::vector<ModelPart> parts;             ///< parts completed by this frame, in order
  /// Set when the provider's terminal event arrived (for Chat Completions: `data: [DONE]` after
  /// a `finish_reason`; Anthropic: `message_stop`; Responses: `response.completed` or
  /// `response.incomplete`; Gemini: a frame with `finishReason`).
  std::optional<FinishClass> finish;
  std::string finish_reason;                ///< the provider's own spelling, for logs
  /// Set for an in-stream error (Gemini bare `{"error"}`, Chat `{"error"}` data, Responses
  /// `error`/`response.failed`, Anthropic `event: error`): its message.
  std::optional<std::string> stream_error;
  bool undecodable = false;                 ///< the frame's JSON does not parse
  /// Set when the frame opened a call or added to its arguments, and that call is still open (its
  /// arguments incomplete): how many argument fragments it has received so far, 0 for the frame
  /// that opens it. Only formats that stream a call's arguments in pieces set it (Chat
  /// `delta.tool_calls` entries, Responses `response.function_call_arguments.delta`, Anthropic
  /// `input_json_delta`; WIRE-FORMATS.md); Gemini sends a call whole. The runtime's interrupt
  /// inside a call's arguments reads it (runtime.h, UserInterrupt::after_fragment).
  std::optional<int> open_call_fragments;
};

/// Decodes one streamed response, frame by frame. Stateful (open calls, blocks, indexes).
class IStreamDecoder {
 public:
  virtual ~IStreamDecoder() = default;
  /// Decodes one SSE frame (its `event:` name and data) or a bare error object line.
  virtual DecodedChunk on_frame(const SseFrame& frame) = 0;
  /// The call whose arguments were still streaming when the stream ended, its arguments repaired
  /// into a JSON object by repair_json (only the execute-partial-args defect asks). `unterminated`
  /// is the data of a frame the stream cut before its end (SseDecoder::unterminated_data): Gemini
  /// sends a call whole, so its open call is a call frame cut in the middle. nullopt: none open.
  virtual std::optional<FunctionCall> repaired_open_call(std::string_view unterminated) const = 0;
};

/// An HTTP error answer as the codec reads it.
struct ProviderError {
  std::string message;        ///< e.g. "UNAVAILABLE: The model is overloaded." / "overloaded_error: Overloaded"
  double retry_after_s = 0;   ///< from the `retry-after-ms`/`retry-after` header or the body; 0 when absent
  /// The 429 says a quota that resets only the next day ran out (docs/POLICY.md, `quota_exhausted`):
  /// Gemini's QuotaFailure names a quota id with "PerDay"; OpenAI's message names "per day (RPD)"
  /// or "per day (TPD)".
  bool daily_quota = false;
};

/// Response headers with lower-case names.
using Headers = std::vector<std::pair<std::string, std::string>>;

/// One provider's codec. Implementations are stateless.
class ICodec {
 public:
  virtual ~ICodec() = default;
  /// "gemini", "openai-chat", "openai-responses" or "anthropic".
  virtual std::string_view provider() const = 0;
  /// The model requested when the settings name none (e.g. "gemini-2.5-flash").
  virtual std::string default_model() const = 0;
  /// The request for the neutral history `contents` (Gemini-shaped: role user/model, parts text /
  /// functionCall {name,args,id?} / functionResponse {name,id?,response}) on `model`, streaming or
  /// not, declaring `tool_names` (open object schemas) when non-empty. Sets target, body, headers.
  virtual HttpRequest make_request(const nlohmann::json& contents, std::string_view model,
                                   const std::vector<std::string>& tool_names, bool stream) const = 0;
  /// A fresh decoder for one streamed response.
  virtual std::unique_ptr<IStreamDecoder> stream_decoder() const = 0;
  /// Decodes a non-streaming 200 body: its parts and finish (no finish: incomplete; a body that
  /// does not parse: `undecodable`).
  virtual DecodedChunk decode_body(std::string_view body) const = 0;
  /// Reads an HTTP error answer: its message and Retry-After (seconds).
  virtual ProviderError parse_error(std::string_view body, const Headers& headers) const = 0;
};

/// The codec for `provider`; nullptr when unknown.
const ICodec* codec_for(std::string_view provider);

/// The provider names the runtime speaks, in a fixed order.
const std::vector<std::string>& codec_names();

/// The deepest nesting of arrays and objects the runtime decodes in a provider's answer (the mock
/// server's limit for requests, mock::kMaxJsonDepth): deeper JSON reads as undecodable, because
/// copying or dumping it recurses once per level and would overflow the stack (a 100,000-deep
/// call argument from a hostile server crashed the runtime; found by fuzz/codec_stream_fuzz).
inline constexpr std::size_t kMaxJsonDepth = 512;

/// The text `build(tool_names)` returns: the tool declarations of a request body. Remembered per
/// thread and per `build` for the last `tool_names` asked, since a run declares the same tools in
/// every request and each codec otherwise built them afresh as a JSON tree each time (0.7% of an
/// in-memory exploration case's instructions, callgrind). `build` must be a pure function of the names.
std::string tools_text(const std::vector<std::string>& tool_names,
                       std::string (*build)(const std::vector<std::string>& tool_names));

/// `o[key]` when `o` is an object holding a string there, else "". Never throws: a frame from
/// the wire may put any type anywhere, and json::value() throws type_error when the member is
/// present with another type (the libFuzzer target fuzz_codec_stream_gemini found
/// `"functionCall":{"name":6}` aborting the runtime that way).
std::string string_member(const nlohmann::json& o, const char* key);

/// Appends `s` as a JSON string, byte for byte as nlohmann's compact dump() with the replace error
/// handler writes it (text that is not UTF-8 gets U+FFFD, never a throw): plain printable ASCII
/// without `"` or `\\` directly, anything else through nlohmann's own serializer. For request
/// bodies written as text rather than built as a tree and dumped (the trees were most of a
/// request's encoding cost).
void append_json_string(std::string& out, std::string_view s);

/// Appends `v.dump()` (compact, replace error handler).
void append_json(std::string& out, const nlohmann::json& v);

/// JSON text from the wire as nlohmann::json::parse reads it (json_reader::parse): a discarded
/// value (is_discarded()) when `text` is not JSON or nests deeper than kMaxJsonDepth. Never throws.
nlohmann::json parse_json(std::string_view text);

/// parse_json(text), but the top-level object's members named in `unread` are checked without
/// being built and left out (json_reader::parse): for frames whose members the decoder never reads
/// (usage, ids, a whole response object), which were most of a frame's allocations.
nlohmann::json parse_json(std::string_view text, std::initializer_list<std::string_view> unread);

/// Closes a truncated JSON text (open strings, a dangling key or comma, open arrays and objects)
/// and parses it; nullopt when even the repaired text does not parse. "" repairs to `{}`.
/// `{"command":"./depl` → `{"command":"./depl"}`.
std::optional<nlohmann::json> repair_json(std::string_view prefix);

/// Retry-After from response headers, in seconds: `retry-after-ms` (milliseconds; OpenAI sends
/// it and its SDK reads it first) wins over `retry-after` (seconds, RFC 9110 delay-seconds or a
/// decimal as Anthropic and OpenAI send it; an HTTP-date reads as absent). nullopt when neither
/// holds a non-negative number.
std::optional<double> retry_after_from_headers(const Headers& headers);

/// Whether an OpenAI 429 message names a per-day limit: "… on requests per day (RPD): …" or
/// "… on tokens per day (TPD): …" (the API's rate_limit_exceeded messages name the limit that ran
/// out; the per-minute ones say "per min (RPM)" / "(TPM)").
bool says_daily_quota(std::string_view message);

/// The value of header `name` (lower-case) in `headers`; nullopt when absent.
std::optional<std::string> header_value(const Headers& headers, std::string_view name);

}  // namespace rut
