// The agent loop and run_agent (see agent_loop.h, runtime.h).
#include "runtime_under_test/agent_loop.h"

#include <stdexcept>

#include "runtime_under_test/consumers.h"
#include "runtime_under_test/model_client.h"
#include "runtime_under_test/retry_coordinator.h"
#include "runtime_under_test/streaming_turn.h"
#include "runtime_under_test/tool_scheduler.h"

namespace rut {

LoopOutcome run_agent_loop(const Config& config, const std::string& prompt, IClock& clock,
                           ITransport& transport, History& history, RunLog& log, bool fresh, IToolPort* tools) {
  if (fresh) history.clear();
  history.add_user_text(prompt);
  const ICodec* codec = codec_for(config.provider);
  ModelClient client(transport, clock, config.defects, config.idle_timeout_s, config.tool_names,
                     codec, config.stream);
  RetryCoordinator coordinator(config);
  // Continue runs calls as they stream; a non-streaming answer arrives whole, so there it is hold.
  ToolScheduler scheduler(config.defects, log, config.stream ? config.recovery : Recovery::kHold, tools,
                          config.tool_timeout_s);
  std::unique_ptr<IAgentConsumer> consumer =
      make_consumer(config.consumer, config.defects, scheduler, log);
  StreamingTurn turn(config, client, coordinator, history, clock, log);

  for (int t = 0; t < config.max_turns; ++t) {
    consumer->begin_turn();
    const int turn_index = history.model_turns();
    TurnOutcome outcome = turn.run(*consumer);
    if (!outcome.committed) {
      // After a 400 the rejected user content (prompt or function responses) leaves history.
      if (outcome.last_error == ErrorCode::kInvalidRequest &&
          !config.defects.contains(Defect::kKeepRejectedTurn)) {
        history.remove_last_user_content();
      }
      return {false, outcome.run_error, outcome.message};
    }
    if (outcome.cut) {
      // Continue: a kept cut turn. Its calls ran as they streamed; their results follow it, then
      // the continuation prompt, and the run goes on (a refused turn ends the run instead).
      CompletedTurn done = consumer->complete_turn();
      if (done.had_calls) history.add_function_responses(done.responses);
      if (!outcome.stop_error.empty()) return {false, outcome.stop_error, outcome.message};
      if (config.continuation_prompt) history.add_user_text(*config.continuation_prompt);
      continue;
    }
    const std::optional<UserInterrupt>& cut = config.interrupt;
    if (cut && cut->after_calls && !log.interrupted && cut->turn == turn_index) {
      scheduler.cancel_after(*cut->after_calls);
    }
    CompletedTurn done = consumer->complete_turn();
    if (!done.had_calls) return {true, "", ""};
    if (scheduler.interrupted()) {
      // The user cancelled while the tools ran: the results (real, then synthetic "cancelled")
      // go out in one user content with the next prompt's request; this prompt's run ends.
      log.interrupted = true;
      const int synthetic = scheduler.cancelled_responses();
      if (config.defects.contains(Defect::kCancelResultsSplit) && synthetic > 0) {
        // defect: one user content per synthetic result
        const auto first_synthetic = done.responses.end() - synthetic;
        history.add_function_responses({done.responses.begin(), first_synthetic});
        for (auto it = first_synthetic; it != done.responses.end(); ++it) history.add_function_responses({*it});
      } else {
        history.add_function_responses(done.responses);
      }
      if (config.defects.contains(Defect::kDoubleResultAfterCancel)) {
        // defect: the cancel marks every call of the turn cancelled, also those that ran and
        // were answered: their "cancelled" results follow in a user content of their own
        std::vector<nlohmann::json> twice;
        for (auto it = done.responses.begin(); it != done.responses.end() - synthetic; ++it) {
          nlohmann::json r = *it;
          r["functionResponse"]["response"] = {{"error", "cancelled by the user"}};
          twice.push_back(std::move(r));
        }
        history.add_function_responses(twice);
      }
      std::string message = "cancelled by the user during turn " + std::to_string(turn_index) + " after " +
                            std::to_string(*cut->after_calls) + " calls ran";
      log.add({{"type", "cancel"}, {"turn", turn_index}, {"after_calls", *cut->after_calls},
               {"cancelled_calls", synthetic}});
      // defect: the loop does not look at the cancel: the results go back to the model in the
      // next request, before the user's next prompt
      if (config.defects.contains(Defect::kContinueLoopAfterCancel)) continue;
      return {false, "cancelled", message};
    }
    history.add_function_responses(done.responses);
  }
  return {false, "max_turns",
          "the run reached max_turns (" + std::to_string(config.max_turns) + ") model turns"};
}

RunResult run_agent(const Config& settings, const std::string& prompt, IClock& clock,
                    IRandom& random, ITransport& transport, IToolPort* tools) {
  return run_session(settings, {prompt}, clock, random, transport, tools);
}

RunResult run_session(const Config& settings, const std::vector<std::string>& prompts, IClock& clock,
                      IRandom& random, ITransport& transport, IToolPort* tools) {
  (void)random;  // the policy draws no jitter
  if (prompts.empty()) throw std::invalid_argument("a session needs at least one prompt");
  const ICodec* codec = codec_for(settings.provider);
  if (codec == nullptr) throw std::invalid_argument("unknown provider \"" + settings.provider + "\"");
  Config config = settings;
  if (config.model.empty()) config.model = codec->default_model();
  RunLog log;
  History history;
  LoopOutcome outcome;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    if (prompts.size() > 1) log.add({{"type", "prompt"}, {"index", i}});
    outcome = run_agent_loop(config, prompts[i], clock, transport, history, log, /*fresh=*/i == 0, tools);
    if (!outcome.completed && outcome.error == "cancelled") continue;  // the next prompt follows
    if (!outcome.completed && config.defects.contains(Defect::kRestartRunOnFailure)) {
      // defect: start over from the prompt with fresh history; completed tools run again
      log.add({{"type", "restart"}, {"error", outcome.error}});
      outcome = run_agent_loop(config, prompts[i], clock, transport, history, log, true, tools);
    }
    if (!outcome.completed) break;
  }
  const bool truncated = outcome.completed && log.truncated;
  nlohmann::json ended = {{"type", "outcome"}, {"completed", outcome.completed}, {"error", outcome.error}};
  if (truncated) ended["truncated"] = true;
  log.add(std::move(ended));

  RunResult result;
  result.completed = outcome.completed;
  result.truncated = truncated;
  result.error = outcome.error;
  result.error_message = outcome.message;
  result.final_text = log.final_text;
  result.shown_output = std::move(log.shown_output);
  result.ledger = std::move(log.ledger);
  result.events = std::move(log.events);
  result.final_history = history.contents();
  result.requests = log.requests;
  result.waited_s = log.waited_s;
  return result;
}

}  // namespace rut
