// Recipes are data: the bundled gemini-cli recipe loads, unknown names and fields are clear errors.
#include <catch2/catch.hpp>

#include "harness/agents/recipe.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "runtime_under_test/codec.h"

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
  CHECK(recipe_names(default_recipes_dir()) ==
        std::vector<std::string>{"claude-code", "claude-code-bedrock", "claude-code-foundry", "claude-code-mantle",
                                 "claude-code-vertex", "codex", "codex-websocket", "gemini-cli", "opencode", "qwen-code"});
}

TEST_CASE("an unknown agent name lists the known recipes") {
  try {
    (void)load_recipe("gemni-cli", default_recipes_dir());
    FAIL("expected an error");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()) == "unknown agent \"gemni-cli\" (known: claude-code, claude-code-bedrock, claude-code-foundry, "
                               "claude-code-mantle, claude-code-vertex, codex, codex-websocket, gemini-cli, opencode, "
                               "qwen-code; or pass a recipe .json path)");
  }
}

TEST_CASE("a recipe with an unknown field or a bad argv is rejected, naming the field") {
  CHECK_THROWS_WITH(recipe_from_json({{"name", "x"}, {"argv", {"a"}}, {"flavour", 1}}),
                    Catch::StartsWith("/flavour: unknown field \"flavour\" (known: name, version,"));
  CHECK_THROWS_WITH(recipe_from_json({{"name", "x"}, {"argv", nlohmann::json::array()}}),
                    "/argv: expected a non-empty array of strings, found an empty array");
}

TEST_CASE("a recipe's cancel block: SIGINT with a resume command, and a bad one names its field") {
  using nlohmann::json;
  const json ok = {{"name", "x"}, {"argv", {"a"}},
                   {"cancel", {{"method", "sigint"}, {"argv", {"a", "--keep"}}, {"resume_argv", {"a", "--continue", "{prompt}"}},
                               {"exit_wait_s", 3}, {"why", "its -p mode takes SIGINT"}}}};
  const Recipe r = recipe_from_json(ok);
  REQUIRE(r.cancel);
  CHECK(r.cancel->argv == std::vector<std::string>{"a", "--keep"});
  CHECK(r.cancel->resume_argv == std::vector<std::string>{"a", "--continue", "{prompt}"});
  CHECK(r.cancel->exit_wait_s == 3);
  CHECK_FALSE(recipe_from_json({{"name", "x"}, {"argv", {"a"}}}).cancel);
  json bad = ok;
  bad["cancel"]["method"] = "esc";
  CHECK_THROWS_WITH(recipe_from_json(bad), "/cancel/method: expected \"sigint\", found \"esc\"");
  bad = ok;
  bad["cancel"].erase("resume_argv");
  CHECK_THROWS_WITH(recipe_from_json(bad), "/cancel: missing required field \"resume_argv\"");
  bad = ok;
  bad["cancel"]["exit_wait_s"] = 1e300;  // overflowed the runner's clock: killed 5 ms after SIGINT
  CHECK_THROWS_WITH(recipe_from_json(bad), "/cancel/exit_wait_s: expected a number of seconds in (0, 3600], found number 1e+300");
  bad = ok;
  bad["cancel"]["why"] = "";  // a recipe says why its cancel is the user's: an empty reason says nothing
  CHECK_THROWS_WITH(recipe_from_json(bad), Catch::Contains("/cancel/why: expected a non-empty string"));
  bad = ok;
  bad["cancel"]["signal"] = 2;
  CHECK_THROWS_WITH(recipe_from_json(bad), Catch::StartsWith("/cancel/signal: unknown field \"signal\" (known: method, argv, resume_argv, exit_wait_s, why)"));
}

