// `hiccup matrix`: several agent CLIs × the scenarios each can play, as one table. Each cell is
// one black-box run (run_agent_scenario) judged against the known failures pinned for that agent
// (scenarios/agents/known-failures.json), so a CLI update that fixes or changes a behaviour is
// noticed: a pinned cell must fail with exactly the pinned invariants.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/agents/agent_runner.h"
#include "harness/agents/recipe.h"
#include "harness/scenario.h"

namespace harness::agents {

/// A pinned known failure: the sorted invariant names the agent's run violates, and why.
struct KnownFailure {
  std::vector<std::string> violates;
  std::string why;
  /// The harm a user of the CLI suffers, in one plain sentence ("deploy ran twice and the session
  /// is dead"); required for a pin that violates an invariant, optional for policy differences.
  std::string harm;
  /// The CLI fails so in some runs and passes in others (a race inside it): both are accepted.
  bool flaky = false;
  /// Other exact violation sets the CLI shows in some runs (a race inside it), each sorted; a run
  /// violating exactly one of them is known too. JSON "also_violates": [[names], ...].
  std::vector<std::vector<std::string>> also_violates;
};

/// Known failures per agent: the version they were pinned for, and scenario name → pin.
/// The default file is harness/agents/known-failures.json.
struct AgentPins {
  std::string version;
  std::map<std::string, KnownFailure> known_failures;
};
using KnownFailures = std::map<std::string, AgentPins>;

/// Decodes a known-failures file: {"schema": 1, "agents": {NAME: {"version": V,
/// "known_failures": {SCENARIO: {"violates": [names], "why": "...", "flaky": bool,
/// "also_violates": [[names], ...]}}}}}. Throws
/// std::runtime_error "JSON-POINTER: what was expected" on a malformed document; every
/// invariant name must be one `hiccup invariants` lists.
KnownFailures known_failures_from_json(const nlohmann::json& j);

/// Reads and decodes a known-failures file; errors name the file.
KnownFailures load_known_failures(const std::string& path);

/// How one cell came out, against its pin.
enum class CellStatus {
  kPass,        ///< passed, no pin
  kDifference,  ///< no pin; only policy differences (an honest failure where POLICY.md retries)
  kKnown,       ///< failed with exactly the pinned invariants
  kFail,        ///< failed, no pin (a new failure)
  kChanged,     ///< pinned, but failed with other invariants
  kFixed,       ///< pinned, but passed: move it out of the known failures
  kError,       ///< the run could not happen (agent not installed, server error)
  kNotPlayed,   ///< the agent cannot play this scenario (another format or shell tool)
};

/// "PASS", "DIFF", "known", "FAIL", "CHANGED", "FIXED", "ERROR", "—".
std::string cell_status_name(CellStatus s);

/// Whether a matrix with this cell is still green (pass, difference, known, not played).
bool cell_ok(CellStatus s);

struct MatrixCell {
  std::string agent;
  std::string scenario;
  CellStatus status = CellStatus::kNotPlayed;
  std::vector<std::string> violated;  ///< sorted invariant names (empty when passed)
  bool difference = false;            ///< the names are policy differences only, not bugs
  std::optional<KnownFailure> pin;
  std::string detail;                 ///< harness error, or what changed against the pin
  int exit_code = 0;
  double wall_ms = 0;
  std::string design;                 ///< the recovery design the run showed (judge.h), "" for none
};

/// A cell's status from a finished run and its pin (pure).
MatrixCell judge_cell(const AgentCaseResult& result, const std::optional<KnownFailure>& pin);

/// The row a scenario takes for `agent`: its name without the "AGENT-" prefix
/// ("codex-reset-after-call" → "reset-after-call"), so each CLI's own scenario of one fault shares
/// a row; other names as they are.
std::string row_name(const std::string& scenario_name, const std::string& agent);

/// Picks, per agent and row, the scenario the agent plays: among those it can play
/// (check_agent_scenario finds no problem) and that are not named ("AGENT-…") or tagged for other
/// agents only (bundled recipe names and `recipes`), the one named or tagged for the agent, else
/// the only one. Returns (rows: the nine every agent folder has (scenarios/README.md) first, in
/// that order, then the rest by name; agent → row → index into `scenarios`). Throws
/// std::runtime_error when an agent could play two scenarios of one row and neither is its own.
/// `notes` (when given) gets one line per scenario an agent may play by name but cannot
/// (check_agent_scenario; one of another format is not noted, the format column says it):
/// "SOURCE: not played by agent NAME (cell —): POINTER: why; …".
std::pair<std::vector<std::string>, std::map<std::string, std::map<std::string, std::size_t>>>
assign_scenarios(const std::vector<Scenario>& scenarios, const std::vector<Recipe>& recipes,
                 std::vector<std::string>* notes = nullptr);

/// The table as Markdown: one row per scenario, one column per agent ("NAME VERSION"); a cell is
/// PASS, the violated invariants (marked "known" when pinned), or — when not played.
std::string matrix_markdown(const std::vector<std::string>& rows, const std::vector<Recipe>& recipes,
                            const std::vector<MatrixCell>& cells);

/// The table as JSON: {"schema": 1, "agents": [{name, version, provider}], "scenarios": [...],
/// "cells": [{agent, scenario, status, violated, pinned, why, exit_code, wall_ms, detail}]}.
nlohmann::json matrix_json(const std::vector<std::string>& rows, const std::vector<Recipe>& recipes,
                           const std::vector<MatrixCell>& cells);

}  // namespace harness::agents
