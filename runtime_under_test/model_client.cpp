// One model attempt (see model_client.h).
#include "runtime_under_test/model_client.h"

#include "runtime_under_test/sse_decoder.h"

namespace rut {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kHttp429: return "http_429";
    case ErrorCode::kQuotaExhausted: return "quota_exhausted";
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
                         double idle_timeout_s, std::vector<std::string> tool_names,
                         const ICodec* codec, bool stream)
    : transport_(transport), clock_(clock), defects_(defects), idle_timeout_s_(idle_timeout_s),
      tool_names_(std::move(tool_names)), codec_(codec ? *codec : *codec_for("gemini")),
      stream_(stream) {}

HttpRequest ModelClient::make_request(const nlohmann::json& contents,
                                      std::string_view model) const {
  HttpRequest req = codec_.make_request(contents, model, tool_names_, stream_);
  // defect no-idle-timeout: the stream is read without any idle limit (waited on forever)
  req.idle_timeout_s = defects_.contains(Defect::kNoIdleTimeout) ? kNoIdleLimit : idle_timeout_s_;
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
                               const std::function<void(const ModelPart&)>& on_part,
                               const std::function<void(int)>& on_call_fragment) {
  AttemptResult result;
  cancel_requested_ = false;
  bool decided = false;
  std::string body;  // kept for error answers and non-streaming bodies
  SseDecoder sse;
  std::vector<SseFrame> frames;
  const std::unique_ptr<IStreamDecoder> decoder = codec_.stream_decoder();

  auto fail = [&](ErrorCode code, std::string message) {
    result.ok = false;
    result.error = code;
    result.message = std::move(message);
    decided = true;
    if (stream_) result.open_call = decoder->repaired_open_call(sse.unterminated_data());
  };

  // The user cancelled from a callback: the attempt ends here, nothing after it handed out.
  auto end_cancelled = [&] {
    result.ok = false;
    result.cancelled = true;
    result.message = "cancelled by the user";
    decided = true;
  };

  // Hands out one decoded chunk's parts and decides on its finish or error.
  auto handle_chunk = [&](DecodedChunk chunk) {
    if (chunk.undecodable) {
      fail(ErrorCode::kUndecodableFrame, "undecodable frame");
      return;
    }
    if (chunk.stream_error) {
      if (defects_.contains(Defect::kIgnoreErrorEvent)) {
        // defect: the error frame is read as the end of the answer; what arrived is committed
        result.ok = true;
        result.finish_reason = "error";
        decided = true;
        return;
      }
      fail(ErrorCode::kStreamError, "in-stream error: " + *chunk.stream_error);
      return;
    }
    for (ModelPart& p : chunk.parts) {
      if (p.call && defects_.contains(Defect::kCollapseParallelCalls)) {
        // defect: calls are keyed by their position in the frame, not by the provider's index:
        // a later call lands on an earlier one's slot and overwrites its arguments; it is never
        // handed out, so the earlier call runs as delivered and history records the overwrite
        bool merged = false;
        for (ModelPart& q : result.parts) {
          if (q.call && q.position_in_frame == p.position_in_frame) {
            q.call->args = p.call->args;
            merged = true;
            break;
          }
        }
        if (merged) continue;
      }
      on_part(p);
      result.parts.push_back(std::move(p));
      if (cancel_requested_) {
        end_cancelled();
        return;  // stop reading: nothing after the cancel is handed out
      }
    }
    if (chunk.open_call_fragments && on_call_fragment) {
      on_call_fragment(*chunk.open_call_fragments);
      if (cancel_requested_) {
        end_cancelled();
        return;  // the open call is dropped with the rest of the stream
      }
    }
    if (!chunk.finish) return;
    result.finish_reason = chunk.finish_reason;
    decided = true;
    switch (*chunk.finish) {
      case FinishClass::kStop:
        result.ok = true;
        break;
      case FinishClass::kMaxTokens:
        result.ok = true;
        if (stream_) result.open_call = decoder->repaired_open_call(sse.unterminated_data());
        if (defects_.contains(Defect::kTruncationAsComplete)) {
          // defect: the token limit's finish is read as a stop: nothing says the answer is cut, and
          // the call it cut is taken as delivered (its arguments repaired)
          if (result.open_call) {
            ModelPart p;
            p.call = std::move(*result.open_call);
            result.open_call.reset();
            on_part(p);
            result.parts.push_back(std::move(p));
          }
        } else {
          result.truncated = true;
        }
        break;
      case FinishClass::kContentFilter:
        if (defects_.contains(Defect::kContentFilterAsSuccess)) {
          result.ok = true;  // defect: a content filter ends the turn like a stop
        } else {
          fail(ErrorCode::kContentFilter, "content filter: finish " + chunk.finish_reason);
        }
        break;
      case FinishClass::kMalformedCall:
        if (defects_.contains(Defect::kMalformedCallAsStop)) {
          result.ok = true;  // defect: a malformed-call finish ends the turn like a stop
        } else {
          fail(ErrorCode::kMalformedCall, "finish " + chunk.finish_reason);
        }
        break;
      case FinishClass::kOther:
        fail(ErrorCode::kIncompleteStream, "unexpected finish reason " + chunk.finish_reason);
        break;
    }
  };

  // Handles decoded frames; returns false once the attempt is decided.
  auto handle_frames = [&]() -> bool {
    for (const SseFrame& f : frames) {
      if (decided) break;
      DecodedChunk chunk = decoder->on_frame(f);
      if (chunk.undecodable) {
        fail(ErrorCode::kUndecodableFrame, "undecodable frame: " + f.data.substr(0, 80));
        break;
      }
      handle_chunk(std::move(chunk));
    }
    frames.clear();
    return !decided;
  };

  TransportResult tr = transport_.post(request, [&](std::string_view bytes) -> bool {
    if (decided) return false;
    // ITransport reports the status only at the end, so keep the bytes in case it is an error
    // (or, without streaming, the whole answer)
    if (!stream_ || body.size() < 65536) body.append(bytes);
    if (!stream_) return true;
    sse.feed(bytes, frames);
    return handle_frames();
  });
  result.status = tr.status;

  if (tr.status != 0) {
    if (auto code = status_error(tr.status)) {
      // A status failure: the body is an error envelope, whatever the stream decoder made of it.
      result = AttemptResult{};
      result.status = tr.status;
      const ProviderError e = codec_.parse_error(body, tr.headers);
      result.error = *code == ErrorCode::kHttp429 && e.daily_quota ? ErrorCode::kQuotaExhausted : *code;
      result.message = "HTTP " + std::to_string(tr.status) + (e.message.empty() ? "" : " " + e.message);
      result.retry_after_s = e.retry_after_s;
      return result;
    }
  }
  if (decided) return result;

  // An ended stream that leaves a call's arguments open.
  auto repair_open_call = [&]() -> bool {
    if (!stream_ || !defects_.contains(Defect::kExecutePartialArgs)) return false;
    // defect: the cut call is repaired (its arguments closed) and the turn taken as complete
    auto call = decoder->repaired_open_call(sse.unterminated_data());
    if (!call) return false;
    ModelPart p;
    p.call = std::move(*call);
    on_part(p);
    result.parts.push_back(std::move(p));
    result.ok = true;
    result.error.reset();
    result.finish_reason = "repaired";
    return true;
  };

  switch (tr.end) {
    case TransportEnd::kComplete:
    case TransportEnd::kCancelled: {
      if (!stream_ && tr.end == TransportEnd::kComplete) {
        handle_chunk(codec_.decode_body(body));
        if (decided) return result;
        fail(ErrorCode::kIncompleteStream, "the answer holds no finish");
        return result;
      }
      if (repair_open_call()) return result;
      sse.finish(frames);
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
      if (repair_open_call()) return result;
      fail(ErrorCode::kConnectionLost, "connection lost before the terminal frame");
      return result;
    case TransportEnd::kIdleTimeout:
      clock_.sleep_s(idle_timeout_s_);
      // "60 s", "0.5 s" (a whole number without a fraction, as before; a fraction was cut to 0)
      fail(ErrorCode::kIdleTimeout,
           "no data for " +
               (idle_timeout_s_ == static_cast<double>(static_cast<long long>(idle_timeout_s_))
                    ? std::to_string(static_cast<long long>(idle_timeout_s_))
                    : nlohmann::json(idle_timeout_s_).dump()) +
               " s");
      return result;
    case TransportEnd::kConnectFailed:
      fail(ErrorCode::kConnectFailed, "connection failed");
      return result;
  }
  return result;
}

}  // namespace rut
