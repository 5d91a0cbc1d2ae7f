// Black-box exploration: generate, run against the agent, confirm, group, shrink, write; see
// agent_explorer.h.
#include "harness/agents/agent_explorer.h"
#include "harness/strings.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "harness/agents/cancel_hold.h"
#include "harness/explore/minimize.h"
#include "harness/oracle.h"
#include "harness/runner.h"
#include "harness/scenario_io.h"
#include "harness/stopwatch.h"
#include "harness/transcript.h"
#include "mock_server/faults.h"

namespace harness::agents {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

/// Calls fn(i) for i in [0, n) on up to `jobs` threads; `stop`, when given, is asked before each
/// start and ends the loop when true. fn must not throw.
void parallel_for(int n, int jobs, const std::function<void(int)>& fn, const std::function<bool()>& stop = {}) {
  std::atomic<int> next{0};
  auto work = [&] {
    for (;;) {
      if (stop && stop()) return;
      const int i = next++;
      if (i >= n) return;
      fn(i);
    }
  };
  const int threads = std::clamp(jobs, 1, std::max(1, n));
  if (threads == 1) {
    work();
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) pool.emplace_back(work);
  for (std::thread& t : pool) t.join();
}

/// The signature of a run, or nullopt when it passed or could not run (a harness error).
std::optional<FailureSignature> signature_of(const AgentCaseResult& r) {
  if (!r.harness_error.empty() || r.violations.empty()) return std::nullopt;
  return failure_signature(r.scenario, r.journal, r.violations);
}

/// `text` on one console line: its line breaks as " | " (a trailing one dropped).
std::string one_line(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n') {
      out += text[i];
    } else if (i + 1 < text.size()) {
      out += " | ";
    }
  }
  return out;
}

/// A harness error for a one-line report: whole up to 600 bytes, else its head and its tail (where
/// a shell's "not found" or a program's last words are), cut on UTF-8 boundaries.
std::string error_excerpt(const std::string& error) {
  if (error.size() <= 600) return error;
  auto boundary = [&](std::size_t at) {  // back to the start of a UTF-8 sequence
    while (at > 0 && at < error.size() && (static_cast<unsigned char>(error[at]) & 0xC0) == 0x80) --at;
    return at;
  };
  const std::size_t head = boundary(400);
  const std::size_t tail = boundary(error.size() - 180);
  return error.substr(0, head) + " … " + error.substr(tail);
}

/// Whether the run (any of its processes) was killed by its timeout.
bool timed_out(const AgentCaseResult& r) {
  return r.process.timed_out ||
         std::any_of(r.prompt_runs.begin(), r.prompt_runs.end(), [](const ProcessResult& p) { return p.timed_out; });
}

/// The first run of an explored case that never reached the mock: the agent exited non-zero (not
/// killed) before any model request, so no fault of the case was played and the run says nothing of
/// how the agent meets them. A command or settings problem (a relative path from the scratch
/// folder, a missing key), reported as a case that could not run (with the agent's output tail),
/// not as a failure to confirm and shrink. "" otherwise; a run that exited 0 without a request is
/// judged as usual (and fails: nothing was asked for).
std::string never_reached_mock(const AgentCaseResult& r, const std::string& agent) {
  if (!r.harness_error.empty() || !r.process.started || timed_out(r)) return {};
  if (std::any_of(r.journal.begin(), r.journal.end(), is_model_request)) return {};
  int exit_code = r.process.exit_code;
  for (const ProcessResult& p : r.prompt_runs) {
    if (p.exit_code != 0) {
      exit_code = p.exit_code;
      break;
    }
  }
  if (exit_code == 0) return {};  // a run that did nothing and said it succeeded is judged (and fails)
  return "agent " + agent + " exited " + std::to_string(exit_code) +
         " before any request to the mock (no fault was played: check its command and settings; it runs in a "
         "scratch folder, so a relative path needs $HICCUP_INVOKE_DIR); " +
         r.output_tail;
}

/// How a re-run ended, for reports: its signature's text, "passed", or "error: …".
std::string outcome_text(const AgentCaseResult& r) {
  if (!r.harness_error.empty()) return "error: " + one_line(error_excerpt(r.harness_error));
  if (const auto s = signature_of(r)) return s->text();
  return "passed";
}

/// Every call of `s` is the limits' tool with the ledger placeholder in its command argument:
/// the shape a candidate must keep so the agent can run it and the ledger sees it.
bool calls_fit(const Scenario& s, const explore::GenerateLimits& limits) {
  for (const mock::Turn& t : s.script.turns) {
    for (const mock::Attempt& a : t.attempts) {
      for (const mock::Event& e : a.events) {
        const auto* c = std::get_if<mock::CallEvent>(&e);
        if (c == nullptr) continue;
        if (c->name != limits.tool_name || !c->args.is_object() || !c->args.contains(limits.tool_command_arg) ||
            !has_placeholder(c->args[limits.tool_command_arg])) {
          return false;
        }
      }
    }
  }
  return true;
}

/// The harm a violation states first: its message up to the first ": " (a message begins with the
/// harm in plain words, then the evidence).
std::string harm_of(const Violation& v) {
  const auto colon = v.message.find(": ");
  return colon == std::string::npos ? v.message : v.message.substr(0, colon);
}

json size_json(const explore::ScenarioSize& z) {
  return {{"turns", z.turns}, {"attempts", z.attempts}, {"events", z.events}};
}

std::string size_text(const explore::ScenarioSize& z) {
  return std::to_string(z.turns) + (z.turns == 1 ? " turn, " : " turns, ") + std::to_string(z.attempts) +
         (z.attempts == 1 ? " attempt, " : " attempts, ") + std::to_string(z.events) + (z.events == 1 ? " event" : " events");
}

std::string seconds_text(double ms) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << ms / 1000.0 << " s";
  return s.str();
}

}  // namespace