TEST_CASE("a recipe file that names a key twice or nests absurdly deep is one clear error, not a crash") {
  const std::string dir = (std::filesystem::temp_directory_path() / ("hiccup-recipe-test-" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  const std::string twice = dir + "/twice.json";
  std::ofstream(twice) << R"({"name": "x", "argv": ["a"], "argv": ["b"]})";
  CHECK_THROWS_WITH(load_recipe(twice, dir), Catch::Contains(twice + ": /argv: this key appears twice"));
  const std::string deep = dir + "/deep.json";
  std::ofstream(deep) << R"({"name": "x", "argv": ["a"], "env": )" << std::string(100000, '[') << std::string(100000, ']') << "}";
  CHECK_THROWS_WITH(load_recipe(deep, dir), Catch::Contains("nest deeper than 512 levels"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("a recipe's problems are all reported, each at its JSON pointer with the element index and the value found") {
  using nlohmann::json;
  const json j = json::parse(R"({
    "name": 7, "argv": ["a", 3, "c"], "env": {"A": "1", "B": false},
    "success_exit_codes": [0, "1", 300], "exit_codes": {"x": "y", "2": 5},
    "output": {"failure_markers": ["ok", ""], "failure_lines": [{"/type": "result"}, {"type": 1}]},
    "cancel": {"method": "sigint", "why": "w", "resume_argv": ["r", {"k": 1}], "argv": "a b"},
    "timeout_s": -1, "max_attempts": 0, "resumes_truncated_answer": "yes"})");
  try {
    (void)recipe_from_json(j);
    FAIL("expected a RecipeError");
  } catch (const RecipeError& e) {
    std::vector<std::string> lines;
    for (const RecipeProblem& p : e.problems()) lines.push_back(p.pointer + ": " + p.message);
    CHECK(lines == std::vector<std::string>{
                       "/name: expected a string, found integer 7",
                       "/argv/1: expected a string, found integer 3",
                       "/env/B: expected a string, found false",
                       "/max_attempts: expected an integer in 1..1000, found integer 0",
                       "/resumes_truncated_answer: expected true or false, found string \"yes\"",
                       "/success_exit_codes/1: expected an exit code (an integer in 0..255), found string \"1\"",
                       "/success_exit_codes/2: expected an exit code (an integer in 0..255), found integer 300",
                       "/exit_codes/2: expected a string, found integer 5",
                       "/exit_codes/x: expected an exit code (0..255) as the key, found \"x\"",
                       "/output/failure_lines/1/type: expected a JSON pointer (\"/…\") as the key, found \"type\"",
                       "/output/failure_markers/1: expected a non-empty string, found string \"\"",
                       "/cancel/argv: expected a non-empty array of strings, found string \"a b\"",
                       "/cancel/resume_argv/1: expected a string, found an object",
                       "/timeout_s: expected a number of seconds in (0, 86400], found integer -1"});
    // what(): one line per problem, in the same order.
    const std::string what = e.what();
    CHECK(what.rfind("/name: expected a string, found integer 7\n/argv/1: expected", 0) == 0);
    CHECK(std::count(what.begin(), what.end(), '\n') == 13);
  }
}

TEST_CASE("a recipe file's problems name the file on every line, and the CLI prefixes each line") {
  const std::string dir = (std::filesystem::temp_directory_path() / ("hiccup-recipe-lines-" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/two.json";
  std::ofstream(path) << R"({"name": "x", "argv": ["a", ["b"]], "cancel": {"method": "sigint", "why": "w", "resume_argv": ["r", 1]}})";
  try {
    (void)load_recipe(path, dir);
    FAIL("expected a RecipeError");
  } catch (const RecipeError& e) {
    CHECK(e.file() == path);
    CHECK(std::string(e.what()) == path + ": /argv/1: expected a string, found an array\n" + path +
                                      ": /cancel/resume_argv/1: expected a string, found integer 1");
    CHECK(error_lines(e, "error: --agent: ") == "error: --agent: " + path + ": /argv/1: expected a string, found an array\n" +
                                                  "error: --agent: " + path + ": /cancel/resume_argv/1: expected a string, found integer 1");
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("a recipe file that starts with a UTF-8 byte order mark loads as scenario files do") {
  const std::string dir = (std::filesystem::temp_directory_path() / ("hiccup-recipe-bom-" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/bom.json";
  std::ofstream(path) << "\xEF\xBB\xBF" << R"({"name": "bom", "argv": ["a"]})";
  const Recipe r = load_recipe(path, dir);
  CHECK(r.name == "bom");
  CHECK(r.argv == std::vector<std::string>{"a"});
  // A lone BOM without JSON after it is still an error naming the file.
  std::ofstream(path, std::ios::trunc) << "\xEF\xBB\xBF";
  CHECK_THROWS_WITH(load_recipe(path, dir), Catch::StartsWith(path + ": "));
  std::filesystem::remove_all(dir);
}

TEST_CASE("agent-cmd runs its command through /bin/sh -c") {
  const Recipe r = command_recipe("echo hi");
  CHECK(r.argv == std::vector<std::string>{"/bin/sh", "-c", "echo hi"});
  CHECK(r.binary.empty());
}

}  // namespace
}  // namespace harness::agents

namespace harness::agents {
namespace {

TEST_CASE("every bundled recipe loads, is pinned, and names a format, a shell tool and its install entry") {
  std::ifstream script(repo_root() + "/scripts/install_agents.sh");
  std::stringstream text;
  text << script.rdbuf();
  const std::vector<std::string> names = recipe_names(default_recipes_dir());
  for (const std::string& name : names) {
    INFO(name);
    const Recipe r = load_recipe(name, default_recipes_dir());
    CHECK(r.name == name);
    CHECK_FALSE(r.version.empty());
    CHECK(rut::codec_for(r.provider) != nullptr);
    CHECK_FALSE(r.tool_name.empty());
    // A recipe variant (claude-code-bedrock: the same CLI on another path) installs its agent.
    std::string agent = name;
    for (const std::string& other : names) {
      if (name.rfind(other + "-", 0) == 0) agent = other;
    }
    CHECK(r.install_hint == "scripts/install_agents.sh " + agent);
    CHECK(text.str().find("    " + agent + ")") != std::string::npos);
    CHECK(r.binary.find(agent + "-" + r.version) != std::string::npos);  // the pinned install prefix
  }
}

TEST_CASE("a recipe's mcp block: applied only through with_mcp, settings merged, argv appended, bad fields named") {
  using nlohmann::json;
  const json ok = {{"name", "x"},
                   {"argv", {"a", "{prompt}"}},
                   {"home_files", {{".x/settings.json", {{"auth", "key"}}}, {"config.toml", "model = 1\n"}}},
                   {"cancel", {{"method", "sigint"}, {"resume_argv", {"a", "--resume"}}, {"why", "w"}}},
                   {"mcp", {{"server", "hiccup"}, {"tool_name", "mcp__{server}__{tool}"}, {"tool_timeout_s", 3},
                            {"home_files", {{".x/settings.json", {{"mcpServers", {{"hiccup", {{"url", "{mcp_url}"}}}}}}},
                                            {"config.toml", "[mcp_servers.hiccup]\n"},
                                            {"mcp.json", {{"servers", 1}}}}},
                            {"argv", {"--mcp-config", "{home}/mcp.json"}},
                            {"env", {{"MCP_TOOL_TIMEOUT", "3000"}}},
                            {"why", "its docs"}}}};
  const Recipe r = recipe_from_json(ok);
  REQUIRE(r.mcp);
  CHECK(r.mcp->tool_timeout_s == 3);
  CHECK(mcp_model_name(*r.mcp, "write_file") == "mcp__hiccup__write_file");
  CHECK(r.argv == std::vector<std::string>{"a", "{prompt}"});  // not applied until a scenario offers MCP tools
  const Recipe m = with_mcp(r);
  CHECK(m.argv == std::vector<std::string>{"a", "{prompt}", "--mcp-config", "{home}/mcp.json"});
  CHECK(m.cancel->resume_argv == std::vector<std::string>{"a", "--resume", "--mcp-config", "{home}/mcp.json"});
  CHECK(m.home_files.at(".x/settings.json") == json{{"auth", "key"}, {"mcpServers", {{"hiccup", {{"url", "{mcp_url}"}}}}}});
  CHECK(m.home_files.at("config.toml") == "model = 1\n[mcp_servers.hiccup]\n");
  CHECK(m.home_files.at("mcp.json") == json{{"servers", 1}});
  CHECK(m.env.at("MCP_TOOL_TIMEOUT") == "3000");

  json bad = ok;
  bad["mcp"] = {{"tool_name", "mcp__x"}, {"tool_timeout_s", -1}, {"server", "a b"}, {"home_files", {{"/abs", {}}}},
                {"argv", {1}}, {"flavour", 1}};
  try {
    (void)recipe_from_json(bad);
    FAIL("expected an error");
  } catch (const RecipeError& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("/mcp/flavour: unknown field \"flavour\"") != std::string::npos);
    CHECK(what.find("/mcp/tool_name: expected a name holding {tool}") != std::string::npos);
    CHECK(what.find("/mcp/tool_timeout_s: expected a number of seconds in [0, 3600]") != std::string::npos);
    CHECK(what.find("/mcp/server: expected a server name") != std::string::npos);
    CHECK(what.find("/mcp/home_files/~1abs: expected a relative file path inside HOME") != std::string::npos);
    CHECK(what.find("/mcp/argv/0: expected a string, found integer 1") != std::string::npos);
    CHECK(what.find("/mcp: missing required field \"why\"") != std::string::npos);
  }
}

TEST_CASE("every bundled agent recipe points its CLI at hiccup's MCP server with a short per-call tool timeout") {
  for (const std::string& name : recipe_names(default_recipes_dir())) {
    INFO(name);
    const Recipe r = load_recipe(name, default_recipes_dir());
    if (!r.mcp) continue;  // a recipe variant (another model path) may leave MCP to its agent's recipe
    CHECK(r.mcp->tool_timeout_s > 0);
    CHECK(r.mcp->tool_timeout_s <= 5);  // rows that wait out a tool timeout stay short in CI
    const Recipe m = with_mcp(r);
    CHECK(nlohmann::json(m.home_files).dump().find("{mcp_url}") != std::string::npos);
  }
  for (const char* name : {"gemini-cli", "claude-code", "codex", "qwen-code", "opencode"}) {
    INFO(name);
    CHECK(load_recipe(name, default_recipes_dir()).mcp.has_value());
  }
}

TEST_CASE("a recipe's output section is decoded and checked") {
  nlohmann::json j = {{"name", "x"}, {"argv", {"x"}},
                      {"output", {{"stream", "stderr"}, {"failure_markers", {"\"is_error\":true"}}}}};
  const Recipe r = recipe_from_json(j);
  CHECK(r.output_stream == "stderr");
  CHECK(r.failure_markers == std::vector<std::string>{"\"is_error\":true"});
  j["output"]["stream"] = "stdin";
  CHECK_THROWS_WITH(recipe_from_json(j), "/output/stream: expected \"stdout\" or \"stderr\", found \"stdin\"");
  j["output"] = {{"markers", nlohmann::json::array()}};
  CHECK_THROWS_WITH(recipe_from_json(j), "/output/markers: unknown field \"markers\" (known: stream, failure_markers, failure_lines, shown_text)");
}

TEST_CASE("a recipe's shown_text notices and retract rule are decoded, and every problem in them named") {
  nlohmann::json j = {{"name", "x"}, {"argv", {"x"}},
                      {"output", {{"shown_text", {{"where", {{"/type", "assistant"}}}, {"pointer", "/text"},
                                                  {"notices", {{{"starts", "[API Error: "}, {"ends", "]"}}}},
                                                  {"retract", {{"where", {{"/type", "system"}, {"/data/preserveText", false}}},
                                                               {"attempt_lines", {{{"/type", "user"}}}}}}}}}}};
  const Recipe r = recipe_from_json(j);
  CHECK(r.shown_text_notices == std::vector<Recipe::Notice>{{"[API Error: ", "]"}});
  CHECK(r.shown_text_retract.at("/data/preserveText") == false);
  REQUIRE(r.shown_text_attempt_lines.size() == 1);
  j["output"]["shown_text"]["notices"] = {{{"starts", ""}}, 3, {{"ends", "]"}, {"start", "x"}}};
  j["output"]["shown_text"]["retract"] = {{"attempt_lines", {{{"type", "user"}}}}, {"when", 1}};
  try {
    recipe_from_json(j);
    FAIL("expected the recipe to be refused");
  } catch (const std::exception& e) {
    const std::string m = e.what();
    INFO(m);
    CHECK(m.find("/output/shown_text/notices/0/starts: expected a non-empty string") != std::string::npos);
    CHECK(m.find("/output/shown_text/notices/0/starts: expected a non-empty string") ==
          m.rfind("/output/shown_text/notices/0/starts"));  // named once
    CHECK(m.find("/output/shown_text/notices/1: expected {\"starts\": marker, \"ends\": marker}, found integer 3") != std::string::npos);
    CHECK(m.find("/output/shown_text/notices/2/start: unknown field \"start\" (known: starts, ends)") != std::string::npos);
    CHECK(m.find("/output/shown_text/notices/2: missing required field \"starts\"") != std::string::npos);
    CHECK(m.find("/output/shown_text/retract/when: unknown field \"when\" (known: where, attempt_lines)") != std::string::npos);
    CHECK(m.find("/output/shown_text/retract: missing required field \"where\"") != std::string::npos);
    CHECK(m.find("/output/shown_text/retract/attempt_lines/0/type: expected a JSON pointer") != std::string::npos);
  }
}

}  // namespace
}  // namespace harness::agents

namespace harness::agents {
namespace {

/// Sets an environment variable for one scope, restoring what it was.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST_CASE("a pinned agent is looked up in HICCUP_AGENT_CACHE when it is set, as install_agents.sh installs there") {
  const Recipe r = load_recipe("gemini-cli", default_recipes_dir());
  REQUIRE(r.binary == ".cache/npm/gemini-cli-0.61.0/node_modules/.bin/gemini");
  {
    const ScopedEnv unset("HICCUP_AGENT_CACHE", nullptr);
    CHECK(agent_cache_dir() == repo_root() + "/.cache/npm");
    CHECK(agent_binary(r) == repo_root() + "/.cache/npm/gemini-cli-0.61.0/node_modules/.bin/gemini");
  }
  {
    const ScopedEnv empty("HICCUP_AGENT_CACHE", "");  // as the script's ${HICCUP_AGENT_CACHE:-…}: the default
    CHECK(agent_binary(r) == repo_root() + "/.cache/npm/gemini-cli-0.61.0/node_modules/.bin/gemini");
  }
  {
    const ScopedEnv shared("HICCUP_AGENT_CACHE", "/opt/agents");
    CHECK(agent_cache_dir() == "/opt/agents");
    CHECK(agent_binary(r) == "/opt/agents/gemini-cli-0.61.0/node_modules/.bin/gemini");
  }
  {
    const ScopedEnv relative("HICCUP_AGENT_CACHE", "agents-cache");  // relative to the current folder
    CHECK(agent_binary(r) ==
          (std::filesystem::current_path() / "agents-cache/gemini-cli-0.61.0/node_modules/.bin/gemini").string());
  }
  // Binaries outside the cache keep their meaning whatever the variable says.
  const ScopedEnv shared("HICCUP_AGENT_CACHE", "/opt/agents");
  Recipe other = r;
  other.binary = "tools/my-agent";
  CHECK(agent_binary(other) == repo_root() + "/tools/my-agent");
  other.binary = "/usr/bin/my-agent";
  CHECK(agent_binary(other) == "/usr/bin/my-agent");
  CHECK(agent_binary(command_recipe("true")).empty());
}

}  // namespace
}  // namespace harness::agents
