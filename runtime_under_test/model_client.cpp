// One model attempt (see model_client.h).
#include "runtime_under_test/model_client.h"

#include "runtime_under_test/sse_decoder.h"

namespace rut {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kHttp429: return "http_429";
    case ErrorCode::kHttp5xx: return "http_5xx";
    case ErrorCode::kInvalidRequest: return "invalid_request";
    case ErrorCode::kHttpClientError: return "http_client_error";
    case ErrorCode::kConnectionLost: return "connection_lost";
    case ErrorCode::kConnectFailed: return "connect_failed";
    case ErrorCode::kIdleTimeout: return "idle_timeout";
    case ErrorCode::kStreamError: return "stream_error";
    case ErrorCode::kUndecodableFrame: return "undecodable_frame";
    case ErrorCode::kIncompleteStream: return "incomplete_stream";
    case ErrorCode::kMalformedCall: return "malformed_call";
    case ErrorCode::kContentFilter: return "content_filter";
  }
  return "unknown";
}

ModelClient::ModelClient(ITransport& transport, IClock& clock, const DefectSet& defects,
                         double idle_timeout_s, std::vector<std::string> tool_names)
    : transport_(transport), clock_(clock), defects_(defects), idle_timeout_s_(idle_timeout_s),
      tool_names_(std::move(tool_names)) {}

HttpRequest ModelClient::make_request(const nlohmann::json& contents,
                                      std::string_view model) const {
  HttpRequest req;
  req.target = stream_target(model);
  req.body = build_request_body(contents, tool_names_);
  req.headers = {{"Content-Type", "application/json"}, {"x-goog-api-key", "hiccup"}};
  req.idle_timeout_s = idle_timeout_s_;
  return req;
}

namespace {

std::optional<ErrorCode> status_error(int status) {
  if (status == 429) return ErrorCode::kHttp429;
  if (status == 500 || status == 502 || status == 503 || status == 504 || status == 529) {
    return ErrorCode::kHttp5xx;
  }
  if (status == 400) return ErrorCode::kInvalidRequest;
  if (status < 200 || status >= 300) return ErrorCode::kHttpClientError;
  return std::nullopt;
}

}  // namespace

AttemptResult ModelClient::run(const HttpRequest& request,
                               const std::function<void(const ModelPart&)>& on_part) {
  AttemptResult result;
  bool decided = false;
  std::string error_body;
  SseDecoder decoder;
  std::vector<SseFrame> frames;

  auto fail = [&](ErrorCode code, std::string message) {
    result.ok = false;
    result.error = code;
    result.message = std::move(message);
    decided = true;
  };

  // Handles decoded frames; returns false once the attempt is decided.
  auto handle_frames = [&]() -> bool {
    for (const SseFrame& f : frames) {
      if (decided) break;
      if (f.kind == SseFrame::Kind::kErrorObject) {
        auto e = parse_error(f.data);
        fail(ErrorCode::kStreamError,
             "in-stream error: " + (e ? std::to_string(e->code) + " " + e->message : f.data));
        break;
      }
      auto frame = parse_frame(f.data);
      if (!frame) {
        fail(ErrorCode::kUndecodableFrame, "undecodable frame: " + f.data.substr(0, 80));
        break;
      }
      if (frame->is_error) {
        fail(ErrorCode::kStreamError, "in-stream error: " + frame->error_message);
        break;
      }
      for (ModelPart& p : frame->parts) {
        on_part(p);
        result.parts.push_back(std::move(p));
      }
      if (!frame->finish_reason) continue;
      const std::string& reason = *frame->finish_reason;
      result.finish_reason = reason;
      decided = true;
      if (reason == "STOP" || reason == "MAX_TOKENS") {
        result.ok = true;
      } else if (reason == "SAFETY" || reason == "RECITATION") {
        if (defects_.contains(Defect::kContentFilterAsSuccess)) {
          result.ok = true;  // defect: a content filter ends the turn like STOP
        } else {
          fail(ErrorCode::kContentFilter, "content filter: finish " + reason);
        }
      } else if (reason == "MALFORMED_FUNCTION_CALL") {
        fail(ErrorCode::kMalformedCall, "finish MALFORMED_FUNCTION_CALL");
      } else {
        fail(ErrorCode::kIncompleteStream, "unexpected finish reason " + reason);
      }
    }
    frames.clear();
    return !decided;
  };

  TransportResult tr = transport_.post(request, [&](std::string_view bytes) -> bool {
    if (decided) return false;
    // ITransport reports the status only at the end, so keep the bytes in case it is an error
    if (error_body.size() < 65536) error_body.append(bytes);
    decoder.feed(bytes, frames);
    return handle_frames();
  });
  result.status = tr.status;

  if (tr.status != 0) {
    if (auto code = status_error(tr.status)) {
      // A status failure: the body is an error envelope, whatever the stream decoder made of it.
      result = AttemptResult{};
      result.status = tr.status;
      auto e = parse_error(error_body);
      result.error = *code;
      result.message = "HTTP " + std::to_string(tr.status) +
                       (e ? " " + e->status + ": " + e->message : std::string());
      result.retry_after_s = e ? e->retry_after_s : 0;
      return result;
    }
  }
  if (decided) return result;

  switch (tr.end) {
    case TransportEnd::kComplete:
    case TransportEnd::kCancelled: {
      decoder.finish(frames);
      if (!handle_frames()) return result;
      if (tr.end == TransportEnd::kCancelled) {
        fail(ErrorCode::kConnectionLost, "stream cancelled before the terminal frame");
      } else if (defects_.contains(Defect::kCommitIncompleteStream)) {
        result.ok = true;  // defect: a clean end without the terminal frame counts as complete
      } else {
        fail(ErrorCode::kIncompleteStream, "stream ended without a terminal frame");
      }
      return result;
    }
    case TransportEnd::kConnectionLost:
      fail(ErrorCode::kConnectionLost, "connection lost before the terminal frame");
      return result;
    case TransportEnd::kIdleTimeout:
      clock_.sleep_s(idle_timeout_s_);
      fail(ErrorCode::kIdleTimeout,
           "no data for " + std::to_string(static_cast<int>(idle_timeout_s_)) + " s");
      return result;
    case TransportEnd::kConnectFailed:
      fail(ErrorCode::kConnectFailed, "connection failed");
      return result;
  }
  return result;
}

}  // namespace rut