std::string black_box_note(int confirm) {
  std::string note =
      "a black box's verdicts may vary: the agent is a real process judged in real time, so a case can "
      "pass in one run and fail in the next; ";
  if (confirm <= 0) return note + "failures were not re-run (--confirm 0): each is reported from its one run";
  return note + "each failure was re-run (--confirm " + std::to_string(confirm) + ") and is reported with its rate";
}

std::string FailureSignature::text() const {
  return join(invariants, ", ") + " | " + fault;
}

namespace {

/// Where trouble fell after event `prev`: "after a call", "after text" or "after the finish".
const char* after_event_words(const mock::Event& prev) {
  return std::holds_alternative<mock::CallEvent>(prev)   ? "after a call"
         : std::holds_alternative<mock::TextEvent>(prev) ? "after text"
                                                         : "after the finish";
}

/// "status N" of `a`'s status (a.status must be set), ", with Retry-After" added for a retryable
/// one that carries it: Retry-After tells apart the failures of a retryable status (a wait honoured
/// or not); a status that must not be retried is one failure with it or without.
std::string status_words(const mock::Attempt& a) {
  return "status " + std::to_string(*a.status) +
         (a.retry_after_s && retryable_status(*a.status) ? ", with Retry-After" : "");
}

/// "KIND WHERE" of `a`'s fault (a.fault must be set): before any event, after text, after a
/// call, inside a call's arguments, after the finish.
std::string fault_where(const mock::Attempt& a) {
  const int after = mock::fault_after_event(*a.fault, a.events.size());
  std::string where;
  if (mock::fault_after_fragment(*a.fault)) where = "inside a call's arguments";
  else if (after == 0) where = "before any event";
  else where = after_event_words(a.events[static_cast<std::size_t>(after - 1)]);
  return std::string(mock::fault_name(*a.fault)) + " " + where;
}

}  // namespace

std::string fault_description(const Scenario& s, const mock::JournalEntry& e) {
  if (e.completed || (e.played != "stream" && e.played != "status")) return "";
  const mock::Attempt* attempt = scripted_attempt(s, e);
  if (attempt == nullptr) return "";
  const mock::Attempt& a = *attempt;
  if (a.status) return status_words(a);
  const auto finish = std::find_if(a.events.begin(), a.events.end(),
                                   [](const mock::Event& ev) { return std::holds_alternative<mock::FinishEvent>(ev); });
  const int finish_at = finish == a.events.end() ? -1 : static_cast<int>(finish - a.events.begin());
  if (a.fault) {
    const int after = mock::fault_after_event(*a.fault, a.events.size());
    if (finish_at < 0 || after <= finish_at) return fault_where(a);
  }
  if (finish_at < 0) return "no terminal event";
  const auto reason = std::get<mock::FinishEvent>(*finish).reason;
  if (reason == mock::FinishReason::kContentFilter || reason == mock::FinishReason::kMalformedCall) {
    return "finish " + std::string(mock::finish_name(reason));
  }
  return "";  // scripted to complete: the agent hung up or the journal could not tell
}

namespace {

/// The user's cancel as the trouble a failure followed: "cancel after text", "cancel after a
/// call", "cancel inside a call's arguments", "cancel while a tool runs", "cancel during a backoff".
std::string cancel_description(const Scenario& s) {
  const Interrupt& in = *s.interrupt;
  if (in.after_calls) return "cancel while a tool runs";
  if (in.before_attempt) return "cancel during a backoff";
  if (in.after_fragment) return "cancel inside a call's arguments";
  if (!in.after_event || !in.attempt || in.turn < 0 || in.turn >= static_cast<int>(s.script.turns.size())) {
    return "cancel";
  }
  const auto& attempts = s.script.turns[static_cast<std::size_t>(in.turn)].attempts;
  if (attempts.empty()) return "cancel";
  const mock::Attempt& a = attempts[std::min<std::size_t>(static_cast<std::size_t>(*in.attempt), attempts.size() - 1)];
  if (*in.after_event < 0 || *in.after_event >= static_cast<int>(a.events.size())) return "cancel";
  return std::string("cancel ") + after_event_words(a.events[static_cast<std::size_t>(*in.after_event)]);
}

}  // namespace

FailureSignature failure_signature(const Scenario& scenario, const mock::Journal& journal,
                                   const std::vector<Violation>& violations) {
  FailureSignature sig;
  std::set<std::string> harms, verdicts, expects;
  int anchor = -1;
  for (const Violation& v : violations) {
    const auto& catalogue = invariant_catalogue();
    const bool harm = std::any_of(catalogue.begin(), catalogue.end(), [&](const InvariantInfo& i) { return i.name == v.invariant; });
    (harm ? harms : v.invariant.rfind("expect.", 0) == 0 ? expects : verdicts).insert(v.invariant);
    const int at = v.cause_request >= 0 ? v.cause_request : v.request;
    if (at >= 0 && (anchor < 0 || at < anchor)) anchor = at;
  }
  // The harms (catalogue invariants) name a failure; the black-box verdicts (scenario-coverage,
  // outcome-agreement) and expect fields only when no harm was seen: after a harm they are its
  // consequences (the agent stopped early), which shrinking should not have to keep.
  // The request the user's cancel cut or followed: trouble of its own (its attempt scripts no
  // fault), so a harm named after it is signed by the cancel, not by an earlier unrelated fault.
  // A harm of that request itself (a retry that should not have been sent) came before the
  // cancel: it keeps the fault before it.
  const int cancel_at = scenario.interrupt ? cancel_point_request(scenario, journal) : -1;
  const auto describe = [&](const mock::JournalEntry& e) {
    std::string d = fault_description(scenario, e);
    if (d.empty() && cancel_at >= 0 && static_cast<int>(e.index) == cancel_at && (anchor < 0 || cancel_at < anchor)) {
      d = cancel_description(scenario);
    }
    return d;
  };
  const std::set<std::string>& chosen = !harms.empty() ? harms : !verdicts.empty() ? verdicts : expects;
  sig.invariants.assign(chosen.begin(), chosen.end());
  // A harm of what was delivered (a call run twice, a turn misrecorded) follows the last attempt
  // that failed after delivering something, not a status or an empty attempt retried after it.
  const bool about_delivery = std::any_of(chosen.begin(), chosen.end(), [](const std::string& n) {
    return n == "at-most-once" || n == "recorded-execution" || n == "history-integrity" || n == "pairing" ||
           n == "clean-output";
  });
  std::string fault;
  for (int pass = about_delivery ? 0 : 1; pass < 2 && fault.empty(); ++pass) {
    for (auto it = journal.rbegin(); it != journal.rend() && fault.empty(); ++it) {
      if (anchor >= 0 && static_cast<int>(it->index) > anchor) continue;
      if (pass == 0 && it->delivered_calls.empty() && it->delivered_text.empty()) continue;
      fault = describe(*it);
    }
  }
  for (const mock::JournalEntry& e : journal) {  // none at or before the anchor: the first after it
    if (!fault.empty()) break;
    if (anchor >= 0 && static_cast<int>(e.index) > anchor) fault = describe(e);
  }
  // Every attempt completed: a fault that fired after its finish (harmless to a client that stops
  // reading at the finish, not to every agent), the last one at or before the anchor.
  for (auto it = journal.rbegin(); it != journal.rend() && fault.empty(); ++it) {
    if (it->fault.empty() || (anchor >= 0 && static_cast<int>(it->index) > anchor)) continue;
    if (const mock::Attempt* a = scripted_attempt(scenario, *it); a != nullptr && a->fault) fault = fault_where(*a);
  }
  // No fault anywhere, but a cancel: a harm of the cancelled request itself (success reported for
  // the answer the user stopped) is signed by the cancel, not as "no fault" (gemini-cli c73, stop 62).
  if (fault.empty() && cancel_at >= 0) fault = cancel_description(scenario);
  sig.fault = fault.empty() ? "no fault" : fault;
  return sig;
}

