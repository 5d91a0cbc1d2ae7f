// The scenario value (SCENARIO-FORMAT.md, version 1): one agent run's script, runtime settings and
// expectations. Hand-written, generated and shrunk scenarios are all this one type; scenario_io
// reads it from and writes it to JSON.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mock_server/mcp/tool_script.h"
#include "mock_server/script.h"

namespace harness {

/// A run's virtual-time cap in seconds when its scenario gives no `max_virtual_s` (RunOptions).
inline constexpr double kDefaultMaxVirtualS = 3600;

/// Reference-runtime settings as written in the file; unset fields take the runtime's defaults.
/// The shortest `runtime.idle_timeout_s` a scenario may set, in seconds (one millisecond). Over
/// HTTP the idle timeout is scaled to at least half a second of real time (docs/POLICY.md "Time
/// over HTTP"): 500 ms / 3e-306 s overflows a double, and the runtime then waited for ever.
inline constexpr double kMinIdleTimeoutS = 0.001;

struct RuntimeSettings {
  std::optional<std::string> model;
  std::optional<int> max_attempts;
  std::optional<std::vector<double>> backoff_s;
  std::optional<std::string> fallback_model;
  std::optional<double> idle_timeout_s;  ///< >= kMinIdleTimeoutS (the loader refuses less)
  std::vector<std::string> defects;         ///< defect names (validated against the catalogue)
  std::optional<std::string> consumer;      ///< "headless" (default) or "subagent"; an extension
  std::optional<bool> stream;               ///< false: the provider's non-streaming endpoint
  /// "hold" (default) or "continue" (docs/POLICY.md "Recovery designs"); set: the scenario pins
  /// its design and `hiccup run --recovery` does not change it.
  std::optional<std::string> recovery;
  /// Under continue: the user message added after each kept cut turn.
  std::optional<std::string> continuation_prompt;
  bool operator==(const RuntimeSettings&) const = default;
};

struct ExpectedExecution {
  std::string name;
  std::optional<nlohmann::json> args;
  int count = 0;
  bool operator==(const ExpectedExecution&) const = default;
};

struct Expect {
  std::optional<std::string> outcome;   ///< "completed" | "failed"
  std::optional<std::string> error;     ///< retries_exhausted | non_retryable | quota_exhausted | content_filter | invalid_request | cancelled | max_turns
  std::optional<std::string> final_text;
  std::optional<std::vector<ExpectedExecution>> executions;
  std::optional<int> requests;
  std::optional<double> waited_s;
  /// Only with outcome completed: whether the final answer was cut by the token limit (a
  /// max_tokens finish); the run's outcome must say so. Last, so positional initialisers keep working.
  std::optional<bool> truncated;
  bool operator==(const Expect&) const = default;
};

/// One further user prompt of a session (`session[i]`), sent over the same history once the
/// previous prompt's run completed.
struct SessionPrompt {
  std::string prompt;
  bool operator==(const SessionPrompt&) const = default;
};

/// A scripted user interrupt (`interrupt`; the user presses Esc / Ctrl-C at a virtual point, not a
/// real signal). Exactly one of `after_event` (with `attempt`: the user cancels once the runtime
/// has received event `after_event`, a text or call event, of attempt `attempt` of turn `turn`)
/// and `after_calls` (the user cancels once `after_calls` of turn `turn`'s committed calls have
/// run), and `before_attempt` (the user cancels during the backoff before attempt
/// `before_attempt` >= 1 of turn `turn`, once attempt `before_attempt` - 1 failed and the runtime
/// waits to retry) is set. `turn` is the script's turn index (the number of model turns in the
/// request's history). The interrupt fires at most once: the first time the run reaches that point.
struct Interrupt {
  int turn = 0;
  std::optional<int> attempt;
  std::optional<int> after_event;
  std::optional<int> after_calls;
  std::optional<int> before_attempt;
  /// With after_event (event `after_event` a call of a streaming format that sends its arguments
  /// in fragments): the cancel lands inside that call, once its start and this many of its
  /// argument fragments have arrived. Last, so positional initialisers keep working.
  std::optional<int> after_fragment;
  bool operator==(const Interrupt&) const = default;
};

struct Scenario {
  /// The file's `$schema` (the JSON Schema URI editors use, schema/scenario.schema.json); ignored
  /// by the harness, kept so a rewritten file keeps it.
  std::string json_schema;
  int schema = 1;
  std::string name;
  std::string description;
  std::vector<std::string> tags;
  std::vector<std::string> catches;
  std::string prompt;
  /// Prompts after `prompt`, in order, over one history (`session`; empty: a single-prompt run).
  std::vector<SessionPrompt> session;
  /// The user's interrupt, if any (`interrupt`): it ends the current prompt's run as "cancelled";
  /// the session's next prompt, if any, continues the same history.
  std::optional<Interrupt> interrupt;
  RuntimeSettings runtime;
  /// The run's virtual-time cap in seconds (`max_virtual_s`); unset: the runner's (default
  /// kDefaultMaxVirtualS).
  /// A run still going at the cap breaks `bounded-retries`, or `liveness` if it sat on a silent
  /// stream.
  std::optional<double> max_virtual_s;
  mock::Script script;   ///< provider + turns
  /// The tools the scenario offers over MCP and what each call does (`tools`; SCENARIO-FORMAT.md
  /// "Tools"); empty for a scenario without tools (every v1 file).
  mock::mcp::ToolScript tools;
  Expect expect;
  std::string source_path;  ///< file it was loaded from ("" for generated); not serialised
  bool operator==(const Scenario&) const = default;
};

}  // namespace harness
