// The two consumers of a streaming turn's events, modelled on gemini-cli's non-interactive CLI
// (HeadlessConsumer) and its subagent executor (SubagentExecutor). Each buffers an attempt's text
// and calls, handles Retry explicitly by discarding the failed attempt's buffer, shows text and
// executes calls only once the turn commits.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime_under_test/streaming_turn.h"

namespace rut {

/// What an attempt produced so far: its text and its calls (in stream order).
struct AttemptBuffer {
  std::string text;
  std::vector<PendingCall> calls;
  void clear() {
    text.clear();
    calls.clear();
  }
  /// The Retry handling shared by both consumers: drop the failed attempt's text and calls
  /// (defects keep-partial-text and keep-calls-on-retry keep them).
  void discard_failed_attempt(const DefectSet& defects);
};

/// A committed turn, processed: whether it asked for calls and their function responses.
struct CompletedTurn {
  bool had_calls = false;
  std::vector<nlohmann::json> responses;  ///< functionResponse parts, in call order
};

/// A turn consumer that the agent loop drives turn by turn.
class IAgentConsumer : public ITurnConsumer {
 public:
  /// A new turn starts: the buffer is empty.
  virtual void begin_turn() = 0;
  /// After Finished: execute the committed calls and return their responses.
  [[nodiscard]] virtual CompletedTurn complete_turn() = 0;
};

/// The non-interactive CLI: prints a turn's text when it commits, then runs its tool calls.
class HeadlessConsumer final : public IAgentConsumer {
 public:
  HeadlessConsumer(const DefectSet& defects, ToolScheduler& scheduler, RunLog& log)
      : defects_(defects), scheduler_(scheduler), log_(log) {}
  void begin_turn() override;
  void on_content(const ContentEvent& event) override;
  void on_tool_call_request(const ToolCallRequestEvent& event) override;
  void on_retry(const RetryEvent& event) override;
  void on_finished(const FinishedEvent& event) override;
  void on_error(const ErrorEvent& event) override;
  [[nodiscard]] CompletedTurn complete_turn() override;

 private:
  const DefectSet& defects_;
  ToolScheduler& scheduler_;
  RunLog& log_;
  AttemptBuffer buffer_;
};

/// A subagent: collects the turn's function calls into a batch, reports its output message when
/// the turn commits, and hands the batch to the scheduler.
class SubagentExecutor final : public IAgentConsumer {
 public:
  SubagentExecutor(const DefectSet& defects, ToolScheduler& scheduler, RunLog& log)
      : defects_(defects), scheduler_(scheduler), log_(log) {}
  void begin_turn() override;
  void on_content(const ContentEvent& event) override;
  void on_tool_call_request(const ToolCallRequestEvent& event) override;
  void on_retry(const RetryEvent& event) override;
  void on_finished(const FinishedEvent& event) override;
  void on_error(const ErrorEvent& event) override;
  [[nodiscard]] CompletedTurn complete_turn() override;

 private:
  const DefectSet& defects_;
  ToolScheduler& scheduler_;
  RunLog& log_;
  AttemptBuffer pending_;          // this turn's current attempt
  std::vector<std::string> messages_;  // committed outputs, one per turn
  bool failed_ = false;
};

/// The consumer `kind` names.
std::unique_ptr<IAgentConsumer> make_consumer(ConsumerKind kind, const DefectSet& defects,
                                              ToolScheduler& scheduler, RunLog& log);

}  // namespace rut