bool can_show_fault(const Scenario& scenario, const std::string& fault) {
  if (fault == "no fault") return true;
  if (scenario.interrupt && cancel_description(scenario) == fault) return true;
  for (const mock::Turn& t : scenario.script.turns) {
    for (const mock::Attempt& a : t.attempts) {
      // What fault_description and failure_signature can say of a request this attempt answers.
      if (a.status) {
        if (fault == status_words(a)) return true;
        continue;
      }
      if (a.fault && fault == fault_where(a)) return true;
      const auto finish = std::find_if(a.events.begin(), a.events.end(),
                                       [](const mock::Event& e) { return std::holds_alternative<mock::FinishEvent>(e); });
      const bool no_finish = finish == a.events.end();
      // A fault before the finish (or with none) is what fault_description names, never the finish.
      if (a.fault && (no_finish || mock::fault_after_event(*a.fault, a.events.size()) <= finish - a.events.begin())) {
        continue;
      }
      if (no_finish) {
        if (fault == "no terminal event") return true;
        continue;
      }
      const auto reason = std::get<mock::FinishEvent>(*finish).reason;
      if ((reason == mock::FinishReason::kContentFilter || reason == mock::FinishReason::kMalformedCall) &&
          fault == "finish " + std::string(mock::finish_name(reason))) {
        return true;
      }
    }
  }
  return false;
}

bool can_break_invariants(const Scenario& scenario, const std::vector<std::string>& invariants) {
  const bool needs_call = std::any_of(invariants.begin(), invariants.end(), [](const std::string& name) {
    return name == "at-most-once" || name == "recorded-execution";
  });
  if (!needs_call) return true;
  for (const mock::Turn& t : scenario.script.turns) {
    for (const mock::Attempt& a : t.attempts) {
      for (const mock::Event& e : a.events) {
        if (std::holds_alternative<mock::CallEvent>(e)) return true;
      }
    }
  }
  return false;
}

void smallest_first(std::vector<ConfirmGroup>& groups, const std::function<explore::ScenarioSize(int)>& size) {
  for (ConfirmGroup& g : groups) {
    std::vector<std::pair<int, int>> keyed;  // (turns + attempts + events, case index)
    keyed.reserve(g.cases.size());
    for (int i : g.cases) {
      const explore::ScenarioSize z = size(i);
      keyed.emplace_back(z.turns + z.attempts + z.events, i);
    }
    std::sort(keyed.begin(), keyed.end());
    for (std::size_t k = 0; k < keyed.size(); ++k) g.cases[k] = keyed[k].second;
  }
}

