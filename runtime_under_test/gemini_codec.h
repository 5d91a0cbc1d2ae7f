// The runtime's own Gemini wire codec (WIRE-FORMATS.md "Gemini"): request targets and bodies,
// streamed GenerateContentResponse frames, and error envelopes with RetryInfo. Pure functions; the
// runtime never shares code with the mock server.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime_under_test/codec.h"

namespace rut {

/// A decoded frame: its first candidate's parts in order and its finish reason, if any
/// (`"STOP"`, `"MAX_TOKENS"`, `"SAFETY"`, `"RECITATION"`, `"MALFORMED_FUNCTION_CALL"`, `"OTHER"`).
struct GeminiFrame {
  std::vector<ModelPart> parts;
  std::optional<std::string> finish_reason;
  bool is_error = false;  ///< the frame was an `{"error":{...}}` object (in-stream error)
  std::string error_message;
};

/// A decoded error envelope `{"error":{"code","message","status","details":[RetryInfo]}}`.
struct GeminiError {
  int code = 0;
  std::string message;
  std::string status;         ///< e.g. "UNAVAILABLE", "INVALID_ARGUMENT"
  double retry_after_s = 0;   ///< from RetryInfo.retryDelay ("30s", "1.5s"); 0 when absent
  bool daily_quota = false;   ///< a QuotaFailure violation's quotaId names a per-day quota ("PerDay")
};

/// Streaming target: `/v1beta/models/{model}:streamGenerateContent?alt=sse`.
std::string stream_target(std::string_view model);

/// Request body `{"contents":[...]}` plus `"tools":[{"functionDeclarations":[...]}]` when
/// `tool_names` is non-empty (each declared with an open object schema).
std::string build_request_body(const nlohmann::json& contents,
                               const std::vector<std::string>& tool_names);

/// Decodes one `data:` payload; nullopt when it is not a JSON object (an undecodable frame).
std::optional<GeminiFrame> parse_frame(std::string_view data);

/// Decodes an error envelope from a body; nullopt when the body is not one.
std::optional<GeminiError> parse_error(std::string_view body);

/// Parses a protobuf Duration string like "30s" or "1.5s" into seconds; nullopt when malformed.
std::optional<double> parse_duration_s(std::string_view text);

/// The Gemini JSON for a part: `{"text":...}` or `{"functionCall":{name,args,id?}}`.
nlohmann::json part_to_json(const ModelPart& part);

/// A function response part `{"functionResponse":{name, id?, response}}`.
nlohmann::json function_response_json(const FunctionCall& call, const nlohmann::json& response);

/// The Gemini ICodec built from the functions above.
const ICodec& gemini_codec();

}  // namespace rut
