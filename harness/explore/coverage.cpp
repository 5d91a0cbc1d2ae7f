// Coverage of an exploration; see coverage.h and docs/COVERAGE.md.
#include "harness/explore/coverage.h"

#include <algorithm>
#include <iomanip>
#include <ostream>

#include "harness/invariants.h"
#include "harness/report/coverage_counts.h"
#include "mock_server/faults.h"

namespace harness::explore {
namespace {

using mock::JournalEntry;

/// The scripted attempt `e` played; nullptr when it played none (unscripted, rejected, preflight).
const mock::Attempt* played_attempt(const CaseResult& r, const JournalEntry& e) {
  const auto& turns = r.scenario.script.turns;
  if (e.played != "stream" && e.played != "status") return nullptr;
  if (e.turn < 0 || static_cast<std::size_t>(e.turn) >= turns.size()) return nullptr;
  const auto& attempts = turns[static_cast<std::size_t>(e.turn)].attempts;
  if (e.script_attempt < 0 || static_cast<std::size_t>(e.script_attempt) >= attempts.size()) return nullptr;
  return &attempts[static_cast<std::size_t>(e.script_attempt)];
}

bool failed_after_delivering(const JournalEntry& e, bool calls, bool text) {
  if (e.completed) return false;
  return (calls && !e.delivered_calls.empty()) || (text && !e.delivered_text.empty());
}

bool carries_function_responses(const JournalEntry& e) {
  if (!e.contents.is_array()) return false;
  for (const auto& content : e.contents) {
    if (!content.is_object() || !content.contains("parts") || !content["parts"].is_array()) continue;
    for (const auto& part : content["parts"]) {
      if (part.is_object() && part.contains("functionResponse")) return true;
    }
  }
  return false;
}

bool retryable_status(int status) {
  return status == 429 || status == 500 || status == 502 || status == 503 || status == 504 || status == 529;
}

bool at_most_once_pre(const CaseResult& r) {
  return std::any_of(r.journal.begin(), r.journal.end(),
                     [](const JournalEntry& e) { return failed_after_delivering(e, true, false); });
}

/// A tools/call the runtime sent ended with an outcome the model must be told of: a failure (error
/// result, JSON-RPC error, expired session), an unknown outcome (timed out, reply lost), or none
/// (the run stopped while it waited).
bool tool_failed(const CaseResult& r) {
  return std::any_of(r.tool_calls.begin(), r.tool_calls.end(),
                     [](const ToolCallRecord& c) { return c.outcome != "result" || c.is_error; });
}
bool tool_outcome_unknown(const CaseResult& r) {
  return std::any_of(r.tool_calls.begin(), r.tool_calls.end(), [](const ToolCallRecord& c) {
    return c.outcome == "timed_out" || c.outcome == "reply_lost" || c.outcome == "waiting";
  });
}

bool pairing_pre(const CaseResult& r) {
  return std::any_of(r.journal.begin(), r.journal.end(), carries_function_responses);
}

bool history_integrity_pre(const CaseResult& r) {
  for (std::size_t i = 0; i + 1 < r.journal.size(); ++i) {
    if (failed_after_delivering(r.journal[i], true, true)) return true;  // a request follows it
  }
  return false;
}

bool no_rejected_request_pre(const CaseResult& r) {
  return std::any_of(r.journal.begin(), r.journal.end(),
                     [](const JournalEntry& e) {
                       return e.response_status >= 400 && e.response_status < 500 && e.response_status != 429;
                     });
}

bool bounded_retries_pre(const CaseResult& r) {
  const int budget = runtime_config(r.scenario, {}).max_attempts;
  std::map<int, int> per_turn;
  for (const JournalEntry& e : r.journal) {
    if (const mock::Attempt* a = played_attempt(r, e);
        a && a->status && retryable_status(*a->status) && a->retry_after_s) {
      return true;
    }
    if (e.turn < 0) continue;
    if (++per_turn[e.turn] == budget && !e.completed) return true;
  }
  return false;
}

bool honest_outcome_pre(const CaseResult& r) {
  if (tool_failed(r)) return true;
  for (const JournalEntry& e : r.journal) {
    const auto finish = delivered_finish(r.scenario, e);
    if (finish == mock::FinishReason::kContentFilter || finish == mock::FinishReason::kMalformedCall ||
        finish == mock::FinishReason::kMaxTokens) {
      return true;
    }
    if (e.played == "stream" && !e.completed && !finish && (e.fault.empty() || e.fault == "end")) return true;
  }
  return false;
}

bool clean_output_pre(const CaseResult& r) {
  return std::any_of(r.journal.begin(), r.journal.end(),
                     [](const JournalEntry& e) { return failed_after_delivering(e, false, true); });
}

bool content_filter_pre(const CaseResult& r) {
  return std::any_of(r.journal.begin(), r.journal.end(), [&](const JournalEntry& e) {
    return delivered_finish(r.scenario, e) == mock::FinishReason::kContentFilter;
  });
}

bool liveness_pre(const CaseResult& r) {
  // The runner's default cap (RunOptions::max_virtual_s) unless the scenario sets its own.
  const double cap_s = r.scenario.max_virtual_s.value_or(RunOptions{}.max_virtual_s);
  const bool tool_hung = std::any_of(r.tool_calls.begin(), r.tool_calls.end(), [](const ToolCallRecord& c) {
    return c.behaviour == "hang";
  });
  if (tool_hung) return true;
  return std::any_of(r.journal.begin(), r.journal.end(), [&](const JournalEntry& e) {
    const mock::Attempt* a = played_attempt(r, e);
    if (a == nullptr || !a->fault || e.fault != "stall") return false;
    const auto* stall = std::get_if<mock::StallFault>(&*a->fault);
    return stall != nullptr && stall->seconds >= cap_s;
  });
}

bool no_request_after_cancel_pre(const CaseResult& r) {
  return cancel_point_request(r.scenario, r.journal) >= 0;
}

bool no_execution_after_cancel_pre(const CaseResult& r) {
  if (!r.scenario.interrupt) return false;
  const Interrupt& in = *r.scenario.interrupt;
  for (const JournalEntry& e : r.journal) {
    if (e.turn != in.turn) continue;
    if (in.after_calls && e.completed) return static_cast<int>(e.delivered_calls.size()) > *in.after_calls;
    if (!in.after_event || e.attempt != *in.attempt) continue;
    const int cancelled = interrupted_request(r.scenario, r.journal);
    if (cancelled < 0 || &r.journal[static_cast<std::size_t>(cancelled)] != &e) return false;
    const mock::Attempt* a = played_attempt(r, e);
    if (a == nullptr) return false;
    // Inside call e's arguments (after_fragment), call e itself is one the cancel stops.
    for (std::size_t k = static_cast<std::size_t>(*in.after_event) + (in.after_fragment ? 0 : 1); k < a->events.size(); ++k) {
      if (std::holds_alternative<mock::CallEvent>(a->events[k])) return true;
    }
    return false;
  }
  return false;
}

/// How many of the session's prompts (the scenario's prompt, then its session prompts) the requests
/// carried: the most a request carried, as user texts in order, read from the journal.
int prompts_reached(const CaseResult& r) {
  std::vector<std::string> prompts = {r.scenario.prompt};
  for (const SessionPrompt& p : r.scenario.session) prompts.push_back(p.prompt);
  int most = 0;
  for (const JournalEntry& e : r.journal) {
    if (!e.contents.is_array()) continue;
    std::size_t k = 0;
    for (const nlohmann::json& c : e.contents) {
      if (k >= prompts.size() || !c.is_object() || c.value("role", "") != "user" || !c.contains("parts") ||
          !c["parts"].is_array()) {
        continue;
      }
      for (const nlohmann::json& part : c["parts"]) {
        if (k < prompts.size() && part.is_object() && part.contains("text") && part["text"] == prompts[k]) ++k;
      }
    }
    most = std::max(most, static_cast<int>(k));
  }
  return most;
}

void add_once(std::vector<std::string>& v, const std::string& name) {
  if (std::find(v.begin(), v.end(), name) == v.end()) v.push_back(name);
}

const char* const kGroups[] = {"fault", "finish", "status", "provider", "position", "session", "id", "reasoning", "invariant"};

/// call_id_kinds() of a call whose id the provider repeated: delivered call `k` of `e`, which the
/// journal marks reuse_id. The call it repeats is the earlier one of its answer with that id, else
/// the last call with that id an earlier request delivered.
void add_id_kinds(const CaseResult& r, const JournalEntry& e, std::size_t k, std::vector<std::string>& out);

}  // namespace

const std::vector<InvariantPrecondition>& invariant_preconditions() {
  static const std::vector<InvariantPrecondition> table = {
      {"at-most-once", "a call was delivered by an attempt that then failed, or a tool call's outcome was unknown (timed out, reply lost)",
       [](const CaseResult& r) { return at_most_once_pre(r) || tool_outcome_unknown(r); }},
      {"recorded-execution", "a call was delivered by an attempt that then failed", &at_most_once_pre},
      {"pairing", "a request carried function responses", &pairing_pre},
      {"history-integrity", "a request followed an attempt that delivered text or calls and then failed",
       &history_integrity_pre},
      {"no-rejected-request", "a request was answered with a non-retryable 4xx status (scripted, or a rejection)",
       &no_rejected_request_pre},
      {"bounded-retries",
       "a retryable status came with Retry-After, or a turn used its whole attempt budget and its last attempt failed",
       &bounded_retries_pre},
      {"honest-outcome",
       "a content-filter, malformed-call or max_tokens finish was delivered, a stream ended cleanly without its terminal event, or a tool call failed or its outcome was unknown",
       &honest_outcome_pre},
      {"clean-output", "an attempt delivered text and then failed", &clean_output_pre},
      {"no-unchanged-content-filter-retry", "a content-filter finish was delivered", &content_filter_pre},
      {"liveness", "a stream stalled for at least the run's virtual-time cap, or a tool hung", &liveness_pre},
      {"no-execution-after-cancel",
       "the user's interrupt fired with calls of the cancelled turn still to come: scripted after the cancelled event, or committed beyond after_calls",
       &no_execution_after_cancel_pre},
      {"no-request-after-cancel", "the user's interrupt fired (while an answer streamed, while tools ran, or during a backoff)",
       &no_request_after_cancel_pre},
  };
  return table;
}

const std::vector<std::string_view>& call_id_kinds() {
  static const std::vector<std::string_view> names = {"in one answer", "from an earlier turn", "replay", "collision"};
  return names;
}

namespace {

void add_id_kinds(const CaseResult& r, const JournalEntry& e, std::size_t k, std::vector<std::string>& out) {
  const mock::DeliveredCall& c = e.delivered_calls[k];
  const mock::DeliveredCall* repeated = nullptr;
  for (std::size_t j = 0; j < k; ++j) {
    if (e.delivered_calls[j].id == c.id) repeated = &e.delivered_calls[j];
  }
  const bool in_answer = repeated != nullptr;
  for (const JournalEntry& earlier : r.journal) {
    if (in_answer || earlier.index >= e.index || earlier.turn >= e.turn) continue;
    for (const mock::DeliveredCall& d : earlier.delivered_calls) {
      if (d.id == c.id) repeated = &d;
    }
  }
  if (repeated == nullptr) return;
  add_once(out, in_answer ? "in one answer" : "from an earlier turn");
  add_once(out, repeated->name == c.name && repeated->args == c.args ? "replay" : "collision");
}

}  // namespace

const std::vector<std::string_view>& reasoning_kinds() {
  static const std::vector<std::string_view> names = {"delivered", "before a call", "fault after it", "sent back"};
  return names;
}

const std::vector<std::string_view>& fault_positions() {
  static const std::vector<std::string_view> names = {"before any event", "after a call", "inside arguments",
                                                      "in the last turn"};
  return names;
}

CaseCoverage case_coverage(const CaseResult& r) {
  CaseCoverage c;
  c.provider = r.scenario.script.provider;
  if (const int prompts = prompts_reached(r); prompts > 0) {
    c.session = std::to_string(prompts) + (prompts == 1 ? " prompt" : " prompts");
  }
  const std::size_t turns = r.scenario.script.turns.size();
  for (const JournalEntry& e : r.journal) {
    for (std::size_t k = 0; k < e.delivered_calls.size(); ++k) {
      if (e.delivered_calls[k].reuse_id) add_id_kinds(r, e, k, c.ids);
    }
    for (const mock::DeliveredReasoning& d : e.delivered_reasoning) {
      add_once(c.reasoning, "delivered");
      const bool call_whole = std::any_of(e.delivered_calls.begin(), e.delivered_calls.end(),
                                          [&](const mock::DeliveredCall& call) { return call.call_index == d.before_call; });
      if (d.before_call >= 0 && call_whole) add_once(c.reasoning, "before a call");
    }
    if (e.reasoning_due > 0 && e.validated) add_once(c.reasoning, "sent back");
    if (e.response_status >= 400) add_once(c.statuses, std::to_string(e.response_status));
    if (auto finish = delivered_finish(r.scenario, e)) add_once(c.finishes, std::string(mock::finish_name(*finish)));
    if (e.fault.empty()) continue;
    add_once(c.faults, e.fault);
    const mock::Attempt* a = played_attempt(r, e);
    if (a == nullptr || !a->fault) continue;
    const int after = mock::fault_after_event(*a->fault, a->events.size());
    if (after == 0) add_once(c.positions, "before any event");
    if (after > 0 && std::holds_alternative<mock::CallEvent>(a->events[static_cast<std::size_t>(after - 1)])) {
      add_once(c.positions, "after a call");
    }
    if (after > 0 && std::holds_alternative<mock::ReasoningEvent>(a->events[static_cast<std::size_t>(after - 1)]) &&
        !e.delivered_reasoning.empty()) {
      add_once(c.reasoning, "fault after it");
    }
    // Gemini sends a call whole and a non-streaming answer is one body: no fragment to cut inside.
    if (mock::fault_after_fragment(*a->fault) && e.streaming && e.provider != "gemini" &&
        static_cast<std::size_t>(after) < a->events.size() &&
        std::holds_alternative<mock::CallEvent>(a->events[static_cast<std::size_t>(after)])) {
      add_once(c.positions, "inside arguments");
    }
    if (static_cast<std::size_t>(e.turn) + 1 == turns) add_once(c.positions, "in the last turn");
  }
  for (const auto& p : invariant_preconditions()) {
    if (p.held(r)) c.invariants.emplace_back(p.invariant);
  }
  return c;
}

Coverage::Coverage() {
  for (const auto& k : mock::fault_catalogue()) order_["fault"].emplace_back(k.name);
  for (auto f : {mock::FinishReason::kStop, mock::FinishReason::kMaxTokens, mock::FinishReason::kContentFilter,
                 mock::FinishReason::kMalformedCall}) {
    order_["finish"].emplace_back(mock::finish_name(f));
  }
  for (auto p : fault_positions()) order_["position"].emplace_back(p);
  for (const char* p : {"1 prompt", "2 prompts", "3 prompts"}) order_["session"].emplace_back(p);
  for (auto k : call_id_kinds()) order_["id"].emplace_back(k);
  for (auto k : reasoning_kinds()) order_["reasoning"].emplace_back(k);
  for (const auto& p : invariant_preconditions()) order_["invariant"].emplace_back(p.invariant);
  for (const char* g : kGroups) {
    for (const auto& name : order_[g]) counts_[g][name] = 0;
  }
}

void Coverage::add(const CaseCoverage& c) {
  ++cases_;
  for (const auto& n : c.faults) ++counts_["fault"][n];
  for (const auto& n : c.finishes) ++counts_["finish"][n];
  for (const auto& n : c.statuses) ++counts_["status"][n];
  for (const auto& n : c.positions) ++counts_["position"][n];
  for (const auto& n : c.invariants) ++counts_["invariant"][n];
  for (const auto& n : c.ids) ++counts_["id"][n];
  for (const auto& n : c.reasoning) ++counts_["reasoning"][n];
  ++counts_["provider"][c.provider];
  if (!c.session.empty()) ++counts_["session"][c.session];
}

int Coverage::count(const std::string& group, const std::string& name) const {
  auto g = counts_.find(group);
  if (g == counts_.end()) return 0;
  auto n = g->second.find(name);
  return n == g->second.end() ? 0 : n->second;
}

std::vector<std::string> Coverage::unexercised() const {
  std::vector<std::string> out;
  for (const auto& p : invariant_preconditions()) {
    if (count("invariant", std::string(p.invariant)) == 0) out.emplace_back(p.invariant);
  }
  return out;
}

std::vector<std::string> Coverage::warnings() const {
  std::vector<std::string> out;
  for (const auto& p : invariant_preconditions()) {
    if (count("invariant", std::string(p.invariant)) > 0) continue;
    out.push_back(coverage_warning_line(p.invariant, p.holds_when));
  }
  return out;
}

nlohmann::json Coverage::to_json() const {
  auto group = [this](const std::string& g) {
    nlohmann::json j = nlohmann::json::object();
    auto it = counts_.find(g);
    if (it != counts_.end()) {
      for (const auto& [name, n] : it->second) j[name] = n;
    }
    return j;
  };
  nlohmann::json invariants = nlohmann::json::object();
  for (const auto& p : invariant_preconditions()) {
    invariants[std::string(p.invariant)] = {{"cases", count("invariant", std::string(p.invariant))},
                                            {"precondition", std::string(p.holds_when)}};
  }
  nlohmann::json out = {{"cases", cases_}};
  for (const auto& [name, key] : coverage_count_groups()) out[std::string(key)] = group(std::string(name));
  out["invariants"] = invariants;
  out["unexercised"] = unexercised();
  return out;
}

void Coverage::print(std::ostream& out) const {
  auto line = [&](const char* label, const char* g) {
    out << "  " << std::left << std::setw(11) << label << std::right;
    auto it = counts_.find(g);
    bool first = true;
    // Catalogue order first (every entry, 0 included), then names only seen (statuses, providers).
    std::vector<std::string> names = order_.count(g) ? order_.at(g) : std::vector<std::string>{};
    if (it != counts_.end()) {
      for (const auto& [name, n] : it->second) {
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
      }
    }
    for (const auto& name : names) {
      out << (first ? "" : ", ") << name << " " << count(g, name);
      first = false;
    }
    if (first) out << "none";
    out << "\n";
  };
  out << "coverage (cases of " << cases_ << "):\n";
  line("faults:", "fault");
  line("finishes:", "finish");
  line("statuses:", "status");
  line("providers:", "provider");
  line("positions:", "position");
  line("sessions:", "session");
  line("call ids:", "id");
  line("reasoning:", "reasoning");
  out << "  invariants (cases where the precondition held):\n";
  for (const auto& p : invariant_preconditions()) {
    out << "    " << std::left << std::setw(34) << p.invariant << std::right << std::setw(7)
        << count("invariant", std::string(p.invariant)) << "  " << p.holds_when << "\n";
  }
  for (const auto& w : warnings()) out << "warning: " << w << "\n";
}

}  // namespace harness::explore