std::vector<DistinctFailure> confirm_failures(const std::vector<ConfirmGroup>& groups, int confirm,
                                              int max_representatives, int jobs,
                                              const std::function<AgentCaseResult(int)>& rerun,
                                              const std::function<void(const DistinctFailure&, std::size_t)>& decided) {
  const int need = confirmations_needed(confirm);
  const int runs_a_case = std::max(0, confirm);
  struct State {
    std::size_t rep = 0;  // the case being confirmed: groups[k].cases[rep]
    int launched = 0;     // its re-runs started, ended, and showing the signature
    int finished = 0;
    int same = 0;
    std::vector<std::string> others;
    std::optional<DistinctFailure> best;
    bool done = false;
  };
  std::vector<State> states(groups.size());
  std::mutex mu;
  std::condition_variable cv;
  // Decides group k's case when no re-run of it is under way and the verdict cannot change.
  const auto settle = [&](std::size_t k) {
    State& st = states[k];
    if (st.done || st.launched != st.finished) return;
    if (groups[k].cases.empty()) {
      st.done = true;
      return;
    }
    const bool confirmed = st.same >= need;
    const bool hopeless = st.same + (runs_a_case - st.finished) < need;
    if (!confirmed && !hopeless) return;
    DistinctFailure f;
    f.signature = groups[k].signature;
    f.cases = groups[k].cases;
    std::sort(f.cases.begin(), f.cases.end());  // reported in index order
    f.case_index = groups[k].cases[st.rep];
    f.runs = 1 + st.finished;
    f.failed_runs = 1 + st.same;
    f.confirmed = confirmed;
    f.other_signatures = st.others;  // sorted: re-runs at once end in any order
    std::sort(f.other_signatures.begin(), f.other_signatures.end());
    if (decided) decided(f, groups[k].cases.size());
    st.best = std::move(f);
    if (confirmed || static_cast<int>(st.rep) + 1 >= std::max(1, max_representatives) ||
        st.rep + 1 >= groups[k].cases.size()) {
      st.done = true;
      return;
    }
    State fresh;  // the group's next case, the flaky one kept as its verdict until that one's lands
    fresh.rep = st.rep + 1;
    fresh.best = std::move(st.best);
    st = std::move(fresh);
  };
  for (std::size_t k = 0; k < groups.size(); ++k) settle(k);
  // A re-run is started only when it is needed whatever those under way show: they could not
  // reach `need` even if they all showed the signature, and would not leave it out of reach if
  // none did.
  const auto pick = [&]() -> std::optional<std::pair<std::size_t, int>> {
    for (std::size_t k = 0; k < groups.size(); ++k) {
      State& st = states[k];
      const int under_way = st.launched - st.finished;
      if (st.done || st.launched >= runs_a_case || st.same + under_way >= need ||
          st.same + (runs_a_case - st.launched) < need) {
        continue;
      }
      ++st.launched;
      return std::pair(k, groups[k].cases[st.rep]);
    }
    return std::nullopt;
  };
  const auto worker = [&](int) {
    std::unique_lock lock(mu);
    for (;;) {
      if (std::all_of(states.begin(), states.end(), [](const State& st) { return st.done; })) {
        cv.notify_all();
        return;
      }
      const auto task = pick();
      if (!task) {
        cv.wait(lock);
        continue;
      }
      lock.unlock();
      const AgentCaseResult r = rerun(task->second);
      const auto sig = signature_of(r);
      const bool shows = sig && *sig == groups[task->first].signature;
      std::string text = shows ? std::string() : outcome_text(r);
      lock.lock();
      State& st = states[task->first];
      ++st.finished;
      if (shows) ++st.same;
      else if (std::find(st.others.begin(), st.others.end(), text) == st.others.end()) st.others.push_back(std::move(text));
      settle(task->first);
      cv.notify_all();
    }
  };
  parallel_for(std::max(1, jobs), std::max(1, jobs), worker);
  std::vector<DistinctFailure> out;
  for (State& st : states) {
    if (st.best) out.push_back(std::move(*st.best));
  }
  return out;
}

int confirmations_needed(int confirm) {
  if (confirm <= 0) return 0;
  return std::max(1, confirm - 1);
}

bool is_confirmed(int same, int confirm) { return same >= confirmations_needed(confirm); }

