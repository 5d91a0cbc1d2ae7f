// Recipes are data: the bundled gemini-cli recipe loads, unknown names and fields are clear errors.
#include <catch2/catch.hpp>

#include "harness/agents/recipe.h"

namespace harness::agents {
namespace {

TEST_CASE("the bundled gemini-cli recipe loads with its tool, settings and exit codes") {
  const Recipe r = load_recipe("gemini-cli", default_recipes_dir());
  CHECK(r.name == "gemini-cli");
  CHECK(r.provider == "gemini");
  CHECK(r.tool_name == "run_shell_command");
  CHECK(r.tool_command_arg == "command");
  CHECK(r.model == "gemini-2.5-pro");
  CHECK(r.env.at("GOOGLE_GEMINI_BASE_URL") == "{base_url}");
  CHECK(r.home_files.at(".gemini/settings.json")["security"]["auth"]["selectedType"] == "gemini-api-key");
  CHECK(r.success_exit_codes == std::vector<int>{0});
  CHECK(r.exit_code_meanings.at(247).find("503") != std::string::npos);
  CHECK(r.install_hint.find("scripts/install_agents.sh") != std::string::npos);
  CHECK(recipe_names(default_recipes_dir()) == std::vector<std::string>{"gemini-cli"});
}

TEST_CASE("an unknown agent name lists the known recipes") {
  try {
    (void)load_recipe("gemni-cli", default_recipes_dir());
    FAIL("expected an error");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()) == "unknown agent \"gemni-cli\" (known: gemini-cli; or pass a recipe .json path)");
  }
}

TEST_CASE("a recipe with an unknown field or a bad argv is rejected, naming the field") {
  CHECK_THROWS_WITH(recipe_from_json({{"name", "x"}, {"argv", {"a"}}, {"flavour", 1}}),
                    "recipe field \"flavour\": unknown field");
  CHECK_THROWS_WITH(recipe_from_json({{"name", "x"}, {"argv", nlohmann::json::array()}}),
                    "recipe field \"argv\": expected a non-empty array of strings");
}

TEST_CASE("agent-cmd runs its command through /bin/sh -c") {
  const Recipe r = command_recipe("echo hi");
  CHECK(r.argv == std::vector<std::string>{"/bin/sh", "-c", "echo hi"});
  CHECK(r.binary.empty());
}

}  // namespace
}  // namespace harness::agents
