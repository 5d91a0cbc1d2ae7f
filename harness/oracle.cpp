// The oracle's model of docs/POLICY.md: each attempt is classified (completes, retryable failure,
// content filter, or terminal failure) by walking its events up to its fault, then the per-turn
// retry loop applies the budget, the backoff schedule with Retry-After and the one fallback.
#include "harness/oracle.h"

#include <algorithm>
#include <variant>

namespace harness {
namespace {

/// What one attempt amounts to under the policy.
struct AttemptOutcome {
  enum Kind { kComplete, kRetryable, kContentFilter, kInvalidRequest, kNonRetryable, kQuotaExhausted } kind;
  double retry_after_s = 0;                 ///< only status attempts carry one
  /// Delivered whole before the finish, or (a streamed attempt that failed) before the failure.
  std::vector<mock::CallEvent> calls;
  std::string text;                         ///< likewise, concatenated
  bool truncated = false;                   ///< completes with a max_tokens finish
};

/// An HTTP error answer with `status` and Retry-After `retry_after_s`.
AttemptOutcome classify_status(int status, double retry_after_s) {
  if (retryable_status(status)) return {AttemptOutcome::kRetryable, retry_after_s, {}, {}};
  if (status == 400) return {AttemptOutcome::kInvalidRequest, 0, {}, {}};
  return {AttemptOutcome::kNonRetryable, 0, {}, {}};
}

AttemptOutcome classify_delivery(const mock::Attempt& a, double idle_timeout_s, bool stream);

/// `stream` false: the non-streaming endpoint (POLICY.md "Non-streaming requests"), where an
/// error_event before the finish is the provider's HTTP error with its status, and every other
/// fault before the finish fails the attempt as it does in a stream (a short stall only delays).
AttemptOutcome classify(const mock::Attempt& a, double idle_timeout_s, bool stream) {
  AttemptOutcome out = classify_delivery(a, idle_timeout_s, stream);
  if (!stream && out.kind != AttemptOutcome::kComplete) {  // a failed body delivers nothing
    out.calls.clear();
    out.text.clear();
  }
  return out;
}

/// classify(), keeping what a failed streamed attempt delivered before it failed.
AttemptOutcome classify_delivery(const mock::Attempt& a, double idle_timeout_s, bool stream) {
  AttemptOutcome out{AttemptOutcome::kRetryable, 0, {}, {}};
  // A 429 naming a per-day quota: the run ends (POLICY.md, `quota_exhausted`).
  if (a.status && *a.status == 429 && a.quota == mock::Quota::kPerDay) return {AttemptOutcome::kQuotaExhausted, 0, {}, {}};
  if (a.status) return classify_status(*a.status, a.retry_after_s.value_or(0));
  const std::size_t n = a.events.size();
  const std::size_t fault_at =
      a.fault ? static_cast<std::size_t>(mock::fault_after_event(*a.fault, n)) : n + 1;
  for (std::size_t i = 0; i <= n; ++i) {
    if (i == fault_at && !stream && std::holds_alternative<mock::ErrorEventFault>(*a.fault)) {
      return classify_status(std::get<mock::ErrorEventFault>(*a.fault).status, 0);
    }
    if (i == fault_at) {
      if (const auto* stall = std::get_if<mock::StallFault>(&*a.fault)) {
        if (stall->seconds >= idle_timeout_s) return out;  // idle_timeout
        // a shorter stall is only a delay
      } else if (std::holds_alternative<mock::MalformedFault>(*a.fault)) {
        return out;  // undecodable_frame
      } else {
        return out;  // connection_lost / stream_error / incomplete
      }
    }
    if (i == n) break;
    const auto& e = a.events[i];
    if (const auto* t = std::get_if<mock::TextEvent>(&e)) {
      out.text += t->text;
    } else if (const auto* c = std::get_if<mock::CallEvent>(&e)) {
      // A call its max_tokens finish cuts is never delivered whole: dropped, never run.
      if (!mock::cut_by_finish(a.events, i)) out.calls.push_back(*c);
    } else if (std::holds_alternative<mock::ReasoningEvent>(e)) {
      // Reasoning is neither shown text nor a call: a correct runtime keeps it and sends it back
      // (POLICY.md "Reasoning"), which changes no outcome the oracle predicts.
    } else {
      switch (std::get<mock::FinishEvent>(e).reason) {
        case mock::FinishReason::kStop:
          out.kind = AttemptOutcome::kComplete;
          return out;
        case mock::FinishReason::kMaxTokens:
          out.kind = AttemptOutcome::kComplete;
          out.truncated = true;
          return out;
        case mock::FinishReason::kContentFilter:
          out.kind = AttemptOutcome::kContentFilter;
          return out;
        case mock::FinishReason::kMalformedCall:
          return out;
      }
    }
  }
  return out;  // incomplete_stream: no terminal event
}

/// Whether attempt `a` hands event `e` (a text or call event) to the runtime: a stream whose fault
/// (a stall shorter than the idle timeout only delays) does not come before it.
/// With `fragment` (an interrupt inside call e's arguments): whether the call's start and that
/// many of its argument fragments are delivered, rather than the whole event.
bool delivers_event(const mock::Attempt& a, int e, double idle_timeout_s, std::optional<int> fragment = std::nullopt) {
  if (a.status || e < 0 || e >= static_cast<int>(a.events.size())) return false;
  if (const auto cut = mock::cut_by_finish(a.events, static_cast<std::size_t>(e))) {
    if (!fragment || *fragment > *cut) return false;  // the limit's finish comes first
  }
  for (int i = 0; i < e; ++i) {
    if (std::holds_alternative<mock::FinishEvent>(a.events[i])) return false;
  }
  if (!a.fault) return true;
  const int fault_at = mock::fault_after_event(*a.fault, a.events.size());
  if (fault_at > e) return true;
  if (fragment && fault_at == e) {
    // The fault cuts call e after its own after_fragment fragments (none: before the call).
    const auto cut_after = mock::fault_after_fragment(*a.fault);
    if (cut_after && *fragment <= *cut_after) return true;
  }
  const auto* stall = std::get_if<mock::StallFault>(&*a.fault);
  return stall != nullptr && stall->seconds < idle_timeout_s;
}

}  // namespace

bool retryable_status(int status) {
  return status == 429 || status == 500 || status == 502 || status == 503 || status == 504 ||
         status == 529;
}

std::string recovery_of(const Scenario& s) {
  if (s.runtime.recovery) return *s.runtime.recovery;
  return "hold";
}

std::string design_in_effect(const Scenario& s) {
  return s.runtime.stream.value_or(true) ? recovery_of(s) : std::string("hold");
}

OracleResult predict(const Scenario& s, std::optional<int> max_turns) {
  const int max_attempts = s.runtime.max_attempts.value_or(4);
  const std::vector<double> backoff =
      s.runtime.backoff_s.value_or(std::vector<double>{10, 20, 60});
  const double idle_timeout_s = s.runtime.idle_timeout_s.value_or(60);
  const bool has_fallback = s.runtime.fallback_model.has_value();
  const bool stream = s.runtime.stream.value_or(true);
  // POLICY.md "Recovery designs": under continue a streamed attempt that failed after delivering a
  // whole call (or text, with a continuation prompt) is kept as the turn; its calls ran.
  const bool keep_cut = recovery_of(s) == "continue" && stream;
  const bool continuation_prompt = s.runtime.continuation_prompt.has_value();
  const auto& turns = s.script.turns;

  OracleResult r;
  std::size_t prompts_left = s.session.size();  // a turn without calls ends a prompt's run
  auto record = [&](const mock::CallEvent& c) {
    auto it = std::find_if(r.executions.begin(), r.executions.end(), [&](const auto& x) {
      return x.name == c.name && x.args == c.args;
    });
    if (it != r.executions.end()) ++it->count;
    else r.executions.push_back({c.name, c.args, 1});
  };
  // POLICY.md "Call ids": a call that repeats an earlier call whole (its scripted id, name and
  // arguments; a call without a scripted id gets a unique one from the server) is a replay,
  // answered and never run. Earlier: the calls of the turns the conversation kept, then the calls
  // before it in its own answer.
  std::vector<mock::CallEvent> kept_calls;
  auto replays = [&](const std::vector<mock::CallEvent>& calls) {
    std::vector<bool> out(calls.size(), false);
    auto same = [](const mock::CallEvent& a, const mock::CallEvent& b) {
      return a.id == b.id && a.name == b.name && a.args == b.args;
    };
    for (std::size_t k = 0; k < calls.size(); ++k) {
      if (calls[k].id.empty()) continue;
      out[k] = std::any_of(kept_calls.begin(), kept_calls.end(), [&](const auto& c) { return same(c, calls[k]); }) ||
               std::any_of(calls.begin(), calls.begin() + static_cast<long>(k), [&](const auto& c) { return same(c, calls[k]); });
    }
    return out;
  };
  // Runs the first `n` of a committed turn's calls (all when n < 0), replays excepted, and keeps
  // every call of the turn in the conversation.
  auto run_calls = [&](const std::vector<mock::CallEvent>& calls, int n = -1) {
    const std::vector<bool> replay = replays(calls);
    for (std::size_t k = 0; k < calls.size() && (n < 0 || static_cast<int>(k) < n); ++k) {
      if (!replay[k]) record(calls[k]);
    }
    kept_calls.insert(kept_calls.end(), calls.begin(), calls.end());
  };
  auto fail = [&](std::string error) {
    r.completed = false;
    r.error = std::move(error);
    return r;
  };

  // The user's interrupt (POLICY.md "Cancellation"): it fires once; it ends the prompt's run as
  // "cancelled" and the next prompt, if any, continues the same history.
  bool interrupt_pending = s.interrupt.has_value();
  int run_turns = 0;  // turns of the current prompt's run committed with calls (the turn cap)
  std::vector<std::size_t> server_counter(64, 0);  // the server's attempt counter per turn index
  auto cancelled = [&]() -> bool {  // true: the session goes on with its next prompt
    interrupt_pending = false;
    if (prompts_left == 0) return false;
    --prompts_left;
    run_turns = 0;
    return true;
  };

  // Bounded by the runtime's own turn cap; a correct run past the script gets 500s and fails.
  for (std::size_t t = 0; t < 64; ++t) {
    int used = 0;                 // attempts of this turn, all models
    std::size_t& server_index = server_counter[t];
    bool fallback_used = false;
    bool again = false;           // the turn was cancelled mid-stream: the next prompt replays it
    r.turns_reached = static_cast<int>(t) + 1;
    // The user cancels during the backoff before attempt `used` (the attempts this turn's run sent).
    auto backoff_cancelled = [&] {
      return interrupt_pending && s.interrupt->before_attempt && s.interrupt->turn == static_cast<int>(t) &&
             *s.interrupt->before_attempt == used;
    };
    for (;;) {
      ++r.requests;
      ++used;
      AttemptOutcome o{AttemptOutcome::kRetryable, 0, {}, {}};  // unscripted: HTTP 500
      if (t < turns.size() && !turns[t].attempts.empty()) {
        const auto& attempts = turns[t].attempts;
        const std::size_t index = server_index;
        const auto& a = attempts[std::min(server_index, attempts.size() - 1)];
        ++server_index;
        o = classify(a, idle_timeout_s, stream);
        if (interrupt_pending && s.interrupt->after_event && s.interrupt->turn == static_cast<int>(t) &&
            static_cast<std::size_t>(*s.interrupt->attempt) == index &&
            delivers_event(a, *s.interrupt->after_event, idle_timeout_s, s.interrupt->after_fragment)) {
          // cancelled mid-stream: the turn is dropped whole, nothing of it runs
          if (!cancelled()) return fail("cancelled");
          again = true;
          break;
        }
      }
      if (o.kind == AttemptOutcome::kComplete) {
        r.final_text = o.text;
        if (o.calls.empty() && prompts_left > 0) {
          --prompts_left;  // the session's next prompt follows over the same history
          run_turns = 0;
          break;
        }
        if (o.calls.empty()) {
          r.completed = true;
          r.truncated = o.truncated;
          r.error.clear();
          return r;
        }
        if (interrupt_pending && s.interrupt->after_calls && s.interrupt->turn == static_cast<int>(t) &&
            *s.interrupt->after_calls < static_cast<int>(o.calls.size())) {
          // cancelled while the tools run: the first after_calls calls ran, the others never start
          run_calls(o.calls, *s.interrupt->after_calls);
          if (!cancelled()) return fail("cancelled");
          break;
        }
        run_calls(o.calls);
        // The runtime's turn cap: its calls ran, and no request for the next turn follows.
        if (max_turns && ++run_turns >= *max_turns) return fail("max_turns");
        break;  // next turn
      }
      if (keep_cut && o.kind == AttemptOutcome::kContentFilter && !o.calls.empty()) {
        // a refused turn is kept only to record the calls that ran; never continued past
        r.final_text = o.text;
        run_calls(o.calls);
        return fail("content_filter");
      }
      if (keep_cut && o.kind == AttemptOutcome::kRetryable &&
          (!o.calls.empty() || (!o.text.empty() && continuation_prompt))) {
        // the cut turn is kept: the next request is the next turn, after the wait a retry would take
        r.final_text = o.text;
        run_calls(o.calls);
        const double step = backoff.empty() ? 0 : backoff[std::min<std::size_t>(used - 1, backoff.size() - 1)];
        r.waited_s += std::max(step, o.retry_after_s);
        break;  // next turn
      }
      if (o.kind == AttemptOutcome::kInvalidRequest) return fail("invalid_request");
      if (o.kind == AttemptOutcome::kNonRetryable) return fail("non_retryable");
      if (o.kind == AttemptOutcome::kQuotaExhausted) return fail("quota_exhausted");
      if (o.kind == AttemptOutcome::kContentFilter) {
        if (has_fallback && !fallback_used && used < max_attempts) {
          fallback_used = true;  // immediate retry on the fallback model, no wait
          if (backoff_cancelled()) {
            if (!cancelled()) return fail("cancelled");
            again = true;
            break;
          }
          continue;
        }
        return fail("content_filter");
      }
      // retryable
      if (used >= max_attempts) return fail("retries_exhausted");
      const int n = used;  // retry n precedes attempt n + 1
      double step = backoff.empty() ? 0 : backoff[std::min<std::size_t>(n - 1, backoff.size() - 1)];
      if (backoff_cancelled()) {
        // cancelled halfway through the backoff: the pending retry never fires
        r.waited_s += std::max(step, o.retry_after_s) / 2;
        if (!cancelled()) return fail("cancelled");
        again = true;
        break;
      }
      r.waited_s += std::max(step, o.retry_after_s);
    }
    if (again) --t;  // the next prompt's request has the same model turns: the same turn index
  }
  return fail("retries_exhausted");
}

Expect oracle_expect(const Scenario& s) {
  OracleResult r = predict(s);
  Expect e;
  e.outcome = r.completed ? "completed" : "failed";
  if (!r.completed) e.error = r.error;
  if (r.completed) e.final_text = r.final_text;
  if (r.completed) e.truncated = r.truncated;
  e.executions = r.executions;
  e.requests = r.requests;
  e.waited_s = r.waited_s;
  return e;
}

Scenario played_under(const Scenario& s, const std::string& recovery) {
  if (s.runtime.recovery || s.interrupt || recovery == recovery_of(s)) return s;
  Scenario out = s;
  out.runtime.recovery = recovery;
  take_changed_predictions(out.expect, oracle_expect(s), oracle_expect(out));
  return out;
}

void take_changed_predictions(Expect& x, const Expect& before, const Expect& after) {
  auto replace = [](auto& field, const auto& was, const auto& now) {
    if (field && was != now) field = now;
  };
  replace(x.outcome, before.outcome, after.outcome);
  replace(x.error, before.error, after.error);
  replace(x.final_text, before.final_text, after.final_text);
  replace(x.truncated, before.truncated, after.truncated);
  replace(x.executions, before.executions, after.executions);
  replace(x.requests, before.requests, after.requests);
  replace(x.waited_s, before.waited_s, after.waited_s);
}

}  // namespace harness
