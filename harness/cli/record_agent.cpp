// record_agent.h: the process `hiccup record` starts as the agent of a recording.
#include "harness/cli/record_agent.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "harness/agents/agent_runner.h"

extern char** environ;

namespace harness::cli {

namespace {

/// The API-key value the bundled recipes give their agents (the mock server takes any key).
constexpr std::string_view kRecipePlaceholderKey = "hiccup-not-a-key";

}  // namespace

std::optional<agents::Recipe> record_recipe(const std::string& name, std::string& error) {
  agents::Recipe recipe;
  try {
    recipe = agents::load_recipe(name, agents::default_recipes_dir());
  } catch (const std::exception& e) {
    error = e.what();
    return std::nullopt;
  }
  if (auto missing = agents::agent_not_installed(recipe)) {
    error = *missing;
    return std::nullopt;
  }
  return recipe;
}

agents::ProcessSpec record_agent_spec(RecordAgent& agent, const std::string& base_url, const std::string& out,
                                      const std::string& scenario_name) {
  agents::ProcessSpec spec;
  if (agent.recipe) {
    agent.scratch = agents::make_agent_scratch();
    spec = agents::prepare_agent_launch(
        *agent.recipe, agent.scratch,
        agents::AgentLaunchInputs{agent.prompt, base_url, agent.recipe->provider, scenario_name, agent.timeout_s});
    for (std::string& kv : spec.env) {
      const std::size_t eq = kv.find('=');
      if (std::string_view(kv).substr(eq + 1) != kRecipePlaceholderKey) continue;
      const std::string key = kv.substr(0, eq);
      const char* own = std::getenv(key.c_str());
      if (own != nullptr && *own != '\0') kv = key + "=" + own;
    }
    spec.cwd.clear();  // the project the session is recorded on: hiccup's working directory
  } else {
    spec.argv = {"/bin/sh", "-c", agent.command};
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string kv = *e;
      const std::string key = kv.substr(0, kv.find('='));
      if (key == "HICCUP_BASE_URL" || key == "GOOGLE_GEMINI_BASE_URL" || key == "OPENAI_BASE_URL" ||
          key == "ANTHROPIC_BASE_URL" || key == "HICCUP_PROMPT") continue;
      spec.env.push_back(kv);
    }
    spec.env.push_back("HICCUP_BASE_URL=" + base_url);
    spec.env.push_back("GOOGLE_GEMINI_BASE_URL=" + base_url);
    spec.env.push_back("OPENAI_BASE_URL=" + base_url + "/v1");
    spec.env.push_back("ANTHROPIC_BASE_URL=" + base_url);
    if (!agent.prompt.empty()) spec.env.push_back("HICCUP_PROMPT=" + agent.prompt);
  }
  spec.stdout_path = out + ".agent-stdout.log";
  spec.stderr_path = out + ".agent-stderr.log";
  spec.timeout_s = agent.timeout_s;
  return spec;
}

void remove_agent_scratch(RecordAgent& agent) {
  if (agent.scratch.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(agent.scratch, ec);
  agent.scratch.clear();
}

nlohmann::ordered_json with_agent_facts(nlohmann::ordered_json scenario, const RecordAgent& agent) {
  if (!agent.prompt.empty()) scenario["prompt"] = agent.prompt;
  if (!agent.recipe) return scenario;
  nlohmann::ordered_json& tags = scenario["tags"];
  if (!tags.is_array()) tags = nlohmann::ordered_json::array();
  if (std::find(tags.begin(), tags.end(), agent.recipe->name) == tags.end()) tags.push_back(agent.recipe->name);
  return scenario;
}

}  // namespace harness::cli
