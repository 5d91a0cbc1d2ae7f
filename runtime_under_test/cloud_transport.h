// The reference runtime's cloud paths for the Anthropic format: an ITransport in front of another
// that sends the codec's Anthropic request (`POST /v1/messages`, model and stream in the body) the
// way Amazon Bedrock, Google Vertex AI or Microsoft Foundry take it, and hands the codec back an
// Anthropic stream. Bedrock: `/model/{modelId}/invoke-with-response-stream` (or `/invoke`), body
// without `model`/`stream` and with `anthropic_version: bedrock-2023-05-31`; its event-stream
// answer is decoded (EventStreamDecoder) and each chunk's `bytes` fed on as an SSE frame, each
// exception event as the Anthropic `error` event it stands for, each HTTP error
// (`x-amzn-ErrorType`, `{"message"}`) as the Anthropic error envelope and status it stands for.
// A message that fails its CRC or framing ends the attempt as a lost connection. Vertex:
// `/v1/projects/{p}/locations/{l}/publishers/anthropic/models/{m}:streamRawPredict` (or
// `:rawPredict`), `anthropic_version: vertex-2023-10-16`, SSE unchanged. Foundry:
// `/anthropic/v1/messages`, unchanged. docs/WIRE-FORMATS.md "Cloud paths" has the facts.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "runtime_under_test/env.h"

namespace rut {

enum class CloudPath { kBedrock, kVertex, kFoundry };

/// "bedrock", "vertex" or "foundry" → the path; nullopt for anything else.
std::optional<CloudPath> cloud_path_from_name(std::string_view name);

/// The Anthropic HTTP status and error type a Bedrock error type stands for (the part of
/// `x-amzn-ErrorType` before ':' or an exception event's `:exception-type`, any case):
/// ThrottlingException → 429 rate_limit_error, ServiceUnavailableException → 503
/// overloaded_error, ModelTimeoutException → 504 timeout_error, InternalServerException → 500
/// api_error, ValidationException → 400 invalid_request_error, AccessDeniedException → 403
/// permission_error, ResourceNotFoundException → 404 not_found_error, ModelStreamErrorException
/// and ModelErrorException → 500 api_error; nullopt for a type it does not know.
struct AnthropicError {
  int status;
  std::string_view type;
};
std::optional<AnthropicError> anthropic_error_for(std::string_view bedrock_type);

/// Rewrites the request and the answer of `inner` (which must outlive it) for `path`.
class CloudTransport final : public ITransport {
 public:
  CloudTransport(ITransport& inner, CloudPath path) : inner_(inner), path_(path) {}
  TransportResult post(const HttpRequest& request,
                       const std::function<bool(std::string_view)>& on_body) override;

 private:
  ITransport& inner_;
  CloudPath path_;
};

}  // namespace rut
