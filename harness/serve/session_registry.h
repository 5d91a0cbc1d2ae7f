// Sessions of `hiccup serve`: each one scenario with its own script engine (state and journal), its
// own ledger of tool executions and the outcome its test recorded, judged on demand by the same
// black-box judge as `hiccup run --agent-cmd` (harness/agents/agent_runner.h). The registry holds
// them by id; HTTP lives elsewhere (control_api.h routes requests here, mock::MockHttpServer
// executes plans), so everything in this file is testable without sockets.
#pragma once

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <deque>
#include <fstream>
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
#include "mock_server/mcp/mcp_server.h"
#include "mock_server/script_engine.h"

namespace harness::serve {

/// How a session's run is judged.
struct SessionOptions {
  /// The client's own per-turn attempt budget (bounded-retries, and the correct client the oracle
  /// predicts); 0 = the scenario's `runtime.max_attempts`.
  int max_attempts = 0;
  /// Policy differences (an honest failure where docs/POLICY.md retries) fail the verdict too.
  bool strict = false;
  /// Journal entries (and recorded executions) kept in memory, >= 1; older ones are counted in a
  /// summary and the verdict is then judged over a window ("unknown"). 0 = the registry's default.
  std::size_t journal_window = 0;
  /// Stream the journal to `{journal dir}/{id}.jsonl` (one entry per line: entries as they leave
  /// the window, the rest when the session is reset, deleted or the server stops). Needs a
  /// registry with a journal directory (`hiccup serve --session-journals DIR`).
  bool journal_file = false;
  /// The recovery design the client declares ("hold" or "continue"; "" for none): a run that
  /// shows the other design fails `recovery-design` (harness/agents/judge.h).
  std::string recovery;
  /// Plays the scenario's event timing (`delay_s`) at this many times, in place of its own
  /// `timing.scale` (`max_delay_s` still caps; 0..kMaxTimingScale). Unset: the registry's
  /// (`hiccup serve --timing-scale X`), else the scenario's own.
  std::optional<double> timing_scale;
};

/// What a session no longer holds one by one: requests and executions that left its window.
struct WindowInfo {
  std::size_t journal_window = 0;      ///< entries kept at most (about; see ScriptEngine)
  std::size_t requests_evicted = 0;    ///< journal entries counted in `evicted_summary` only
  std::size_t executions_evicted = 0;  ///< recorded executions dropped, oldest first
  mock::JournalSummary evicted_summary;
  /// True when anything was evicted: the judge then sees part of the evidence only.
  bool partial() const { return requests_evicted > 0 || executions_evicted > 0; }
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
  int requests = 0;                         ///< model requests journaled (not preflight or 404), evicted ones too
  int executions = 0;                       ///< executions recorded, dropped ones too
  std::string design;                       ///< the recovery design the run showed ("" for none)
  std::string design_evidence;
  /// How much of the evidence the judge saw: when `window.partial()`, requests or executions had
  /// left the session's window and the verdict is "unknown", never "pass".
  WindowInfo window;
  bool passed() const { return violations.empty() && !window.partial(); }
  /// "pass", "fail" or "difference" (passed with policy differences), or "unknown" when the judge
  /// saw only a window of the evidence (whatever it found in it: a violation there may come from
  /// a request that left the window, a pass would rest on evidence that is gone).
  std::string verdict() const;
};

/// The ledger entry (journal index and call index) an execution answers, resolved against the
/// journal as the checkers see it (whole, or a window: entries are matched by their `index`): the
/// latest request with an index below `journal_size` that delivered a call
/// with the execution's `call_id` when it has one, else with its name and args. Unresolved
/// executions get request_seq -1 (at-most-once reports them). Name and args as recorded.
rut::LedgerEntry resolve_execution(const Execution& execution, const mock::Journal& journal);

/// One session. Thread-safe: its engine locks per request, its own mutex guards the rest, so
/// requests to different sessions never wait for each other. Memory is bounded: the engine keeps
/// a window of `options.journal_window` journal entries, the ledger as many executions.
class Session {
 public:
  /// `options.journal_window` must be >= 1 (SessionRegistry::create fills in its default);
  /// `journal_path` the file the journal streams to when `options.journal_file` ("" for none).
  Session(std::string id, Scenario scenario, SessionOptions options, std::uint64_t created_seq,
          std::string journal_path = "");

  const std::string& id() const { return id_; }
  const Scenario& scenario() const { return scenario_; }
  const SessionOptions& options() const { return options_; }
  std::uint64_t created_seq() const { return created_seq_; }
  /// The attempt budget judged with (options.max_attempts, else the scenario's).
  int max_attempts() const;

  /// The engine that plays this session's requests now (replaced by reset()).
  std::shared_ptr<mock::ScriptEngine> engine() const;

