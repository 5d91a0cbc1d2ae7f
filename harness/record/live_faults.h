// LiveFaultGate: the pure core of `hiccup proxy` (no sockets, no clock). It sits in a live
// upstream answer (SSE bytes as they arrive) and applies one scripted attempt's fault to it, at the
// same point `hiccup serve` would: after `after_event` events have been delivered whole (counted by
// decoding the frames with the reference runtime's codec), before the next frame: a cut (the first
// `bytes` bytes of that frame, then FIN), a disconnect, a reset, an end (the chunked terminator
// without the terminal event), an in-stream error (the format's own, mock::StreamEncoder), a
// malformed frame or a stall; and a content-filter finish (mock::FinishReason::kContentFilter in
// the attempt's events) in place of the live finish. Frames are forwarded whole, each as soon as
// it is complete.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mock_server/script.h"
#include "mock_server/wire_format.h"

namespace rut {
class ICodec;
class IStreamDecoder;
}  // namespace rut

namespace harness::record {

/// One thing the proxy does to the client connection, in order: wait `pause_ms` real
/// milliseconds, send `bytes` (as one chunk, when not empty), then `end`.
struct GateStep {
  enum class End {
    kGoOn,       ///< keep relaying
    kFin,        ///< close the connection without the chunked terminator (FIN)
    kReset,      ///< abort the connection with RST
    kTerminate,  ///< send the chunked terminator and stop relaying (the answer ends cleanly)
  };
  double pause_ms = 0;
  std::string bytes;
  End end = End::kGoOn;
};

/// Applies `attempt`'s fault (and content-filter finish) to one live streamed answer in `format`.
class LiveFaultGate {
 public:
  /// `ctx` numbers the answer as the server would (the in-stream error and ids); `stall_ms_per_s`
  /// real milliseconds per virtual second of a stall; `max_delay_ms` caps delay_ms / idle_ms
  /// (-1: the real values). `timing`: the scenario's, for the attempt's event timing: event k's
  /// `delay_s` (times timing.scale, capped at timing.max_delay_s: mock::event_delay_s), at
  /// `stall_ms_per_s`, is a pause before the live frame that delivers the answer's event k (on top of
  /// the live model's own latency), as `serve` plays it before its own event k.
  LiveFaultGate(const mock::WireFormat& format, const rut::ICodec& codec, const mock::Attempt& attempt,
                const mock::ResponseContext& ctx, double stall_ms_per_s, int max_delay_ms,
                const mock::Script::Timing& timing = {});

  /// Whether `attempt`'s events carry any timing that `timing` plays (a gate is needed to play it).
  static bool has_timing(const mock::Attempt& attempt, const mock::Script::Timing& timing);
  ~LiveFaultGate();

  /// The next bytes of the upstream body: the steps for the client now (complete frames only).
  std::vector<GateStep> feed(std::string_view bytes);
  /// The upstream answer ended cleanly: the rest, and a fault due after all events.
  std::vector<GateStep> finish();
  /// Whether the gate stopped relaying (a fault ended the answer): the upstream may be dropped.
  bool done() const { return done_; }
  /// What the gate did, for the journal: "cut after 1 event", "content_filter in place of the
  /// live finish", "" (nothing applied yet).
  const std::string& applied() const { return applied_; }
  /// Events delivered whole to the client so far.
  int delivered() const { return delivered_; }
  /// The event timing played so far, in virtual seconds (the pauses are this × stall_ms_per_s ms).
  double delayed_s() const { return delayed_s_; }

 private:
  void frame(const std::string& frame, std::vector<GateStep>& out);
  void apply_fault(const std::string& next_frame, std::vector<GateStep>& out);

  const mock::WireFormat& format_;
  std::unique_ptr<rut::IStreamDecoder> decoder_;
  std::unique_ptr<mock::StreamEncoder> encoder_;
  std::optional<mock::Fault> fault_;
  bool content_filter_ = false;
  double stall_ms_per_s_;
  int max_delay_ms_;
  std::string buffer_;
  int delivered_ = 0;
  std::vector<double> delays_s_;  ///< event k's delay as played (virtual seconds), per scripted event
  double delayed_s_ = 0;
  bool done_ = false;
  std::string applied_;
};

}  // namespace harness::record
