// LiveFaultGate; see live_faults.h.
#include "harness/record/live_faults.h"

#include <algorithm>
#include <climits>

#include "mock_server/faults.h"
#include "runtime_under_test/codec.h"
#include "runtime_under_test/sse_decoder.h"

namespace harness::record {

namespace {

/// The end of the first complete SSE frame in `buf` (just past its blank line); npos when none.
std::size_t frame_end(const std::string& buf) {
  const std::size_t lf = buf.find("\n\n");
  const std::size_t crlf = buf.find("\r\n\r\n");
  const std::size_t a = lf == std::string::npos ? std::string::npos : lf + 2;
  const std::size_t b = crlf == std::string::npos ? std::string::npos : crlf + 4;
  return std::min(a, b);
}

}  // namespace

LiveFaultGate::LiveFaultGate(const mock::WireFormat& format, const rut::ICodec& codec, const mock::Attempt& attempt,
                             const mock::ResponseContext& ctx, double stall_ms_per_s, int max_delay_ms,
                             const mock::Script::Timing& timing)
    : format_(format),
      decoder_(codec.stream_decoder()),
      encoder_(format.stream_encoder(ctx)),
      fault_(attempt.fault),
      stall_ms_per_s_(stall_ms_per_s),
      max_delay_ms_(max_delay_ms) {
  for (const mock::Event& e : attempt.events) {
    if (const auto* f = std::get_if<mock::FinishEvent>(&e)) {
      content_filter_ = content_filter_ || f->reason == mock::FinishReason::kContentFilter;
    }
    delays_s_.push_back(mock::event_delay_s(e, timing));
  }
}

bool LiveFaultGate::has_timing(const mock::Attempt& attempt, const mock::Script::Timing& timing) {
  return std::any_of(attempt.events.begin(), attempt.events.end(),
                     [&](const mock::Event& e) { return mock::event_delay_s(e, timing) > 0; });
}

LiveFaultGate::~LiveFaultGate() = default;

std::vector<GateStep> LiveFaultGate::feed(std::string_view bytes) {
  std::vector<GateStep> out;
  if (done_) return out;
  buffer_.append(bytes);
  for (std::size_t end = frame_end(buffer_); end != std::string::npos && !done_; end = frame_end(buffer_)) {
    const std::string f = buffer_.substr(0, end);
    buffer_.erase(0, end);
    frame(f, out);
  }
  return out;
}

std::vector<GateStep> LiveFaultGate::finish() {
  std::vector<GateStep> out;
  if (done_) return out;
  if (!buffer_.empty()) {
    const std::string rest = std::move(buffer_);
    buffer_.clear();
    frame(rest, out);
  }
  if (!done_ && fault_) apply_fault("", out);  // a fault after all events: before the terminator
  if (!done_) out.push_back(GateStep{0, "", GateStep::End::kTerminate});
  done_ = true;
  return out;
}

void LiveFaultGate::apply_fault(const std::string& next_frame, std::vector<GateStep>& out) {
  const mock::Fault fault = *fault_;
  fault_.reset();
  const auto cap = [&](int ms) { return max_delay_ms_ >= 0 ? std::min(ms, max_delay_ms_) : ms; };
  const std::string where = " after " + std::to_string(delivered_) + " event(s)";
  applied_ += (applied_.empty() ? "" : ", ") + std::string(mock::fault_name(fault)) + where;
  if (const auto* c = std::get_if<mock::CutFault>(&fault)) {
    out.push_back(GateStep{0, next_frame.substr(0, static_cast<std::size_t>(std::max(c->bytes, 0))), GateStep::End::kFin});
    done_ = true;
  } else if (const auto* d = std::get_if<mock::DisconnectFault>(&fault)) {
    out.push_back(GateStep{static_cast<double>(cap(d->delay_ms)), "", GateStep::End::kFin});
    done_ = true;
  } else if (const auto* r = std::get_if<mock::ResetFault>(&fault)) {
    out.push_back(GateStep{static_cast<double>(cap(r->idle_ms)), "", GateStep::End::kReset});
    done_ = true;
  } else if (std::holds_alternative<mock::EndFault>(fault)) {
    out.push_back(GateStep{0, "", GateStep::End::kTerminate});
    done_ = true;
  } else if (const auto* e = std::get_if<mock::ErrorEventFault>(&fault)) {
    out.push_back(GateStep{0, encoder_->error_event(e->status), GateStep::End::kTerminate});
    done_ = true;
  } else if (std::holds_alternative<mock::MalformedFault>(fault)) {
    out.push_back(GateStep{0, encoder_->malformed_frame(), GateStep::End::kGoOn});
  } else if (const auto* s = std::get_if<mock::StallFault>(&fault)) {
    out.push_back(GateStep{std::max(0.0, s->seconds) * stall_ms_per_s_, "", GateStep::End::kGoOn});
  }
}

void LiveFaultGate::frame(const std::string& f, std::vector<GateStep>& out) {
  if (fault_) {
    const auto after = std::visit([](const auto& x) { return x.after_event; }, *fault_);
    if (after && delivered_ >= *after) apply_fault(f, out);
    if (done_) return;
  }
  rut::SseDecoder sse;
  std::vector<rut::SseFrame> frames;
  sse.feed(f, frames);
  sse.finish(frames);
  int events = 0;
  bool finish = false;
  for (const rut::SseFrame& sf : frames) {
    try {
      const rut::DecodedChunk d = decoder_->on_frame(sf);
      events += static_cast<int>(d.parts.size());
      finish = finish || d.finish.has_value();
    } catch (const std::exception&) {
      // Foreign bytes: a frame the decoder cannot read is forwarded as it is.
    }
  }
  // Event timing: the delays of the events this frame delivers (k = delivered_ ...), before it.
  const int delivers = events + (finish ? 1 : 0);
  double delay_s = 0;
  for (int k = delivered_; k < delivered_ + delivers && k < static_cast<int>(delays_s_.size()); ++k) {
    delay_s += delays_s_[static_cast<std::size_t>(k)];
  }
  delayed_s_ += delay_s;
  const double pause_ms = delay_s * stall_ms_per_s_;
  if (finish && content_filter_) {
    // The live finish becomes the scripted content-filter finish (the parts of its frame, if any,
    // go out first only where the finish travels alone: the frame is replaced whole).
    std::string bytes;
    for (std::string& unit : encoder_->event_units(mock::Event{mock::FinishEvent{mock::FinishReason::kContentFilter}}, 0)) {
      bytes += unit;
    }
    applied_ += (applied_.empty() ? "" : ", ") + std::string("content_filter in place of the live finish");
    out.push_back(GateStep{pause_ms, bytes, GateStep::End::kTerminate});
    done_ = true;
    return;
  }
  out.push_back(GateStep{pause_ms, f, GateStep::End::kGoOn});
  delivered_ += delivers;
}

}  // namespace harness::record