  /// The MCP server that serves this session's tools (`/s/{id}/mcp`, `/mcp` for the default
  /// session) now: the scenario's `tools`, its tool-call journal windowed as the journal is
  /// (replaced by reset()).
  std::shared_ptr<mock::mcp::McpServer> mcp() const;
  /// A fresh engine (script from the first turn, empty journal), a fresh MCP server (no MCP
  /// sessions, tool calls counted from 0), an empty ledger, no outcome.
  void reset();

  /// Appends one execution (its journal_size is taken now); returns its index in the ledger.
  std::size_t record_execution(std::string name, nlohmann::json args, std::string call_id);

  /// Records the agent's outcome (a second call replaces the first).
  void record_outcome(Outcome outcome);

  /// The executions still in the window, oldest first.
  std::vector<Execution> ledger() const;
  /// Executions recorded since the last reset, dropped ones included.
  std::size_t executions_recorded() const;
  std::optional<Outcome> outcome() const;
  /// The journal entries still in the window, oldest first (their `index` says where they stand).
  mock::Journal journal() const { return engine()->journal(); }
  /// What has left the window so far.
  WindowInfo window() const;

  /// The file this session's journal streams to ("" for none).
  const std::string& journal_path() const { return journal_path_; }
  /// Appends the entries that left the window since the last call to journal_path(); with
  /// `everything`, the entries still in the window too (the session ends or is reset). Entries
  /// are written once each. Thread-safe; does nothing without a journal file.
  void flush_journal(bool everything);

  /// Judges the journal, ledger and outcome so far. Pure with respect to the session: call it as
  /// often as you like. Holds the session's lock only to copy the window (at most
  /// journal_window entries), never while judging, and no lock of the registry.
  SessionVerdict verdict() const;

 private:
  const std::string id_;
  const Scenario scenario_;
  const SessionOptions options_;
  const std::uint64_t created_seq_;
  std::shared_ptr<mock::ScriptEngine> fresh_engine() const;
  std::shared_ptr<mock::mcp::McpServer> fresh_mcp() const;
  void write_entries(const std::vector<mock::JournalEntry>& entries);  // file_mu_ held

  mutable std::mutex mu_;
  std::shared_ptr<mock::ScriptEngine> engine_;
  std::shared_ptr<mock::mcp::McpServer> mcp_;
  std::deque<Execution> ledger_;        // the last journal_window executions
  std::size_t ledger_evicted_ = 0;      // executions dropped from the front of ledger_
  std::optional<Outcome> outcome_;
  const std::string journal_path_;
  std::mutex file_mu_;                  // the journal file; taken before mu_, never after
  std::unique_ptr<std::ofstream> file_;  // opened by the first flush
};

/// Sessions by id. Thread-safe: lookups share a reader lock, create and remove take it briefly.
class SessionRegistry {
 public:
  /// The id of the session `hiccup serve SCENARIO` starts with; the server's root paths play it.
  static constexpr std::string_view kDefaultId = "default";
  /// Journal entries a session keeps unless told otherwise (`hiccup serve --journal-window`).
  static constexpr std::size_t kDefaultJournalWindow = 1000;

  /// `journal_window` (>= 1): what a session created without its own window keeps;
  /// `journal_dir`: where sessions with `journal_file` stream their journals ("" = none may).
  explicit SessionRegistry(std::size_t journal_window = kDefaultJournalWindow, std::string journal_dir = "")
      : journal_window_(std::max<std::size_t>(journal_window, 1)), journal_dir_(std::move(journal_dir)) {}

  std::size_t journal_window() const { return journal_window_; }

  /// The timing scale every session created afterwards plays its scenario's event timing at, unless
  /// its SessionOptions::timing_scale says otherwise (`hiccup serve --timing-scale X`: the default
  /// session and the control API's alike). nullopt: each scenario's own `timing.scale`.
  void set_timing_scale(std::optional<double> scale) {
    std::unique_lock lock(mu_);
    timing_scale_ = scale;
  }
  const std::string& journal_dir() const { return journal_dir_; }

  /// Whether `id` is a valid session id: 1 to 64 of [A-Za-z0-9._-].
  static bool valid_id(std::string_view id);

  /// Adds a session. `id` "" picks the next free "sN". Returns null when `id` is taken.
  std::shared_ptr<Session> create(std::string id, Scenario scenario, SessionOptions options = {});

  /// The session with `id`, or null.
  std::shared_ptr<Session> find(std::string_view id) const;

  /// Removes a session; false when there is none. Requests streaming from it finish normally.
  /// Its journal file, if any, gets the rest of its journal.
  bool remove(std::string_view id);

  /// All sessions in creation order.
  std::vector<std::shared_ptr<Session>> list() const;

  std::size_t size() const;

 private:
  const std::size_t journal_window_;
  const std::string journal_dir_;
  mutable std::shared_mutex mu_;
  std::map<std::string, std::shared_ptr<Session>, std::less<>> sessions_;
  std::uint64_t next_seq_ = 1;
  std::optional<double> timing_scale_;  // see set_timing_scale()
};

}  // namespace harness::serve
