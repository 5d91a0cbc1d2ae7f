// One model turn as an event stream (see streaming_turn.h).
#include "runtime_under_test/streaming_turn.h"

#include "runtime_under_test/pairing_guard.h"

namespace rut {

using nlohmann::json;

TurnOutcome StreamingTurn::run(ITurnConsumer& consumer) {
  coordinator_.start_turn();
  const int turn = history_.model_turns();
  std::vector<ModelPart> failed_calls;  // the calls the last failed attempt of this turn delivered
  while (true) {
    if (!config_.defects.contains(Defect::kNoPairingGuard)) {
      const int dropped = apply_pairing_guard(history_.mutable_contents());
      if (dropped > 0) log_.add({{"type", "guard"}, {"turn", turn}, {"dropped", dropped}});
    }
    const int attempt = coordinator_.attempt();
    const int seq = log_.requests;
    HttpRequest request = client_.make_request(history_.contents(), coordinator_.model());
    log_.add({{"type", "request"},
              {"seq", seq},
              {"turn", turn},
              {"attempt", attempt},
              {"model", coordinator_.model()}});
    ++log_.requests;

    int call_index = 0;
    int part_index = 0;
    history_.call_ids().begin_attempt();
    const std::optional<UserInterrupt>& cut = config_.interrupt;
    const bool cancel_here = cut && cut->after_event && !log_.interrupted && cut->turn == turn &&
                             cut->attempt == attempt;
    bool read_past_cancel = false;  // only under execute-after-cancel
    auto user_cancels = [&] {
      log_.interrupted = true;
      if (config_.defects.contains(Defect::kExecuteAfterCancel)) {
        // defect: the cancel only raises a flag the stream reader never checks: the stream is
        // read to its end and every call that arrives after the cancel goes to the streaming
        // tool executor, which runs it
        read_past_cancel = true;
      } else {
        client_.cancel();  // the user cancels: stop reading this stream now
      }
    };
    // Inside call `after_event`'s arguments: parts 0..after_event - 1 are in, the call is open.
    std::function<void(int)> on_call_fragment;
    if (cancel_here && cut->after_fragment) {
      on_call_fragment = [&](int fragments) {
        if (!log_.interrupted && part_index == *cut->after_event && fragments == *cut->after_fragment) user_cancels();
      };
    }
    AttemptResult result = client_.run(request, [&](const ModelPart& part) {
      if (part.reasoning) {
        // Reasoning is neither shown nor run: it waits in the attempt's parts for the commit, and
        // does not count among the parts an interrupt's after_event counts (text and calls).
        log_.add({{"type", "reasoning"}, {"text", part.reasoning->text}, {"seq", seq}, {"turn", turn},
                  {"attempt", attempt}});
        return;
      }
      if (part.text) {
        log_.add({{"type", "content"}, {"text", *part.text}, {"seq", seq}, {"turn", turn},
                  {"attempt", attempt}});
        consumer.on_content({*part.text, seq, attempt});
      } else if (part.call) {
        consumer.on_tool_call_request({admit(*part.call, seq, call_index, turn, attempt), attempt, read_past_cancel});
        ++call_index;
      }
      if (cancel_here && !cut->after_fragment && part_index == *cut->after_event) user_cancels();
      ++part_index;
    }, on_call_fragment);

    if (result.cancelled || read_past_cancel) {
      // The uncommitted turn is dropped whole: its text is not shown, its calls never run.
      int calls = 0;
      for (const ModelPart& p : result.parts) calls += p.call ? 1 : 0;
      if (calls > 0 && config_.defects.contains(Defect::kOrphanCallAfterCancel)) {
        history_.commit_model_turn(result.parts);  // defect: the partial turn's calls stay, unanswered
      }
      std::string message = "cancelled by the user during turn " + std::to_string(turn) + ", attempt " +
                            std::to_string(attempt) +
                            (cut->after_fragment ? ", inside part " + std::to_string(*cut->after_event) + " after " +
                                                       std::to_string(*cut->after_fragment) + " argument fragment(s)"
                                                 : ", after part " + std::to_string(*cut->after_event));
      json cancel = {{"type", "cancel"}, {"turn", turn}, {"attempt", attempt}, {"seq", seq},
                     {"after_event", *cut->after_event}, {"cancelled_calls", calls}};
      if (cut->after_fragment) cancel["after_fragment"] = *cut->after_fragment;
      log_.add(std::move(cancel));
      consumer.on_error({"cancelled", message});
      return {false, "cancelled", message, std::nullopt};
    }

    if (result.ok) {
      history_.give_history_ids(result.parts);
      if (!failed_calls.empty() && config_.defects.contains(Defect::kDuplicateCallIds)) {
        // defect: the failed attempt's calls stay in the turn, and the retry's calls take their
        // ids by position, so the committed turn repeats an id
        std::vector<ModelPart> parts = failed_calls;
        std::size_t k = 0;
        for (ModelPart p : result.parts) {
          if (p.call && k < failed_calls.size()) p.call->id = failed_calls[k++].call->id;
          parts.push_back(std::move(p));
        }
        result.parts = std::move(parts);
      }
      commit(result.parts);
      log_.truncated = result.truncated;
      json finished = {{"type", "finished"}, {"reason", result.finish_reason}, {"turn", turn}, {"attempt", attempt}};
      if (result.truncated) {
        // POLICY.md "Truncation": the answer is cut; a call the limit cut is dropped, never run.
        finished["truncated"] = true;
        if (result.open_call) finished["dropped_call"] = result.open_call->name;
      }
      log_.add(std::move(finished));
      log_.add({{"type", "commit"}, {"turn", turn}, {"seq", seq}});
      consumer.on_finished({result.finish_reason});
      return {true, "", "", std::nullopt};
    }

    const ErrorCode code = result.error.value_or(ErrorCode::kIncompleteStream);
    if (config_.recovery == Recovery::kContinue && config_.stream) {
      TurnOutcome kept;
      if (keep_cut_turn(result, code, turn, attempt, seq, call_index, consumer, kept)) return kept;
    }
    std::vector<ModelPart> calls;
    for (const ModelPart& p : result.parts) {
      if (p.call) calls.push_back(p);
    }
    if (!calls.empty()) failed_calls = std::move(calls);
    RetryDecision decision = coordinator_.on_failure(result);
    if (!decision.retry) {
      std::string message = std::string(error_code_name(code)) + ": " + result.message +
                            " (turn " + std::to_string(turn) + ", attempt " +
                            std::to_string(attempt) + ")";
      log_.add({{"type", "error"}, {"code", decision.run_error}, {"message", message},
                {"attempt_error", error_code_name(code)}, {"turn", turn}, {"attempt", attempt}});
      consumer.on_error({decision.run_error, message});
      return {false, decision.run_error, message, code};
    }
    log_.add({{"type", "retry"},
              {"turn", turn},
              {"attempt", attempt},
              {"error", error_code_name(code)},
              {"message", result.message},
              {"wait_s", decision.wait_s},
              {"model", decision.model}});
    consumer.on_retry({attempt, code, decision.wait_s, decision.model});
    if (cut && cut->before_attempt && !log_.interrupted && cut->turn == turn &&
        *cut->before_attempt == coordinator_.attempt()) {
      // The user cancels halfway through the backoff (docs/POLICY.md "Cancellation"): the pending
      // retry is dropped with the turn's failed attempt, and no request follows until the next prompt.
      log_.interrupted = true;
      const double half = decision.wait_s / 2;
      if (half > 0) clock_.sleep_s(half);
      log_.waited_s += half;
      std::string message = "cancelled by the user during turn " + std::to_string(turn) + ", in the backoff before attempt " +
                            std::to_string(coordinator_.attempt());
      log_.add({{"type", "cancel"}, {"turn", turn}, {"before_attempt", coordinator_.attempt()}, {"waited_s", half},
                {"cancelled_calls", 0}});
      if (!config_.defects.contains(Defect::kRetryAfterCancel)) {
        consumer.on_error({"cancelled", message});
        return {false, "cancelled", message, std::nullopt};
      }
      // defect: the cancel does not clear the retry's timer: it fires at the end of the wait, and
      // the turn goes on as if nobody had cancelled
      const double rest = decision.wait_s - half;
      if (rest > 0) clock_.sleep_s(rest);
      log_.waited_s += rest;
      continue;
    }
    if (decision.wait_s > 0) clock_.sleep_s(decision.wait_s);
    log_.waited_s += decision.wait_s;
  }
}

bool StreamingTurn::keep_cut_turn(AttemptResult& result, ErrorCode code, int turn, int attempt, int seq,
                                  int& call_index, ITurnConsumer& consumer, TurnOutcome& outcome) {
  if (result.open_call && config_.defects.contains(Defect::kKeepHalfDeliveredCall)) {
    // defect: the call the failure cut open is taken as delivered (its arguments repaired): it
    // runs and is kept with the turn
    ModelPart p;
    p.call = *result.open_call;
    consumer.on_tool_call_request({admit(*p.call, seq, call_index, turn, attempt), attempt, false});
    ++call_index;
    result.parts.push_back(std::move(p));
  }
  int calls = 0;
  std::string text;
  for (const ModelPart& p : result.parts) {
    calls += p.call ? 1 : 0;
    if (p.text) text += *p.text;
  }
  const bool filtered = code == ErrorCode::kContentFilter &&
                        !config_.defects.contains(Defect::kContinuePastContentFilter);
  if (filtered) {
    // Never continued past: a refused turn is kept only to record the calls that already ran,
    // and the run ends there.
    if (calls == 0) return false;
  } else {
    const bool retryable = code != ErrorCode::kInvalidRequest && code != ErrorCode::kHttpClientError &&
                           code != ErrorCode::kQuotaExhausted;
    if (!retryable) return false;
    if (calls == 0 && (text.empty() || !config_.continuation_prompt)) return false;
  }
  FinishedEvent finished{"", true, -1};
  if (calls > 0 && config_.defects.contains(Defect::kDropRanCall)) {
    // defect: the kept turn leaves out its last call, which already ran, and its result
    for (auto it = result.parts.end(); it != result.parts.begin();) {
      --it;
      if (it->call) {
        result.parts.erase(it);
        break;
      }
    }
    finished.calls_kept = calls - 1;
  }
  const double wait_s = filtered ? 0 : coordinator_.continuation_wait_s(result);
  history_.give_history_ids(result.parts);
  commit(result.parts);
  log_.truncated = false;
  log_.add({{"type", "keep"}, {"turn", turn}, {"attempt", attempt}, {"seq", seq},
            {"error", error_code_name(code)}, {"wait_s", wait_s}});
  if (config_.defects.contains(Defect::kShowCutTextTwice)) {
    log_.shown_output += text;  // defect: the text shown while it streamed is shown again on keeping
  }
  consumer.on_finished(finished);
  outcome = {true, "", "", std::nullopt, true, filtered ? "content_filter" : ""};
  if (filtered) {
    outcome.message = "content filter after " + std::to_string(calls) + " call(s) ran (turn " +
                      std::to_string(turn) + ", attempt " + std::to_string(attempt) + ")";
  }
  if (wait_s > 0) clock_.sleep_s(wait_s);
  log_.waited_s += wait_s;
  return true;
}

void StreamingTurn::commit(std::vector<ModelPart> parts) {
  // Reasoning is kept only with what it came before: reasoning that no kept text or whole call
  // follows (a cut fell after it, or a max_tokens finish cut the call it led to) is dropped, as
  // each provider refuses it alone (Responses: a reasoning item "without its required following
  // item"; POLICY.md "Reasoning"). A Gemini signature on a part of its own ends a turn by design.
  while (!parts.empty() && parts.back().reasoning && parts.back().reasoning->thought) parts.pop_back();
  if (config_.defects.contains(Defect::kDropReasoningInHistory)) {
    // defect: the turn is recorded without its reasoning (thinking blocks, reasoning items,
    // thought signatures), so the next request sends its calls without it
    std::erase_if(parts, [](const ModelPart& p) { return p.reasoning.has_value(); });
    for (ModelPart& p : parts) p.thought_signature.clear();
  }
  history_.commit_model_turn(parts);
}

PendingCall StreamingTurn::admit(const FunctionCall& delivered, int seq, int call_index, int turn, int attempt) {
  const AdmittedCall& admitted = history_.call_ids().admit(delivered, config_.defects);
  json event = {{"type", "tool_call"},
                {"name", delivered.name},
                {"args", delivered.args},
                {"id", delivered.id ? json(*delivered.id) : json(nullptr)},
                {"seq", seq},
                {"call_index", call_index},
                {"turn", turn},
                {"attempt", attempt}};
  // Only when they say something: a call's id history changed, or a replay it answers.
  if (admitted.history_id && admitted.history_id != delivered.id) event["history_id"] = *admitted.history_id;
  if (admitted.replay_of) event["replay_of"] = *admitted.replay_of;
  log_.add(std::move(event));
  PendingCall pending{delivered, seq, call_index, false};
  pending.call.id = admitted.history_id;
  pending.replay_of = admitted.replay_of;
  if (admitted.replay_of) pending.replay_response = history_.response_to(*admitted.replay_of);
  return pending;
}

}  // namespace rut
