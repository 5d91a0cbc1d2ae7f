// Sessions of `hiccup serve`: each one scenario with its own script engine (state and journal), its
// own ledger of tool executions and the outcome its test recorded, judged on demand by the same
// black-box judge as `hiccup run --agent-cmd` (harness/agents/agent_runner.h). The registry holds
// them by id; HTTP lives elsewhere (control_api.h routes requests here, mock::MockHttpServer
// executes plans), so everything in this file is testable without sockets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/invariants.h"
#include "harness/scenario.h"
#include "mock_server/script_engine.h"

namespace harness::serve {

/// How a session's run is judged.
struct SessionOptions {
  /// The client's own per-turn attempt budget (bounded-retries, and the correct client the oracle
  /// predicts); 0 = the scenario's `runtime.max_attempts`.
  int max_attempts = 0;
  /// Policy differences (an honest failure where docs/POLICY.md retries) fail the verdict too.
  bool strict = false;
  /// The recovery design the client declares ("hold" or "continue"; "" for none): a run that
  /// shows the other design fails `recovery-design` (harness/agents/judge.h).
  std::string recovery;
};

/// One tool execution a test recorded: the tool's name and arguments, and the provider's call id
/// when the test knows it (OpenAI `call_…`, Anthropic `toolu_…`; "" for none). `journal_size` is
/// how many requests the session had journaled when it was recorded: an execution can only
/// answer a call delivered before it.
struct Execution {
  std::string name;
  nlohmann::json args = nlohmann::json::object();
  std::string call_id;
  std::size_t journal_size = 0;
};

/// The outcome a test recorded for its agent: completed or failed, the final text it showed, and
/// optionally all text it showed during the run, in order (then clean-output is judged).
struct Outcome {
  bool completed = false;
  std::string final_text;
  std::optional<std::string> shown_text;
};

/// A check not judged for a session, and why.
struct NotApplicable {
  std::string name;
  std::string reason;
};

/// A session's verdict. `violations` fail it; `differences` are policy differences (see
/// harness::agents::AgentCaseResult::differences) that fail it only when the session is strict.
struct SessionVerdict {
  std::vector<Violation> violations;
  std::vector<Violation> differences;
  std::vector<std::string> checked;         ///< invariants and verdicts judged, in catalogue order
  std::vector<NotApplicable> not_applicable;
  std::optional<Outcome> outcome;           ///< as recorded; none when the test recorded none
  int requests = 0;                         ///< model requests journaled (not preflight or 404)
  std::string design;                       ///< the recovery design the run showed ("" for none)
  std::string design_evidence;
  int executions = 0;
  bool passed() const { return violations.empty(); }
  /// "pass", "fail" or "difference" (passed with policy differences).
  std::string verdict() const;
};

/// The ledger entry (journal index and call index) an execution answers, resolved against the
/// journal as the checkers see it: the latest request before `journal_size` that delivered a call
/// with the execution's `call_id` when it has one, else with its name and args. Unresolved
/// executions get request_seq -1 (at-most-once reports them). Name and args as recorded.
rut::LedgerEntry resolve_execution(const Execution& execution, const mock::Journal& journal);

/// One session. Thread-safe: its engine locks per request, its own mutex guards the rest, so
/// requests to different sessions never wait for each other.
class Session {
 public:
  Session(std::string id, Scenario scenario, SessionOptions options, std::uint64_t created_seq);

  const std::string& id() const { return id_; }
  const Scenario& scenario() const { return scenario_; }
  const SessionOptions& options() const { return options_; }
  std::uint64_t created_seq() const { return created_seq_; }
  /// The attempt budget judged with (options.max_attempts, else the scenario's).
  int max_attempts() const;

  /// The engine that plays this session's requests now (replaced by reset()).
  std::shared_ptr<mock::ScriptEngine> engine() const;

  /// A fresh engine (script from the first turn, empty journal), an empty ledger, no outcome.
  void reset();

  /// Appends one execution (its journal_size is taken now); returns its index in the ledger.
  std::size_t record_execution(std::string name, nlohmann::json args, std::string call_id);

  /// Records the agent's outcome (a second call replaces the first).
  void record_outcome(Outcome outcome);

  std::vector<Execution> ledger() const;
  std::optional<Outcome> outcome() const;
  mock::Journal journal() const { return engine()->journal(); }

  /// Judges the journal, ledger and outcome so far. Pure with respect to the session: call it as
  /// often as you like.
  SessionVerdict verdict() const;

 private:
  const std::string id_;
  const Scenario scenario_;
  const SessionOptions options_;
  const std::uint64_t created_seq_;
  mutable std::mutex mu_;
  std::shared_ptr<mock::ScriptEngine> engine_;
  std::vector<Execution> ledger_;
  std::optional<Outcome> outcome_;
};

/// Sessions by id. Thread-safe: lookups share a reader lock, create and remove take it briefly.
class SessionRegistry {
 public:
  /// The id of the session `hiccup serve SCENARIO` starts with; the server's root paths play it.
  static constexpr std::string_view kDefaultId = "default";

  /// Whether `id` is a valid session id: 1 to 64 of [A-Za-z0-9._-].
  static bool valid_id(std::string_view id);

  /// Adds a session. `id` "" picks the next free "sN". Returns null when `id` is taken.
  std::shared_ptr<Session> create(std::string id, Scenario scenario, SessionOptions options = {});

  /// The session with `id`, or null.
  std::shared_ptr<Session> find(std::string_view id) const;

  /// Removes a session; false when there is none. Requests streaming from it finish normally.
  bool remove(std::string_view id);

  /// All sessions in creation order.
  std::vector<std::shared_ptr<Session>> list() const;

  std::size_t size() const;

 private:
  mutable std::shared_mutex mu_;
  std::map<std::string, std::shared_ptr<Session>, std::less<>> sessions_;
  std::uint64_t next_seq_ = 1;
};

}  // namespace harness::serve
