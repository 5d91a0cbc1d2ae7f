// SessionRecorder: the pure core of `hiccup record` (no sockets, no clock). The recording proxy
// (recording_proxy.h) hands it each model request and the bytes of its upstream answer as they
// arrive; it decodes them with the reference runtime's codec for the request's wire format
// (runtime_under_test/codec.h) and, at the end, writes a scenario file (docs/SCENARIO-FORMAT.md)
// that plays the session back: turns matched as the script engine matches them (turn index =
// model contents in the request's history, mock::turn_index), attempts in arrival order, events as
// delivered, the fault an attempt met upstream, ids left to the server (normalized), the prompt.
// Request headers never reach it, so credentials cannot reach the file. Upstream bytes are foreign
// input: nothing in them throws out of here (fuzz/record_fuzz.cpp).
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace harness::record {

/// How an upstream answer ended, as the proxy saw it.
enum class AnswerEnd {
  kComplete,        ///< the whole answer arrived (Content-Length reached, chunked terminator)
  kConnectionLost,  ///< the connection closed or reset before the answer was complete
  /// The client closed its connection before the answer was complete: the proxy stopped reading
  /// upstream there. Recorded as what the client got (a `disconnect`, or a `cut` when part of a
  /// frame had reached it, after the events delivered to it), and said so in the scenario's
  /// description and notes().
  kClientGone,
  /// The proxy was stopped (SIGINT/SIGTERM, RecordingProxy::stop) before the answer was complete:
  /// recorded, like kClientGone, as what the client got, and said so in the description and notes().
  kProxyStopped,
  kNoAnswer,        ///< no status line arrived (upstream unreachable): the request is not recorded
};

/// One request/answer exchange being recorded. Created by SessionRecorder::begin; the proxy
/// calls head(), then body() any number of times, then end(), all from one thread. Never throws.
class Exchange {
 public:
  virtual ~Exchange() = default;
  /// The upstream answer's HTTP status and headers (names lower-case).
  virtual void head(int status, const std::vector<std::pair<std::string, std::string>>& headers) = 0;
  /// The next bytes of the answer's body (chunked framing already removed), as they arrived
  /// (the proxy hands them over once they have been sent on to the client).
  virtual void body(std::string_view bytes) = 0;
  /// The answer ended `how`.
  virtual void end(AnswerEnd how) = 0;
};

/// Summary of a recording, for the command's closing line.
struct RecordingStats {
  std::size_t requests = 0;   ///< model requests recorded
  std::size_t turns = 0;      ///< turns in the scenario
  std::size_t faults = 0;     ///< attempts recorded with an HTTP error status or a fault
};

/// Collects exchanges of one session and writes them as a scenario. Thread-safe: begin() and
/// scenario() may be called from any thread; each Exchange belongs to the thread that began it.
class SessionRecorder {
 public:
  /// A monotonic clock in seconds (any origin), for timing.
  using Clock = std::function<double()>;
  SessionRecorder();
  /// Records each event's timing (`delay_s`, SCENARIO-FORMAT.md "Event timing") read from `clock`:
  /// the seconds, rounded to the millisecond, from the request's start (its first event) or from
  /// the previous event's arrival until the bytes that complete the event arrived (events of one
  /// read: the first carries the delay). A non-streaming answer's first event carries the whole
  /// answer's time. Null: no timing (as the default constructor). The proxy passes the steady
  /// clock; tests pass their own.
  explicit SessionRecorder(Clock clock);
  ~SessionRecorder();
  SessionRecorder(const SessionRecorder&) = delete;
  SessionRecorder& operator=(const SessionRecorder&) = delete;

  /// Starts recording the request `method` `target` (path and query) with `body`; nullptr when it
  /// is not recorded: not a POST to a model path of a format hiccup speaks (mock::format_for_path),
  /// or in another format than the session's first request (a note says so), or a body no format
  /// can decode. The returned exchange lives as long as the recorder.
  Exchange* begin(std::string_view method, std::string_view target, std::string_view body);

  /// The scenario (schema 1) named `name` (`[a-z0-9][a-z0-9-]*`; other characters become '-')
  /// with every exchange that has ended. Fields in SCENARIO-FORMAT.md's order. With no recorded
  /// request, a scenario with no turns (which lint refuses: the caller says so).
  nlohmann::ordered_json scenario(const std::string& name) const;

  RecordingStats stats() const;

  /// Notes for the user (requests not recorded and why, answers the client left, turns never
  /// requested), in order. "request N" is the request's number in arrival order among every
  /// request begin() was handed (recorded or not, model request or not), from 0 as `hiccup
  /// serve`'s journal indexes requests, so two notes never name one number for two requests and a
  /// replay's journal entry of the same request has the same index.
  std::vector<std::string> notes() const;

 private:
  struct State;
  mutable std::mutex mu_;
  std::unique_ptr<State> state_;
};

/// The JSON object a prefix of a call's argument JSON stands for (what a cut inside the arguments
/// leaves): an open string closed, a dangling comma dropped, a key without its value given null,
/// the open brackets closed; else the longest prefix ending after an opening bracket or before a
/// comma that closes into an object; else {}. `{"target": "stag` → {"target": "stag"};
/// `{"a": 1, "b` → {"a": 1}. Never throws.
nlohmann::ordered_json object_from_partial_json(std::string_view text);

/// `text` as a scenario name: lower-case letters, digits and '-', starting with a letter or digit;
/// "recorded-session" when nothing is left.
std::string scenario_name_from(std::string_view text);

}  // namespace harness::record
