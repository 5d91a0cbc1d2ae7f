// The two turn consumers (see consumers.h).
#include "runtime_under_test/consumers.h"

namespace rut {

void AttemptBuffer::discard_failed_attempt(const DefectSet& defects) {
  if (!defects.contains(Defect::kKeepPartialText)) text.clear();
  if (!defects.contains(Defect::kKeepCallsOnRetry)) calls.clear();
}

// --- HeadlessConsumer -------------------------------------------------------------------------

void HeadlessConsumer::begin_turn() { buffer_.clear(); }

void HeadlessConsumer::on_content(const ContentEvent& event) { buffer_.text += event.text; }

void HeadlessConsumer::on_tool_call_request(const ToolCallRequestEvent& event) {
  buffer_.calls.push_back(event.call);
  scheduler_.on_streamed_call(buffer_.calls.back(), event.after_cancel);
}

void HeadlessConsumer::on_retry(const RetryEvent&) {
  // The failed attempt's text was never shown and its calls never run: drop both.
  buffer_.discard_failed_attempt(defects_);
}

void HeadlessConsumer::on_finished(const FinishedEvent& event) {
  if (event.calls_kept >= 0) buffer_.calls.resize(static_cast<std::size_t>(event.calls_kept));
  log_.shown_output += buffer_.text;
  log_.final_text = buffer_.text;
}

void HeadlessConsumer::on_error(const ErrorEvent&) { buffer_.clear(); }

CompletedTurn HeadlessConsumer::complete_turn() {
  CompletedTurn out;
  out.had_calls = !buffer_.calls.empty();
  out.responses = scheduler_.run_committed(buffer_.calls);
  buffer_.clear();
  return out;
}

// --- SubagentExecutor -------------------------------------------------------------------------

void SubagentExecutor::begin_turn() {
  pending_.clear();
  failed_ = false;
}

void SubagentExecutor::on_content(const ContentEvent& event) { pending_.text += event.text; }

void SubagentExecutor::on_tool_call_request(const ToolCallRequestEvent& event) {
  pending_.calls.push_back(event.call);
  scheduler_.on_streamed_call(pending_.calls.back(), event.after_cancel);
}

void SubagentExecutor::on_retry(const RetryEvent&) {
  // A retried attempt starts from scratch: its predecessor's batch and message are void.
  pending_.discard_failed_attempt(defects_);
}

void SubagentExecutor::on_finished(const FinishedEvent& event) {
  if (event.calls_kept >= 0) pending_.calls.resize(static_cast<std::size_t>(event.calls_kept));
  messages_.push_back(pending_.text);
  log_.shown_output += messages_.back();
  log_.final_text = messages_.back();
}

void SubagentExecutor::on_error(const ErrorEvent&) {
  failed_ = true;
  pending_.clear();
}

CompletedTurn SubagentExecutor::complete_turn() {
  CompletedTurn out;
  if (failed_) return out;
  std::vector<PendingCall> batch = std::move(pending_.calls);
  pending_.clear();
  out.had_calls = !batch.empty();
  out.responses = scheduler_.run_committed(batch);
  return out;
}

std::unique_ptr<IAgentConsumer> make_consumer(ConsumerKind kind, const DefectSet& defects,
                                              ToolScheduler& scheduler, RunLog& log) {
  if (kind == ConsumerKind::kSubagent) {
    return std::make_unique<SubagentExecutor>(defects, scheduler, log);
  }
  return std::make_unique<HeadlessConsumer>(defects, scheduler, log);
}

}  // namespace rut
