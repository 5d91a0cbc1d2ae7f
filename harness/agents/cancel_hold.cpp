// CancelHold: the interrupt point as a hold in the served stream; see cancel_hold.h.
#include "harness/agents/cancel_hold.h"

#include <variant>

#include "harness/agents/ledger.h"

namespace harness::agents {

namespace {
// Set by CancelHold::rewrite on the thread that is inside ScriptEngine::respond (the rewriter runs
// there), read back by CancelHold::respond on the same thread once the plan is made.
thread_local bool t_hold_added = false;
}  // namespace

std::optional<std::string> cancel_hold_problem(const Scenario& s) {
  if (!s.interrupt) return std::nullopt;
  const Interrupt& in = *s.interrupt;
  if (in.turn < 0 || in.turn >= static_cast<int>(s.script.turns.size())) return "/interrupt/turn: no such turn";
  if (in.after_calls) {
    // A black box's executions are seen only in the ledger: the cancel goes once call k began.
    bool placeholder = false;
    for (const auto& a : s.script.turns[static_cast<std::size_t>(in.turn)].attempts) {
      for (const auto& e : a.events) {
        if (const auto* c = std::get_if<mock::CallEvent>(&e); c != nullptr && has_placeholder(c->args)) placeholder = true;
      }
    }
    if (!placeholder) {
      return "/interrupt/after_calls: against an external agent the turn's calls must run the ledger command (the "
             "ledger placeholder in the shell tool's command): the ledger is where hiccup sees a call begin";
    }
    return std::nullopt;
  }
  if (in.before_attempt) return std::nullopt;
  if (!in.after_event || !in.attempt) return "/interrupt: expected after_event with attempt";
  const auto& attempts = s.script.turns[static_cast<std::size_t>(in.turn)].attempts;
  if (attempts.empty()) return "/interrupt/turn: no such turn";
  const auto& a = attempts[std::min<std::size_t>(static_cast<std::size_t>(*in.attempt), attempts.size() - 1)];
  if (a.fault) {
    return "/turns/" + std::to_string(in.turn) + "/attempts/" + std::to_string(*in.attempt) +
           "/fault: the interrupted attempt scripts a fault; against an external agent the interrupt point is held "
           "with that attempt's fault slot (a stall after event " + std::to_string(*in.after_event) + ")";
  }
  // Event timing after the held event: the hold is a stall after event e, reported when the write
  // that carries event e goes out; a delay before event e + 1 is played first and the hold's
  // report never came (the agent waited out its own timeout and got no SIGINT: a newcomer, stop 49).
  for (std::size_t i = static_cast<std::size_t>(*in.after_event) + 1; i < a.events.size(); ++i) {
    const bool delayed = std::visit([](const auto& e) { return e.delay_s.has_value(); }, a.events[i]);
    if (delayed) {
      return "/turns/" + std::to_string(in.turn) + "/attempts/" + std::to_string(*in.attempt) + "/events/" +
             std::to_string(i) + "/delay_s: the interrupted attempt times an event after the interrupt point; "
             "against an external agent the stream is held right after event " + std::to_string(*in.after_event) +
             " (drop the delay_s of the events after it)";
    }
  }
  return std::nullopt;
}

CancelHold::CancelHold(const Interrupt& interrupt, double hold_s) : interrupt_(interrupt), hold_s_(hold_s) {}

void CancelHold::rewrite(int turn, int attempt, mock::Attempt& played) {
  if (turn != interrupt_.turn) return;
  if (interrupt_.before_attempt) {
    // The attempt whose failure starts the backoff: watched, not changed.
    std::lock_guard lock(mu_);
    if (armed_ || attempt != *interrupt_.before_attempt - 1) return;
    armed_ = true;
    t_hold_added = true;
    return;
  }
  if (attempt != interrupt_.attempt.value_or(0) || !interrupt_.after_event) return;
  std::lock_guard lock(mu_);
  if (armed_ || played.fault || played.status) return;
  armed_ = true;
  // `after_event` counts the events fully delivered before the fault: event e is out whole; inside
  // call e's arguments, events 0..e-1 are out whole and call e's start and f fragments.
  played.fault = interrupt_.after_fragment
                     ? mock::StallFault{*interrupt_.after_event, hold_s_, interrupt_.after_fragment}
                     : mock::StallFault{*interrupt_.after_event + 1, hold_s_, std::nullopt};
  t_hold_added = true;
}

mock::Plan CancelHold::respond(const mock::Request& request) {
  t_hold_added = false;
  mock::Plan plan = engine_->respond(request);
  if (!t_hold_added) return plan;
  t_hold_added = false;
  if (interrupt_.before_attempt) {
    std::lock_guard lock(mu_);
    held_ = plan.journal_index;
    return plan;
  }
  // The hold is the plan's last StallAction of hold_s_ (an event's delay_s before it is another).
  std::optional<std::size_t> at;
  for (std::size_t i = 0; i < plan.actions.size(); ++i) {
    const auto* s = std::get_if<mock::StallAction>(&plan.actions[i]);
    if (s != nullptr && s->seconds == hold_s_) at = i;
  }
  if (at) {
    std::lock_guard lock(mu_);
    held_ = plan.journal_index;
    hold_action_ = *at;
  }
  return plan;
}

void CancelHold::settle(std::size_t journal_index, const mock::Delivery& delivery) {
  engine_->settle(journal_index, delivery);
  std::lock_guard lock(mu_);
  if (!held_ || *held_ != journal_index) return;
  if (interrupt_.before_attempt) {
    // The failed attempt's answer has ended (its last byte is on its way, or the connection
    // dropped): the agent is in its backoff now.
    if (delivery.ended_ms >= 0) reached_.store(true);
    return;
  }
  // The server settles a write as done just before it sends it: the write before the hold is
  // on its way once actions_done reaches the hold's index.
  if (delivery.actions_done >= static_cast<int>(hold_action_)) {
    reached_.store(true);
  }
}

void CancelHold::refuse(std::size_t journal_index, int status, const std::string& reason) {
  engine_->refuse(journal_index, status, reason);
}

std::size_t CancelHold::held_request() const {
  std::lock_guard lock(mu_);
  return held_.value_or(0);
}

}  // namespace harness::agents
