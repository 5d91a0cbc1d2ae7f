// The cloud paths of the Anthropic format: Amazon Bedrock (`/model/{modelId}/invoke-with-response-
// stream`, `/model/{modelId}/invoke`), Google Vertex AI (`…/publishers/anthropic/models/{m}:
// streamRawPredict`, `:rawPredict`) and Microsoft Foundry (`/anthropic/v1/messages`). Each is a
// transport or path variant of the Anthropic format, not a format: CloudResponder turns the
// request into the Anthropic request it stands for (model from the URL, `anthropic_version` out of
// the body, `stream` set by the path), lets the inner Responder (the provider-neutral ScriptEngine)
// plan it, and turns the plan back into the cloud's answer: for Bedrock every SSE frame becomes an
// event-stream message (chunk or exception event) and every error envelope Bedrock's, with
// `x-amzn-ErrorType`; Vertex and Foundry stream Anthropic's SSE unchanged. The engine journals the
// Anthropic request (target `/v1/messages`), so a scenario's journal, invariants and verdict are
// the same on every path. Facts and sources: docs/WIRE-FORMATS.md "Cloud paths"; the fault mapping:
// docs/SCENARIO-FORMAT.md "Faults on the cloud paths".
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "mock_server/script_engine.h"

namespace mock::cloud {

enum class Cloud { kBedrock, kVertex, kFoundry };

/// "bedrock", "vertex", "foundry".
std::string_view cloud_name(Cloud cloud);

/// A request target on a cloud path.
struct CloudTarget {
  Cloud cloud = Cloud::kBedrock;
  std::string model;       ///< from the URL, percent-decoded (Bedrock, Vertex); "" for Foundry
  bool streaming = true;   ///< invoke-with-response-stream / streamRawPredict; Foundry: from the body
};

/// The cloud path `target` (path and query; a session prefix already stripped) names, or nullopt.
/// Bedrock: `/model/{modelId}/invoke-with-response-stream` and `/model/{modelId}/invoke`; Vertex:
/// `/v1/projects/{p}/locations/{l}/publishers/anthropic/models/{m}:streamRawPredict` and
/// `:rawPredict` (`v1beta1` too); Foundry: `/anthropic/v1/messages`.
std::optional<CloudTarget> cloud_target(std::string_view target);

/// The request targets served, for `hiccup serve --help`.
const std::vector<std::string>& cloud_paths();

/// Bedrock's error type and HTTP status for an Anthropic error answer with `status` (529 and 503
/// → ServiceUnavailableException 503, 429 → ThrottlingException, …; a status outside Bedrock's
/// table keeps its number, typed ValidationException (4xx) or InternalServerException (5xx);
/// docs/WIRE-FORMATS.md).
struct BedrockError {
  std::string_view type;  ///< e.g. "ThrottlingException"
  int status = 500;
};
BedrockError bedrock_error(int status);

/// The Bedrock exception event (lower camel case name) for an Anthropic in-stream error type, e.g.
/// "rate_limit_error" → "throttlingException"; "modelStreamErrorException" for types Bedrock has no
/// event of its own for.
std::string_view bedrock_exception(std::string_view anthropic_error_type);

/// Converts the SSE bytes of an Anthropic stream to event-stream messages, one per SSE frame.
/// Write boundaries inside a frame map proportionally into its message (a `slice_bytes` stream
/// stays sliced); bytes of a frame left unterminated at the end (a `cut` fault) become the first
/// min(bytes, message length − 1) bytes of the message carrying what was cut.
/// `writes` are the SSE bytes of consecutive writes; returns the event-stream bytes of each.
std::vector<std::string> sse_writes_to_eventstream(const std::vector<std::string_view>& writes);

/// Plays one request on a cloud path through `inner` (which plays Anthropic requests). Made per
/// request (the router's job, make_cloud_responder); thread-safe as `inner` is.
class CloudResponder final : public Responder {
 public:
  CloudResponder(std::shared_ptr<Responder> inner, CloudTarget target);
  Plan respond(const Request& request) override;
  void settle(std::size_t journal_index, const Delivery& delivery) override;
  void refuse(std::size_t journal_index, int status, const std::string& reason) override;
  std::string error_provider() const override { return "anthropic"; }

 private:
  std::shared_ptr<Responder> inner_;
  CloudTarget target_;
  bool answered_here_ = false;  // a request the cloud itself refused (no journal entry)
};

/// A CloudResponder over `inner` when `target` is a cloud path; else nullptr.
std::shared_ptr<Responder> make_cloud_responder(const std::shared_ptr<Responder>& inner, std::string_view target);

}  // namespace mock::cloud
