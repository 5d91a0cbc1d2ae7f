// One model turn as an event stream (gemini-cli's GeminiChat/Turn shape): attempts are sent until
// one completes or the retry coordinator stops; consumers see Content, ToolCallRequest, Retry,
// Finished and Error events. History gets the model content only when an attempt completes.
#pragma once

#include <optional>
#include <string>

#include "runtime_under_test/history.h"
#include "runtime_under_test/model_client.h"
#include "runtime_under_test/retry_coordinator.h"
#include "runtime_under_test/run_log.h"
#include "runtime_under_test/tool_scheduler.h"

namespace rut {

/// A text part of the current attempt.
struct ContentEvent {
  std::string text;
  int request_seq = 0;
  int attempt = 0;
};
/// A function call of the current attempt (not committed yet).
struct ToolCallRequestEvent {
  PendingCall call;
  int attempt = 0;
  /// The call arrived after the user cancelled the attempt (only a runtime that reads on past the
  /// cancel sees one: defect execute-after-cancel); the tool scheduler runs it at once.
  bool after_cancel = false;
};
/// The current attempt failed and another follows after `wait_s`: discard what it produced.
struct RetryEvent {
  int attempt = 0;          ///< index of the attempt that failed
  ErrorCode error = ErrorCode::kIncompleteStream;
  double wait_s = 0;        ///< virtual seconds before the next attempt
  std::string model;        ///< model of the next attempt
};
/// The current attempt completed and its content is committed, or (the continue design) it
/// failed and its delivered whole units are kept as the turn.
struct FinishedEvent {
  std::string reason;       ///< Gemini finish reason ("" under commit-incomplete-stream)
  bool cut = false;         ///< the turn is a failed attempt's kept units (continue)
  /// How many of the attempt's calls the kept turn holds, first ones first (-1: all). Only the
  /// drop-ran-call defect keeps fewer than were delivered.
  int calls_kept = -1;
};
/// The turn failed; the run ends with `code`.
struct ErrorEvent {
  std::string code;         ///< run error: "retries_exhausted", "non_retryable", …
  std::string message;
};

/// Receives a turn's events in order.
class ITurnConsumer {
 public:
  virtual ~ITurnConsumer() = default;
  virtual void on_content(const ContentEvent& event) = 0;
  virtual void on_tool_call_request(const ToolCallRequestEvent& event) = 0;
  virtual void on_retry(const RetryEvent& event) = 0;
  virtual void on_finished(const FinishedEvent& event) = 0;
  virtual void on_error(const ErrorEvent& event) = 0;
};

/// How a turn ended.
struct TurnOutcome {
  bool committed = false;
  std::string run_error;                ///< when !committed
  std::string message;                  ///< when !committed
  std::optional<ErrorCode> last_error;  ///< the last attempt's error, when !committed
  /// Continue: the committed turn is a failed attempt's kept units. The run goes on after its
  /// function responses (and the continuation prompt), unless `stop_error` is set.
  bool cut = false;
  /// Continue, a kept turn cut by a content-filter finish: the run ends with this error once the
  /// results of its calls that ran are in history ("content_filter").
  std::string stop_error;
};

class StreamingTurn {
 public:
  StreamingTurn(const Config& config, ModelClient& client, RetryCoordinator& coordinator,
                History& history, IClock& clock, RunLog& log)
      : config_(config), client_(client), coordinator_(coordinator), history_(history),
        clock_(clock), log_(log) {}

  /// Runs the turn: before each request the pairing guard filters history; between attempts
  /// waits via IClock::sleep_s. Transport exceptions propagate.
  [[nodiscard]] TurnOutcome run(ITurnConsumer& consumer);

 private:
  /// Continue: whether the failed attempt `result` (error `code`) is kept as the turn (POLICY.md
  /// "Recovery designs"); when it is, commits it and fills `outcome`.
  [[nodiscard]] bool keep_cut_turn(AttemptResult& result, ErrorCode code, int turn, int attempt, int seq,
                                   int& call_index, ITurnConsumer& consumer, TurnOutcome& outcome);
  /// Records the attempt's `parts` (ids given) as the turn's model content, reasoning included.
  void commit(std::vector<ModelPart> parts);
  /// A call of the attempt being read, as delivered (call `call_index` of request `seq`): admitted
  /// into the conversation's call ids (its history id, whether it replays an earlier call;
  /// docs/POLICY.md "Call ids") and logged; the pending call the consumer gets.
  [[nodiscard]] PendingCall admit(const FunctionCall& delivered, int seq, int call_index, int turn, int attempt);
  const Config& config_;
  ModelClient& client_;
  RetryCoordinator& coordinator_;
  History& history_;
  IClock& clock_;
  RunLog& log_;
};

}  // namespace rut