std::optional<Scenario> shrink_candidate(const Scenario& candidate, const Recipe& recipe,
                                        const explore::GenerateLimits& limits) {
  try {
    if ((limits.runtime && candidate.runtime != *limits.runtime) || !calls_fit(candidate, limits) ||
        cancel_hold_problem(candidate)) {
      return std::nullopt;
    }
    Scenario s = candidate;
    s.expect = oracle_expect(s);
    if (!parse_scenario(write_scenario(s), s.name + ".json").problems.empty()) return std::nullopt;
    if (!check_agent_scenario(s, recipe).empty()) return std::nullopt;
    // A counterexample must fail on the agent, not on the scenario: a candidate the reference
    // runtime fails too (e.g. a session prompt left without a turn to answer it) is no smaller
    // form of the failure. In memory: milliseconds, against seconds for an agent run.
    RunOptions reference;
    reference.transport = TransportKind::kMemory;
    if (!run_scenario(s, reference).passed()) return std::nullopt;
    return s;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

explore::GenerateLimits black_box_limits(const Recipe& recipe) {
  explore::GenerateLimits limits;
  RuntimeSettings rt;
  rt.max_attempts = recipe.max_attempts;
  rt.idle_timeout_s = 2;  // sizes the stalls (0.5-1 s); an agent has its own idle timeout
  limits.runtime = rt;
  limits.tool_name = recipe.tool_name.empty() ? "run_shell_command" : recipe.tool_name;
  limits.tool_command_arg = recipe.tool_name.empty() ? "command" : recipe.tool_command_arg;
  limits.max_turns = 4;  // real time: a real agent takes seconds a turn
  limits.max_failing_attempts = std::clamp(recipe.max_attempts - 1, 0, 3);
  limits.final_attempt_completes = true;
  limits.max_stall_s = 1;
  limits.max_retry_after_s = 1;
  // A recipe that declares a cancel (SIGINT, then a resume command) takes session prompts and the
  // user's cancel while the answer streams (black_box_case keeps the interrupts the hold can play).
  limits.interrupts = recipe.cancel.has_value();
  limits.interrupts_while_streaming = true;  // what the hold can play (cancel_hold_problem)
  limits.sessions = recipe.cancel.has_value();
  limits.repeated_ids = false;
  limits.truncated_answer_last_only = recipe.resumes_truncated_answer;
  // Not drawn for a black box: its tool here is the recipe's shell command, not the scenario's MCP tools.
  limits.tools = false;
  // Not yet drawn for a black box: whether a real CLI is asked for reasoning (thinking enabled,
  // include of encrypted reasoning) depends on its settings, which no recipe pins yet.
  limits.reasoning = false;
  return limits;
}

Scenario black_box_case(std::uint64_t seed, int index, const Recipe& recipe, const explore::GenerateLimits& limits) {
  Scenario s = explore::generate_case(seed, index, recipe.provider, "", limits).value();
  // Kept: a cancel while the answer streams (after an event, or inside a call's arguments) on an
  // attempt the hold can play, where black_box_limits' interrupts_while_streaming places every
  // drawn cancel. Dropped, with the session prompt left in place, should one come through anyway:
  // a cancel while a tool runs (the drawn tools are instant, so the agent passes the point before
  // the SIGINT), one during a backoff (an agent's own backoff after a fault can be shorter than the
  // 0.3 s before the SIGINT), and one whose attempt scripts a fault or times an event after the
  // point.
  if (s.interrupt && (!s.interrupt->after_event || cancel_hold_problem(s))) s.interrupt.reset();
  return explore::with_oracle_expect(std::move(s));
}

int AgentExploreOutcome::exit_code() const {
  if (internal_errors > 0) return 5;
  return failures.empty() && errors == 0 ? 0 : 1;
}

AgentExploreOutcome explore_agent(const Recipe& recipe, const AgentExploreOptions& o, std::ostream& log,
                                  ReportListener* listener) {
  const Stopwatch clock;
  AgentExploreOutcome out;
  const explore::GenerateLimits limits = black_box_limits(recipe);
  const std::string classname = "hiccup.explore." + recipe.name;
  const double budget_ms = o.time_budget_s * 1000;
  const double shrink_budget_s = o.shrink_budget_s > 0 ? o.shrink_budget_s : o.time_budget_s;
  if (listener) {
    RunInfo info{"explore", o.seed, "http", {}, recipe.provider, recipe.name};
    listener->run_starting(info);
  }
  log << "explore: agent " << recipe.name << " (black box, real time), seed " << o.seed << ", " << o.cases
      << (o.cases == 1 ? " case" : " cases") << " in " << recipe.provider << ", tool " << limits.tool_name << "("
      << limits.tool_command_arg << "), attempt budget " << recipe.max_attempts << ", " << o.jobs << " at a time, confirm "
      << o.confirm << ", time budget " << o.time_budget_s << " s"
      << (o.shrink_budget_s > 0 ? ", shrink budget " : "");
  if (o.shrink_budget_s > 0) log << shrink_budget_s << " s a failure";
  log << "\n";

  // Generate every case first: from (seed, index) alone, whatever the agent does.
  struct Case {
    Scenario scenario;
    std::string problem;  // why it cannot be played ("" when it can)
    bool ran = false;
    AgentCaseResult result;
  };
  std::vector<Case> cases(static_cast<std::size_t>(std::max(0, o.cases)));
  std::string digest_lines;
  for (int i = 0; i < o.cases; ++i) {
    Case& c = cases[static_cast<std::size_t>(i)];
    try {
      c.scenario = black_box_case(o.seed, i, recipe, limits);
      const std::string text = write_scenario(c.scenario);
      const std::string d = fnv1a_hex(text);
      out.case_digests.emplace_back(i, d);
      digest_lines += std::to_string(i) + " " + d + "\n";
      std::vector<std::string> problems = check_agent_scenario(c.scenario, recipe);
      for (const LoadProblem& p : parse_scenario(text, c.scenario.name + ".json").problems) problems.push_back(format_problem(p));
      c.problem = join(problems, "; ");
    } catch (const std::exception& e) {
      c.problem = std::string("cannot generate: ") + e.what();
    }
    if (!c.problem.empty()) log << "  case " << i << " not played (a harness bug: generation left the agent's space): " << c.problem << "\n";
  }
  out.cases_generated = o.cases;
  out.digest = fnv1a_hex(digest_lines);

  // Run them, `jobs` at a time, until the time budget is spent.
  AgentRunOptions run_options;
  run_options.timeout_s = o.agent_timeout_s;
  AgentRunOptions case_options = run_options;
  case_options.output_dir = (fs::path(o.report_dir) / "agents" / recipe.name).string();
  std::mutex log_mu;
  parallel_for(
      o.cases, o.jobs,
      [&](int i) {
        Case& c = cases[static_cast<std::size_t>(i)];
        if (!c.problem.empty()) return;
        try {
          c.result = run_agent_scenario(c.scenario, recipe, case_options);
        } catch (const std::exception& e) {  // run_agent_scenario catches its own; belt and braces
          c.result.scenario = c.scenario;
          c.result.harness_error = std::string("harness: ") + e.what();
          c.result.internal_error = true;
        }
        c.ran = true;
        if (c.result.harness_error.empty()) c.result.harness_error = never_reached_mock(c.result, recipe.name);
        const std::string verdict = !c.result.harness_error.empty() ? "ERROR " + one_line(error_excerpt(c.result.harness_error))
                                    : c.result.violations.empty()
                                        ? (c.result.differences.empty() ? std::string("PASS") : std::string("DIFF"))
                                        : "FAIL " + outcome_text(c.result);
        std::lock_guard lock(log_mu);
        log << "  case " << i << ": " << verdict << " (" << seconds_text(c.result.wall_ms) << ")\n" << std::flush;
      },
      [&] { return clock.elapsed_ms() > budget_ms; });

  // Judge in index order and group the failures by signature.
  std::vector<ConfirmGroup> groups;
  for (int i = 0; i < o.cases; ++i) {
    const Case& c = cases[static_cast<std::size_t>(i)];
    if (!c.problem.empty()) {
      ++out.errors;  // a generated case the agent cannot play: a harness bug, never a pass
      continue;
    }
    if (!c.ran) {
      out.stopped_by_time_budget = true;
      continue;
    }
    ++out.cases_run;
    if (!c.result.harness_error.empty()) {
      ++out.errors;
      if (c.result.internal_error) ++out.internal_errors;
      continue;
    }
    if (c.result.violations.empty()) {
      ++out.passed;
      if (!c.result.differences.empty()) ++out.differences;
      continue;
    }
    ++out.failed;
    const FailureSignature sig = failure_signature(c.result.scenario, c.result.journal, c.result.violations);
    auto g = std::find_if(groups.begin(), groups.end(), [&](const ConfirmGroup& x) { return x.signature == sig; });
    if (g == groups.end()) groups.push_back({sig, {i}});
    else g->cases.push_back(i);
  }
  if (out.stopped_by_time_budget) {
    log << "time budget of " << o.time_budget_s << " s spent: " << out.cases_run << " of " << o.cases << " cases run\n";
  }
  smallest_first(groups, [&](int i) { return explore::size_of(cases[static_cast<std::size_t>(i)].scenario); });

  // Confirm: re-run up to max_representatives cases of each signature, until the verdict is
  // decided (confirm_failures).
  if (!groups.empty() && o.confirm > 0) {
    log << "confirming " << groups.size() << (groups.size() == 1 ? " distinct failure" : " distinct failures")
        << " by re-running " << (groups.size() == 1 ? "its case " : "each one's case ")
        << (o.confirm == 1 ? std::string("once") : "up to " + std::to_string(o.confirm) + " times")
        << "\n" << std::flush;
  }
  const auto rerun = [&](int index) {
    const Case& c = cases[static_cast<std::size_t>(index)];
    try {
      return run_agent_scenario(c.scenario, recipe, run_options);
    } catch (const std::exception& e) {  // run_agent_scenario catches its own; belt and braces
      AgentCaseResult r;
      r.scenario = c.scenario;
      r.harness_error = std::string("harness: ") + e.what();
      return r;
    }
  };
  const auto decided = [&](const DistinctFailure& f, std::size_t group_cases) {
    std::lock_guard lock(log_mu);
    if (o.confirm <= 0) {  // nothing re-run: the one run is the verdict
      log << "FAILED case " << f.case_index << ": " << f.signature.text() << " (not re-run: --confirm 0)\n" << std::flush;
      return;
    }
    log << (f.confirmed ? "CONFIRMED" : "FLAKY") << " case " << f.case_index << ": " << f.signature.text()
        << ": failed this way in " << f.failed_runs << " of " << f.runs << " runs";
    if (!f.other_signatures.empty()) log << " (other runs: " << join(f.other_signatures, "; ") << ")";
    if (group_cases > 1) log << "; " << group_cases << " cases showed it first time";
    log << "\n" << std::flush;
  };
  for (DistinctFailure& f : confirm_failures(groups, o.confirm, o.max_representatives, o.jobs, rerun, decided)) {
    f.original = cases[static_cast<std::size_t>(f.case_index)].result;
    f.original_size = explore::size_of(cases[static_cast<std::size_t>(f.case_index)].scenario);
    (f.confirmed ? out.failures : out.flaky).push_back(std::move(f));
  }

  // Shrink each distinct confirmed failure by re-running the agent.
  const double agent_timeout_s = run_options.timeout_s > 0 ? run_options.timeout_s : recipe.timeout_s;
  for (DistinctFailure& f : out.failures) {
    const Stopwatch shrink_clock;
    AgentCaseResult last = f.original;  // a run that showed the signature on the scenario kept
    int runs = 0;
    int ruled_out = 0;  // candidates rejected without a run (can_show_fault, can_break_invariants)
    int repeats = 0;    // candidates rejected before, on the same scenario file: not run again
    // The agent runs' verdict on a playable candidate that can show the fault.
    const explore::StillFails agent_runs_show = [&](const Scenario& s) -> std::optional<Scenario> {
      // Two runs at once (one after the other with --jobs 1), a third only when they disagree:
      // kept when 2 of 3 fail the same way.
      // A run gets at most what is left of the shrink budget; one that timed out on that shorter
      // limit shows nothing (an agent's own slowness would otherwise pass for a liveness failure).
      std::vector<std::optional<AgentCaseResult>> rs(3);
      std::array<bool, 3> budget_capped{};
      auto run = [&](int k) {
        const std::size_t at = static_cast<std::size_t>(k);
        AgentRunOptions options = run_options;
        const double left_s = shrink_budget_s - shrink_clock.elapsed_ms() / 1000;
        if (left_s < agent_timeout_s) {
          options.timeout_s = std::max(0.25, left_s);
          budget_capped[at] = true;
        }
        try {
          rs[at] = run_agent_scenario(s, recipe, options);
        } catch (const std::exception&) {
          rs[at].reset();
        }
      };
      auto shows = [&](int k) {
        const std::size_t at = static_cast<std::size_t>(k);
        const auto& r = rs[at];
        if (!r || (budget_capped[at] && timed_out(*r))) return false;
        const auto sig = signature_of(*r);
        return sig && *sig == f.signature;
      };
      parallel_for(2, o.jobs, run);
      runs += 2;
      int same = shows(0) + shows(1);
      if (same == 1) {
        run(2);
        ++runs;
        same += shows(2);
      }
      if (same < 2) return std::nullopt;
      for (int k = 0; k < 3; ++k) {
        if (shows(k)) {
          last = std::move(*rs[static_cast<std::size_t>(k)]);
          break;
        }
      }
      return s;
    };
    const explore::StillFails runs_show = explore::remember_rejections(agent_runs_show, repeats);
    const explore::StillFails still_fails = [&](const Scenario& candidate) -> std::optional<Scenario> {
      const std::optional<Scenario> playable = shrink_candidate(candidate, recipe, limits);
      if (!playable) return std::nullopt;
      // The failure's fault is gone, or every call its invariants need: no run can keep it.
      if (!can_show_fault(*playable, f.signature.fault) || !can_break_invariants(*playable, f.signature.invariants)) {
        ++ruled_out;
        return std::nullopt;
      }
      return runs_show(*playable);
    };
    log << "shrinking case " << f.case_index << " (" << f.signature.text() << ") by re-running the agent, at most "
        << shrink_budget_s << " s\n" << std::flush;
    // A line per kept edit: with the default budget a failure can be shrunk for 10 minutes.
    const auto kept = [&](const explore::Edit& edit, const Scenario& now) {
      log << "  kept: " << edit.description << " " << edit.pointer << " (now " << size_text(explore::size_of(now)) << "; "
          << seconds_text(shrink_clock.elapsed_ms()) << ", " << runs << " agent runs)\n" << std::flush;
    };
    const explore::MinimizeByResult found = explore::minimize_by(
        f.original.scenario, still_fails, o.max_shrink_tries, [&] { return shrink_clock.elapsed_ms() > shrink_budget_s * 1000; },
        /*black_box=*/true, kept);
    f.shrink_tries = found.tries;
    f.shrink_steps = found.accepted;
    f.shrink_runs = runs;
    f.shrink_ruled_out = ruled_out;
    f.shrink_repeats = repeats;
    f.one_minimal = found.one_minimal;
    f.shrunk = found.scenario;
    f.shrunk.name = recipe.name + "-explore-s" + std::to_string(o.seed) + "-c" + std::to_string(f.case_index);
    f.shrunk.tags = {"explore", "counterexample"};
    if (!o.agent.empty()) f.shrunk.tags.push_back(recipe.name);  // `hiccup run --agent` and matrix: its own
    f.shrunk.description = "shrunk counterexample of hiccup explore " +
                           (o.agent.empty() ? std::string("--agent-cmd") : "--agent " + recipe.name) + " --seed " +
                           std::to_string(o.seed) + " (case " + std::to_string(f.case_index) + "): " + f.signature.text() +
                           "; it failed this way in " + std::to_string(f.failed_runs) + " of " + std::to_string(f.runs) +
                           " runs (a black box's verdicts may vary)";
    f.shrunk_size = explore::size_of(f.shrunk);
    f.shrunk_result = std::move(last);
    f.shrunk_result.scenario = f.shrunk;
    f.shrink_ms = shrink_clock.elapsed_ms();

    // The same file on the reference runtime, in memory: it should pass there.
    try {
      RunOptions reference;
      reference.transport = TransportKind::kMemory;
      const CaseResult r = run_scenario(f.shrunk, reference);
      f.reference_passes = r.passed();
      f.reference_violations = r.violations;
    } catch (const std::exception& e) {
      f.reference_passes = false;
      f.reference_violations = {Violation{"harness", std::string("the reference runtime could not run it: ") + e.what()}};
    }

    std::string why = "found by hiccup explore " +
                      (o.agent.empty() ? std::string("--agent-cmd") : "--agent " + recipe.name) + " --seed " +
                      std::to_string(o.seed) + " (case " + std::to_string(f.case_index) + "): " + f.signature.text() +
                      "; failed this way in " + std::to_string(f.failed_runs) + " of " + std::to_string(f.runs) + " runs";
    json entry = {{"violates", f.shrunk_result.violated()}, {"why", why}};
    if (!f.shrunk_result.violations.empty()) entry["harm"] = harm_of(f.shrunk_result.violations.front());
    if (f.failed_runs < f.runs) entry["flaky"] = true;
    f.pin = {{"agents", {{recipe.name, {{"known_failures", {{f.shrunk.name, entry}}}}}}}};

    const fs::path dir = fs::path(o.report_dir) / "counterexamples";
    std::error_code ec;
    fs::create_directories(dir, ec);
    const fs::path path = dir / (f.shrunk.name + ".json");
    try {
      write_report_file(path.string(), write_scenario(f.shrunk));
      write_report_file((dir / (f.shrunk.name + ".pin.json")).string(), f.pin.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
      f.path = path.string();
      f.replay_command = o.hiccup_path + " run " +
                         (o.agent.empty() ? "--agent-cmd " + shell_quote(o.agent_cmd) : "--agent " + shell_quote(o.agent)) +
                         (o.agent_timeout_s > 0 ? " --agent-timeout " + std::to_string(static_cast<long long>(o.agent_timeout_s)) : "") +
                         " " + shell_quote(f.path);
    } catch (const ReportWriteError& e) {
      log << "  error: cannot write the counterexample: " << e.what() << "\n";
    }
    log << "  shrunk in " << f.shrink_steps << (f.shrink_steps == 1 ? " edit (" : " edits (") << f.shrink_tries << " candidates, " << f.shrink_runs
        << " agent runs"
        << (f.shrink_ruled_out > 0 ? ", " + std::to_string(f.shrink_ruled_out) + " ruled out without a run" : std::string())
        << (f.shrink_repeats > 0 ? ", " + std::to_string(f.shrink_repeats) + " rejected before and not run again" : std::string())
        << (f.one_minimal ? ", 1-minimal" : ", budget spent before 1-minimal") << ") from "
        << size_text(f.original_size) << " to " << size_text(f.shrunk_size) << " in " << seconds_text(f.shrink_ms) << "\n";
    for (const Violation& v : f.shrunk_result.violations) log << "    " << v.invariant << violation_location(v) << ": " << v.message << "\n";
    if (!f.path.empty()) log << "  counterexample: " << f.path << "\n  replay:  " << f.replay_command << "\n";
    if (f.reference_passes) {
      log << "  the reference runtime passes it (the agent, not the scenario, fails)\n";
    } else {
      log << "  warning: the reference runtime fails it too, so the scenario, not the agent, fails:";
      for (const Violation& v : f.reference_violations) log << " " << v.invariant;
      log << "\n";
    }
    log << "  suggested pin for harness/agents/known-failures.json: " << f.pin.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  out.wall_ms = clock.elapsed_ms();

  if (listener) {
    RunTotals totals;
    json distinct = json::array(), flaky = json::array();
    for (const DistinctFailure& f : out.failures) {
      ReportCase c = to_report_case(f.shrunk_result, recipe, classname);
      c.name = f.shrunk.name;
      c.passed = false;
      c.wall_ms = f.shrink_ms;
      c.extra["signature"] = f.signature.text();
      c.extra["cases"] = f.cases;
      c.extra["failing_case"] = f.case_index;
      c.extra["rate"] = {{"failed", f.failed_runs}, {"runs", f.runs}};
      c.extra["counterexample"] = f.path;
      if (!f.replay_command.empty()) c.extra["replay"] = f.replay_command;
      c.extra["original_size"] = size_json(f.original_size);
      c.extra["shrunk_size"] = size_json(f.shrunk_size);
      c.extra["shrink_steps"] = f.shrink_steps;
      c.extra["shrink_tries"] = f.shrink_tries;
      c.extra["shrink_runs"] = f.shrink_runs;
      c.extra["shrink_ruled_out"] = f.shrink_ruled_out;
      c.extra["shrink_repeats"] = f.shrink_repeats;
      c.extra["one_minimal"] = f.one_minimal;
      c.extra["shrink_ms"] = f.shrink_ms;
      c.extra["reference_passes"] = f.reference_passes;
      c.extra["known_failure_pin"] = f.pin;
      c.extra["seed"] = o.seed;
      c.detail = "signature: " + f.signature.text() + "\nfailed this way in " + std::to_string(f.failed_runs) + " of " +
                 std::to_string(f.runs) + " runs\ncounterexample: " + f.path + "\nreplay: " + f.replay_command + "\n" +
                 (f.reference_passes ? "" : "the reference runtime fails it too: the scenario, not the agent, fails\n") +
                 c.detail;
      ++totals.failed;
      listener->case_ended(c);
      distinct.push_back({{"signature", f.signature.text()}, {"invariants", f.signature.invariants},
                          {"fault", f.signature.fault}, {"cases", f.cases}, {"case", f.case_index},
                          {"rate", {{"failed", f.failed_runs}, {"runs", f.runs}}}, {"counterexample", f.path},
                          {"replay", f.replay_command}, {"shrunk_size", size_json(f.shrunk_size)},
                          {"original_size", size_json(f.original_size)}, {"shrink_ms", f.shrink_ms},
                          {"shrink_runs", f.shrink_runs}, {"shrink_ruled_out", f.shrink_ruled_out},
                          {"shrink_repeats", f.shrink_repeats}, {"one_minimal", f.one_minimal},
                          {"reference_passes", f.reference_passes}});
    }
    for (const DistinctFailure& f : out.flaky) {
      flaky.push_back({{"signature", f.signature.text()}, {"invariants", f.signature.invariants},
                       {"fault", f.signature.fault}, {"cases", f.cases}, {"case", f.case_index},
                       {"rate", {{"failed", f.failed_runs}, {"runs", f.runs}}}, {"other_runs", f.other_signatures}});
    }
    if (out.failures.empty()) {
      ReportCase c;
      c.name = "explore/" + recipe.name;
      c.classname = classname;
      c.passed = out.errors == 0;
      c.wall_ms = out.wall_ms;
      if (out.errors > 0) {
        std::string first;
        for (const Case& k : cases) {
          first = !k.problem.empty() ? k.problem : k.ran ? k.result.harness_error : std::string();
          if (!first.empty()) break;
        }
        c.violations.push_back({"harness", std::to_string(out.errors) + " case(s) could not be run, first: " + first});
      }
      c.detail = std::to_string(out.cases_run) + " cases run, " + std::to_string(out.passed) + " passed, no confirmed failure" +
                 (out.flaky.empty() ? std::string() : ", " + std::to_string(out.flaky.size()) + " flaky (listed in summary.json)");
      c.extra = {{"agent", recipe.name}, {"seed", o.seed}, {"verdict", c.passed ? "pass" : "error"}};
      (c.passed ? totals.passed : totals.failed) += 1;
      listener->case_ended(c);
    }
    totals.wall_ms = out.wall_ms;
    totals.extra["digest"] = out.digest;
    totals.extra["cases_requested"] = o.cases;
    json digests = json::array();
    for (const auto& [i, d] : out.case_digests) digests.push_back(json::array({i, d}));
    totals.extra["case_digests"] = std::move(digests);
    totals.extra["black_box"] = {
        {"cases_run", out.cases_run}, {"cases_passed", out.passed}, {"cases_failed", out.failed},
        {"cases_differences", out.differences}, {"cases_errors", out.errors}, {"confirm", o.confirm},
        {"time_budget_s", o.time_budget_s}, {"shrink_budget_s", shrink_budget_s},
        {"stopped_by_time_budget", out.stopped_by_time_budget},
        {"distinct_failures", std::move(distinct)}, {"flaky", std::move(flaky)},
        {"limits", {{"tool", limits.tool_name}, {"tool_command_arg", limits.tool_command_arg}, {"max_turns", limits.max_turns},
                    {"max_attempts", recipe.max_attempts}, {"max_failing_attempts", limits.max_failing_attempts},
                    {"max_stall_s", limits.max_stall_s}, {"max_retry_after_s", limits.max_retry_after_s}}},
        {"note", black_box_note(o.confirm)}};
    listener->run_ended(totals);
  }

  log << "explored " << out.cases_run << " of " << o.cases << " cases against " << recipe.name << " in "
      << seconds_text(out.wall_ms) << ": " << out.passed << " passed";
  if (out.differences > 0) log << " (" << out.differences << " policy differences)";
  log << ", " << out.failed << " failed";
  if (out.errors > 0) log << ", " << out.errors << " could not run";
  log << "; digest " << out.digest << "\n";
  log << out.failures.size() << (out.failures.size() == 1 ? " distinct failure" : " distinct failures")
      << (o.confirm <= 0 ? " (shrunk; not re-run: --confirm 0)" : " (confirmed, shrunk)") << (out.failures.empty() ? "" : ":") << "\n";
  for (std::size_t k = 0; k < out.failures.size(); ++k) {
    const DistinctFailure& f = out.failures[k];
    log << "  " << k + 1 << ". " << f.signature.text() << ": " << f.cases.size() << (f.cases.size() == 1 ? " case" : " cases")
        << ", failed " << f.failed_runs << " of " << f.runs << " runs; " << size_text(f.shrunk_size) << "; "
        << (f.path.empty() ? std::string("not written") : f.path)
        << (f.reference_passes ? "" : " (the reference runtime fails it too)") << "\n";
  }
  if (!out.flaky.empty()) {
    log << out.flaky.size() << " flaky (not confirmed, not shrunk):\n";
    for (const DistinctFailure& f : out.flaky) {
      log << "  " << f.signature.text() << ": case " << f.case_index << ", failed " << f.failed_runs << " of " << f.runs
          << " runs\n";
    }
  }
  log << "note: " << black_box_note(o.confirm) << "\n";
  return out;
}

}  // namespace harness::agents
