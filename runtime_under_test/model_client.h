// One model attempt: send a request through ITransport, decode the SSE stream (or the
// non-streaming body) with the provider's codec, hand out the attempt's parts as they arrive, and
// end with success (a stop / max-tokens terminal event) or exactly one ErrorCode from
// docs/POLICY.md. Retry decisions are not made here (retry_coordinator.h).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime_under_test/defects.h"
#include "runtime_under_test/env.h"
#include "runtime_under_test/codec.h"

namespace rut {

/// Why an attempt failed (docs/POLICY.md "An attempt"). Each entry states its retry class.
enum class ErrorCode {
  kHttp429,          ///< status 429. Retryable: wait max(backoff step, RetryInfo delay)
  kQuotaExhausted,   ///< status 429 naming a per-day quota (ProviderError::daily_quota). Not
                     ///< retryable: run error "quota_exhausted" (it resets only the next day)
  kHttp5xx,          ///< status 500, 502, 503, 504, 529. Retryable with backoff
  kInvalidRequest,   ///< status 400. Not retryable: run error "invalid_request"; the rejected
                     ///< user content is removed from history
  kHttpClientError,  ///< any other status >= 400 (401, 403, 404, 501…). Not retryable: "non_retryable"
  kConnectionLost,   ///< FIN or RST before the terminal frame. Retryable; the attempt's calls are
                     ///< indeterminate and must never execute
  kConnectFailed,    ///< no connection at all. Retryable
  kIdleTimeout,      ///< nothing arrived for idle_timeout_s. Retryable (the timeout is not a wait)
  kStreamError,      ///< an in-stream error (Gemini `{"error"}`, Anthropic `event: error`, …). Retryable
  kUndecodableFrame, ///< a `data:` frame whose JSON does not parse. Retryable
  kIncompleteStream, ///< clean end without a terminal frame, or a finish reason outside the
                     ///< policy's table (e.g. OTHER). Retryable
  kMalformedCall,    ///< finish MALFORMED_FUNCTION_CALL (or the provider's equivalent). Retryable
  kContentFilter,    ///< a content-filter finish (SAFETY/RECITATION, `content_filter`, `refusal`).
                     ///< Special: one retry on the fallback model if set, else run error
                     ///< "content_filter"; never retried unchanged
};

/// Snake-case name as in docs/POLICY.md, e.g. "http_429", "connection_lost".
std::string_view error_code_name(ErrorCode code);

/// The end of one attempt.
struct AttemptResult {
  bool ok = false;                     ///< the terminal event arrived with a stop / max-tokens finish
  std::string finish_reason;           ///< the provider's finish reason when one arrived, else ""
  std::optional<ErrorCode> error;      ///< set iff !ok
  std::string message;                 ///< human-readable detail of the failure
  int status = 0;                      ///< HTTP status (0 when no response head)
  double retry_after_s = 0;            ///< Retry-After of a status failure (header or body); else 0
  std::vector<ModelPart> parts;        ///< every part delivered, in order (committed when ok)
  /// The user cancelled (ModelClient::cancel from `on_part`): the runtime stopped reading; `ok`
  /// is false, `error` unset, `parts` ends with the part during which the cancel came.
  bool cancelled = false;
  /// A streamed attempt that failed (or ended with a max-tokens finish) with a call's arguments
  /// still open (cut): that call with its arguments repaired (IStreamDecoder::repaired_open_call),
  /// else nullopt. Never delivered and never to be run or kept; only the keep-half-delivered-call
  /// and truncation-as-complete defects read it.
  std::optional<FunctionCall> open_call;
  /// The attempt ended with a max-tokens finish (the answer is truncated: POLICY.md "Truncation").
  /// A call that finish cut is not among `parts`; `open_call` holds it repaired.
  bool truncated = false;
};

/// Runs single attempts. Holds no per-attempt state between calls.
class ModelClient {
 public:
  /// `tool_names` are declared in each request's `tools`; may be empty. `codec` (default: Gemini)
  /// speaks the provider's format; `stream` false uses the provider's non-streaming endpoint.
  ModelClient(ITransport& transport, IClock& clock, const DefectSet& defects,
              double idle_timeout_s, std::vector<std::string> tool_names = {},
              const ICodec* codec = nullptr, bool stream = true);

  /// Builds the request for the neutral history `contents` on `model` with the codec.
  [[nodiscard]] HttpRequest make_request(const nlohmann::json& contents,
                                         std::string_view model) const;

  /// Sends `request` and streams it; `on_part` sees each delivered part as soon as its frame is
  /// decoded (parts of a failing attempt included: the caller discards them on Retry). Stops
  /// reading at the first terminal frame, failure frame or undecodable frame. On kIdleTimeout the
  /// clock advances by idle_timeout_s. Transport exceptions propagate. `on_call_fragment`, if
  /// set, sees each frame that opens a call or adds to its arguments while the call stays open,
  /// with the number of argument fragments it has so far (0: just opened; DecodedChunk::
  /// open_call_fragments); it may cancel() too.
  [[nodiscard]] AttemptResult run(const HttpRequest& request,
                                  const std::function<void(const ModelPart&)>& on_part,
                                  const std::function<void(int)>& on_call_fragment = {});

  /// Called from `on_part`: the user cancelled. The running attempt stops reading its stream at
  /// once (no further part is handed out) and returns with `cancelled` set.
  void cancel() { cancel_requested_ = true; }

 private:
  ITransport& transport_;
  IClock& clock_;
  const DefectSet& defects_;
  double idle_timeout_s_;
  std::vector<std::string> tool_names_;
  const ICodec& codec_;
  bool stream_;
  bool cancel_requested_ = false;
};

}  // namespace rut
