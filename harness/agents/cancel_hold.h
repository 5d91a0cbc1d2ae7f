// The user's cancel for an external agent (issue 36): the mock server holds the answer at the
// scenario's interrupt point and says when it got there, so the runner can press Ctrl-C (SIGINT to
// the agent's process group) at an event of the journal, not at a time. The hold is a `stall` the
// scenario does not script, added to the interrupted attempt as it is played; the script engine
// and the formats know nothing of it (a Responder wrapped around the ScriptEngine). No clock and
// no socket here: the runner (agent_runner.cpp, the I/O shell) waits and signals.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>

#include "harness/scenario.h"
#include "mock_server/script_engine.h"

namespace harness::agents {

/// Why `scenario`'s interrupt cannot be played against an external agent (a lower-case message
/// naming its JSON pointer), or nullopt when it can (or it has none). Playable:
/// - `after_event`: the stream is held right after that event (an interrupted attempt that scripts
///   a fault of its own is not: the hold is that attempt's one fault slot); with `after_fragment`,
///   inside that call, after its start and that many argument fragments;
/// - `after_calls: k` (the turn's calls running the ledger command): the cancel goes while call k
///   (0-based) runs: once k + 1 ledger lines of the turn's calls are written (a call's line is
///   written as its command begins; give call k a `duration_s` so that it is still running). The
///   reference runtime never starts call k; a black box is seen only once a call began, so call k
///   has begun (and counts as an execution) when the cancel goes;
/// - `before_attempt: a`: the cancel goes once the answer of the turn's attempt a - 1 has ended
///   (the agent is in its backoff; a Retry-After longer than the runner's 0.3 s settle keeps it
///   there).
std::optional<std::string> cancel_hold_problem(const Scenario& scenario);

/// Holds the stream after event `after_event` of attempt `attempt` of turn `turn` the first time
/// that attempt is played, or (before_attempt a) watches the first answer played as attempt a - 1
/// of the turn, and reports when the server has reached that point. `after_calls` is the runner's
/// to watch (the ledger): reached() stays false. Thread-safe (the server calls it from its
/// threads; the runner polls reached()).
class CancelHold final : public mock::Responder {
 public:
  /// `interrupt` must be playable (cancel_hold_problem says nothing). An `after_event` hold
  /// lasts `hold_s` seconds of the server's stall scale at most (the agent's own timeout: it ends
  /// earlier when the agent hangs up, as a cancelled client does, or the server stops).
  CancelHold(const Interrupt& interrupt, double hold_s);

  /// Serves every request through `engine` (which must outlive this object); call before the
  /// server starts.
  void serve(mock::Responder& engine) { engine_ = &engine; }

  /// Call from the ScriptEngine's AttemptRewriter for every attempt played: the interrupted
  /// attempt, the first time, gets the hold (a StallFault right after event `after_event`).
  void rewrite(int turn, int attempt, mock::Attempt& played);

  /// after_event: the server has written every event up to the interrupt point (reported as it
  /// sends the write carrying the last of them) and holds the stream now; before_attempt: the
  /// watched attempt's answer ended. Never reset.
  bool reached() const { return reached_.load(); }
  /// The journal index of the held (or watched) request (valid once reached()).
  std::size_t held_request() const;

  mock::Plan respond(const mock::Request& request) override;
  void settle(std::size_t journal_index, const mock::Delivery& delivery) override;
  void refuse(std::size_t journal_index, int status, const std::string& reason) override;
  std::string error_provider() const override { return engine_ != nullptr ? engine_->error_provider() : ""; }

 private:
  Interrupt interrupt_;
  double hold_s_;
  mock::Responder* engine_ = nullptr;
  mutable std::mutex mu_;
  bool armed_ = false;                  // the interrupted attempt got its hold
  std::optional<std::size_t> held_;     // its request's journal index
  std::size_t hold_action_ = 0;         // the StallAction's index in that plan
  std::atomic<bool> reached_{false};
};

}  // namespace harness::agents
