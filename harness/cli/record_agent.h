// The agent `hiccup record` starts and records (--agent NAME, --agent-cmd COMMAND): its process,
// pointed at the recording proxy. A recipe's agent is launched as `hiccup run --agent` launches it
// (harness/agents/agent_runner.h prepare_agent_launch: scratch HOME and TMPDIR, the recipe's
// settings files, argv and environment), in hiccup's working directory.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/agents/recipe.h"
#include "harness/agents/subprocess.h"

namespace harness::cli {

/// The agent of one recording.
struct RecordAgent {
  std::optional<agents::Recipe> recipe;  ///< --agent NAME (nullopt: --agent-cmd)
  std::string command;                   ///< --agent-cmd COMMAND ("" with --agent)
  std::string prompt;                    ///< --prompt (HICCUP_PROMPT, a recipe's {prompt})
  double timeout_s = 600;                ///< --agent-timeout
  std::string scratch;                   ///< the recipe's scratch folder once launched ("" before)
};

/// The recipe NAME (a bundled name or a path to a recipe .json) when it exists and its binary is
/// installed; else `error` is set to the message `hiccup run --agent` gives ("agent NAME is not
/// installed: …; run scripts/install_agents.sh NAME", or the unknown name and the known ones).
std::optional<agents::Recipe> record_recipe(const std::string& name, std::string& error);

/// The process to start for `agent`, pointed at the proxy at `base_url` (http://127.0.0.1:PORT),
/// its stdout and stderr going to OUT.agent-stdout.log and OUT.agent-stderr.log, its limit
/// agent.timeout_s.
///  - --agent-cmd: /bin/sh -c COMMAND with hiccup's environment plus HICCUP_BASE_URL,
///    GOOGLE_GEMINI_BASE_URL, OPENAI_BASE_URL (BASE/v1), ANTHROPIC_BASE_URL and HICCUP_PROMPT.
///  - --agent: agents::prepare_agent_launch in a new scratch folder (set in agent.scratch; the
///    caller removes it), working directory hiccup's own; each recipe variable holding the
///    placeholder key ("hiccup-not-a-key") takes hiccup's value of the same variable when that is
///    set and not empty (the user's real key, for a real provider upstream).
/// Throws std::runtime_error when the scratch folder or a settings file cannot be written.
agents::ProcessSpec record_agent_spec(RecordAgent& agent, const std::string& base_url, const std::string& out,
                                      const std::string& scenario_name);

/// Removes agent.scratch, if any (a recipe's scratch HOME, TMPDIR and ledger).
void remove_agent_scratch(RecordAgent& agent);

/// `scenario` (a recording) with what hiccup knows of the agent it started: `prompt` is
/// agent.prompt when given (clients send the prompt inside context of their own — qwen-code puts
/// its system reminders before it in the same text — so the one derived from the first request
/// is only a fallback), and, for a recipe's agent, the recipe's name is added to `tags`: the
/// recording is then written for that agent alone, as `hiccup matrix` and `hiccup run --agent`
/// read tags (agent_runner.h scenario_owners).
nlohmann::ordered_json with_agent_facts(nlohmann::ordered_json scenario, const RecordAgent& agent);

}  // namespace harness::cli
