// Sessions and their verdicts. The verdict is the black-box judge of `hiccup run --agent-cmd`
// (judge_black_box) fed with a session's journal, recorded executions and recorded outcome: the
// outcome stands in for the exit code (0 completed, 1 failed, 2 none recorded) and the final text
// for the agent's output, so names and messages are the CLI's.
#include "harness/serve/session_registry.h"

#include "harness/version.h"

#include <algorithm>

#include "harness/agents/agent_runner.h"

namespace harness::serve {
namespace {

using nlohmann::json;

constexpr int kExitCompleted = 0, kExitFailed = 1, kExitNoOutcome = 2;

/// The recipe a session is judged with: the exit codes above, a JSON line for shown text.
agents::Recipe session_recipe(const Session& s, bool judge_shown_text) {
  agents::Recipe r;
  r.name = "client";
  r.provider = s.scenario().script.provider;
  r.max_attempts = s.max_attempts();
  r.success_exit_codes = {kExitCompleted};
  r.exit_code_meanings = {{kExitCompleted, "recorded outcome completed"},
                          {kExitFailed, "recorded outcome failed"},
                          {kExitNoOutcome, "no outcome recorded"}};
  if (judge_shown_text) r.shown_text_pointer = "/shown_text";
  return r;
}

const std::string& reason_of(const std::string& name) {
  static const std::map<std::string, std::string> kReasons = [] {
    std::map<std::string, std::string> m;
    for (const agents::BlackBoxCheck& c : agents::not_applicable_checks()) m[c.name] = c.doc;
    m["clean-output"] = "record the text the agent showed as `shown_text` with the outcome to judge it";
    m["liveness"] = "hiccup does not run the agent of a session; the test's own timeout bounds it";
    return m;
  }();
  static const std::string kNone;
  auto it = kReasons.find(name);
  return it == kReasons.end() ? kNone : it->second;
}

}  // namespace

std::string SessionVerdict::verdict() const {
  if (window.partial()) return "unknown";
  if (!violations.empty()) return "fail";
  return differences.empty() ? "pass" : "difference";
}

rut::LedgerEntry resolve_execution(const Execution& x, const mock::Journal& journal) {
  rut::LedgerEntry l;
  l.name = x.name;
  l.args = x.args;
  l.call_id = x.call_id;
  l.request_seq = -1;
  for (std::size_t i = journal.size(); i-- > 0;) {
    if (journal[i].index >= x.journal_size) continue;  // arrived after the execution was recorded
    for (const mock::DeliveredCall& c : journal[i].delivered_calls) {
      const bool same = x.call_id.empty() ? c.name == x.name && c.args == x.args : c.id == x.call_id;
      if (!same) continue;
      l.request_seq = static_cast<int>(journal[i].index);
      l.call_index = c.call_index;
      return l;
    }
  }
  return l;
}

Session::Session(std::string id, Scenario scenario, SessionOptions options, std::uint64_t created_seq,
                 std::string journal_path)
    : id_(std::move(id)),
      scenario_(std::move(scenario)),
      options_(options),
      created_seq_(created_seq),
      journal_path_(options.journal_file ? std::move(journal_path) : std::string()) {
  engine_ = fresh_engine();
  mcp_ = fresh_mcp();
}

std::shared_ptr<mock::mcp::McpServer> Session::fresh_mcp() const {
  auto mcp = std::make_shared<mock::mcp::McpServer>(scenario_.tools, std::string(kHiccupVersion));
  mcp->set_journal_window(std::max<std::size_t>(options_.journal_window, 1));
  return mcp;
}

std::shared_ptr<mock::mcp::McpServer> Session::mcp() const {
  std::lock_guard lock(mu_);
  return mcp_;
}

std::shared_ptr<mock::ScriptEngine> Session::fresh_engine() const {
  auto engine = std::make_shared<mock::ScriptEngine>(scenario_.script);
  engine->set_journal_window(std::max<std::size_t>(options_.journal_window, 1), !journal_path_.empty());
  return engine;
}

void Session::write_entries(const std::vector<mock::JournalEntry>& entries) {
  if (entries.empty()) return;
  if (!file_) file_ = std::make_unique<std::ofstream>(journal_path_, std::ios::trunc);
  for (const mock::JournalEntry& e : entries) {
    *file_ << mock::journal_entry_to_json(e).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  }
  file_->flush();
}

void Session::flush_journal(bool everything) {
  if (journal_path_.empty()) return;
  std::lock_guard file_lock(file_mu_);
  const std::shared_ptr<mock::ScriptEngine> engine = this->engine();
  write_entries(engine->take_evicted());
  if (everything) write_entries(engine->journal());
}

int Session::max_attempts() const {
  return options_.max_attempts > 0 ? options_.max_attempts : scenario_.runtime.max_attempts.value_or(4);
}

std::shared_ptr<mock::ScriptEngine> Session::engine() const {
  std::lock_guard lock(mu_);
  return engine_;
}

void Session::reset() {
  auto fresh = fresh_engine();
  // The journal file gets the old engine's entries first; the new one's indices start at 0.
  std::unique_lock file_lock(file_mu_, std::defer_lock);
  if (!journal_path_.empty()) {
    file_lock.lock();
    const std::shared_ptr<mock::ScriptEngine> old = engine();
    write_entries(old->take_evicted());
    write_entries(old->journal());
  }
  auto fresh_tools = fresh_mcp();
  std::lock_guard lock(mu_);
  engine_ = std::move(fresh);
  mcp_ = std::move(fresh_tools);
  ledger_.clear();
  ledger_evicted_ = 0;
  outcome_.reset();
}

std::size_t Session::record_execution(std::string name, nlohmann::json args, std::string call_id) {
  std::lock_guard lock(mu_);
  ledger_.push_back(Execution{std::move(name), std::move(args), std::move(call_id), engine_->journal_size()});
  if (ledger_.size() > std::max<std::size_t>(options_.journal_window, 1)) {
    ledger_.pop_front();
    ++ledger_evicted_;
  }
  return ledger_evicted_ + ledger_.size() - 1;
}

void Session::record_outcome(Outcome outcome) {
  std::lock_guard lock(mu_);
  outcome_ = std::move(outcome);
}

std::vector<Execution> Session::ledger() const {
  std::lock_guard lock(mu_);
  return {ledger_.begin(), ledger_.end()};
}

std::size_t Session::executions_recorded() const {
  std::lock_guard lock(mu_);
  return ledger_evicted_ + ledger_.size();
}

WindowInfo Session::window() const {
  std::shared_ptr<mock::ScriptEngine> engine;
  WindowInfo w;
  {
    std::lock_guard lock(mu_);
    engine = engine_;
    w.executions_evicted = ledger_evicted_;
  }
  w.journal_window = options_.journal_window;
  w.evicted_summary = engine->evicted_summary();
  w.requests_evicted = w.evicted_summary.requests;
  return w;
}

std::optional<Outcome> Session::outcome() const {
  std::lock_guard lock(mu_);
  return outcome_;
}

SessionVerdict Session::verdict() const {
  std::shared_ptr<mock::ScriptEngine> engine;
  std::vector<Execution> ledger;
  std::optional<Outcome> outcome;
  std::size_t ledger_evicted = 0;
  {
    std::lock_guard lock(mu_);
    engine = engine_;
    ledger.assign(ledger_.begin(), ledger_.end());
    ledger_evicted = ledger_evicted_;
    outcome = outcome_;
  }
  const bool judge_shown = outcome && outcome->shown_text;
  const agents::Recipe recipe = session_recipe(*this, judge_shown);

  agents::AgentCaseResult result;
  result.scenario = scenario_;
  result.agent = recipe.name;
  // The summary first: an entry evicted between the two calls is then in neither (counted low by
  // one), never in both.
  WindowInfo window;
  window.journal_window = options_.journal_window;
  window.evicted_summary = engine->evicted_summary();
  window.requests_evicted = window.evicted_summary.requests;
  window.executions_evicted = ledger_evicted;
  result.journal = engine->journal();
  result.process.started = true;
  result.process.exit_code = !outcome ? kExitNoOutcome : outcome->completed ? kExitCompleted : kExitFailed;
  if (outcome) {
    result.output = outcome->final_text;
    if (judge_shown) result.output += "\n" + json{{"shown_text", *outcome->shown_text}}.dump() + "\n";
  }
  std::vector<rut::LedgerEntry> executions;
  for (const Execution& x : ledger) executions.push_back(resolve_execution(x, result.journal));
  agents::judge_black_box(result, recipe, executions, "", options_.strict, options_.recovery);
  if (!outcome) {
    // A test that never said how its agent ended has not shown that it ended well: no outcome is
    // a failure of its own, never a policy difference (docs/CONTROL-API.md).
    result.violations.insert(result.violations.end(), result.differences.begin(), result.differences.end());
    result.differences.clear();
    // The judge read the missing outcome as a failed exit; say it once, as what it is.
    std::erase_if(result.violations, [](const Violation& v) { return v.invariant == "outcome-agreement"; });
    result.violations.push_back({"outcome-agreement", "no outcome was recorded (POST /_hiccup/sessions/" + id_ +
                                                          "/outcome with \"completed\" or \"failed\")"});
  }

  SessionVerdict v;
  v.design = result.design;
  v.design_evidence = result.design_evidence;
  v.violations = std::move(result.violations);
  v.differences = std::move(result.differences);
  v.outcome = outcome;
  v.executions = static_cast<int>(ledger_evicted + ledger.size());
  for (const mock::JournalEntry& e : result.journal) {
    if (e.played != "preflight" && e.played != "not-found") ++v.requests;
  }
  std::size_t evicted_requests = window.evicted_summary.requests;
  for (const char* kind : {"preflight", "not-found"}) {
    const auto it = window.evicted_summary.played.find(kind);
    if (it != window.evicted_summary.played.end()) evicted_requests -= it->second;
  }
  v.requests += static_cast<int>(evicted_requests);
  v.window = std::move(window);
  std::vector<std::string> na = result.not_applicable;
  na.insert(na.begin(), "liveness");
  for (const std::string& name : na) v.not_applicable.push_back({name, reason_of(name)});
  auto is_na = [&](std::string_view name) { return std::find(na.begin(), na.end(), name) != na.end(); };
  for (const InvariantInfo& i : invariant_catalogue()) {
    if (!is_na(i.name)) v.checked.emplace_back(i.name);
  }
  for (const agents::BlackBoxCheck& c : agents::black_box_verdicts()) {
    if (!is_na(c.name)) v.checked.push_back(c.name);
  }
  return v;
}

bool SessionRegistry::valid_id(std::string_view id) {
  // "." and ".." would be resolved away by every URL library: /s/../v1 is /v1.
  if (id.empty() || id.size() > 64 || id == "." || id == "..") return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
  });
}

std::shared_ptr<Session> SessionRegistry::create(std::string id, Scenario scenario, SessionOptions options) {
  std::unique_lock lock(mu_);
  if (id.empty()) {
    for (std::uint64_t n = next_seq_;; ++n) {
      id = "s" + std::to_string(n);
      if (!sessions_.contains(id)) break;
    }
  } else if (sessions_.contains(id)) {
    return nullptr;
  }
  if (options.journal_window == 0) options.journal_window = journal_window_;
  if (!options.timing_scale) options.timing_scale = timing_scale_;
  if (options.timing_scale) scenario.script.timing.scale = *options.timing_scale;
  std::string journal_path;
  if (options.journal_file && !journal_dir_.empty()) journal_path = journal_dir_ + "/" + id + ".jsonl";
  auto session = std::make_shared<Session>(id, std::move(scenario), options, next_seq_++, std::move(journal_path));
  sessions_.emplace(std::move(id), session);
  return session;
}

std::shared_ptr<Session> SessionRegistry::find(std::string_view id) const {
  std::shared_lock lock(mu_);
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second;
}

bool SessionRegistry::remove(std::string_view id) {
  std::shared_ptr<Session> removed;
  {
    std::unique_lock lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return false;
    removed = std::move(it->second);
    sessions_.erase(it);
  }
  removed->flush_journal(true);  // outside the registry's lock
  return true;
}

std::vector<std::shared_ptr<Session>> SessionRegistry::list() const {
  std::vector<std::shared_ptr<Session>> out;
  {
    std::shared_lock lock(mu_);
    for (const auto& [id, s] : sessions_) out.push_back(s);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a->created_seq() < b->created_seq(); });
  return out;
}

std::size_t SessionRegistry::size() const {
  std::shared_lock lock(mu_);
  return sessions_.size();
}

}  // namespace harness::serve
